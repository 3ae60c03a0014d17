//! What each server's API does with log-probabilities: how the probe asks
//! for the raw top list and for one draw, the most entries one answer may
//! hold, and at which stage of the sampler the returned logprobs are. Each
//! fact is read from the server's source at the version named.
//!
//! The raw list is always asked for with `temperature: 0` and no sampling
//! fields, so on every server below it is the softmax of the model's logits
//! before any sampler (the penalties and logit biases of the request only,
//! and the probe sends none): that is the stage the candidates need.

use serde_json::{Value, json};

/// How one API asks for logprobs and what they are.
#[derive(Debug)]
pub struct Dialect {
    /// The `--api` name.
    pub name: &'static str,
    /// The most top logprobs one answer holds (`None`: no cap).
    pub max_top: Option<usize>,
    /// The value that asks for the whole vocabulary, where there is one.
    pub whole: Option<i64>,
    /// `logprobs: true` plus `top_logprobs: K` (chat style) instead of
    /// `logprobs: K` (legacy completions style).
    pub bool_logprobs: bool,
    /// Ask for token ids instead of texts (`return_tokens_as_token_ids`).
    pub token_ids: bool,
    /// Which stage the logprobs are, and where that is read.
    pub stage: &'static str,
    /// What to tell a user whose server answered without logprobs.
    pub no_logprobs: &'static str,
    /// The `owned_by` this server writes in every `/v1/models` entry, where
    /// its source fixes one: `--api openai` against it speaks this dialect.
    pub owned_by: Option<&'static str>,
    /// Where an answer to a draw holds the drawn token's log-probability at
    /// the raw list's stage, if it does ([`DrawLogprob`]).
    pub draw_logprob: Option<DrawLogprob>,
    /// What `--repeat` tells about this server, where it can measure it
    /// ([`Repeat`]).
    pub repeat: Option<Repeat>,
}

/// `--repeat`'s advice for a server it can measure: one that returns the
/// whole raw distribution and has a per-request cache switch.
#[derive(Debug)]
pub struct Repeat {
    /// What that server returns and switches, for the refusal of another.
    pub why: &'static str,
    /// How to start it with more than one slot (the concurrent condition).
    pub more_slots: &'static str,
    /// The documented fix when a cached prompt moved the logits.
    pub cold_warm_fix: &'static str,
    /// The documented fix when batching with another request moved them.
    pub concurrent_fix: &'static str,
}

/// A draw's own log-probability: the probe adds each drawn token the raw top
/// list does not name to the known tokens, with its exact probability, so a
/// truncated list grows with the draws.
#[derive(Debug)]
pub struct DrawLogprob {
    /// The JSON pointer into `choices[0]` of a draw's answer.
    pub pointer: &'static str,
    /// Request fields under which the returned log-probability is not the
    /// raw list's (they change the logits before it is taken).
    pub unless: &'static [&'static str],
}

impl DrawLogprob {
    /// Whether a draw under `request` returns the raw list's stage.
    pub fn applies(&self, request: &serde_json::Map<String, Value>) -> bool {
        self.unless
            .iter()
            .all(|f| request.get(*f).is_none_or(Value::is_null))
    }
}

impl Dialect {
    /// Writes the fields asking for `k` top logprobs into a request body.
    pub fn ask_top(&self, own: &mut Value, k: Value) {
        let Value::Object(o) = own else { return };
        if self.bool_logprobs {
            o.insert("logprobs".into(), json!(true));
            o.insert("top_logprobs".into(), k);
        } else {
            o.insert("logprobs".into(), k);
        }
        if self.token_ids {
            o.insert("return_tokens_as_token_ids".into(), json!(true));
        }
    }

    /// Writes the fields that make the answer name the drawn token.
    pub fn ask_draw(&self, own: &mut Value) {
        let Value::Object(o) = own else { return };
        if self.bool_logprobs {
            // No `top_logprobs`: mlx_lm.server then writes `content[0]` =
            // `{id: the generated token, logprob}`; with it `content[0]` is
            // `dict(top[0], top_logprobs=top)`, the first of an
            // argpartition, not the draw (mlx_lm/server.py
            // `generate_response`, 0.32.2).
            o.insert("logprobs".into(), json!(true));
        } else {
            o.insert("logprobs".into(), json!(1));
        }
        if self.token_ids {
            o.insert("return_tokens_as_token_ids".into(), json!(true));
        }
    }
}

const NO_LOGPROBS: &str = "does the server return logprobs?";

/// llama.cpp 0c1e57098 tools/server: `n_probs` has no upper limit;
/// `post_sampling_probs: false` gives log p of the raw logits' softmax
/// (`get_token_probabilities`, server-common.cpp), `true` the
/// probabilities after the whole chain (`populate_token_probs`,
/// server-context.cpp).
pub const LLAMA_SERVER: Dialect = Dialect {
    name: "llama-server",
    max_top: None,
    whole: None,
    bool_logprobs: false,
    token_ids: false,
    stage: "raw (`post_sampling_probs: false`) or after the whole chain (`true`): \
            tools/server/server-common.cpp `get_token_probabilities`, \
            server-context.cpp `populate_token_probs` (llama.cpp 0c1e57098)",
    no_logprobs: NO_LOGPROBS,
    owned_by: None,
    draw_logprob: None,
    repeat: Some(Repeat {
        why: "only llama-server returns the whole raw distribution and has a per-request \
              cache switch (cache_prompt)",
        more_slots: "start llama-server with -np 2 or more",
        cold_warm_fix: "send \"cache_prompt\": false (or start llama-server with \
                        --no-cache-prompt): \"the logits are not guaranteed to be bit-for-bit \
                        identical for different batch sizes (prompt processing vs. token \
                        generation)\" (tools/server/README.md:587, llama.cpp 0c1e57098)",
        concurrent_fix: "serve one request at a time (-np 1): with several slots the server \
                         decodes every slot's tokens in one batch \
                         (tools/server/server-context.cpp:3082, llama.cpp 0c1e57098)",
    }),
};

/// Any OpenAI-compatible server: `logprobs: K`, capped at 20 as the usual
/// servers do; the stage is the server's own (see the named dialects).
pub const OPENAI: Dialect = Dialect {
    name: "openai",
    max_top: Some(20),
    whole: None,
    bool_logprobs: false,
    token_ids: false,
    stage: "unknown: the server's own; name it with --api where the probe knows it",
    no_logprobs: NO_LOGPROBS,
    owned_by: None,
    draw_logprob: None,
    repeat: None,
};

/// vLLM 0.33.0: `logprobs: -1` asks for the whole vocabulary
/// (vllm/entrypoints/openai/completion/protocol.py accepts -1;
/// vllm/sampling_params.py `_validate_logprobs` turns it into the
/// vocabulary size and refuses more than `--max-logprobs`, default 20,
/// `-1` = no cap, vllm/config/model.py `max_logprobs`).
/// `--logprobs-mode` (vllm/config/model.py `logprobs_mode`, default
/// `raw_logprobs`: "before applying any logit processors"; the
/// `processed_*` modes are "after applying all processors, including
/// temperature and top_k/top_p"); the probe's raw request has temperature 0
/// and no processors, so either mode gives the raw softmax there, and draws
/// read only the token. `return_tokens_as_token_ids` names tokens
/// `token_id:N`.
pub const VLLM: Dialect = Dialect {
    name: "vllm",
    max_top: None,
    whole: Some(-1),
    bool_logprobs: false,
    token_ids: true,
    stage: "raw by default (`--logprobs-mode raw_logprobs`, vllm/config/model.py, 0.33.0); \
            processed modes are after temperature/top-k/top-p; the probe's raw request \
            (temperature 0, no processors) is the raw softmax in either",
    no_logprobs: NO_LOGPROBS,
    // vllm/entrypoints/openai/engine/protocol.py `ModelCard.owned_by: str =
    // "vllm"`; vLLM 0.32.0's answer in fixtures/server-probe/vllm.json.
    owned_by: Some("vllm"),
    draw_logprob: None,
    repeat: None,
};

/// SGLang 0.5.23: `logprobs: K` becomes `top_logprobs_num`
/// (sglang/srt/entrypoints/openai/serving_completions.py). In
/// sglang/srt/layers/sampler.py a greedy batch (temperature 0) returns
/// `log_softmax(logits)`, raw; a sampled one returns logprobs after
/// temperature unless `SGLANG_RETURN_ORIGINAL_LOGPROB` is set. The probe's
/// raw request is greedy.
pub const SGLANG: Dialect = Dialect {
    name: "sglang",
    max_top: Some(20),
    whole: None,
    bool_logprobs: false,
    token_ids: false,
    stage: "raw for greedy requests, after temperature for sampled ones unless \
            SGLANG_RETURN_ORIGINAL_LOGPROB (sglang/srt/layers/sampler.py, 0.5.23); \
            the probe's raw request is greedy",
    no_logprobs: NO_LOGPROBS,
    // sglang/srt/entrypoints/openai/protocol.py `ModelCard.owned_by: str =
    // "sglang"`.
    owned_by: Some("sglang"),
    draw_logprob: None,
    repeat: None,
};

/// mlx_lm.server 0.32.2 (mlx_lm/server.py): `_validate` takes `logprobs`
/// as a bool and `top_logprobs` as an int in 0..=11 (or -1);
/// `_format_top_logprobs` lists the top N by `mx.argpartition` (unsorted);
/// the logprobs are `logits - logsumexp(logits)` after the logits
/// processors (penalties, logit bias) and before the sampler
/// (mlx_lm/generate.py `_step`).
pub const MLX_LM: Dialect = Dialect {
    name: "mlx-lm",
    max_top: Some(11),
    whole: None,
    bool_logprobs: true,
    token_ids: false,
    stage: "after the logits processors (penalties), before temperature and the filters \
            (mlx_lm/generate.py `_step`, 0.32.2)",
    no_logprobs: NO_LOGPROBS,
    owned_by: None,
    // generate.py `_step` (and `BatchGenerator._step`), 0.32.2: `logprobs =
    // logits - logsumexp(logits)` after the request's logits processors and
    // before the sampler, the one array `_format_top_logprobs` lists the raw
    // top from and `generate_response` reads `logprobs[token]` from
    // (server.py: `r.logprobs[r.token].item()`), written as
    // `content[0].logprob` when the request has no `top_logprobs`. The
    // processors are built from these fields (server.py
    // `_make_logits_processors`, sample_utils.py `make_logits_processors`).
    draw_logprob: Some(DrawLogprob {
        pointer: "/logprobs/content/0/logprob",
        unless: &[
            "logit_bias",
            "repetition_penalty",
            "presence_penalty",
            "frequency_penalty",
        ],
    }),
    repeat: None,
};

/// transformers serve 5.23.0: `logprobs` is in
/// `UNUSED_LEGACY_COMPLETION_FIELDS` (transformers/cli/serving/completion.py):
/// it warns and answers `logprobs=None`; an unknown field is a 422
/// (`_validate_request`, transformers/cli/serving/utils.py), and the prompt
/// must be a string.
pub const TRANSFORMERS_SERVE: Dialect = Dialect {
    name: "transformers-serve",
    max_top: Some(20),
    whole: None,
    bool_logprobs: false,
    token_ids: false,
    stage: "none: transformers serve 5.23.0 returns no logprobs \
            (transformers/cli/serving/completion.py UNUSED_LEGACY_COMPLETION_FIELDS)",
    no_logprobs: "transformers serve 5.23.0 returns no logprobs (`logprobs` is one of its \
                  UNUSED_LEGACY_COMPLETION_FIELDS, transformers/cli/serving/completion.py): \
                  give --raw-from FILE (a --record file of another server on the same \
                  model and prompt, whose raw list stands in) and --vocab FILE (the token \
                  strings, to read each drawn text as its id), with --samples N",
    owned_by: None,
    draw_logprob: None,
    repeat: None,
};

/// Ollama's OpenAI layer: `logprobs` / `top_logprobs` at most 20, raw
/// log-probabilities (docs/probe.md, Ollama section).
pub const OLLAMA_V1: Dialect = Dialect {
    name: "ollama-v1",
    max_top: Some(20),
    whole: None,
    bool_logprobs: false,
    token_ids: false,
    stage: "raw (Ollama 0.12.11 or later returns logprobs)",
    no_logprobs: "Ollama 0.12.11 or later returns logprobs",
    owned_by: None,
    draw_logprob: None,
    repeat: None,
};

/// Ollama's native `/api/generate`: `logprobs: true, top_logprobs: K`, K at
/// most 20.
pub const OLLAMA: Dialect = Dialect {
    name: "ollama",
    max_top: Some(20),
    whole: None,
    bool_logprobs: true,
    token_ids: false,
    stage: "raw (Ollama 0.12.11 or later returns logprobs)",
    no_logprobs: "Ollama 0.12.11 or later returns logprobs",
    owned_by: None,
    draw_logprob: None,
    repeat: None,
};
