/* turnip/app.h - workflows over every layer below (app layer: io, graph, models, plan,
 * kernels, exec, backends): things a tool or an embedding program does with a prepared run,
 * kept out of the layers they combine. */
#ifndef TURNIP_APP_H
#define TURNIP_APP_H

#include <stdint.h>
#include <stdio.h>
#include "turnip/error.h"
#include "turnip/io.h"
#include "turnip/graph.h"
#include "turnip/plan.h"
#include "turnip/models.h"
#include "turnip/exec.h"
#include "turnip/cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- loaders: weights into a prepared executor (src/app/llama_load.c) ------------------ */

/* Writes the weights of the run's TaskGraph (built by tp_llama_build) from a Hugging Face
 * checkpoint directory (model.safetensors, or the shards model.safetensors.index.json lists),
 * slicing as the input ids say, and the prompt ids (as many as the graph's input_ids holds,
 * borrowed for the call). A missing tensor, a wrong shape or dtype, or a damaged file is
 * TP_ERR_INVALID/PARSE naming the file and tensor. x stays the caller's. */
tp_status tp_llama_load(tp_exec *x, const tp_llama_config *c, const char *dir, const int32_t *ids, tp_error *err);
/* Same with random weights made in-process (N(0, 0.02^2) matrices, norms near 1), each
 * tensor a function of (seed, name, index) so every slice of it agrees. */
tp_status tp_llama_random(tp_exec *x, const tp_llama_config *c, uint64_t seed, const int32_t *ids, tp_error *err);
/* What tp_llama_load does with dir before reading any weight, with no executor (for tests
 * and the fuzzer): reads dir/model.safetensors.index.json when there is one (the same checks)
 * and, for every tensor the config's graph needs, resolves its shard (model.safetensors
 * without an index) and confines the file name to the directory, as the loader does; the
 * shards are not opened. TP_OK: every tensor has a shard file inside dir. */
tp_status tp_llama_index_check(const char *dir, const tp_llama_config *c, tp_error *err);

/* Weights one tensor at a time, for callers that keep them themselves (generation's tensor
 * cache): dir (a checkpoint, checked as tp_llama_load checks it) or, when dir is NULL, the
 * random weights of tp_llama_random with seed. read: the bytes of weight input `id` (a name
 * as the builders make them, slices included) in dtype dt, `bytes` long (which must be that
 * slice's size: TP_ERR_INVALID otherwise), into buf. */
typedef struct tp_llama_weights tp_llama_weights;
tp_status tp_llama_weights_open(const tp_llama_config *c, const char *dir, uint64_t seed, tp_llama_weights **out, tp_error *err);
tp_status tp_llama_weights_read(tp_llama_weights *w, const char *id, tp_dtype dt, uint64_t bytes, void *buf, tp_error *err);
void tp_llama_weights_close(tp_llama_weights *w);

/* ---- end of loaders ---------------------------------------------------------------------- */

/* ==== generation (src/app/generate.c, issue 12) ========================================== */

/* What a generation needs on a device, from the shapes alone (bytes): the cache tensors of the
 * weights (the embedding table stays on the host unless it is also the lm_head) and of the
 * K/V cache, a step's working memory (the plans' own, kept below the cache's range: the
 * activations and room to stream the largest tensor when a step's tensors do not all fit the
 * cache), and per device: need (everything resident: the figure --device-mem P% is a
 * percentage of) and min_cap (one kernel's inputs and output and a page of cache: below it no
 * step fits). */
typedef struct tp_gen_need {
    uint64_t model_bytes, kv_bytes, work_bytes, step_max, need, min_cap;
    uint64_t device_need[TP_MAX_DEVICES]; /* per device: its cache tensors + work_bytes (need: the largest) */
    uint64_t stream_bytes; /* the largest cache tensor (its room is part of work_bytes) */
    uint64_t split_bytes;  /* a plan per step streams a layer's 2-D weights in row chunks of at most
                              this many bytes (tp_llama_decode_opts.split_bytes): a quarter of the
                              largest, rounded up to 256 */
    uint64_t stream_slot;  /* what one streamed piece takes then: a chunk, or the largest tensor
                              that is never split (K/V, norms, an lm_head chunk), with alignment */
    uint64_t work_min;     /* the most one kernel needs at once (inputs, output): the least work room */
    uint64_t work_min_split; /* the same when a layer's weights come in chunks of split_bytes (a plan
                                per step): the least room of such a plan */
} tp_gen_need;
tp_status tp_llama_generate_need(const tp_llama_config *c, int devices, int64_t batch, int64_t max_len, int vocab_chunks,
                                 tp_gen_need *out, tp_error *err);

/* The lm_head's row chunks when none are asked for: enough (powers of two) that a chunk takes at
 * most an eighth of the cap, so a tight cap is not refused for the head alone, and, with
 * split_bytes > 0 (a plan per step: tp_gen_need.split_bytes), at most split_bytes, so the
 * plan's room for streamed pieces is not set by the head. */
int tp_llama_generate_vocab_chunks(const tp_llama_config *c, uint64_t cap, uint64_t split_bytes);

/* One generated position, reported as it happens: step 0 is the prefill, step s >= 1 the
 * decode step that fed token s-1. logits [B, vocab] and tokens [B] are borrowed for the call
 * (logits NULL without data). */
typedef struct tp_gen_step {
    int64_t step;
    const float *logits;
    const int32_t *tokens;
    double seconds;     /* wall time of the step, planning included */
    double run_seconds; /* the executors' makespans (virtual on a simulating backend) */
    uint64_t bytes_moved;
} tp_gen_step;

typedef struct tp_gen_opts {
    const tp_llama_config *config; /* borrowed */
    tp_llama_weights *weights;     /* borrowed; NULL only without data */
    tp_backend *backend;           /* borrowed; sessions are opened on it */
    int devices;                   /* 1..layers */
    uint64_t device_mem;           /* every device's cap */
    int64_t batch, prompt_len, max_new;
    const int32_t *prompts;        /* [batch x prompt_len], borrowed */
    const char *policy;            /* the cache's ("latency" when NULL) */
    int prefetch;                  /* the cache's prefetch mode (turnip/cache.h) */
    double temperature;            /* 0: greedy */
    int top_k;                     /* sampling among the k likeliest (0: all) */
    uint64_t seed;                 /* of the sampling */
    int vocab_chunks;              /* lm_head in row chunks (cache tensors); 0: tp_llama_generate_vocab_chunks */
    tp_run_opts run;               /* dispatch policy and seed of every plan's run */
    tp_order plan_order;
    int verify;                    /* 1: every plan is checked by the verifier before it runs */
    int lookahead;                 /* 1 (per_token 0 only, else TP_ERR_ARG): a step pins the next
                                      step's tensors, so their loads run in its plan beside its
                                      compute (one step's tensors more pinned at a time) */
    int per_token;                 /* 1: a decode step is one plan (every layer and the head): each
                                      tensor, in layer order, pinned when it fits its device's
                                      range, else streamed through the plan's memory; the policy
                                      and prefetch then decide nothing in the steady state.
                                      0: a plan per layer and one for the head */
    int data;                      /* 0: the backend holds no data (sim): timings and bytes only */
    const char *trace;             /* borrowed; non-NULL: the Chrome trace of the last decode
                                      step's last plan (tp_exec_trace_write) is written there */
    const char *plan_out;          /* borrowed; non-NULL: that plan's MemGraph (JSON) there */
    void (*on_step)(void *ctx, const tp_gen_step *st);
    void *ctx;
} tp_gen_opts;

typedef struct tp_gen_result {
    int32_t *tokens;               /* [batch x max_new], malloc'd: tp_gen_result_free */
    tp_gen_need need;
    double ttft;                   /* wall seconds of the prefill: plan, weights, run, logits */
    double prefill_run_seconds;
    uint64_t prefill_bytes;
    double decode_seconds;         /* wall seconds of all decode steps */
    double decode_run_seconds;     /* their executors' makespans */
    uint64_t decode_bytes;         /* moved by every decode step's plans */
    uint64_t first_decode_bytes;   /* of them by the first decode step (the cache starts empty) */
    double first_decode_seconds;
    uint64_t streamed_bytes;       /* of tensors a step read without the cache (it did not fit) */
    int64_t decode_steps;
    uint64_t decode_plans;         /* a plan per step: the plans made, and the steps that reused the */
    uint64_t decode_plans_reused;  /*   last step's (its graph the same but for kernel attributes) */
    tp_cache_counters cache;
    uint64_t host_bytes;           /* the session's host block: the cache's host copies, the embedding
                                      table, the plans' own host memory (the prefill's as planned) */
} tp_gen_result;

/* Prefill, then max_new - 1 decode steps (design: src/app/generate.c). TP_ERR_INFEASIBLE when
 * the cap is below need.min_cap or a plan does not fit; errors of the plans, the executor and
 * the weights as they come. */
tp_status tp_llama_generate(const tp_gen_opts *o, tp_gen_result *r, tp_error *err);
void tp_gen_result_free(tp_gen_result *r);

/* ==== end of generation =================================================================== */

/* ==== LoRA training (src/app/train.c, issue 13) ========================================== */

/* What a training step needs on a device, from its graph (built here, with opts o, and its
 * serial order): min_cap, the most one kernel needs at once (inputs and output; no smaller cap
 * plans), and need, the most bytes live at once along the order (values loaded at first use and
 * freed after last use: no eviction at or above it), each the largest over the devices; the
 * adapters' bytes (f32; the moments take twice as much); the graph's size. */
typedef struct tp_train_need {
    uint64_t min_cap, need, adapter_bytes;
    uint64_t input_bytes; /* of every input of the graph (each device's weights are inputs of their own) */
    uint64_t vertices, edges;
    int min_device; /* the device of min_cap */
} tp_train_need;
tp_status tp_llama_train_need(const tp_llama_config *c, const tp_train_opts *o, tp_order order, tp_train_need *out, tp_error *err);

/* An adapter matrix of a run: PEFT's name, its shape and where its floats start in the
 * result's arrays (layer-major, then q, k, v, o, gate, up, down, then A before B). */
typedef struct tp_lora_tensor {
    char name[TP_LLAMA_ID_MAX];
    int64_t shape[2];
    uint64_t offset;
} tp_lora_tensor;

/* The adapters' initial values: PEFT's (A Kaiming-uniform, bounds +-1/sqrt(in); B zero), or for
 * tests B nonzero too (uniform in +-0.5/sqrt(r)); both a function of (seed, name, index). */
enum { TP_LORA_INIT_PEFT = 0, TP_LORA_INIT_NONZERO = 1 };
/* Where the adapters and their moments live between steps: on device 0 (kept outputs of one
 * plan, resident inputs of the next), on the host (written before and read after every step),
 * or (auto) on the device when they take at most a quarter of its cap and the plan fits. */
enum { TP_TRAIN_RESIDENT_AUTO = -1, TP_TRAIN_RESIDENT_HOST = 0, TP_TRAIN_RESIDENT_DEVICE = 1 };

/* One step, reported as it ends. */
typedef struct tp_train_step {
    int64_t step;          /* 1-based */
    double loss;           /* the mean next-token loss before the update (NAN without data) */
    double seconds;        /* wall time of the step: planning (when it planned), inputs, run, outputs */
    double plan_seconds;   /* 0 when the step reused the last step's plan */
    double run_seconds;    /* the executor's makespan (virtual on a simulating backend) */
    uint64_t bytes_moved;  /* by the run's copy engines */
} tp_train_step;

typedef struct tp_train_run_opts {
    const tp_llama_config *config; /* borrowed */
    tp_llama_weights *weights;     /* borrowed; NULL only without data */
    tp_backend *backend;           /* borrowed; a session is opened on it */
    tp_train_opts graph;           /* the step's graph (tp_llama_train_build) */
    uint64_t device_mem;           /* every device's cap */
    int64_t steps;                 /* >= 1 */
    /* the data: ntokens ids (borrowed, each in [0, vocab)) cut into ntokens / T sequences of T
     * consecutive ids (a rest shorter than T is not used); step k (0-based) trains on sequences
     * (k B + b) mod (ntokens / T), b = 0..B-1; ntokens >= B T. NULL: one batch of random ids
     * (sequence b: tp_llama_random_prompt with seed + b), the same every step. The labels of a
     * sequence are its ids shifted by one; its last position has none. */
    const int32_t *tokens;
    int64_t ntokens;
    double lr;                     /* AdamW's learning rate (finite, >= 0) */
    int init;                      /* TP_LORA_INIT_* */
    uint64_t seed;                 /* of the initial adapters and the random data */
    int resident;                  /* TP_TRAIN_RESIDENT_* */
    tp_run_opts run;               /* dispatch policy and seed of every run */
    tp_order plan_order;           /* the planner's serial order (TP_ORDER_TOPO: the builder's) */
    int no_sum_into;               /* 1: plan the gradient sums as kernels (tp_plan_opts.sum_into 0) */
    int verify;                    /* 1: every plan is checked by the verifier before it runs */
    int data;                      /* 0: the backend holds no data (sim): timings and bytes only */
    void (*on_step)(void *ctx, const tp_train_step *st);
    void *ctx;
} tp_train_run_opts;

typedef struct tp_train_result {
    int64_t n;                     /* adapter matrices */
    tp_lora_tensor *t;             /* [n] */
    uint64_t floats;               /* of all of them */
    float *initial, *adapters;     /* [floats]: before the first step and after the last (NULL without data) */
    float *grads;                  /* [floats]: the first step's gradients (with graph.grads_out), else NULL */
    double *loss;                  /* [steps] */
    tp_train_need need;
    int resident;                  /* 1: the adapters and moments stayed on device 0 between steps */
    int64_t plans;                 /* plans made (a step whose residents are the last one's reuses its plan) */
    double first_plan_seconds, plan_seconds, run_seconds, seconds; /* the first plan; totals over the steps */
    uint64_t bytes_moved, host_bytes; /* moved by all runs; the session's host block */
    uint64_t offloads, drops, reloads; /* the evictions and reloads the first plan has, over its devices */
    uint64_t offload_bytes;
    uint32_t sums_marked, sum_groups; /* the first plan: gradient sums marked, lowered into sum-into groups */
    int sum_into_fallback;         /* 1: the first plan was made again without sum-into (infeasible with it) */
} tp_train_result;

/* Runs o->steps optimizer steps in one session (design: src/app/train.c). TP_ERR_INFEASIBLE
 * when the cap is below need.min_cap or a plan does not fit; the errors of the plans, the
 * executor and the weights as they come. r is the caller's (tp_train_result_free). */
tp_status tp_llama_train(const tp_train_run_opts *o, tp_train_result *r, tp_error *err);
void tp_train_result_free(tp_train_result *r);

/* Writes adapter values (r->floats floats laid out as r->t says, e.g. r->adapters) in PEFT's
 * format into the directory dir (which must exist): adapter_model.safetensors
 * (every adapter under its PEFT name, f32) and adapter_config.json (peft_type LORA, task_type
 * CAUSAL_LM, r, lora_alpha, target_modules, lora_dropout 0, bias "none", fan_in_fan_out false,
 * inference_mode true, base_model_name_or_path base), each written to a temporary file and
 * renamed into place. TP_ERR_IO naming the file. */
tp_status tp_lora_write_peft(const char *dir, const tp_train_result *r, const float *values, const tp_train_opts *o, const char *base,
                             tp_error *err);

/* ==== end of training ===================================================================== */

/* ==== sweeps (src/app/sweep.c, src/app/counts.c) ======================================== */

/* Sizes of a TaskGraph or a MemGraph: vertices, of which inputs, and edges (a TaskGraph's
 * edges are consumer links; a MemGraph's are data and memory dependencies). */
typedef struct tp_graph_counts {
    uint64_t vertices, inputs, edges;
} tp_graph_counts;
void tp_count_taskgraph(const tp_graph *g, tp_graph_counts *out);
void tp_count_memgraph(const tp_memgraph *mg, tp_graph_counts *out);

/* A sweep of LLaMA prefill over prompt lengths and device caps: per (cap, length) the
 * TaskGraph is built (tp_llama_opts_default, tp_llama_opts_attention), planned
 * (tp_llama_plan_order) and run once on
 * `backend`, one CSV row each; where no plan fits, the row says OOM. Meant for a simulating
 * backend (the sim's makespan is the first-token latency, its lower bound the bound). */
typedef struct tp_sweep_opts {
    const char *model;             /* label of the model column (borrowed) */
    const char *machine;           /* label of the machine column (borrowed) */
    const tp_llama_config *config; /* borrowed */
    int devices;
    int residual;                  /* tp_llama_opts.residual of every point */
    int attention;                 /* tp_llama_opts.attention of every point (0: scores; the CLI's default is fused) */
    const int64_t *seqs;           /* prompt lengths, each >= 1 (borrowed) */
    int nseqs;
    const uint64_t *mems;          /* per-device caps, one sweep over seqs each (borrowed) */
    int nmems;
    tp_backend *backend;           /* borrowed; runs every point, one after another */
    tp_run_opts run;               /* policy and seed of every run */
    FILE *log;                     /* a header per cap and a line per point, or NULL */
} tp_sweep_opts;

/* Writes the CSV header and the rows to csv (the caller's, left open). Columns: model,
 * machine, devices, seq, device_mem, status (ok or OOM), latency_s, bound_s, ratio,
 * offloaded_bytes, reloaded_bytes, memgraph_vertices. Stops at the first error other than an
 * infeasible plan. */
tp_status tp_sweep_llama(const tp_sweep_opts *o, FILE *csv, tp_error *err);

/* Plots latency against prompt length, one line per cap, from the CSV tp_sweep_llama wrote
 * at csv_path, into a PNG at png_path with gnuplot (TP_ERR_IO when gnuplot cannot run or
 * fails). */
tp_status tp_sweep_plot(const tp_sweep_opts *o, const char *csv_path, const char *png_path, tp_error *err);

/* ==== end of sweeps ===================================================================== */

#ifdef __cplusplus
}
#endif
#endif
