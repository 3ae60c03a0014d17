// Run a llama.cpp sampler chain the way `--backend-sampling` runs it, on the
// CPU backend, over given logits, without a model.
//
// llama-server with backend sampling (tools/server/server-context.cpp, the
// `use_backend_sampling` block) hands the request's chain to
// `llama_set_sampler`; `llama_context::set_sampler` (src/llama-context.cpp)
// calls the chain's `backend_init` with the output device's buffer type, and
// every decode's graph then ends in `llm_graph_context::build_sampling`
// (src/llama-graph.cpp): the logits row, padded by one dummy row and viewed
// back (`ggml_pad`, `ggml_view_1d`), goes through the chain's
// `backend_apply`, the chain's `backend_set_input` fills the inputs (dist's
// uniform), the graph is computed, and the server reads the sampled token
// (`llama_get_sampled_token_ith`) or, when only a prefix of the chain ran on
// the backend, the candidates, logits and probabilities the prefix left
// (`common_sampler::set_logits` in common/sampling.cpp) and runs the rest of
// the chain on the CPU (`llama_sampler_chain_apply` skips the offloaded
// prefix). This file does the same steps through the public API of
// include/llama.h (`llama_sampler_i`'s backend members, `llama_sampler_data`)
// and ggml's CPU backend, for scripts/reference/llamacpp/record_backend.py.
//
// Built by scripts/reference/llamacpp/setup-build.sh against that build's
// libllama and libggml.

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "llama.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>

struct bs_graph {
    ggml_context * ctx = nullptr;
    ggml_cgraph * gf = nullptr;
    ggml_tensor * logits = nullptr;  // the decode's output row (input here)
    llama_sampler_data data = {};
    ggml_backend_t backend = nullptr;
    ggml_gallocr_t galloc = nullptr;
    int32_t n_vocab = 0;
};

extern "C" {

// llama_context::set_sampler's offload test and backend_init: true when the
// whole chain runs on the backend, false when only a prefix (or nothing) does.
bool bs_init(llama_sampler * chain) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);
    return chain->iface->backend_init(chain, buft, /* n_outputs_max_per_seq = */ 1);
}

// build_sampling for one output row of one sequence.
bs_graph * bs_build(llama_sampler * chain, int32_t n_vocab) {
    auto * g = new bs_graph;
    g->n_vocab = n_vocab;
    ggml_init_params ip = {
        /* .mem_size   = */ 8192 * ggml_tensor_overhead() + ggml_graph_overhead_custom(8192, false),
        /* .mem_buffer = */ nullptr,
        /* .no_alloc   = */ true,
    };
    g->ctx = ggml_init(ip);
    g->gf = ggml_new_graph_custom(g->ctx, 8192, false);
    g->logits = ggml_new_tensor_2d(g->ctx, GGML_TYPE_F32, n_vocab, 1);
    ggml_set_input(g->logits);
    ggml_tensor * logits_t = ggml_pad(g->ctx, g->logits, 0, 1, 0, 0);
    ggml_tensor * row = ggml_view_1d(g->ctx, logits_t, logits_t->ne[0], 0);
    if (chain->iface->backend_reset) {
        chain->iface->backend_reset(chain);
    }
    g->data = { row, nullptr, nullptr, nullptr };
    chain->iface->backend_apply(chain, g->ctx, g->gf, &g->data);
    for (ggml_tensor * t : { g->data.sampled, g->data.probs, g->data.logits, g->data.candidates }) {
        if (t) {
            ggml_set_output(t);
            ggml_build_forward_expand(g->gf, t);
        }
    }
    g->backend = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(g->backend, 1);
    g->galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(g->backend));
    if (!ggml_gallocr_alloc_graph(g->galloc, g->gf)) {
        return nullptr;
    }
    return g;
}

// One decode's sampling: set inputs, compute, read back. Returns the number of
// candidates written to ids/logits/probs (n_vocab when the chain filtered
// nothing on the backend); *sampled is the backend's token or -1 (LLAMA_TOKEN_NULL)
// when the chain's dist did not run on the backend; *has_probs says whether probs
// were produced.
int32_t bs_run(bs_graph * g, llama_sampler * chain, const float * logits,
               int32_t * sampled, int32_t * ids, float * out_logits, float * probs, int32_t * has_probs) {
    ggml_backend_tensor_set(g->logits, logits, 0, sizeof(float) * g->n_vocab);
    chain->iface->backend_set_input(chain);
    if (ggml_backend_graph_compute(g->backend, g->gf) != GGML_STATUS_SUCCESS) {
        return -1;
    }
    *sampled = -1;
    if (g->data.sampled) {
        ggml_backend_tensor_get(g->data.sampled, sampled, 0, sizeof(int32_t));
    }
    const int32_t n = g->data.candidates ? (int32_t) ggml_nelements(g->data.candidates)
                      : (int32_t) ggml_nelements(g->data.logits);
    if (g->data.candidates) {
        ggml_backend_tensor_get(g->data.candidates, ids, 0, sizeof(int32_t) * n);
    } else {
        for (int32_t i = 0; i < n; i++) {
            ids[i] = i;
        }
    }
    ggml_backend_tensor_get(g->data.logits, out_logits, 0, sizeof(float) * n);
    *has_probs = g->data.probs != nullptr;
    if (g->data.probs) {
        ggml_backend_tensor_get(g->data.probs, probs, 0, sizeof(float) * n);
    }
    return n;
}

void bs_free(bs_graph * g) {
    ggml_gallocr_free(g->galloc);
    ggml_backend_free(g->backend);
    ggml_free(g->ctx);
    delete g;
}

}  // extern "C"
