/* data.c - moving tensors between safetensors files and a prepared run: inputs in by
 * TaskGraph input id, outputs out by output id, with dtype and shape checked. */
#include <stdlib.h>
#include <string.h>
#include "io/util.h"
#include "turnip/exec.h"
#include "turnip/io.h"
#include "turnip/safetensors.h"

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
