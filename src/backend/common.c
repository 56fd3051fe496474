/* common.c - what every backend shares (see common.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/common.h"
#include "io/util.h"
#include "turnip/io.h"

void tp__plan_ctx_set(tp__plan_ctx *c, const tp__plan_info *pi)
{
    c->pi = *pi;
    c->ro = *pi->opts;
    c->pi.opts = &c->ro;
    c->g = tp_memgraph_taskgraph(pi->mg);
    c->nd = tp_graph_devices(c->g);
    int k = 0;
    for (int e = 0; e < pi->nengines; e++) {
        c->lane_base[e] = k;
        k += pi->engines[e].lanes ? 1 : pi->engines[e].units;
    }
    c->lanes = k;
}

int tp__lane_engine(const tp__plan_ctx *c, int k)
{
    int e = 0;
    while (e + 1 < c->pi.nengines && c->lane_base[e + 1] <= k) e++;
    return e;
}

int tp__engines_gpu_like(const tp_run_opts *o, tp__engine *out)
{
    out[TP__ENG_COMPUTE] =
        (tp__engine){.name = "stream", .tag = "stream", .kinds = 1u << TP_M_KERNEL | 1u << TP_M_ACCUMULATE, .units = o->streams};
    out[TP__ENG_H2D] = (tp__engine){.name = "h2d", .tag = "h2d", .kinds = 1u << TP_M_RELOAD, .units = o->copy_depth, .lanes = 1, .moves = 1};
    out[TP__ENG_D2H] = (tp__engine){.name = "d2h", .tag = "d2h", .kinds = 1u << TP_M_OFFLOAD, .units = o->copy_depth, .lanes = 1, .moves = 1};
    out[TP__ENG_PEER] =
        (tp__engine){.name = "peer-in", .tag = "peer", .kinds = 1u << TP_M_TRANSFER, .units = o->copy_depth, .lanes = 1, .moves = 1};
    return TP__ENG_GPU_LIKE;
}

tp_status tp__mem_check(const tp__mem *m, const tp_region *r, tp_error *err)
{
    if (r->space != TP_SPACE_HOST && r->space != TP_SPACE_DEVICE)
        return tp__fail(err, TP_ERR_ARG, "region in space %d (host or device)", (int)r->space);
    if (r->space == TP_SPACE_DEVICE && !(r->device >= 0 && r->device < m->nd))
        return tp__fail(err, TP_ERR_ARG, "region on device %d of %d", r->device, m->nd);
    uint64_t lim = r->space == TP_SPACE_HOST ? m->host_bytes : m->cap[r->device];
    if (r->offset > lim || r->bytes > lim - r->offset) return tp__fail(err, TP_ERR_ARG, "region outside its memory");
    return TP_OK;
}

void tp__mem_init(tp__mem *m, const char *backend, const tp__mem_alloc *a, void *ctx)
{
    memset(m, 0, sizeof *m);
    m->backend = backend;
    m->alloc = a;
    m->ctx = ctx;
}

/* frees every block and forgets the sizes */
static void mem_free(tp__mem *m)
{
    const tp__mem_alloc *a = m->alloc;
    for (int d = 0; d < TP_MAX_DEVICES; d++) {
        if (a && m->dev[d]) a->dev_free(m->ctx, d, m->dev[d]);
        m->dev[d] = NULL;
        m->cap[d] = 0;
    }
    if (a && m->host) a->host_free(m->ctx, m->host);
    m->host = NULL;
    m->host_bytes = 0;
    m->nd = 0;
}

/* records the sizes and allocates the blocks; on failure what was taken is in m */
static tp_status mem_take(tp__mem *m, int nd, const uint64_t *cap, uint64_t host_bytes, int zero_host, const char *what,
                          tp_error *err)
{
    const tp__mem_alloc *a = m->alloc;
    m->nd = nd;
    for (int d = 0; d < nd; d++) m->cap[d] = cap[d];
    m->host_bytes = host_bytes;
    if (!a) return TP_OK;
    tp_status s = a->fits ? a->fits(m->ctx, nd, cap, host_bytes, what, err) : TP_OK;
    for (int d = 0; d < nd && !s; d++) s = a->dev(m->ctx, d, cap[d], &m->dev[d], err);
    return s ? s : a->host(m->ctx, host_bytes, zero_host, &m->host, err);
}

tp_status tp__mem_open(tp__mem *m, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    if (m->session) return tp__fail(err, TP_ERR_ARG, "%s backend: a session is already open on it", m->backend);
    if (m->plan)
        return tp__fail(err, TP_ERR_ARG, "%s backend: an executor is using it (free it before opening a session)", m->backend);
    tp_status s = mem_take(m, nd, cap, host_bytes, 1, "the session", err);
    if (s) mem_free(m);
    else m->session = 1;
    return s;
}

/* the plan's size and the session's for a message: "2.0 MiB (2097152 bytes)" */
static void size_words(uint64_t b, char *buf, size_t len)
{
    char t[32];
    snprintf(buf, len, "%s (%llu bytes)", tp_format_size(b, t, sizeof t), (unsigned long long)b);
}

tp_status tp__mem_prepare(tp__mem *m, const tp_memgraph *mg, int session, tp_error *err)
{
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    int nd = tp_graph_devices(g);
    if (session && !m->session) return tp__fail(err, TP_ERR_ARG, "%s backend: no session is open on it", m->backend);
    if (!session && m->session)
        return tp__fail(err, TP_ERR_ARG, "%s backend: a session is open on it: make its executors with tp_exec_new_in",
                        m->backend);
    m->plan = 1;
    char a[64], b[64];
    if (session) {
        if (nd != m->nd)
            return tp__fail(err, TP_ERR_ARG, "%s backend: the plan has %d devices, the session %d", m->backend, nd, m->nd);
        for (int d = 0; d < nd; d++)
            if (tp_memgraph_device_capacity(mg, d) > m->cap[d]) {
                size_words(tp_memgraph_device_capacity(mg, d), a, sizeof a);
                size_words(m->cap[d], b, sizeof b);
                return tp__fail(err, TP_ERR_ARG, "%s backend: the plan gives device %d %s, the session has %s", m->backend, d,
                                a, b);
            }
        if (tp_memgraph_host_bytes(mg) > m->host_bytes) {
            size_words(tp_memgraph_host_bytes(mg), a, sizeof a);
            size_words(m->host_bytes, b, sizeof b);
            return tp__fail(err, TP_ERR_ARG, "%s backend: the plan needs %s of host memory, the session has %s", m->backend, a,
                            b);
        }
        return TP_OK;
    }
    uint64_t cap[TP_MAX_DEVICES];
    for (int d = 0; d < nd; d++) cap[d] = tp_memgraph_device_capacity(mg, d);
    return mem_take(m, nd, cap, tp_memgraph_host_bytes(mg), m->alloc && m->alloc->zero_host, "the plan", err);
}

void tp__mem_release(tp__mem *m)
{
    if (!m->session) mem_free(m);
    m->plan = 0;
}

void tp__mem_close(tp__mem *m)
{
    m->session = 0;
    mem_free(m);
}

const void **tp__gather_inputs(const tp__mem *m, const tp_memgraph *mg, const tp_mvertex *mv, const void **inb, uint32_t room,
                               int *heap)
{
    const void **in = inb;
    *heap = mv->nreads > room;
    if (*heap && !(in = malloc(mv->nreads * sizeof *in))) return NULL;
    for (uint32_t k = 0; k < mv->nreads; k++) {
        tp_mvertex src;
        tp_memgraph_vertex(mg, mv->reads[k], &src);
        in[k] = tp__mem_ptr(m, &src.write);
    }
    return in;
}

tp_status tp__fault_injected(tp_error *err)
{
    return tp__fail(err, TP_ERR_INVALID, "injected fault (test hook)");
}

void tp__done_fail(tp__done *d, const tp_error *e)
{
    if (e && (d->err = malloc(sizeof *d->err))) *d->err = *e;
}

tp_status tp__kernels_prepare(const tp_memgraph *mg, tp__kplan **kp, uint64_t scratch[TP_MAX_DEVICES],
                              uint64_t (*need)(const tp_graph *g, uint32_t v, const tp__kplan *kp), tp_error *err)
{
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    uint32_t n = tp_memgraph_size(mg);
    *kp = calloc(tp_graph_size(g) + 1, sizeof **kp);
    if (!*kp) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    memset(scratch, 0, sizeof(uint64_t) * TP_MAX_DEVICES);
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_KERNEL && v.kind != TP_M_ACCUMULATE) continue;
        tp__kplan *k = &(*kp)[v.task];
        tp_status s = tp__kernel_prepare(g, v.task, k, err);
        if (s) return s;
        if (v.kind == TP_M_ACCUMULATE) { /* sum-into: adds one input into its group's region */
            if (k->op != TP__OP_SUM || v.nreads != 2)
                return tp__fail(err, TP_ERR_INVALID, "vertex '%s': an accumulate of op '%s' with %u reads; only a sum's, with 2",
                                tp_graph_vertex(g, v.task)->id, tp__op_name(k->op), v.nreads);
            continue;
        }
        if (v.inplace >= 0 && !tp__kernel_inplace_ok(g, v.task, k, (uint32_t)v.inplace))
            return tp__fail(err, TP_ERR_INVALID,
                            "vertex '%s': op '%s' cannot write its output over its input %d (drop its 'inplace'; only "
                            "element-wise ops over an input of the output's shape and element size can)",
                            tp_graph_vertex(g, v.task)->id, tp__op_name(k->op), v.inplace);
        uint64_t f = need ? need(g, v.task, k) : k->scratch_floats;
        if (f > scratch[v.device]) scratch[v.device] = f;
    }
    return TP_OK;
}

tp_status tp__opt_number(const char *backend, const tp_backend_opt *o, double lo, double hi, double *out, tp_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(o->value, &end);
    if (end == o->value || *end || errno || !isfinite(v) || v < lo || v > hi)
        return tp__fail(err, TP_ERR_ARG, "%s backend: %s must be a number in [%g, %g], not '%s'", backend, o->key, lo, hi,
                        o->value);
    *out = v;
    return TP_OK;
}

tp_status tp__opt_known(const char *backend, const char *const *keys, const tp_backend_opt *opts, int nopts, tp_error *err)
{
    for (int i = 0; i < nopts; i++) {
        int ok = 0;
        for (int k = 0; keys[k] && !ok; k++) ok = !strcmp(keys[k], opts[i].key);
        if (!ok) return tp__fail(err, TP_ERR_ARG, "%s backend: no option '%s'", backend, opts[i].key);
    }
    return TP_OK;
}

