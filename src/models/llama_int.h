/* llama_int.h - what the LLaMA builders share inside the models layer: the check of a config
 * made in code (llama.c), used by the prefill (llama.c) and decode (llama_decode.c) builders. */
#ifndef TP__MODELS_LLAMA_INT_H
#define TP__MODELS_LLAMA_INT_H

#include "turnip/models.h"

/* TP_ERR_ARG (a field outside the ranges tp_llama_config_read checks) or TP_ERR_INVALID
 * (sizes that do not divide or whose tensors overflow 64 bits), `where` starting the message. */
tp_status tp__llama_check(const tp_llama_config *c, const char *where, tp_error *err);

#endif
