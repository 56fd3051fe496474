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

/* ---- end of loaders ---------------------------------------------------------------------- */

/* ==== sweeps (src/app/sweep.c, src/app/counts.c) ======================================== */

/* Sizes of a TaskGraph or a MemGraph: vertices, of which inputs, and edges (a TaskGraph's
 * edges are consumer links; a MemGraph's are data and memory dependencies). */
typedef struct tp_graph_counts {
    uint64_t vertices, inputs, edges;
} tp_graph_counts;
void tp_count_taskgraph(const tp_graph *g, tp_graph_counts *out);
void tp_count_memgraph(const tp_memgraph *mg, tp_graph_counts *out);

/* A sweep of LLaMA prefill over prompt lengths and device caps: per (cap, length) the
 * TaskGraph is built (tp_llama_opts_default), planned (default order) and run once on
 * `backend`, one CSV row each; where no plan fits, the row says OOM. Meant for a simulating
 * backend (the sim's makespan is the first-token latency, its lower bound the bound). */
typedef struct tp_sweep_opts {
    const char *model;             /* label of the model column (borrowed) */
    const char *machine;           /* label of the machine column (borrowed) */
    const tp_llama_config *config; /* borrowed */
    int devices;
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
