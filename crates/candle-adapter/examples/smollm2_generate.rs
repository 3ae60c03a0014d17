//! Generate text with SmolLM2-135M-Instruct through candle-transformers'
//! quantized llama, sampling with transformers' semantics via the drop-in
//! `candle_adapter::dropin::HfLogitsProcessor`.
//!
//! The model is not in CI: fetch it first with `scripts/fetch-model.sh`
//! (into `.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf`), then
//!
//! ```text
//! cargo run --release -p candle-adapter --example smollm2_generate -- \
//!     [--prompt "Write a haiku about rust."] [--max-new 60] [--seed 42] \
//!     [--temperature 0.7] [--top-k 40] [--top-p 0.9] [--min-p 0.05] [--repetition-penalty 1.1]
//! cargo run --release -p candle-adapter --example smollm2_generate -- --vs-transformers
//! ```
//!
//! `--vs-transformers` replays the real transformers generations of
//! `fixtures/torch/smollm2_generate.jsonl` (same prompt, kwargs and
//! `torch.manual_seed`) with candle's model and the drop-in's torch-seeded
//! mode, and prints per generation how many tokens agree before the first
//! divergence and whether the logits or the sampler caused it: at that step
//! the context is still transformers', so if candle's processed scores on
//! the recorded kept ids equal the recorded ones, the sampler diverged (it
//! must not); otherwise the logits did.
//!
//! The model is loaded by `candle_adapter::model::QuantizedLlama` (the
//! runner `compare trace` uses). The tokenizer is rebuilt offline from the GGUF's own metadata
//! (`tokenizer.ggml.tokens`/`merges`, GPT-2 byte-level BPE): a plain BPE
//! encoder here, enough for a chat prompt (the pre-tokenizer splits before
//! spaces and punctuation, not with GPT-2's full regex), and an exact decoder.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use candle_adapter::dropin::HfLogitsProcessor;
use candle_adapter::model::{Expected, QuantizedLlama};
use candle_core::{Device, Tensor};
use hf_sampling::GenerationParams;

type AnyResult<T> = Result<T, Box<dyn std::error::Error>>;

struct Tokenizer {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    ranks: HashMap<(String, String), usize>,
    byte_char: [char; 256],
    char_byte: HashMap<char, u8>,
}

impl Tokenizer {
    fn from_model(model: &QuantizedLlama) -> AnyResult<Self> {
        if model.tokenizer_model() != Some("gpt2") {
            return Err(format!(
                "tokenizer model {:?}: only gpt2 byte-level BPE is supported",
                model.tokenizer_model()
            )
            .into());
        }
        let tokens = model.tokens().to_vec();
        let mut ranks = HashMap::new();
        for (rank, m) in model.merges().iter().enumerate() {
            if let Some((a, b)) = m.split_once(' ') {
                ranks.insert((a.to_owned(), b.to_owned()), rank);
            }
        }
        let ids = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        // GPT-2's bytes_to_unicode.
        let mut byte_char = ['\0'; 256];
        let mut n = 0u32;
        for b in 0..=255u8 {
            let printable = (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
            byte_char[b as usize] = if printable {
                char::from(b)
            } else {
                n += 1;
                char::from_u32(255 + n).ok_or("bytes_to_unicode")?
            };
        }
        let char_byte = (0..=255u8).map(|b| (byte_char[b as usize], b)).collect();
        Ok(Self {
            tokens,
            ids,
            ranks,
            byte_char,
            char_byte,
        })
    }

    fn special(&self, s: &str) -> AnyResult<u32> {
        self.ids
            .get(s)
            .copied()
            .ok_or_else(|| format!("no special token {s}").into())
    }

    /// Byte-level BPE of plain text (no special tokens inside).
    fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        // Pieces: a run of letters/digits with its leading space, or one other char.
        let mut pieces: Vec<String> = Vec::new();
        for ch in text.chars() {
            let join = match pieces.last() {
                Some(last) => {
                    ch.is_alphanumeric()
                        && last
                            .chars()
                            .last()
                            .is_some_and(|c| c.is_alphanumeric() || c == ' ')
                        && !(last.chars().all(|c| c == ' ') && last.len() > 1)
                }
                None => false,
            };
            if join {
                if let Some(p) = pieces.last_mut() {
                    p.push(ch);
                }
            } else {
                pieces.push(ch.to_string());
            }
        }
        for piece in pieces {
            let mut parts: Vec<String> = piece
                .bytes()
                .map(|b| self.byte_char[b as usize].to_string())
                .collect();
            loop {
                let best = (0..parts.len().saturating_sub(1))
                    .filter_map(|i| {
                        self.ranks
                            .get(&(parts[i].clone(), parts[i + 1].clone()))
                            .map(|&r| (r, i))
                    })
                    .min();
                let Some((_, i)) = best else { break };
                let merged = format!("{}{}", parts[i], parts[i + 1]);
                parts.splice(i..i + 2, [merged]);
            }
            out.extend(parts.iter().filter_map(|p| self.ids.get(p).copied()));
        }
        out
    }

    fn decode(&self, id: u32) -> Vec<u8> {
        let tok = self
            .tokens
            .get(id as usize)
            .map(String::as_str)
            .unwrap_or("");
        if tok.starts_with("<|") && tok.ends_with("|>") {
            return Vec::new();
        }
        tok.chars()
            .filter_map(|c| self.char_byte.get(&c).copied())
            .collect()
    }
}

struct Args {
    model: PathBuf,
    prompt: String,
    max_new: usize,
    seed: u64,
    params: GenerationParams,
    vs_transformers: bool,
}

fn parse_args() -> AnyResult<Args> {
    let mut a = Args {
        model: PathBuf::from(".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"),
        prompt: "Write a haiku about the Rust programming language.".into(),
        max_new: 60,
        seed: 42,
        // SmolLM2-Instruct's generation_config.json samples with T = 0.2,
        // top-p 0.9; these are livelier defaults for a demo.
        params: GenerationParams {
            do_sample: true,
            temperature: 0.7,
            top_k: Some(40),
            top_p: 0.9,
            repetition_penalty: 1.1,
            ..GenerationParams::default()
        },
        vs_transformers: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => a.model = val()?.into(),
            "--prompt" => a.prompt = val()?,
            "--max-new" => a.max_new = val()?.parse()?,
            "--seed" => a.seed = val()?.parse()?,
            "--temperature" => a.params.temperature = val()?.parse()?,
            "--top-k" => a.params.top_k = Some(val()?.parse()?).filter(|&k| k > 0),
            "--top-p" => a.params.top_p = val()?.parse()?,
            "--min-p" => a.params.min_p = Some(val()?.parse()?),
            "--repetition-penalty" => a.params.repetition_penalty = val()?.parse()?,
            "--greedy" => a.params.do_sample = false,
            "--vs-transformers" => a.vs_transformers = true,
            _ => return Err(format!("unknown argument {flag}").into()),
        }
    }
    Ok(a)
}

fn main() -> AnyResult<()> {
    let args = parse_args()?;
    let mut model = QuantizedLlama::load(&args.model, &Expected::default())
        .map_err(|e| format!("{e}\nhint: fetch it with scripts/fetch-model.sh"))?;
    let tok = Tokenizer::from_model(&model)?;
    let device = Device::Cpu;
    if args.vs_transformers {
        return vs_transformers(&mut model);
    }

    // SmolLM2's ChatML template.
    let (start, end) = (tok.special("<|im_start|>")?, tok.special("<|im_end|>")?);
    let nl = tok.encode("\n");
    let mut prompt = vec![start];
    prompt.extend(tok.encode("system"));
    prompt.extend(&nl);
    prompt
        .extend(tok.encode("You are a helpful AI assistant named SmolLM, trained by Hugging Face"));
    prompt.push(end);
    prompt.extend(&nl);
    prompt.push(start);
    prompt.extend(tok.encode("user"));
    prompt.extend(&nl);
    prompt.extend(tok.encode(&args.prompt));
    prompt.push(end);
    prompt.extend(&nl);
    prompt.push(start);
    prompt.extend(tok.encode("assistant"));
    prompt.extend(&nl);

    let mut sampler = HfLogitsProcessor::new(args.seed, &args.params)?;
    sampler.set_prompt(&prompt);
    eprintln!("{} prompt tokens, {:?}", prompt.len(), args.params);

    let mut out = std::io::stdout().lock();
    let t0 = std::time::Instant::now();
    let mut sample_time = std::time::Duration::ZERO;
    let mut input = prompt.clone();
    let mut pos = 0;
    let mut generated = 0;
    for _ in 0..args.max_new {
        let logits = Tensor::new(model.forward(&input, pos)?, &device)?;
        pos += input.len();
        let t = std::time::Instant::now();
        let next = sampler.sample(&logits)?;
        sample_time += t.elapsed();
        generated += 1;
        if next == end {
            break;
        }
        out.write_all(&tok.decode(next))?;
        out.flush()?;
        input = vec![next];
    }
    writeln!(out)?;
    eprintln!(
        "{generated} tokens in {:.2?}; sampling {:.1} µs/token",
        t0.elapsed(),
        sample_time.as_secs_f64() * 1e6 / generated.max(1) as f64
    );
    Ok(())
}

/// One recorded transformers generation, as `scripts/reference/torch_draws.py`
/// wrote it.
struct Recorded {
    name: String,
    prompt: Vec<u32>,
    params: GenerationParams,
    seed: u64,
    tokens: Vec<u32>,
    /// Per step: the kept ids and their processed scores.
    steps: Vec<(Vec<usize>, Vec<f32>)>,
}

fn recorded() -> AnyResult<Vec<Recorded>> {
    let path = parity_core::fixture::bundled_dir()?.join("torch/smollm2_generate.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let ids = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let r: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        let kwargs = r["kwargs"].as_object().ok_or("kwargs is not an object")?;
        let steps = r["steps"]
            .as_array()
            .ok_or("no steps")?
            .iter()
            .map(|s| {
                let kept = ids(&s["kept"]).into_iter().map(|k| k as usize).collect();
                let scores = s["scores"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_f64())
                            .map(|x| x as f32)
                            .collect()
                    })
                    .unwrap_or_default();
                (kept, scores)
            })
            .collect();
        out.push(Recorded {
            name: format!(
                "{} {} seed {}",
                r["prompt_id"].as_str().unwrap_or("?"),
                r["setting"].as_str().unwrap_or("?"),
                r["seed"]
            ),
            prompt: ids(&r["prompt_ids"])
                .into_iter()
                .map(|t| t as u32)
                .collect(),
            params: hf_sampling::resolve(kwargs, None)?,
            seed: r["seed"].as_u64().ok_or("seed is not an integer")?,
            tokens: ids(&r["tokens"]).into_iter().map(|t| t as u32).collect(),
            steps,
        });
    }
    Ok(out)
}

fn vs_transformers(model: &mut QuantizedLlama) -> AnyResult<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "generation                agree  of  first divergence and its cause"
    )?;
    for r in recorded()? {
        model.reset();
        let mut sampler = HfLogitsProcessor::torch_seeded(r.seed, &r.params)?;
        sampler.set_prompt(&r.prompt);
        let mut context: Vec<i64> = r.prompt.iter().map(|&t| i64::from(t)).collect();
        let (mut input, mut pos) = (r.prompt.clone(), 0);
        let mut verdict = None;
        let mut agree = 0;
        for (t, &want) in r.tokens.iter().enumerate() {
            let logits = model.forward(&input, pos)?;
            pos += input.len();
            let got = sampler.sample(&Tensor::new(logits.as_slice(), &Device::Cpu)?)?;
            if got != want {
                // The context is still transformers': compare what the
                // processors make of candle's logits with the recording.
                let ours = hf_sampling::process(&logits, &context, &r.params)?;
                let (kept, scores) = &r.steps[t];
                let moved = kept.iter().filter(|id| !ours.kept.contains(id)).count()
                    + ours.kept.iter().filter(|id| !kept.contains(id)).count();
                let diff = kept
                    .iter()
                    .zip(scores)
                    .map(|(&id, &s)| (ours.scores[id] - s).abs())
                    .fold(0.0f32, f32::max);
                verdict = Some(if moved == 0 && diff == 0.0 {
                    format!("step {t}: THE SAMPLER (same processed scores, token {got} vs {want})")
                } else if moved > 0 {
                    format!(
                        "step {t}: the logits (kept {} vs {}, {moved} ids in one set only)",
                        ours.kept.len(),
                        kept.len()
                    )
                } else {
                    format!("step {t}: the logits (same kept ids, max |Δscore| {diff:.3})")
                });
                break;
            }
            agree += 1;
            context.push(i64::from(want));
            input = vec![want];
        }
        writeln!(
            out,
            "{:<24}  {agree:>5}  {:>3}  {}",
            r.name,
            r.tokens.len(),
            verdict.unwrap_or_else(|| "none".to_string())
        )?;
    }
    Ok(())
}
