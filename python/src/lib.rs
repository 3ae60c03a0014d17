//! `sampling_parity._native`: the Rust half of the Python package. Every
//! function is one call into the crates `compare` runs (the registry in
//! `compare::registry`, the work in `comparison`); nothing here computes a
//! distribution or a verdict of its own. `sampling_parity/__init__.py`
//! turns arrays and dicts into what these take, and the answers back.
//!
//! Batch work releases the GIL and runs on every core (rayon). Errors are
//! `ValueError`s whose text is what `compare` prints after `error: `.

/// The extension's allocator: mimalloc. A `check` row at V = 151,936 builds
/// and drops about 10 MB of vectors; glibc hands that memory back to the
/// kernel after each row (its trim threshold follows the largest block
/// freed), so the next row faults in and zeroes every page again, about a
/// third of the row's time on one core (docs/performance.md). mimalloc keeps
/// freed pages for the next row.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use comparison::check::{Given, Item};
use comparison::cli::{Format, RequestArgs, SemanticsArgs, TranslateArgs};
use parity_core::arrays::Row;
use parity_core::{AnySemantics, Context, Logits};

/// A `ValueError` with `compare`'s text for this error.
fn value_error(err: &anyhow::Error) -> PyErr {
    PyValueError::new_err(comparison::error_text(err))
}

/// A `ValueError` with this text.
fn message(text: impl Into<String>) -> PyErr {
    PyValueError::new_err(text.into())
}

/// The registry `compare` runs.
fn engines() -> PyResult<comparison::Engines> {
    compare::registry::engines(None, &compare::registry::Options::default())
        .map_err(|e| value_error(&e))
}

/// A float32 or float64 NumPy array, read-only, as rows (`[V]`: one row;
/// `[N, V]`: N rows).
enum Input<'py> {
    F32(PyReadonlyArrayDyn<'py, f32>),
    F64(PyReadonlyArrayDyn<'py, f64>),
}

impl<'py> Input<'py> {
    fn extract(field: &str, obj: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, f32>>() {
            return Ok(Self::F32(a));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, f64>>() {
            return Ok(Self::F64(a));
        }
        Err(message(format!(
            "`{field}` must be a float32 or float64 array"
        )))
    }

    fn shape(&self) -> Vec<usize> {
        match self {
            Self::F32(a) => a.shape().to_vec(),
            Self::F64(a) => a.shape().to_vec(),
        }
    }

    /// The rows, borrowed; `field` names the array in errors.
    fn rows(&self, field: &str) -> PyResult<(Vec<Row<'_>>, bool)> {
        let shape = self.shape();
        let (n, v, two_d) = match shape[..] {
            [v] => (1, v, false),
            [n, v] => (n, v, true),
            _ => {
                return Err(message(format!(
                    "`{field}` has shape {shape:?}; expected [V] (one row) or [N, V] (N rows)"
                )));
            }
        };
        if v == 0 {
            return Err(message(format!("`{field}` must not be empty")));
        }
        let not_contiguous = |_| message(format!("`{field}` must be C-contiguous"));
        let rows = match self {
            Self::F32(a) => a
                .as_slice()
                .map_err(not_contiguous)?
                .chunks_exact(v)
                .map(Row::F32)
                .collect(),
            Self::F64(a) => a
                .as_slice()
                .map_err(not_contiguous)?
                .chunks_exact(v)
                .map(Row::F64)
                .collect::<Vec<_>>(),
        };
        debug_assert_eq!(rows.len(), n);
        Ok((rows, two_d))
    }
}

/// Params as JSON text (what `json.dumps` writes, `NaN` and `Infinity`
/// read as a record's are).
fn params(text: &str) -> PyResult<serde_json::Map<String, serde_json::Value>> {
    serde_json::from_slice(&parity_core::record::python_floats(text.as_bytes()))
        .map_err(|e| message(format!("`params` is not a JSON object: {e}")))
}

/// Row `i`'s error as a batch names it (a lone row: as it is).
fn row_error(two_d: bool, i: usize, e: String) -> PyErr {
    if two_d {
        message(format!("row {i}: {e}"))
    } else {
        message(e)
    }
}

/// `dist(semantics, logits, params_json, input_ids, prompt_len)`: the
/// semantics' distribution for each row of logits, float64, in the shape
/// of `logits`.
#[pyfunction]
#[pyo3(signature = (semantics, logits, params_json, input_ids=None, prompt_len=None))]
fn dist<'py>(
    py: Python<'py>,
    semantics: &str,
    logits: &Bound<'py, PyAny>,
    params_json: &str,
    input_ids: Option<Vec<i64>>,
    prompt_len: Option<usize>,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let engines = engines()?;
    let semantics: &dyn AnySemantics = engines.find(semantics).map_err(|e| value_error(&e))?;
    let input = Input::extract("logits", logits)?;
    let (rows, two_d) = input.rows("logits")?;
    let shape = input.shape();
    let params = params(params_json)?;
    let input_ids = input_ids.unwrap_or_default();
    let context = Context::new(&input_ids, prompt_len).map_err(|e| message(e.to_string()))?;
    let prepared = semantics
        .prepare(&params)
        .map_err(|e| message(e.to_string()))?;
    let width = shape[shape.len() - 1];
    let out: Result<Vec<f64>, PyErr> = py.detach(|| {
        use rayon::prelude::*;
        let mut out = vec![0.0f64; rows.len() * width];
        out.par_chunks_mut(width)
            .zip(rows.par_iter())
            .enumerate()
            .try_for_each(|(i, (slot, row))| {
                let logits = Logits::from_f64(row.to_f64()).map_err(|e| (i, e))?;
                let d = prepared
                    .distribution(&logits, &context)
                    .map_err(|e| (i, e.to_string()))?;
                slot.copy_from_slice(d.probs());
                Ok(())
            })
            .map_err(|(i, e)| row_error(two_d, i, e))?;
        Ok(out)
    });
    PyArray1::from_vec(py, out?).reshape(shape)
}

/// `check(semantics, probs, logits, params_json, input_ids, prompt_len,
/// logprobs, dense)`: each row of `probs` (or log-probabilities) against
/// the semantics' distribution for the same row of logits. A list of
/// `(checked_json, expected)` per row: `checked_json` is the record
/// `compare check --format json` prints, `expected` the semantics'
/// distribution when `dense`, else `None`.
#[pyfunction]
#[pyo3(signature = (semantics, probs, logits, params_json, input_ids=None, prompt_len=None, logprobs=false, dense=false))]
#[allow(clippy::too_many_arguments)]
fn check<'py>(
    py: Python<'py>,
    semantics: &str,
    probs: &Bound<'py, PyAny>,
    logits: &Bound<'py, PyAny>,
    params_json: &str,
    input_ids: Option<Vec<i64>>,
    prompt_len: Option<usize>,
    logprobs: bool,
    dense: bool,
) -> PyResult<Bound<'py, PyList>> {
    let engines = engines()?;
    let semantics: &dyn AnySemantics = engines.find(semantics).map_err(|e| value_error(&e))?;
    let given = if logprobs {
        Given::Logprobs
    } else {
        Given::Probs
    };
    let logits_in = Input::extract("logits", logits)?;
    let yours_in = Input::extract(given.field(), probs)?;
    let (logit_rows, two_d) = logits_in.rows("logits")?;
    let (your_rows, _) = yours_in.rows(given.field())?;
    if logits_in.shape().len() != yours_in.shape().len() || logit_rows.len() != your_rows.len() {
        return Err(message(format!(
            "`{}` has shape {:?}, `logits` {:?}: one row of yours per row of logits",
            given.field(),
            yours_in.shape(),
            logits_in.shape()
        )));
    }
    let params = params(params_json)?;
    let input_ids = input_ids.unwrap_or_default();
    let context = Context::new(&input_ids, prompt_len).map_err(|e| message(e.to_string()))?;
    let prepared = semantics
        .prepare(&params)
        .map_err(|e| message(e.to_string()))?;
    let items: Vec<Item<'_>> = logit_rows
        .into_iter()
        .zip(your_rows)
        .map(|(logits, yours)| Item { logits, yours })
        .collect();
    let outcomes =
        py.detach(|| comparison::check::check_rows(&*prepared, &items, given, &context, dense));
    let list = PyList::empty(py);
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let outcome = outcome.map_err(|e| row_error(two_d, i, e))?;
        let json = serde_json::to_string(&outcome.checked).map_err(|e| message(e.to_string()))?;
        let expected = outcome
            .distribution
            .map(|d| PyArray1::from_vec(py, d.into_probs()));
        list.append((json, expected))?;
    }
    Ok(list)
}

/// What `compare semantics --format json` prints.
#[pyfunction]
fn semantics_json() -> PyResult<String> {
    let mut out = Vec::new();
    comparison::semantics::run(
        &SemanticsArgs {
            format: Format::Json,
        },
        &engines()?,
        &mut out,
    )
    .map_err(|e| value_error(&e))?;
    String::from_utf8(out).map_err(|e| message(e.to_string()))
}

/// What `compare request BODY [FIXTURES] --format json` prints.
#[pyfunction]
#[pyo3(signature = (body, fixtures=Vec::new(), generation_config=None))]
fn request_json(
    py: Python<'_>,
    body: String,
    fixtures: Vec<std::path::PathBuf>,
    generation_config: Option<std::path::PathBuf>,
) -> PyResult<String> {
    let args = RequestArgs {
        request: body,
        fixtures,
        generation_config,
        expect_tv_below: None,
        against: None,
        allow_unknown: false,
        format: Format::Json,
    };
    py.detach(|| {
        let config = compare::registry::generation_config(args.generation_config.as_deref())?;
        let engines = compare::registry::engines(config.as_ref(), &Default::default())?;
        let mut out = Vec::new();
        // No --expect-tv-below here, so nothing is written to `err`.
        comparison::request::run(
            &args,
            config.as_ref(),
            &engines,
            &mut out,
            &mut std::io::sink(),
        )?;
        Ok(String::from_utf8(out)?)
    })
    .map_err(|e: anyhow::Error| value_error(&e))
}

/// What `compare translate --kwargs KWARGS [--to NAME] --format json` prints.
#[pyfunction]
#[pyo3(signature = (kwargs, to=None, context_len=4096, generation_config=None))]
fn translate_json(
    py: Python<'_>,
    kwargs: String,
    to: Option<String>,
    context_len: usize,
    generation_config: Option<std::path::PathBuf>,
) -> PyResult<String> {
    let args = TranslateArgs {
        kwargs,
        to,
        context_len,
        generation_config,
        format: Format::Json,
    };
    py.detach(|| {
        let config = compare::registry::generation_config(args.generation_config.as_deref())?;
        let engines = compare::registry::engines(config.as_ref(), &Default::default())?;
        let mut out = Vec::new();
        let mut progress = comparison::Progress::new(Box::new(std::io::sink()), false);
        comparison::translate::run(&args, config.as_ref(), &engines, &mut progress, &mut out)?;
        Ok(String::from_utf8(out)?)
    })
    .map_err(|e: anyhow::Error| value_error(&e))
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dist, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(semantics_json, m)?)?;
    m.add_function(wrap_pyfunction!(request_json, m)?)?;
    m.add_function(wrap_pyfunction!(translate_json, m)?)?;
    m.add("SAME_TOLERANCE", comparison::report::SAME_TOLERANCE)?;
    m.add("SUM_TOLERANCE", comparison::check::SUM_TOLERANCE)?;
    Ok(())
}
