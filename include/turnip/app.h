/* turnip/app.h - workflows over every layer below (app layer: io, graph, models, plan,
 * kernels, exec, backends): things a tool or an embedding program does with a prepared run,
 * kept out of the layers they combine. */
#ifndef TURNIP_APP_H
#define TURNIP_APP_H

#include <stdint.h>
#include "turnip/error.h"
#include "turnip/exec.h"
#include "turnip/models.h"

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

/* ---- end of loaders ---------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
