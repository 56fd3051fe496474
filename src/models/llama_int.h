/* llama_int.h - what the LLaMA builders share inside the models layer: the check of a config
 * made in code (llama.c), used by the prefill (llama.c), decode (llama_decode.c) and training
 * (llama_train.c) builders, and the naming of weight inputs. */
#ifndef TP__MODELS_LLAMA_INT_H
#define TP__MODELS_LLAMA_INT_H

#include <stdint.h>
#include "turnip/models.h"

/* a * b * c * d f32 elements (4 bytes each) fit int64 (all positive) */
static inline int tp__fits_f32(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t p;
    return !__builtin_mul_overflow(a, b, &p) && !__builtin_mul_overflow(p, c, &p) && !__builtin_mul_overflow(p, d, &p) &&
           !__builtin_mul_overflow(p, 4, &p);
}

/* TP_ERR_ARG (a field outside the ranges tp_llama_config_read checks) or TP_ERR_INVALID
 * (sizes that do not divide or whose tensors overflow 64 bits), `where` starting the message. */
tp_status tp__llama_check(const tp_llama_config *c, const char *where, tp_error *err);

/* The id of a weight input (what tp_llama_parse_input splits and the loader reads): the Hugging
 * Face tensor `name`, then "#rA:Z" or "#cA:Z" for rows or columns [a, z) when kind is 'r' or
 * 'c' (0: the whole tensor), then "@dN" on device d > 0. Writes at most len bytes into id (len
 * TP_LLAMA_ID_MAX holds any the builders make). */
void tp__llama_weight_id(char *id, size_t len, const char *name, char kind, int64_t a, int64_t z, int d);

#endif
