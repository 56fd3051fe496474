/* turnip/dtype.h - element types of tensors and the shape limit (io layer).
 *
 * The lowest layer's vocabulary for tensor data: the graph describes vertices with it and
 * safetensors files store it. Implemented in src/io/dtype.c; nothing here allocates. */
#ifndef TURNIP_DTYPE_H
#define TURNIP_DTYPE_H

#include "turnip/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most dimensions a tensor shape has (graph vertices and safetensors tensors alike). */
#define TP_MAX_DIMS 8

typedef enum tp_dtype {
    TP_DT_NONE = 0, /* size given in bytes only */
    TP_DT_F32,
    TP_DT_F16,
    TP_DT_BF16,
    TP_DT_F64,
    TP_DT_I32,
    TP_DT_I64,
    TP_DT_U8
} tp_dtype;
#define TP_DT_COUNT (TP_DT_U8 + 1)

/* "f32", ... ("" for TP_DT_NONE); a static string, never NULL ("?" out of range). */
const char *tp_dtype_name(tp_dtype t);
/* Bytes per element (0 for TP_DT_NONE). */
unsigned tp_dtype_size(tp_dtype t);
/* TP_OK and *out on a known name, else TP_ERR_PARSE. */
tp_status tp_dtype_parse(const char *name, tp_dtype *out);

#ifdef __cplusplus
}
#endif
#endif
