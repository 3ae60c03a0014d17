//! candle as [`parity_core::Semantics`]: `candle` (the setup a porter writes
//! by reading generate kwargs literally) and `candle+hf-closure` (the setup
//! [`crate::translate`] gives to reproduce transformers). Both take the
//! [`CandleParams`] wire form in `compare dist`; they differ only in how
//! generate kwargs become candle params, and in what they have to explain.
//!
//! Every row these semantics answer is backed by real `LogitsProcessor`
//! draws ([`Semantics::check_draws`]), each replayed by the mirror.

use hf_sampling::GenerationConfig;
use parity_core::metrics::{max_logit_diff, softmax_f64};
use parity_core::{
    Against, Context, Described, Distribution, DrawCheck, DrawOptions, Error, Explanation, Fix,
    Info, Logits, ParamInfo, Precision, Role, Route, Semantics, TranslateOptions, Translation,
    TranslationLine, Variant,
};
use serde_json::{Map, Value};

use crate::error::AdapterError;
use crate::params::{CandleParams, CandleSampling, Window};
use crate::run::{CandleRun, VerifyOptions};
use crate::translate::{literal, translate};

/// Repeat-penalty windows candle's own examples use (`repeat_last_n`: the
/// llama example 128, phi and quantized 64), reported beside the whole context.
pub const EXAMPLE_WINDOWS: [usize; 2] = [64, 128];

/// The literal port's one route: candle's `LogitsProcessor`, a library call.
pub(crate) const ROUTE: parity_core::Endpoint =
    parity_core::Endpoint::Call("candle LogitsProcessor (literal port)");

/// The wire form's keys, from [`crate::params::Wire`]'s declaration.
const PARAMS: &[ParamInfo] = crate::params::Wire::PARAMS;

const VERIFIED: &str = "the real candle 0.11.1 LogitsProcessor: every real draw replayed \
                        exactly (StdRng + WeightedIndex over the mirror), chi-square p >= 1e-3";

static CANDLE: Info = Info {
    name: "candle",
    engine: "candle-transformers 0.11.1 LogitsProcessor (the real crate), mirrored",
    summary: "the setup a porter writes from generate kwargs read literally (no default top-k 50, \
              TopKThenTopP on raw mass, the whole context penalised)",
    verified_against: VERIFIED,
    params: PARAMS,
};

static CANDLE_EXACT: Info = Info {
    name: "candle+hf-closure",
    engine: "candle-transformers 0.11.1 LogitsProcessor (the real crate), mirrored",
    summary: "candle set up by `compare translate` to reproduce transformers (a sample_f top-k \
              closure where plain candle cannot)",
    verified_against: VERIFIED,
    params: PARAMS,
};

/// candle as a semantics. Its two registry entries share everything but how
/// generate kwargs become candle params: [`Candle::LITERAL`] (`candle`, the
/// port that reads them literally) and [`Candle::EXACT`]
/// (`candle+hf-closure`, `translate`'s exact setup).
#[derive(Debug, Clone, Copy)]
pub struct Candle {
    literal: bool,
}

impl Candle {
    /// `candle`: the literal port of generate kwargs.
    pub const LITERAL: Candle = Candle { literal: true };
    /// `candle+hf-closure`: translate's exact setup.
    pub const EXACT: Candle = Candle { literal: false };
}

impl Semantics for Candle {
    type Params = CandleParams;

    fn info(&self) -> &'static Info {
        if self.literal { &CANDLE } else { &CANDLE_EXACT }
    }

    /// Both setups stand in the default report against transformers.
    fn role(&self) -> Role {
        Role::Default
    }

    fn exact_setup(&self) -> Option<&'static str> {
        self.literal.then_some(CANDLE_EXACT.name)
    }

    /// `compare translate --to candle`: the plain setup a port writes, the
    /// exact one (a `sample_f` closure where plain candle cannot), or the
    /// drop-in that runs transformers' chain behind candle's signature.
    fn translate(
        &self,
        kwargs: &Map<String, Value>,
        _options: &TranslateOptions,
    ) -> Option<Result<Translation, Error>> {
        if !self.literal {
            return None;
        }
        Some(
            hf_sampling::resolve(kwargs, None)
                .map_err(Error::new)
                .and_then(|p| translate(&p).map_err(Error::new))
                .map(|t| translation(&t)),
        )
    }

    fn parse_params(&self, params: &Map<String, Value>) -> Result<CandleParams, Error> {
        CandleParams::from_json(&Value::Object(params.clone()))
            .map_err(|e| Error::new(format_args!("params: {e}")))
    }

    fn distribution(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &CandleParams,
    ) -> Result<Distribution, Error> {
        let logits = logits.to_f32()?;
        let run = CandleRun::new(&logits, context.input_ids(), params).map_err(|e| {
            // candle's own error, as its draw fails (the mirror's equals the
            // real one); k = 0 gets the reason beside rand's bare words.
            let k0 = matches!(
                params.sampling,
                CandleSampling::TopK { k: 0, .. } | CandleSampling::TopKThenTopP { k: 0, .. }
            );
            match e {
                AdapterError::Candle { .. } if k0 => Error::new(format_args!(
                    "{e} (candle's own error: k = 0 keeps no token to draw from)"
                )),
                e => Error::new(e),
            }
        })?;
        let mirrored = run.mirrored();
        let dist = Distribution::new(mirrored.probs.clone(), Precision::F64);
        Ok(if params.repeat_penalty.is_some() {
            dist.with_penalised(mirrored.penalised_logits.clone())
        } else {
            dist
        })
    }

    fn from_generate(&self, kwargs: &Map<String, Value>) -> Option<Result<CandleParams, Error>> {
        if self.literal {
            return Some(Ok(literal(kwargs)));
        }
        let exact = hf_sampling::resolve(kwargs, None)
            .map_err(Error::new)
            .and_then(|p| translate(&p).map_err(Error::new))
            .map(|t| t.exact.unwrap_or(t.candle));
        Some(exact)
    }

    fn seed(&self) -> &'static [parity_core::RouteSeed] {
        if self.literal { crate::seed::SEED } else { &[] }
    }

    /// A port's `LogitsProcessor` built from the request's fields as
    /// written (the literal port of `generate(**request)`); only the
    /// literal semantics stands for something people deploy.
    fn from_request(
        &self,
        request: &Map<String, Value>,
        _generation_config: Option<&Map<String, Value>>,
    ) -> Vec<Route<CandleParams>> {
        if !self.literal {
            return Vec::new();
        }
        let (kwargs, _) = hf_sampling::request_kwargs(request);
        let read = |k: &str| {
            matches!(
                k,
                "do_sample" | "temperature" | "top_k" | "top_p" | "repetition_penalty"
            )
        };
        vec![
            Route::new(ROUTE, Ok(literal(&kwargs)))
                .ignoring_all_but(request, read)
                .note("no default top-k; the penalty covers the whole context"),
        ]
    }

    /// The literal port is also run with the penalty windows candle's
    /// examples use.
    fn variants(&self, params: &CandleParams) -> Vec<(Variant, CandleParams)> {
        let (true, Some(rp)) = (self.literal, params.repeat_penalty) else {
            return Vec::new();
        };
        EXAMPLE_WINDOWS
            .iter()
            .map(|&n| {
                let mut windowed = params.clone();
                windowed.repeat_penalty = Some(crate::RepeatPenalty {
                    window: Window::LastN(n),
                    ..rp
                });
                (
                    Variant {
                        label: format!("last {n}"),
                        penalty_window: Some(n),
                    },
                    windowed,
                )
            })
            .collect()
    }

    fn describe(&self, params: &CandleParams) -> Option<Described> {
        Some(Described::Words(params.to_string()))
    }

    fn explain(&self, row: &Against<'_>, params: &CandleParams) -> Explanation {
        explain(row, params, self.literal)
    }

    fn fix(&self, kwargs: &Map<String, Value>, variant: Option<&Variant>) -> Option<Fix> {
        if self.literal {
            fix_for_literal(kwargs, None, variant)
        } else {
            None
        }
    }

    fn check_draws(
        &self,
        logits: &Logits,
        context: &Context<'_>,
        params: &CandleParams,
        options: &DrawOptions<'_>,
    ) -> Option<Result<DrawCheck, Error>> {
        let run = || -> Result<DrawCheck, Error> {
            let logits = logits.to_f32()?;
            let run = CandleRun::new(&logits, context.input_ids(), params).map_err(Error::new)?;
            let v = run
                .verify_shared(&VerifyOptions {
                    seed: options.seed,
                    // ArgMax touches no RNG: one replayed draw stands for all.
                    draws: options
                        .draws
                        .for_row(!matches!(params.sampling, CandleSampling::ArgMax {})),
                    streams: if options.parallel { 2 } else { 1 },
                    other_kept: Some(options.other_kept),
                    reference: None,
                    ..VerifyOptions::default()
                })
                .map_err(|e| Error::new(format_args!("candle draws: {e}")))?;
            Ok(DrawCheck {
                engine: "candle",
                n: v.draws,
                replay_agree: v.replay.as_ref().map(|r| r.agreed),
                max_freq_dev: v.vs_mirror.max_abs_diff,
                p_value: v.vs_mirror.gof.p_value,
                outside_own: v.outside_mirror_kept,
                outside_other: v.outside_other_kept.unwrap_or(0.0),
                counts: v.counts,
            })
        };
        Some(run())
    }
}

/// [`crate::translate::Translation`] as `compare translate` prints it.
fn translation(t: &crate::translate::Translation) -> Translation {
    let mut lines = vec![TranslationLine::Plain(format!(
        "candle (plain): {}",
        t.candle.recipe()
    ))];
    match &t.exact {
        Some(e) if t.plain_is_exact => lines.push(TranslationLine::Plain(format!(
            "candle (exact): the plain setup already matches; {}",
            e.recipe()
        ))),
        Some(e) => lines.push(TranslationLine::Plain(format!(
            "candle (exact): {}",
            e.recipe()
        ))),
        None => {
            lines.push(TranslationLine::Plain(
                "candle (exact): LogitsProcessor has no such filter; run transformers' whole \
                 chain behind candle's signature with candle_adapter::dropin::HfLogitsProcessor \
                 (exact, `compare dist --semantics hf-rust` shows its distribution):"
                    .into(),
            ));
            lines.push(TranslationLine::Plain(
                "    let params = hf_sampling::resolve(&kwargs, None)?;  // these kwargs\n    \
                 let mut lp = candle_adapter::dropin::HfLogitsProcessor::new(seed, &params)?;\n    \
                 lp.set_prompt(&prompt_ids);\n    \
                 let token = lp.sample(&logits)?;  // logits: &candle_core::Tensor"
                    .into(),
            ));
        }
    }
    lines.extend(
        t.warnings
            .iter()
            .map(|w| TranslationLine::Plain(format!("warning: {w}"))),
    );
    let json = match serde_json::to_value(t) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    Translation {
        lines,
        json,
        params: None,
    }
}

/// The fix for the literal port: `translate`'s exact setup for these kwargs
/// over the model's generation config, if any (the same recipe `compare
/// translate` prints), when candle has one and it is not the literal setup
/// already. Reports run it on the row's logits and print it only when it
/// then matches transformers.
pub fn fix_for_literal(
    kwargs: &Map<String, Value>,
    config: Option<&GenerationConfig>,
    variant: Option<&Variant>,
) -> Option<Fix> {
    let params = hf_sampling::resolve(kwargs, config).ok()?;
    let exact = translate(&params).ok()?.exact?;
    let text = match variant.and_then(|v| v.penalty_window) {
        Some(n) => format!("use {exact} (penalising all input_ids, not the last {n})"),
        None if exact == literal(kwargs) => return None,
        None => format!("use {exact}"),
    };
    Some(Fix {
        text,
        params: as_object(&exact),
    })
}

fn as_object(params: &CandleParams) -> Map<String, Value> {
    match params.to_json() {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Why candle differs from transformers on a row. Each clause is a rule the
/// two are known to disagree on, checked against this row's data.
fn explain(row: &Against<'_>, params: &CandleParams, literal_port: bool) -> Explanation {
    // transformers merged the model's generation config under the kwargs.
    // The report has read and checked it already; one that fails to parse
    // here would have stopped it, so it counts as none.
    let config = row
        .generation_config
        .and_then(|m| GenerationConfig::from_values(m.clone()).ok());
    let Ok(p) = hf_sampling::resolve(row.kwargs, config.as_ref()) else {
        return Explanation::default();
    };
    let from_config: Vec<String> = hf_sampling::provenance(row.kwargs, config.as_ref(), &p)
        .into_iter()
        .filter(|(_, _, source)| *source == hf_sampling::Source::GenerationConfig)
        .map(|(key, value, _)| format!("{key} {value}"))
        .collect();
    let cmp = row.comparison;
    let top_k = p.top_k.filter(|&k| k != 0 && p.do_sample);
    let top_p = (p.do_sample && p.top_p < 1.0).then_some(p.top_p);
    let sets_differ = !cmp.only_left.is_empty() || !cmp.only_right.is_empty();
    let mut why = Vec::new();
    if let Some(n) = row.variant.and_then(|v| v.penalty_window) {
        let (missed, in_prompt) = row.context.missed_by_window(n, row.logits.len());
        let diff = match (row.transformers.penalised(), row.this.penalised()) {
            (Some(a), Some(b)) => max_logit_diff(a, b),
            _ => 0.0,
        };
        why.push(format!(
            "repeat window: candle penalises only the last {n} ids; {missed} ids that occur only \
             earlier ({in_prompt} of them in the prompt) keep their logits (max |Δ logit| {diff:.3e})"
        ));
    }
    if literal_port && !from_config.is_empty() {
        why.push(hf_sampling::rules::generation_config(
            &from_config.join(", "),
            "the literal candle setup reads the kwargs only",
        ));
    }
    // Only where top-k 50 can matter: the literal setup keeps more than 50.
    if literal_port
        && !row.kwargs.contains_key("top_k")
        && config.as_ref().and_then(|c| c.get("top_k")).is_none()
        && top_k == Some(50)
        && row.this.kept().len() > 50
    {
        let what = match params.sampling {
            CandleSampling::All { .. } => "samples the whole vocabulary".to_string(),
            _ => format!("has no top-k and keeps {} tokens", row.this.kept().len()),
        };
        why.push(format!(
            "{}; the literal candle setup {what}",
            hf_sampling::rules::DEFAULT_TOP_K
        ));
    }
    let renormalisation = literal_port && top_k.is_some() && top_p.is_some();
    if let (true, Some(k), Some(pp)) = (renormalisation, top_k, top_p) {
        let mass = top_k_mass(row, &p, k);
        why.push(match params.sampling {
            CandleSampling::TopKThenTopP { .. } => format!(
                "top-k then top-p: candle's TopKThenTopP compares p = {pp} with the raw mass of \
                 the top {k} ({mass:.4}); transformers renormalises the top {k} first"
            ),
            _ => format!(
                "top-k then top-p: transformers renormalises its top {k} (raw mass {mass:.4}) \
                 before measuring p = {pp}; the literal candle setup measures p on the whole \
                 vocabulary"
            ),
        });
    }
    if let Some(k) = top_k
        && cmp.kept_left > k
        && literal_port
    {
        why.push(hf_sampling::rules::top_k_tie(cmp.kept_left, k, "candle"));
    }
    if top_p.is_some() && sets_differ && !renormalisation {
        let tied = cmp.only_left.iter().any(|a| {
            cmp.only_right
                .iter()
                .any(|b| row.logits[a.id].to_bits() == row.logits[b.id].to_bits())
        });
        why.push(if tied {
            hf_sampling::rules::top_p_tie("candle")
        } else {
            hf_sampling::rules::top_p_boundary("candle")
        });
    }
    let acting = p.acting();
    for (name, kwarg) in [
        ("min-p", "min_p"),
        ("typical", "typical_p"),
        ("epsilon", "epsilon_cutoff"),
        ("eta", "eta_cutoff"),
    ] {
        if acting.acts(kwarg) {
            why.push(format!("candle has no {name} sampling"));
        }
    }
    let fix = if literal_port {
        fix_for_literal(row.kwargs, config.as_ref(), row.variant)
    } else {
        None
    };
    Explanation { reasons: why, fix }
}

/// The raw (un-renormalised) probability mass of the k most likely tokens
/// after the penalty and temperature, as candle's TopKThenTopP measures it.
fn top_k_mass(row: &Against<'_>, p: &hf_sampling::GenerationParams, k: usize) -> f64 {
    let mut logits = row.logits.to_vec();
    if p.repetition_penalty != 1.0 {
        hf_sampling::ops::repetition_penalty(
            &mut logits,
            row.context.input_ids(),
            p.repetition_penalty,
        );
    }
    let scaled: Vec<f32> = logits
        .iter()
        .map(|&x| (f64::from(x) / p.temperature) as f32)
        .collect();
    let mut probs = softmax_f64(&scaled);
    probs.sort_by(|a, b| b.total_cmp(a));
    probs.iter().take(k).sum()
}
