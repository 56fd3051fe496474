/* turnip/models.h - workload builders that produce TaskGraphs (models layer: above graph,
 * beside plan; nothing here knows the planner or the executor), and the naming of their
 * inputs. Loading weights into a run is the app layer's (turnip/app.h). */
#ifndef TURNIP_MODELS_H
#define TURNIP_MODELS_H

#include <stddef.h>
#include <stdint.h>
#include "turnip/error.h"
#include "turnip/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A transformer-like layered graph of opaque kernels (sizes and flops only), decomposed
 * over `devices` the way the paper decomposes attention: per layer and device, `heads`
 * attention heads as parallel lanes (q, k, v projections; T x T scores; softmax; weighted
 * sum; output projection) accumulated in a chain, then an MLP in `chunks` column chunks,
 * each stage emitted for all lanes before the next (the order the paper feeds its planner,
 * so decomposed contractions sit together in V). Partial sums are reduced on device 0 and
 * broadcast back with transfers. Weights are inputs.
 * With `backward`, a training-shaped graph: after the forward pass a loss kernel per device,
 * then the layers in reverse, each reading the activations its forward half saved (MLP: the
 * act and up outputs and the MLP's input; attention: softmax, v, q, k per head) and reducing
 * the input gradient across devices as the forward pass does; the last input gradient is the
 * output (weight gradients are not modelled). */
typedef struct tp_layered_opts {
    int devices;      /* 1..TP_MAX_DEVICES */
    int layers;       /* >= 1 */
    int heads;        /* attention heads per device, >= 1 */
    int chunks;       /* MLP column chunks per device, >= 1 */
    int64_t seq;      /* tokens T */
    int64_t head_dim; /* hidden size is devices * heads * head_dim */
    int dtype_bytes;  /* 2 for 16-bit */
    int backward;     /* 1: forward then backward (training-shaped), 0: forward only */
} tp_layered_opts;

void tp_layered_opts_init(tp_layered_opts *o);
/* Vertices the graph will have (UINT64_MAX when that overflows). */
uint64_t tp_layered_vertices(const tp_layered_opts *o);
tp_status tp_model_layered(const tp_layered_opts *o, tp_graph **out, tp_error *err);

/* ---- LLaMA prefill (Hugging Face semantics) -------------------------------------------- */

typedef struct tp_llama_config {
    int64_t hidden, intermediate, heads, kv_heads, layers, vocab;
    double eps, theta;
    tp_dtype dtype;     /* storage dtype of the weights (torch_dtype) */
    int tie_embeddings; /* lm_head shares model.embed_tokens.weight */
} tp_llama_config;

/* Reads a Hugging Face config.json; a missing or mistyped field is an error naming it. */
tp_status tp_llama_config_read(const char *path, tp_llama_config *c, tp_error *err);
/* Built-in shapes: tiny, 7b, 13b, 65b, llama3-8b, llama2-70b. */
tp_status tp_llama_preset(const char *name, tp_llama_config *c, tp_error *err);

typedef struct tp_llama_opts {
    int devices;      /* attention heads, MLP columns and vocabulary split over them: whole KV
                         groups per device when devices <= KV heads, else contiguous query heads
                         (a group split over devices has its keys and values computed on each;
                         a device may have no heads when devices > heads) */
    int64_t seq;      /* prompt tokens T (of each sequence) */
    int blocks;       /* query blocks: attention runs T/blocks query rows at a time */
    int all_logits;   /* output logits for every position, not just the last */
    int mlp_chunks;   /* column chunks of each device's MLP slice (>= 1) */
    int vocab_chunks; /* row chunks of each device's vocabulary slice, for lm_head and embedding */
    int64_t batch;    /* B prompts of T tokens each (1..TP_LLAMA_MAX_BATCH, B x T <= TP_LLAMA_MAX_SEQ) */
    int kv_out;       /* 1: every layer's keys (after RoPE) and values are outputs too */
    int residual;     /* where the residual stream lives (tp_llama_residual; 0: gather) */
    int attention;    /* how a block's attention is computed (tp_llama_attention): zero-initialized
                         options get SCORES (0, as before it existed); tp_llama_opts_default sets FUSED */
} tp_llama_opts;

/* How attention runs per (query head, row block).
 * SCORES: three vertices, the scores (a matmul, [rows, keys]), the causal softmax and its product
 *   with the values: the scores are a tensor the planner places, T/B x T per head at a time, so
 *   the blocks B must grow with T^2 to bound memory and the graph grows with T^2 (the paper's
 *   decomposition).
 * FUSED: one `attention` vertex (docs/ops.md) reading the query rows, keys and values; the
 *   scores exist only inside the kernel, a tile of rows at a time, as FlashAttention keeps them
 *   (the cpu kernel's scores: 16 MiB of scratch at most unless one row is longer, beside f32
 *   copies of 16-bit operands; the cuda backend composes the same steps through device memory,
 *   not as a FlashAttention kernel). Its memory does not
 *   grow with the scores, so blocks stay TP_LLAMA_FUSED_ROWS rows (chunked prefill) and the
 *   graph grows with T. */
enum tp_llama_attention { TP_LLAMA_SCORES = 0, TP_LLAMA_FUSED = 1 };

/* The most rows of a FUSED block tp_llama_opts_default and tp_llama_opts_attention choose. */
#define TP_LLAMA_FUSED_ROWS 8192

/* Where the residual stream lives between the per-device halves of a layer.
 * GATHER: on device 0, block by block; every device reads it by a transfer and norms it, the
 *   devices' partial sums come back to device 0 (its peer-in link carries D - 1 partials of
 *   every block twice a layer).
 * SCATTER: row slices: each block's rows are split into min(D, rows) pieces, piece j on device
 *   j, which norms its rows (RMSNorm is per row); every device gathers the normed pieces it needs
 *   (all-gather), and each partial sum is cut into the same pieces, each summed on its owner
 *   (reduce-scatter): every link carries about 2 (D - 1) / D blocks per layer half. */
enum tp_llama_residual { TP_LLAMA_GATHER = 0, TP_LLAMA_SCATTER = 1 };

/* Fills o: batch 1, kv_out 0, FUSED attention, blocks as tp_llama_opts_attention chooses them,
 * chunks so a weight chunk is at most cap/8. */
void tp_llama_opts_default(tp_llama_opts *o, const tp_llama_config *c, int devices, int64_t seq, uint64_t cap);

/* Sets o->attention and the blocks for it (o->seq set): SCORES, enough that one head's scores
 * take ~1/16 of `cap`; FUSED, blocks of at most TP_LLAMA_FUSED_ROWS rows and few enough rows
 * that a block of the residual stream takes ~1/64 of `cap`, and at least 2 (one block leaves
 * the devices no block to pipeline). Never more than the tokens. Call tp_llama_opts_residual after. */
void tp_llama_opts_attention(tp_llama_opts *o, const tp_llama_config *c, uint64_t cap, int attention);

/* Sets o->residual; for TP_LLAMA_SCATTER also raises o->blocks to min(devices, ceil(seq / 1024))
 * (capped at seq): the devices' pieces then pipeline across blocks while no block gets so short
 * that its matmuls turn memory-bound (docs/simulation.md, "Paper-scale schedules"). */
void tp_llama_opts_residual(tp_llama_opts *o, int residual);

/* The planner's serial order for the graph of o: the builder's (TP_ORDER_TOPO) for SCATTER
 * and for FUSED attention (its blocks grow with T, not T^2: many at long prompts), where
 * depth-first would run one block through every layer before the next and keep every block's
 * keys and values live meanwhile; TP_ORDER_DEFAULT otherwise. */
tp_order tp_llama_plan_order(const tp_llama_opts *o);

/* Builds the prefill TaskGraph (finalized). Weight inputs are named after Hugging Face tensors,
 * with a slice and a device suffix where split: "NAME", "NAME#rA:B" (rows A..B-1), "NAME#cA:B"
 * (columns), then "@dN" for copies on device N > 0; one input per weight slice, shared by every
 * sequence. "input_ids" (i32 [B x T], sequence-major) holds the prompts; the output "logits" is
 * f32 [B, vocab], the last position of each sequence (with all_logits [B x T, vocab], every
 * position, sequence-major). The sequences never attend to each other. With kv_out, for every
 * layer L, sequence b and KV group g the outputs "kv.L.k.bB.gG" and "kv.L.v.bB.gG" (f32
 * [T, head_dim]) are the prompt's keys after RoPE and its values: what a Hugging Face KV cache
 * holds for that group. Activations are f32. B = 1 without kv_out is the graph of one prompt
 * as before batches existed (the same vertices, ids and order). */
tp_status tp_llama_build(const tp_llama_config *c, const tp_llama_opts *o, tp_graph **out, tp_error *err);

/* The most prompt tokens tp_llama_build takes (T, and B x T over a batch): 2^31-1. */
#define TP_LLAMA_MAX_SEQ INT32_MAX
/* The most sequences of a batch (tp_llama_build, tp_llama_decode_*): 2^20. */
#define TP_LLAMA_MAX_BATCH ((int64_t)1 << 20)

/* ---- LLaMA decode: one step of generation with a KV cache -------------------------------- */

typedef struct tp_llama_decode_opts {
    int devices;      /* devices of the graph (1..TP_MAX_DEVICES); every vertex goes on `device` */
    int device;
    int64_t layer;    /* which layer (tp_llama_decode_layer) */
    int64_t batch;    /* B >= 1 sequences, all at the same position */
    int64_t pos;      /* position of the new token (0-based; the cache holds positions 0..pos-1) */
    int64_t max_len;  /* positions the KV cache holds (pos < max_len) */
    int vocab_chunks; /* tp_llama_decode_head: lm_head in this many row chunks (>= 1) */
    /* Row chunks of streamed weights (0: every weight whole). A 2-D weight of more than
     * split_bytes bytes for which split(split_ctx, name) returns nonzero (split NULL: every such
     * weight) is read as row chunks of at most split_bytes each (rounded to rows that keep a
     * chunk's bytes a multiple of 256; inputs "name#rA:Z", rows A..Z-1, as tp_llama_build
     * names its row slices), one matmul each, concatenated: a weight loaded just for its use
     * then needs room for one chunk at a time, not the whole weight. The results are those of
     * the whole weight (each output element is the same dot product). */
    uint64_t split_bytes;
    int (*split)(void *split_ctx, const char *name);
    void *split_ctx;
    /* Positions the attention covers: 0 for pos + 1, else pos + 1 <= attend <= max_len. Positions
     * past pos are masked (a causal softmax whose one row per query ends at pos: exactly zero
     * weight), so the result is that of pos + 1 up to the rounding of the extra zero terms in the
     * product with the values; the K/V rows read there must be finite (a cache made by
     * tp_cache_create without init is zeros). With attend given, the graph's sizes and structure
     * depend on attend, not pos: graphs of two positions with the same attend differ only in
     * kernel attributes, so a plan of one is a plan of the other (tp_memgraph_rebind). */
    int64_t attend;
} tp_llama_decode_opts;

/* One layer of one decode step (Hugging Face semantics), NOT finalized: the caller may add
 * vertices, outputs and session declarations (resident, keep), then calls tp_graph_finalize.
 * Inputs: "x" f32 [B, hidden] (the residual stream entering the layer); the layer's weights
 * under their Hugging Face names, whole, in the config's dtype ("model.layers.L.input_layernorm.weight",
 * "...post_attention_layernorm.weight", "...self_attn.{q,k,v,o}_proj.weight",
 * "...mlp.{gate,up,down}_proj.weight"); the KV cache "kv.L.k" and "kv.L.v", f32
 * [B, kv_heads, max_len, head_dim]. The new token's keys (after RoPE at position pos) and
 * values are written at position pos of the caches by write_slice kernels declared in place on
 * them, "kv.L.k.updated" and "kv.L.v.updated" (not outputs: the caller keeps the cache on the
 * device); attention covers positions 0..pos of the updated caches (positions past pos are
 * never read), or 0..attend-1 with those past pos masked (attend). Outputs: "x.out" f32
 * [B, hidden]; "k_new" and "v_new" f32 [B, kv_heads, 1, head_dim], the rows written. Uses devices, device, layer, batch, pos, max_len, attend. */
tp_status tp_llama_decode_layer(const tp_llama_config *c, const tp_llama_decode_opts *o, tp_graph **out, tp_error *err);
/* The final norm and lm_head of a decode step, NOT finalized. Inputs: "x" f32 [B, hidden],
 * "model.norm.weight", and "lm_head.weight" [vocab, hidden] ("model.embed_tokens.weight" with
 * tied embeddings), with vocab_chunks > 1 its row chunks "NAME#rA:B" as separate inputs (as
 * tp_llama_build names them). Output "logits" f32 [B, vocab]. Uses devices, device, batch,
 * vocab_chunks. */
tp_status tp_llama_decode_head(const tp_llama_config *c, const tp_llama_decode_opts *o, tp_graph **out, tp_error *err);
/* The device of layer l (l = layers: the head) when a decode step is spread over `devices`:
 * contiguous groups, l * devices / (layers + 1); -1 when c is NULL or has no layers, devices is
 * outside 1..TP_MAX_DEVICES or l outside 0..layers. */
int tp_llama_decode_device(const tp_llama_config *c, int devices, int64_t layer);
/* A whole decode step in one graph, NOT finalized: every layer, then the head, layer l on
 * tp_llama_decode_device(c, devices, l), the residual stream moved by a transfer where the
 * device changes ("L<l>.x.to<d>"). Inputs: "x" (device 0), and each layer's and the head's
 * inputs as tp_llama_decode_layer/head name them. Outputs: "L<l>.k_new" and "L<l>.v_new" of
 * every layer, "logits". Uses devices (at most layers + 1), batch, pos, max_len, attend, vocab_chunks;
 * device and layer are ignored. */
tp_status tp_llama_decode_token(const tp_llama_config *c, const tp_llama_decode_opts *o, tp_graph **out, tp_error *err);

/* ---- LLaMA LoRA training: one optimizer step (src/models/llama_train.c, issue 13) ------- */

/* The LoRA target modules, bit k of a mask naming tp_lora_target_name(k). */
enum {
    TP_LORA_Q = 1, TP_LORA_K = 2, TP_LORA_V = 4, TP_LORA_O = 8, TP_LORA_GATE = 16, TP_LORA_UP = 32, TP_LORA_DOWN = 64,
    TP_LORA_ALL = 127
};
#define TP_LORA_NTARGETS 7
/* "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj" (k = 0..6), NULL past
 * them: the module names PEFT's target_modules lists. */
const char *tp_lora_target_name(int k);
/* A comma-separated list of targets ("q,k,v,o,gate,up,down", or the module names "q_proj", ..,
 * or "all") into *mask; TP_ERR_ARG naming the item that is none, or an empty list. */
tp_status tp_lora_targets_parse(const char *list, unsigned *mask, tp_error *err);
/* PEFT's tensor name of an adapter matrix, into buf (the caller's, len bytes):
 * "base_model.model.model.layers.L.self_attn.q_proj.lora_A.weight" (b = 0: A; 1: B). 0 when
 * target is not 0..6 or buf is too small. */
int tp_lora_adapter_name(int64_t layer, int target, int b, char *buf, size_t len);
/* Its shape: A [rank, in], B [out, rank], the module's weight being [out, in]. */
void tp_lora_adapter_shape(const tp_llama_config *c, int target, int b, int64_t rank, int64_t shape[2]);

typedef struct tp_train_opts {
    int devices;         /* data parallel: sequence b runs on device b mod devices (1..batch) */
    int64_t batch, seq;  /* B sequences of T tokens (1 <= B <= 2^20, 2 <= T, B x T <= 2^31-1) */
    int blocks;          /* attention query row blocks per sequence (1..T) */
    int vocab_chunks;    /* lm_head and embedding in this many row chunks per device (1..vocab) */
    int64_t rank;        /* LoRA r, 1..2^20 */
    double alpha;        /* LoRA alpha (scaling alpha / r), finite, > 0 */
    unsigned targets;    /* TP_LORA_* mask, not empty */
    double beta1, beta2; /* Adam, in [0, 1) */
    double eps;          /* Adam, finite, > 0 */
    double weight_decay; /* AdamW's (decoupled), finite, >= 0 */
    int grads_out;       /* 1: every adapter's gradient is an output too ("NAME.grad") */
} tp_train_opts;

/* Fills o: the batch, T, devices; r 16, alpha 32, every target, betas 0.9 and 0.999, eps 1e-8,
 * weight decay 0; blocks so one sequence's scores [heads, T/blocks, T] take at most cap/16 and
 * vocabulary chunks so a weight chunk is at most cap/8 and a logits chunk [T, vocab/chunks] at
 * most cap/16. */
void tp_llama_train_opts_default(tp_train_opts *o, const tp_llama_config *c, int devices, int64_t batch, int64_t seq,
                                 uint64_t cap);

/* Builds one LoRA training step (finalized): forward with LoRA on the targets (PEFT: y = x W^T +
 * (alpha/r) (x A^T) B^T), next-token cross-entropy, backward with activation checkpointing per
 * layer, AdamW on every adapter. Inputs: per sequence s, on its device, "input_ids.sS" and
 * "labels.sS" (i32 [T]: the target of each position, the next token; -1: none); "hyper" f32 [3]
 * = (lr, 1 - beta1^t, 1 - beta2^t) on device 0; the frozen weights per device, named as
 * tp_llama_build names them ("NAME", "NAME#rA:B" for vocabulary chunks, "@dN" on device N > 0)
 * in the config's dtype; on device 0 every adapter under its PEFT name (tp_lora_adapter_name)
 * and its Adam moments "NAME.exp_avg" and "NAME.exp_avg_sq", f32. Outputs: "loss" f32 [B x T, 1],
 * each position's loss divided by B x (T - 1) (their sum is the mean next-token loss); for every
 * adapter "NAME.updated", "NAME.exp_avg.updated" and "NAME.exp_avg_sq.updated" (AdamW's and the
 * moments' kernels are declared in place on their inputs); with grads_out "NAME.grad". Every
 * computing kernel has flops. */
tp_status tp_llama_train_build(const tp_llama_config *c, const tp_train_opts *o, tp_graph **out, tp_error *err);

/* Buffer size (with the NUL) that holds any vertex id tp_llama_build makes, and so any
 * tensor name tp_llama_parse_input splits out of one. */
#define TP_LLAMA_ID_MAX 256

/* The random prompt of `turnip llama --seq-len T --seed S`: ids[0..T-1] (the caller's array)
 * uniform in [0, vocab), a pure function of (seed, position) on the library's counter-based
 * RNG. TP_ERR_ARG for T < 0 or a vocabulary outside 1..2^31. */
tp_status tp_llama_random_prompt(uint64_t seed, int64_t T, int64_t vocab, int32_t *ids, tp_error *err);

/* The k largest of logits[0..n-1], largest first, ties to the lower index: their indices go to
 * ids[0..k-1] (the caller's array; -1 past the count). Returns how many were found, min(k, n). */
int tp_llama_top_k(const float *logits, int64_t n, int k, int32_t *ids);

/* Splits a weight input id into its tensor name (into name[], the caller's), slice kind
 * ('r', 'c' or 0) and range. */
int tp_llama_parse_input(const char *id, char *name, size_t len, char *kind, int64_t *a, int64_t *b);

/* ---- resources: what a build will need, known before building ------------------------- */

/* What building a graph and planning it will take, from the options alone, in floating point
 * (no overflow however absurd the options; the counts are exact for the builders' own
 * structure, the bytes an estimate that errs low): vertices and edges (consumer links) of the
 * TaskGraph; host bytes of the TaskGraph (graph_bytes) and of the TaskGraph with its plan
 * (the planner's work and the MemGraph, plan_bytes). For LLaMA also the device memory the
 * first embedding vertex needs for its inputs and output, which grows with the prompt: a
 * capacity below it is infeasible whatever the plan. */
typedef struct tp_build_estimate {
    double vertices, edges;
    double graph_bytes, plan_bytes;
    double vertex_bytes; /* LLaMA: that vertex's inputs and output, bytes (0 for the layered model) */
    const char *vertex;  /* its id (a static string), NULL when none */
    int device;          /* where it runs */
} tp_build_estimate;

void tp_layered_estimate(const tp_layered_opts *o, tp_build_estimate *e);
/* o as tp_llama_build takes it (after tp_llama_opts_default and any overrides); all zero when
 * the batch or the tokens are out of the range tp_llama_build accepts (it says why). */
void tp_llama_estimate(const tp_llama_config *c, const tp_llama_opts *o, tp_build_estimate *e);
/* The training step's (tp_llama_train_build), vertices and edges exact; vertex names the largest
 * single kernel need among the embedding, a layer's scores and MLP, and a logits chunk. */
void tp_llama_train_estimate(const tp_llama_config *c, const tp_train_opts *o, tp_build_estimate *e);

/* ---- inputs ---------------------------------------------------------------------------- */

/* Writes a safetensors file with a tensor for every input of g: floats drawn from
 * N(0, 0.5^2) stored in the input's dtype, integers uniform in [0, int_max), bytes-only inputs
 * as raw u8. Deterministic in `seed`. g is only read. */
tp_status tp_random_inputs(const tp_graph *g, uint64_t seed, int64_t int_max, const char *path, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
