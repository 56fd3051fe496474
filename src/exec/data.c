/* data.c - moving tensors between safetensors files and a prepared run: inputs in by
 * TaskGraph input id, outputs out by output id, with dtype and shape checked. */
#include <stdlib.h>
#include <string.h>
#include "turnip/exec.h"
#include "io/util.h"
#include "turnip/io.h"
#include "kernels/kernels.h"
#include <math.h>

static void shape_txt(int ndim, const int64_t *shape, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
}

tp_status tp_exec_load_inputs(tp_exec *x, const char *path, tp_error *err)
{
    const tp_memgraph *mg = tp_exec_memgraph(x);
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    tp_st *st;
    tp_status s = tp_st_open(path, &st, err);
    if (s) return s;
    for (uint32_t i = 0; i < tp_memgraph_size(mg) && !s; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) continue;
        const tp_vertex *tv = tp_graph_vertex(g, v.task);
        const tp_st_tensor *t = tp_st_find(st, tv->id);
        char a[128], b[128];
        if (!t) {
            s = tp__fail(err, TP_ERR_INVALID, "%s: no tensor '%s' (an input of the TaskGraph)", path, tv->id);
        } else if (tv->dtype != TP_DT_NONE && t->dtype != tv->dtype) {
            s = tp__fail(err, TP_ERR_INVALID, "%s: tensor '%s' is %s, the TaskGraph says %s", path, tv->id,
                         tp_dtype_name(t->dtype), tp_dtype_name(tv->dtype));
        } else if (tv->ndim >= 0 && (t->ndim != tv->ndim || memcmp(t->shape, tv->shape, sizeof(int64_t) * (size_t)tv->ndim))) {
            shape_txt(t->ndim, t->shape, a, sizeof a);
            shape_txt(tv->ndim, tv->shape, b, sizeof b);
            s = tp__fail(err, TP_ERR_INVALID, "%s: tensor '%s' has shape %s, the TaskGraph says %s", path, tv->id, a, b);
        } else if (t->bytes != tv->bytes) {
            s = tp__fail(err, TP_ERR_INVALID, "%s: tensor '%s' has %llu bytes, the TaskGraph says %llu", path, tv->id,
                         (unsigned long long)t->bytes, (unsigned long long)tv->bytes);
        } else {
            s = tp_exec_write(x, &v.write, t->data, err);
        }
    }
    tp_st_close(st);
    return s;
}

tp_status tp_exec_save_outputs(tp_exec *x, const char *path, tp_error *err)
{
    const tp_memgraph *mg = tp_exec_memgraph(x);
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    uint32_t no = tp_graph_num_outputs(g);
    tp_st_tensor *t = calloc(no + 1, sizeof *t);
    if (!t) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    tp_status s = TP_OK;
    uint32_t k;
    for (k = 0; k < no && !s; k++) {
        const tp_vertex *tv = tp_graph_vertex(g, tp_graph_outputs(g)[k]);
        tp_mvertex v;
        tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[k], &v);
        void *buf = malloc(v.write.bytes ? v.write.bytes : 1);
        if (!buf) {
            s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            break;
        }
        t[k].name = tv->id;
        t[k].data = buf;
        t[k].bytes = v.write.bytes;
        if (tv->dtype != TP_DT_NONE && tv->ndim >= 0) {
            t[k].dtype = tv->dtype;
            t[k].ndim = tv->ndim;
            memcpy(t[k].shape, tv->shape, sizeof t[k].shape);
        } else { /* sizes only: raw bytes */
            t[k].dtype = TP_DT_U8;
            t[k].ndim = 1;
            t[k].shape[0] = (int64_t)v.write.bytes;
        }
        s = tp_exec_read(x, &v.write, buf, err);
    }
    if (!s) s = tp_st_write(path, no, t, err);
    for (uint32_t j = 0; j < no; j++) free((void *)t[j].data);
    free(t);
    return s;
}

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
            case TP_DT_F32: memcpy(buf + 4 * k, &f, 4); break;
            case TP_DT_F64: { double dv = f; memcpy(buf + 8 * k, &dv, 8); } break;
            case TP_DT_F16: { uint16_t h = tp__f32_to_f16(f); memcpy(buf + 2 * k, &h, 2); } break;
            case TP_DT_BF16: { uint16_t h = tp__f32_to_bf16(f); memcpy(buf + 2 * k, &h, 2); } break;
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
