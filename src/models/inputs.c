/* inputs.c - random input tensors for a TaskGraph, written as safetensors (models layer:
 * needs only the graph and io layers, no plan or executor). Every value is a pure function
 * of (seed, running element index), so the file is reproducible bit for bit. */
#include <stdlib.h>
#include <string.h>
#include "turnip/models.h"
#include "turnip/safetensors.h"
#include "io/half.h"
#include "io/util.h"

tp_status tp_random_inputs(const tp_graph *g, uint64_t seed, int64_t int_max, const char *path, tp_error *err)
{
    uint32_t n = tp_graph_size(g), ni = 0;
    tp_st_tensor *t = calloc(n + 1, sizeof *t);
    if (!t) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    tp_status s = TP_OK;
    uint64_t key = tp__mix64(seed * 0x2545f4914f6cdd1dull + 7), k0 = 0;
    for (uint32_t i = 0; i < n && !s; i++) {
        const tp_vertex *v = tp_graph_vertex(g, i);
        if (v->kind != TP_V_INPUT) continue;
        tp_st_tensor *x = &t[ni++];
        x->name = v->id;
        x->bytes = v->bytes;
        uint8_t *buf = malloc(v->bytes);
        if (!buf) {
            s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            break;
        }
        x->data = buf;
        if (v->dtype == TP_DT_NONE || v->ndim < 0) {
            x->dtype = TP_DT_U8;
            x->ndim = 1;
            x->shape[0] = (int64_t)v->bytes;
        } else {
            x->dtype = v->dtype;
            x->ndim = v->ndim;
            memcpy(x->shape, v->shape, sizeof x->shape);
        }
        uint64_t es = tp_dtype_size(x->dtype), cnt = v->bytes / es;
        for (uint64_t k = 0; k < cnt; k++, k0++) {
            uint64_t r = tp__mix64(key + 2 * k0);
            float f = (float)(0.5 * tp__normal(key + 2 * k0 + 1));
            int64_t iv = int_max > 0 ? (int64_t)(r % (uint64_t)int_max) : 0;
            switch (x->dtype) {
            case TP_DT_F32: case TP_DT_F16: case TP_DT_BF16: tp__store_f32(buf, x->dtype, k, f); break;
            case TP_DT_F64: { double dv = f; memcpy(buf + 8 * k, &dv, 8); } break;
            case TP_DT_I32: { int32_t i32 = (int32_t)iv; memcpy(buf + 4 * k, &i32, 4); } break;
            case TP_DT_I64: memcpy(buf + 8 * k, &iv, 8); break;
            default: buf[k] = (uint8_t)r; break;
            }
        }
    }
    if (!s) s = tp_st_write(path, ni, t, err);
    for (uint32_t k = 0; k < ni; k++) free((void *)t[k].data);
    free(t);
    return s;
}
