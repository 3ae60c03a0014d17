//! Replays every case recorded from vLLM 0.33.0's Model Runner V2 sampler
//! kernels under Triton's CPU interpreter (`fixtures/vllm-v2/`, made by
//! `scripts/reference/vllm/record_v2.py`) with `runner: "v2-gpu"`.

use parity_core::fragile::FragileKind;
use parity_core::recording::{Recording, fnv1a64};
use parity_core::{Context, Fixture, Logits, Semantics};
use serde_json::Value;
use vllm_sampling::{Vllm, gumbel_noise32, gumbel_sample32, murmur3_hash32, murmur3_uniform32};

use crate::fixtures as dir;

fn all() -> Vec<Recording> {
    crate::recorded_in("vllm-v2")
}

/// The interpreted `murmur3_hash32` and `murmur3_uniform32` bit for bit; the
/// noise within 1e-6 of it in absolute terms (numpy's f32 `log` is not
/// `f32::ln`; near the noise's zero crossing a relative measure would blow up).
#[test]
fn murmur3_noise_is_the_kernels() {
    let rec = all()
        .into_iter()
        .find(|r| r.meta.get("format").is_some() && !r.meta.contains_key("source"))
        .expect("noise.safetensors");
    let seeds = rec.i64s("noise.seeds").expect("seeds");
    let positions = rec.i64s("noise.positions").expect("positions");
    let hash = rec.i64s("noise.hash").expect("hash");
    let u = rec.f32s("noise.u").expect("u");
    let g = rec.f32s("noise.gumbel").expect("gumbel");
    let n = hash.len() / seeds.len();
    let mut max_d = 0.0f32;
    for (r, (&s, &p)) in seeds.iter().zip(&positions).enumerate() {
        for t in 0..n {
            let i = r * n + t;
            assert_eq!(
                i64::from(murmur3_hash32(s, p, t as u32)),
                hash[i],
                "hash of seed {s} pos {p} token {t}"
            );
            assert_eq!(
                murmur3_uniform32(s, p, t as u32).to_bits(),
                u[i].to_bits(),
                "uniform of seed {s} pos {p} token {t}"
            );
            let ours = gumbel_noise32(s, p, t as u32);
            max_d = max_d.max((ours - g[i]).abs() / g[i].abs().max(1.0));
        }
    }
    eprintln!(
        "vllm v2: {} hashes and uniforms bit for bit; noise within {max_d:e} (relative above 1, absolute below)",
        hash.len()
    );
    assert!(max_d <= 1e-6, "noise {max_d:e} from the interpreted kernel");
}

#[test]
fn every_recorded_v2_case_replays() {
    let (mut cases, mut refused, mut draws, mut kept_checked) = (0, 0, 0, 0);
    let mut degenerate = 0;
    let (mut top_p_cases, mut fragile_cases, mut fragile_differs) = (0, 0, 0);
    let (mut proc_cases, mut proc_reproduced, mut proc_fragile, mut fragile_min_p) = (0, 0, 0, 0);
    let mut max_dp = 0.0f64;
    for rec in all() {
        let Some(source) = rec.meta.get("source").and_then(Value::as_str) else {
            continue;
        };
        let source = source.to_string();
        let fixture = Fixture::load(&dir().join(&source)).expect("source fixture");
        // The logits processors' files split the ids into prompt and output
        // (`prompt_len`); the others record a request whose ids are all prompt.
        let prompt_len = rec
            .meta
            .get("prompt_len")
            .and_then(Value::as_str)
            .map(|n| n.parse::<usize>().expect("prompt_len"));
        let context = Context::new(&fixture.input_ids, prompt_len).expect("context");
        let logits = Logits::from_f32(&fixture.logits);
        let vocab = fixture.logits.len() as i64;
        let out_of_vocab = fixture.input_ids.iter().any(|&t| t < 0 || t >= vocab);
        for case in rec
            .meta_json("cases")
            .expect("cases")
            .as_array()
            .expect("list")
        {
            let name = case["name"].as_str().expect("name");
            let what = format!("{source} {name}");
            let mut params = case["params"].as_object().expect("params").clone();
            params.insert("runner".into(), Value::from("v2-gpu"));
            let p = Vllm::AUTO
                .parse_params(&params)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            cases += 1;
            let processors = case.get("processors").is_some();
            proc_cases += usize::from(processors);
            let got = Vllm::AUTO.distribution(&logits, &context, &p);
            if out_of_vocab {
                assert!(
                    got.is_err(),
                    "{what}: ids outside the vocabulary are refused"
                );
                refused += 1;
                continue;
            }
            let fragile = Vllm::AUTO.fragile(&logits, &context, &p);
            if !fragile.is_empty() {
                // Kept or dropped by the bits of exp/log: the replay's set
                // may differ from the interpreter's, but only in the tokens
                // the report names.
                assert!(
                    p.top_p < 1.0 || p.min_p > 0.0,
                    "{what}: fragile without top-p or min-p"
                );
                fragile_min_p += usize::from(fragile.iter().any(|f| f.kind == FragileKind::MinP));
                let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
                let same = got.scores().map(fnv1a64).as_deref() == case["fnv1a64"].as_str();
                let ids = rec.i64s(&format!("{name}.ids")).expect("ids");
                if ids.len() as u64 == case["finite"].as_u64().expect("finite") {
                    let recorded: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
                    let ours = got.kept();
                    let named: Vec<usize> = fragile.iter().flat_map(|f| f.tokens.clone()).collect();
                    for t in recorded
                        .iter()
                        .filter(|t| !ours.contains(t))
                        .chain(ours.iter().filter(|t| !recorded.contains(t)))
                    {
                        assert!(
                            named.contains(t),
                            "{what}: token {t} differs from the interpreter's and is not reported fragile ({named:?})"
                        );
                    }
                }
                eprintln!(
                    "vllm v2: {what}: fragile ({}), replay {}",
                    fragile[0].detail,
                    if same { "agrees" } else { "differs" }
                );
                fragile_differs += usize::from(!same);
                fragile_cases += 1;
                proc_fragile += usize::from(processors);
                continue;
            }
            if p.top_p < 1.0 && !p.is_greedy() {
                top_p_cases += 1;
            }
            if let Err(e) = &got
                && e.to_string().contains("not modelled for `runner`")
            {
                eprintln!(
                    "vllm v2: {what}: refused: {}",
                    got.as_ref()
                        .err()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                );
                degenerate += 1;
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
            let scores = got.scores().expect("final logits");
            let penalty_ran = case
                .get("processors")
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|x| x == "penalties"));
            assert_eq!(
                got.penalised().is_some(),
                penalty_ran,
                "{what}: the penalised logits are reported exactly when the penalty kernel ran"
            );
            assert_eq!(
                fnv1a64(scores),
                case["fnv1a64"].as_str().expect("hash"),
                "{what}: final logits differ"
            );
            let ids = rec.i64s(&format!("{name}.ids")).expect("ids");
            let probs = rec.f64s(&format!("{name}.probs")).expect("probs");
            let finite = case["finite"].as_u64().expect("finite");
            if ids.len() as u64 == finite && !p.is_greedy() {
                let kept: Vec<usize> = ids
                    .iter()
                    .zip(&probs)
                    .filter(|(_, q)| **q > 0.0)
                    .map(|(&i, _)| i as usize)
                    .collect();
                let kept = if kept.is_empty() { vec![0] } else { kept };
                assert_eq!(got.kept(), kept.as_slice(), "{what}: kept set");
                kept_checked += 1;
            }
            if !p.is_greedy() && probs.iter().all(|q| q.is_finite()) {
                for (&i, &q) in ids.iter().zip(&probs) {
                    let d = (got.probs()[i as usize] - q).abs();
                    max_dp = max_dp.max(d);
                    assert!(
                        d <= 1e-9,
                        "{what}: p[{i}] {} vs {q}",
                        got.probs()[i as usize]
                    );
                }
            }
            let seeds = rec.i64s(&format!("{name}.draw_seeds")).expect("seeds");
            let positions = rec
                .i64s(&format!("{name}.draw_positions"))
                .expect("positions");
            let tokens = rec.i64s(&format!("{name}.draw_tokens")).expect("tokens");
            for ((&s, &pos), &t) in seeds.iter().zip(&positions).zip(&tokens) {
                let ours = if p.is_greedy() {
                    got.kept()[0]
                } else {
                    gumbel_sample32(scores, s, pos)
                };
                assert_eq!(ours as i64, t, "{what}: seed {s} position {pos}");
                draws += 1;
            }
            // Through the semantics: a seeded request at its own position.
            if !p.is_greedy() {
                let mut params = params.clone();
                params.insert("seed".into(), Value::from(seeds[0] as u64));
                let p = Vllm::AUTO.parse_params(&params).expect("seeded");
                let d = Vllm::AUTO
                    .distribution(&logits, &context, &p)
                    .expect("seeded");
                assert_eq!(positions[0], fixture.input_ids.len() as i64 - 1);
                assert_eq!(d.tokens(), Some(&[tokens[0]][..]), "{what}: seeded draw");
            }
            proc_reproduced += usize::from(processors);
        }
    }
    eprintln!(
        "vllm v2: logits processors (logit bias, allowed ids, penalties): {proc_cases} cases, {proc_reproduced} reproduced bit for bit, {proc_fragile} fragile"
    );
    eprintln!(
        "vllm v2: {cases} cases ({refused} refused: ids outside the vocabulary; {degenerate} refused as unmodelled), {top_p_cases} top-p cases reproduced, {fragile_cases} cases fragile ({fragile_min_p} of them at min-p) (decided by exp/log bits; the interpreter's kept set differs from the replay's on {fragile_differs}, only in reported tokens), {kept_checked} kept sets compared token by token, {draws} interpreted draws replayed, max |dp| {max_dp:e}"
    );
    assert!(top_p_cases >= 100, "{top_p_cases} top-p cases reproduced");
    assert!(cases > 300 && draws > 4500, "{cases} cases, {draws} draws");
    assert_eq!(degenerate, 0, "{degenerate} refused as unmodelled");
    assert!(
        proc_cases >= 400,
        "{proc_cases} logits-processor cases recorded"
    );
    assert_eq!(
        proc_reproduced + proc_fragile,
        proc_cases,
        "every logits-processor case reproduced or reported fragile"
    );
    assert!(
        proc_fragile <= 10,
        "{proc_fragile} logits-processor cases fragile"
    );
}

/// Out-of-vocabulary `logit_bias` / `allowed_token_ids` ids, refused by
/// vLLM 0.33.0's own validators (`SamplingParams._validate_logit_bias`,
/// `_validate_allowed_token_ids`) before any V2 kernel: the same message.
#[test]
fn out_of_vocabulary_ids_give_vllms_own_message() {
    let rec = all()
        .into_iter()
        .find(|r| r.meta.contains_key("rejected"))
        .expect("a file with rejected params");
    let source = rec.meta["source"].as_str().expect("source").to_string();
    let fixture = Fixture::load(&dir().join(&source)).expect("source fixture");
    let context = Context::new(&fixture.input_ids, None).expect("context");
    let logits = Logits::from_f32(&fixture.logits);
    let mut n = 0;
    for r in rec
        .meta_json("rejected")
        .expect("recorded")
        .as_array()
        .expect("list")
    {
        let mut params = r["params"].as_object().expect("params").clone();
        params.insert("runner".into(), Value::from("v2-gpu"));
        let p = Vllm::AUTO.parse_params(&params).expect("valid params");
        let err = Vllm::AUTO
            .distribution(&logits, &context, &p)
            .expect_err("vLLM refused these");
        assert_eq!(
            err.to_string(),
            r["error"].as_str().expect("message"),
            "{params:?}"
        );
        n += 1;
    }
    assert!(n >= 5, "{n}");
}

/// The recorded penalty cases depend on where the prompt ends: replayed
/// with every id taken as prompt (no output, so frequency and presence have
/// nothing to count), the rows of the frequency/presence cases without
/// truncation, on fixtures where a penalty can move an output id's logit,
/// are no longer the interpreter's.
#[test]
fn the_penalty_cases_depend_on_the_prompt_output_split() {
    let mut checked = 0;
    for rec in all() {
        let Some(prompt_len) = rec.meta.get("prompt_len").and_then(Value::as_str) else {
            continue;
        };
        let prompt_len: usize = prompt_len.parse().expect("prompt_len");
        let source = rec.meta["source"].as_str().expect("source").to_string();
        let fixture = Fixture::load(&dir().join(&source)).expect("source fixture");
        // An output id whose logit a penalty of 0.3 or more moves (not
        // -inf, not so large that it is below its ulp).
        let output_finite = fixture.input_ids[prompt_len..]
            .iter()
            .any(|&t| fixture.logits[t as usize].abs() < 1e6);
        if !output_finite {
            continue;
        }
        let all_prompt = Context::new(&fixture.input_ids, None).expect("context");
        let logits = Logits::from_f32(&fixture.logits);
        for case in rec
            .meta_json("cases")
            .expect("cases")
            .as_array()
            .expect("list")
        {
            let mut params = case["params"].as_object().expect("params").clone();
            let counted = ["frequency_penalty", "presence_penalty"].iter().any(|k| {
                params
                    .get(*k)
                    .and_then(Value::as_f64)
                    .is_some_and(|v| v != 0.0)
            });
            // Truncation (top-k, allowed ids) can mask the output ids.
            let truncated =
                params.contains_key("top_k") || params.contains_key("allowed_token_ids");
            if !counted || truncated {
                continue;
            }
            params.insert("runner".into(), Value::from("v2-gpu"));
            let p = Vllm::AUTO.parse_params(&params).expect("params");
            let d = Vllm::AUTO
                .distribution(&logits, &all_prompt, &p)
                .expect("replayed");
            checked += 1;
            let moved = d.scores().map(fnv1a64).as_deref() != case["fnv1a64"].as_str();
            assert!(moved, "{source} {}: same row without output", case["name"]);
        }
    }
    eprintln!(
        "vllm v2: all {checked} frequency/presence cases differ from the recording when every id is taken as prompt"
    );
    assert!(checked >= 60, "{checked}");
}
