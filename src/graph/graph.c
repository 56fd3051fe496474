/* graph.c - TaskGraph builder, validation and derived data (sizes, consumers).
 *
 * The graph is kept as an array of public tp_vertex views. Validation happens once, in
 * tp_graph_finalize, so builders stay cheap and the JSON reader can add vertices in file
 * order and resolve forward references before anything is checked. */
#include <stdlib.h>
#include <string.h>
#include "graph/graph_internal.h"
#include "io/topo.h"

/* ---- memory: the strings and input lists of every vertex live in a bump arena of 1 MiB
 * blocks (no per-vertex malloc: its header and rounding cost more than a typical id); op names
 * and attrs texts are interned (a graph has a few dozen distinct ones). ---- */
#define ARENA_BLOCK ((size_t)1 << 20)
_Static_assert(SIZE_MAX / 4 >= UINT32_MAX, "an input list of 2^32-1 entries has a size_t size");

typedef struct tp__ablock {
    struct tp__ablock *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} tp__ablock;

static void *arena_alloc(tp__arena *a, size_t n, size_t align)
{
    tp__ablock *b = a->head;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (!b || at > b->cap || n > b->cap - at) {
        size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK - sizeof *b;
        tp__ablock *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->cap = cap;
        nb->used = 0;
        if (n > ARENA_BLOCK / 4 && b) { /* a big piece gets its own block behind the current one */
            nb->next = b->next;
            b->next = nb;
            nb->used = n;
            a->bytes += sizeof *nb + cap;
            return nb->data;
        }
        nb->next = b;
        a->head = b = nb;
        a->bytes += sizeof *nb + cap;
        at = 0;
    }
    b->used = at + n;
    return b->data + at;
}

static void arena_free(tp__arena *a)
{
    for (tp__ablock *b = a->head, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    a->head = NULL;
    a->bytes = 0;
}

static const char *arena_str(tp__arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(a, n, 1);
    if (d) memcpy(d, s, n);
    return d;
}

/* the one copy of s in g (op names, attrs) */
static const char *intern(tp_graph *g, const char *s)
{
    uint32_t k;
    if (tp__strmap_get(&g->interned, s, &k)) return g->istr[k];
    if (g->nistr >= UINT32_MAX || !TP__GROW(g->istr, g->capistr, g->nistr + 1)) return NULL;
    const char *d = arena_str(&g->arena, s);
    if (!d || tp__strmap_put(&g->interned, d, (uint32_t)g->nistr, NULL) < 0) return NULL;
    g->istr[g->nistr] = d;
    return g->istr[g->nistr++];
}

tp_graph *tp_graph_new(int ndevices)
{
    if (ndevices < 1 || ndevices > TP_MAX_DEVICES) return NULL;
    tp_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->ndevices = ndevices;
    if (!tp__strmap_init(&g->ids, 64) || !tp__strmap_init(&g->interned, 16)) {
        tp__strmap_free(&g->ids);
        free(g);
        return NULL;
    }
    return g;
}

void tp_graph_free(tp_graph *g)
{
    if (!g) return;
    arena_free(&g->arena);
    free(g->v);
    free(g->outputs);
    free(g->is_out);
    free(g->cons_off);
    free(g->cons);
    free(g->sess);
    free(g->keeps);
    free(g->istr);
    tp__strmap_free(&g->ids);
    tp__strmap_free(&g->interned);
    free(g);
}

tp_status tp__graph_add(tp_graph *g, const char *id, tp_vkind kind, int device, const char *op,
                        uint32_t ninputs, const uint32_t *inputs, tp_dtype dtype, int ndim,
                        const int64_t *shape, uint64_t bytes, const char *attrs_json,
                        double flops, uint32_t *out, tp_error *err)
{
    if (g->finalized) return tp__fail(err, TP_ERR_ARG, "graph is finalized; no more vertices");
    if (!id || !*id) return tp__fail(err, TP_ERR_INVALID, "vertex %zu: empty id", g->n);
    if (ndim > TP_MAX_DIMS)
        return tp__fail(err, TP_ERR_INVALID, "vertex '%s': shape has %d dimensions, at most %d",
                        id, ndim, TP_MAX_DIMS);
    uint32_t old;
    if (tp__strmap_get(&g->ids, id, &old))
        return tp__fail(err, TP_ERR_INVALID, "vertex '%s': duplicate id (also vertex %u)", id, old);
    if (g->n >= UINT32_MAX - 1 || !TP__GROW(g->v, g->cap, g->n + 1))
        return tp__fail(err, TP_ERR_NOMEM, "out of memory adding vertex '%s'", id);
    tp_vertex *v = &g->v[g->n];
    memset(v, 0, sizeof *v);
    v->id = arena_str(&g->arena, id);
    v->op = (kind == TP_V_KERNEL) ? intern(g, op && *op ? op : "opaque") : NULL;
    v->attrs_json = attrs_json ? intern(g, attrs_json) : NULL;
    uint32_t *in = NULL;
    if (ninputs) { /* at most 2^32-1 entries of 4 bytes: no overflow in a 64-bit size_t */
        in = arena_alloc(&g->arena, ninputs * sizeof *in, sizeof *in);
        if (in) memcpy(in, inputs, ninputs * sizeof *in);
    }
    if (!v->id || (kind == TP_V_KERNEL && !v->op) || (attrs_json && !v->attrs_json) || (ninputs && !in) ||
        tp__strmap_put(&g->ids, v->id, (uint32_t)g->n, &old) < 0)
        return tp__fail(err, TP_ERR_NOMEM, "out of memory adding vertex '%s'", id); /* the arena keeps what it gave */
    v->kind = kind;
    v->device = device;
    v->dtype = dtype;
    v->ndim = ndim;
    for (int i = 0; i < ndim && shape; i++) v->shape[i] = shape[i];
    v->bytes = bytes;
    v->flops = flops;
    v->ninputs = ninputs;
    v->inputs = in;
    *out = (uint32_t)g->n;
    g->n++;
    return TP_OK;
}

static tp_status check_inputs_exist(const tp_graph *g, const char *id, uint32_t ninputs,
                                    const uint32_t *inputs, tp_error *err)
{
    for (uint32_t i = 0; i < ninputs; i++)
        if (inputs[i] >= g->n)
            return tp__fail(err, TP_ERR_INVALID, "vertex '%s': input %u is vertex %u, which does not exist",
                            id, i, inputs[i]);
    return TP_OK;
}

tp_status tp_graph_add_input(tp_graph *g, const char *id, int device, tp_dtype dtype, int ndim,
                             const int64_t *shape, uint64_t bytes, uint32_t *out, tp_error *err)
{
    return tp__graph_add(g, id, TP_V_INPUT, device, NULL, 0, NULL, dtype, ndim, shape, bytes,
                         NULL, 0, out, err);
}

tp_status tp_graph_add_kernel(tp_graph *g, const char *id, int device, const char *op,
                              uint32_t ninputs, const uint32_t *inputs, tp_dtype dtype, int ndim,
                              const int64_t *shape, uint64_t bytes, const char *attrs_json,
                              double flops, uint32_t *out, tp_error *err)
{
    tp_status s = check_inputs_exist(g, id ? id : "?", ninputs, inputs, err);
    if (s) return s;
    return tp__graph_add(g, id, TP_V_KERNEL, device, op, ninputs, inputs, dtype, ndim, shape, bytes,
                         attrs_json, flops, out, err);
}

tp_status tp_graph_add_transfer(tp_graph *g, const char *id, int device, uint32_t input,
                                uint32_t *out, tp_error *err)
{
    tp_status s = check_inputs_exist(g, id ? id : "?", 1, &input, err);
    if (s) return s;
    return tp__graph_add(g, id, TP_V_TRANSFER, device, NULL, 1, &input, TP_DT_NONE, -1, NULL, 0,
                         NULL, 0, out, err);
}

tp_status tp_graph_add_output(tp_graph *g, uint32_t vertex, tp_error *err)
{
    if (vertex >= g->n) return tp__fail(err, TP_ERR_INVALID, "output: vertex %u does not exist", vertex);
    if (vertex >= g->cap_is_out) {
        size_t old = g->cap_is_out;
        if (!TP__GROW(g->is_out, g->cap_is_out, (size_t)vertex + 1)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        memset(g->is_out + old, 0, g->cap_is_out - old);
    }
    if (g->is_out[vertex]) return tp__fail(err, TP_ERR_INVALID, "output '%s' is listed twice", g->v[vertex].id);
    if (!TP__GROW(g->outputs, g->capout, g->nout + 1)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    g->is_out[vertex] = 1;
    g->outputs[g->nout++] = vertex;
    return TP_OK;
}

/* Size from dtype and shape; 0 and *ok=0 on overflow. */
static uint64_t shape_bytes(const tp_vertex *v, int *ok)
{
    uint64_t b = tp_dtype_size(v->dtype);
    *ok = 1;
    for (int i = 0; i < v->ndim; i++) {
        if (v->shape[i] < 0 || __builtin_mul_overflow(b, (uint64_t)v->shape[i], &b)) {
            *ok = 0;
            return 0;
        }
    }
    return b;
}

static const char *kind_name(tp_vkind k)
{
    return k == TP_V_INPUT ? "input" : k == TP_V_KERNEL ? "kernel" : "transfer";
}

/* Derives and checks v's size; transfers take their (already sized) input's. */
static tp_status derive_size(tp_graph *g, tp_vertex *v, tp_error *err)
{
    int has_shape = v->ndim >= 0 && v->dtype != TP_DT_NONE;
    if (v->ndim >= 0 && v->dtype == TP_DT_NONE)
        return tp__fail(err, TP_ERR_INVALID, "vertex '%s': has a shape but no dtype", v->id);
    uint64_t sb = 0;
    if (has_shape) {
        int ok;
        sb = shape_bytes(v, &ok);
        if (!ok)
            return tp__fail(err, TP_ERR_INVALID, "vertex '%s': shape is negative or its size overflows 64 bits",
                            v->id);
    }
    if (v->kind == TP_V_TRANSFER) {
        const tp_vertex *in = &g->v[v->inputs[0]];
        if ((v->bytes && v->bytes != in->bytes) || (has_shape && sb != in->bytes))
            return tp__fail(err, TP_ERR_INVALID,
                            "vertex '%s': transfer size %llu bytes differs from its input '%s' (%llu bytes)",
                            v->id, (unsigned long long)(v->bytes ? v->bytes : sb), in->id,
                            (unsigned long long)in->bytes);
        if (!has_shape) {
            v->dtype = in->dtype;
            v->ndim = in->ndim;
            memcpy(v->shape, in->shape, sizeof v->shape);
        }
        v->bytes = in->bytes;
        return TP_OK;
    }
    if (has_shape && v->bytes && v->bytes != sb)
        return tp__fail(err, TP_ERR_INVALID,
                        "vertex '%s': bytes %llu disagree with dtype %s and shape (%llu bytes)", v->id,
                        (unsigned long long)v->bytes, tp_dtype_name(v->dtype), (unsigned long long)sb);
    if (has_shape) v->bytes = sb;
    if (!v->bytes) {
        if (has_shape) return tp__fail(err, TP_ERR_INVALID, "vertex '%s': size is 0 bytes", v->id);
        return tp__fail(err, TP_ERR_INVALID, "vertex '%s': no size: bytes is 0 or not given (give bytes > 0, or dtype and shape)",
                        v->id);
    }
    return TP_OK;
}

/* v's region at `off` (resident or host, `what`) starts at a multiple of v's alignment */
static tp_status check_aligned(const tp_vertex *v, uint64_t off, const char *what, tp_status bad, tp_error *err)
{
    uint64_t al = tp__align_of(v->bytes);
    if (off % al)
        return tp__fail(err, bad, "vertex '%s': %s offset %llu is not a multiple of %llu (the alignment of %llu bytes)", v->id, what,
                        (unsigned long long)off, (unsigned long long)al, (unsigned long long)v->bytes);
    return TP_OK;
}

/* One resident declaration: on an input, its end within 64 bits, aligned (sizes known). */
static tp_status check_resident(const tp_vertex *v, uint64_t off, tp_status bad, tp_error *err)
{
    if (v->kind != TP_V_INPUT)
        return tp__fail(err, bad, "vertex '%s': 'resident' is only for input vertices, not %s vertices", v->id,
                        kind_name(v->kind));
    if (off > UINT64_MAX - v->bytes)
        return tp__fail(err, bad, "vertex '%s': resident offset %llu plus %llu bytes overflows 64 bits", v->id,
                        (unsigned long long)off, (unsigned long long)v->bytes);
    return check_aligned(v, off, "resident", bad, err);
}

/* One host placement: on an input that has a host copy, aligned, within the reserved bytes. */
static tp_status check_host(const tp_graph *g, const tp_vertex *v, const tp__sess *s, uint64_t off, tp_status bad,
                            tp_error *err)
{
    if (v->kind != TP_V_INPUT)
        return tp__fail(err, bad, "vertex '%s': 'host' is only for input vertices, not %s vertices", v->id, kind_name(v->kind));
    if (s && s->resident && s->no_host)
        return tp__fail(err, bad, "vertex '%s': 'host' places a host copy, but the input is resident with host_copy false", v->id);
    if (off > g->host_reserved || v->bytes > g->host_reserved - off)
        return tp__fail(err, bad, "vertex '%s': host region [%llu, +%llu) is not inside the reserved host bytes [0, %llu)", v->id,
                        (unsigned long long)off, (unsigned long long)v->bytes, (unsigned long long)g->host_reserved);
    return check_aligned(v, off, "host", bad, err);
}

/* Sessions (issue 11): what the setters recorded, checked once sizes and placement are. */
static tp_status check_sessions(const tp_graph *g, tp_error *err)
{
    size_t ns = g->cap_sess < g->n ? g->cap_sess : g->n, nres = 0;
    for (size_t i = 0; i < ns; i++) {
        const tp__sess *s = &g->sess[i];
        const tp_vertex *v = &g->v[i];
        if (s->resident) {
            tp_status st = check_resident(v, s->res_off, TP_ERR_INVALID, err);
            if (st) return st;
            nres++;
        }
        if (s->host_fixed) {
            tp_status st = check_host(g, v, s, s->host_off, TP_ERR_INVALID, err);
            if (st) return st;
            nres++;
        }
        if (s->inplace1) {
            uint32_t k = s->inplace1 - 1;
            if (v->kind != TP_V_KERNEL)
                return tp__fail(err, TP_ERR_INVALID, "vertex '%s': 'inplace' is only for kernels, not %s vertices", v->id,
                                kind_name(v->kind));
            if (k >= v->ninputs)
                return tp__fail(err, TP_ERR_INVALID, "vertex '%s': in-place argument %u is out of range (the kernel has %u inputs)",
                                v->id, k, v->ninputs);
            const tp_vertex *in = &g->v[v->inputs[k]];
            if (in->bytes != v->bytes)
                return tp__fail(err, TP_ERR_INVALID,
                                "vertex '%s': in-place argument %u ('%s', %llu bytes) is not the size of the output (%llu bytes)",
                                v->id, k, in->id, (unsigned long long)in->bytes, (unsigned long long)v->bytes);
            if (in->device != v->device)
                return tp__fail(err, TP_ERR_INVALID, "vertex '%s': in-place argument %u ('%s') lives on device %d, the kernel on %d",
                                v->id, k, in->id, in->device, v->device);
            for (uint32_t j = 0; j < v->ninputs; j++)
                if (j != k && v->inputs[j] == v->inputs[k])
                    return tp__fail(err, TP_ERR_INVALID,
                                    "vertex '%s': in-place argument %u ('%s') is also argument %u; the kernel would read what it overwrites",
                                    v->id, k, in->id, j);
        }
        if (s->keep && v->kind != TP_V_INPUT && !(i < g->cap_is_out && g->is_out[i]))
            return tp__fail(err, TP_ERR_INVALID, "vertex '%s': in 'keep' but neither an output nor an input", v->id);
    }
    if (nres < 2) return TP_OK;
    /* no two resident inputs may start out on the same bytes of one device, no two host-placed
     * ones on the same host bytes (device -1) */
    tp__span *sp = malloc(nres * sizeof *sp);
    if (!sp) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < ns; i++) {
        if (g->sess[i].resident)
            sp[m++] = (tp__span){g->v[i].device, g->sess[i].res_off, g->sess[i].res_off + g->v[i].bytes, (uint32_t)i};
        if (g->sess[i].host_fixed)
            sp[m++] = (tp__span){-1, g->sess[i].host_off, g->sess[i].host_off + g->v[i].bytes, (uint32_t)i};
    }
    qsort(sp, m, sizeof *sp, tp__span_cmp);
    tp_status st = TP_OK;
    for (size_t k = 1; k < m && !st; k++)
        if (sp[k].device == sp[k - 1].device && sp[k].a < sp[k - 1].b) {
            char dev[32] = "";
            if (sp[k].device >= 0) snprintf(dev, sizeof dev, " on device %d", sp[k].device);
            st = tp__fail(err, TP_ERR_INVALID, "vertex '%s': %s region [%llu, %llu)%s overlaps that of '%s' [%llu, %llu)",
                          g->v[sp[k].v].id, sp[k].device < 0 ? "host" : "resident", (unsigned long long)sp[k].a,
                          (unsigned long long)sp[k].b, dev, g->v[sp[k - 1].v].id,
                          (unsigned long long)sp[k - 1].a,
                          (unsigned long long)sp[k - 1].b);
        }
    free(sp);
    return st;
}

tp_status tp_graph_finalize(tp_graph *g, tp_error *err)
{
    if (g->finalized) return TP_OK;
    size_t n = g->n;
    /* local checks */
    for (size_t i = 0; i < n; i++) {
        tp_vertex *v = &g->v[i];
        if (v->device < 0 || v->device >= g->ndevices)
            return tp__fail(err, TP_ERR_INVALID, "vertex '%s': device %d out of range (graph has %d devices)",
                            v->id, v->device, g->ndevices);
        if (v->kind == TP_V_INPUT && v->ninputs)
            return tp__fail(err, TP_ERR_INVALID, "vertex '%s': an input vertex has no inputs", v->id);
        if (v->kind == TP_V_TRANSFER && v->ninputs != 1)
            return tp__fail(err, TP_ERR_INVALID, "vertex '%s': a transfer has exactly one input, not %u",
                            v->id, v->ninputs);
        for (uint32_t k = 0; k < v->ninputs; k++)
            if (v->inputs[k] >= n)
                return tp__fail(err, TP_ERR_INVALID, "vertex '%s': input %u does not exist", v->id, k);
        if (!(v->flops >= 0))
            return tp__fail(err, TP_ERR_INVALID, "vertex '%s': flops must be >= 0", v->id);
    }
    /* consumers (distinct) as CSR, counting sort by consumer index keeps them increasing */
    uint32_t *cnt = calloc(n + 1, sizeof *cnt);
    uint32_t *indeg = calloc(n + 1, sizeof *indeg);
    uint32_t *last = malloc((n + 1) * sizeof *last);
    if (!cnt || !indeg || !last) {
        free(cnt);
        free(indeg);
        free(last);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) last[i] = UINT32_MAX;
    size_t total = 0;
    for (size_t c = 0; c < n; c++)
        for (uint32_t k = 0; k < g->v[c].ninputs; k++) {
            uint32_t p = g->v[c].inputs[k];
            if (last[p] == c) continue;
            last[p] = (uint32_t)c;
            cnt[p]++;
            indeg[c]++;
            total++;
        }
    free(g->cons_off);
    free(g->cons);
    g->cons_off = malloc((n + 1) * sizeof *g->cons_off);
    g->cons = malloc((total + 1) * sizeof *g->cons);
    if (!g->cons_off || !g->cons) {
        free(cnt);
        free(indeg);
        free(last);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    g->cons_off[0] = 0;
    for (size_t i = 0; i < n; i++) g->cons_off[i + 1] = g->cons_off[i] + cnt[i];
    for (size_t i = 0; i < n; i++) {
        cnt[i] = g->cons_off[i];
        last[i] = UINT32_MAX;
    }
    for (size_t c = 0; c < n; c++)
        for (uint32_t k = 0; k < g->v[c].ninputs; k++) {
            uint32_t p = g->v[c].inputs[k];
            if (last[p] == c) continue;
            last[p] = (uint32_t)c;
            g->cons[cnt[p]++] = (uint32_t)c;
        }
    /* Kahn (FIFO): detects cycles and gives an order in which to derive sizes; on a
     * cycle, the first unreached vertex (in index order) is named */
    uint32_t *order = last, reached; /* reuse */
    tp_status st = tp__topo_sort((uint32_t)n, g->cons_off, g->cons, indeg, TP__TOPO_FIFO, order, &reached);
    if (st) st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < reached && !st; k++) st = derive_size(g, &g->v[order[k]], err);
    if (!st && reached < n) {
        size_t bad = 0;
        while (!indeg[bad]) bad++;
        st = tp__fail(err, TP_ERR_INVALID, "vertex '%s': is on a cycle (depends on itself)",
                      g->v[bad].id);
    }
    free(cnt);
    free(indeg);
    free(last);
    if (st) return st;
    /* placement: a kernel reads on its own device; a transfer moves between two devices */
    for (size_t i = 0; i < n; i++) {
        const tp_vertex *v = &g->v[i];
        for (uint32_t k = 0; k < v->ninputs; k++) {
            const tp_vertex *in = &g->v[v->inputs[k]];
            if (v->kind == TP_V_KERNEL && in->device != v->device)
                return tp__fail(err, TP_ERR_INVALID,
                                "vertex '%s': kernel on device %d reads '%s' (%s on device %d); add a transfer",
                                v->id, v->device, in->id, kind_name(in->kind), in->device);
            if (v->kind == TP_V_TRANSFER && in->device == v->device)
                return tp__fail(err, TP_ERR_INVALID, "vertex '%s': transfer to its own device %d",
                                v->id, v->device);
        }
    }
    st = check_sessions(g, err);
    if (st) return st;
    g->finalized = 1;
    return TP_OK;
}

int tp_graph_devices(const tp_graph *g)
{
    return g->ndevices;
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static const tp__sess *sess_of(const tp_graph *g, size_t i)
{
    static const tp__sess none;
    return i < g->cap_sess ? &g->sess[i] : &none;
}

int tp_graph_same_plan(const tp_graph *a, const tp_graph *b)
{
    if (!a || !b || !a->finalized || !b->finalized) return 0;
    if (a == b) return 1;
    if (a->ndevices != b->ndevices || a->n != b->n || a->nout != b->nout || a->nkeep != b->nkeep ||
        a->host_reserved != b->host_reserved)
        return 0;
    if ((a->nout && memcmp(a->outputs, b->outputs, a->nout * sizeof *a->outputs)) ||
        (a->nkeep && memcmp(a->keeps, b->keeps, a->nkeep * sizeof *a->keeps)))
        return 0;
    for (size_t i = 0; i < a->n; i++) {
        const tp_vertex *x = &a->v[i], *y = &b->v[i];
        if (x->kind != y->kind || x->device != y->device || x->dtype != y->dtype || x->ndim != y->ndim ||
            x->bytes != y->bytes || x->ninputs != y->ninputs || !same_str(x->id, y->id) || !same_str(x->op, y->op))
            return 0;
        if (x->ndim > 0 && memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof *x->shape)) return 0;
        if (x->ninputs && memcmp(x->inputs, y->inputs, x->ninputs * sizeof *x->inputs)) return 0;
        if (x->op && !strcmp(x->op, "sum") && !same_str(x->attrs_json, y->attrs_json)) return 0;
        const tp__sess *p = sess_of(a, i), *q = sess_of(b, i);
        if (p->resident != q->resident || p->no_host != q->no_host || p->rflags != q->rflags || p->keep != q->keep ||
            p->host_fixed != q->host_fixed || p->inplace1 != q->inplace1 || (p->resident && p->res_off != q->res_off) ||
            (p->host_fixed && p->host_off != q->host_off))
            return 0;
    }
    return 1;
}

uint32_t tp_graph_size(const tp_graph *g)
{
    return (uint32_t)g->n;
}

const tp_vertex *tp_graph_vertex(const tp_graph *g, uint32_t i)
{
    return i < g->n ? &g->v[i] : NULL;
}

int64_t tp_graph_find(const tp_graph *g, const char *id)
{
    uint32_t v;
    return tp__strmap_get(&g->ids, id, &v) ? (int64_t)v : -1;
}

const uint32_t *tp_graph_consumers(const tp_graph *g, uint32_t i, uint32_t *n)
{
    *n = g->cons_off[i + 1] - g->cons_off[i];
    return g->cons + g->cons_off[i];
}

const tp_vertex *tp_graph_vertices(const tp_graph *g)
{
    return g->v;
}

void tp_graph_consumer_csr(const tp_graph *g, const uint32_t **off, const uint32_t **cons)
{
    *off = g->cons_off;
    *cons = g->cons;
}

uint32_t tp_graph_num_outputs(const tp_graph *g)
{
    return (uint32_t)g->nout;
}

const uint32_t *tp_graph_outputs(const tp_graph *g)
{
    return g->outputs;
}

int tp_graph_read_device(const tp_graph *g, uint32_t i)
{
    const tp_vertex *v = &g->v[i];
    return v->kind == TP_V_TRANSFER ? g->v[v->inputs[0]].device : v->device;
}

/* Sessions (issue 11) */

static const tp__sess *sess_get(const tp_graph *g, uint32_t v)
{
    return v < g->n && v < g->cap_sess ? &g->sess[v] : NULL;
}

int tp_graph_resident(const tp_graph *g, uint32_t v, uint64_t *offset, int *host_copy)
{
    const tp__sess *s = sess_get(g, v);
    int r = s && s->resident;
    if (offset) *offset = r ? s->res_off : 0;
    if (host_copy) *host_copy = r ? !s->no_host : 1;
    return r;
}

int tp_graph_inplace(const tp_graph *g, uint32_t v)
{
    const tp__sess *s = sess_get(g, v);
    return s && s->inplace1 ? (int)(s->inplace1 - 1) : -1;
}

int tp_graph_keep(const tp_graph *g, uint32_t v)
{
    const tp__sess *s = sess_get(g, v);
    return s && s->keep;
}

/* v's record for a setter, grown (zero-filled) to hold it; TP_ERR_ARG when v does not exist
 * or, for what a finalized graph's checks depend on ("inplace"), when it is finalized */
static tp_status sess_set(tp_graph *g, uint32_t v, const char *what, tp__sess **out, tp_error *err)
{
    if (g->finalized && !strcmp(what, "inplace")) return tp__fail(err, TP_ERR_ARG, "'%s' set on a finalized graph", what);
    if (v >= g->n) return tp__fail(err, TP_ERR_ARG, "'%s': vertex %u does not exist", what, v);
    if (v >= g->cap_sess) {
        size_t old = g->cap_sess;
        if (!TP__GROW(g->sess, g->cap_sess, (size_t)v + 1)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        memset(g->sess + old, 0, (g->cap_sess - old) * sizeof *g->sess);
    }
    *out = &g->sess[v];
    return TP_OK;
}

tp_status tp_graph_set_resident(tp_graph *g, uint32_t v, uint64_t offset, int host_copy, tp_error *err)
{
    tp__sess *s = NULL;
    tp_status st = sess_set(g, v, "resident", &s, err);
    if (st) return st;
    if (!host_copy && s->host_fixed)
        return tp__fail(err, TP_ERR_ARG, "vertex '%s': resident with no host copy, but its host copy is placed ('host')",
                        g->v[v].id);
    /* after finalize: this declaration checked at once (overlaps: the planner checks those) */
    if (g->finalized && (st = check_resident(&g->v[v], offset, TP_ERR_ARG, err))) return st;
    s->resident = 1;
    s->res_off = offset;
    s->no_host = !host_copy;
    s->rflags = 0;
    return TP_OK;
}

tp_status tp_graph_set_host_reserved(tp_graph *g, uint64_t bytes, tp_error *err)
{
    if (!g) return tp__fail(err, TP_ERR_ARG, "host_reserved: no graph");
    if (bytes > (uint64_t)INT64_MAX) /* what the JSON formats can carry */
        return tp__fail(err, TP_ERR_ARG, "host_reserved: %llu bytes is more than 2^63-1", (unsigned long long)bytes);
    g->host_reserved = bytes;
    return TP_OK;
}

uint64_t tp_graph_host_reserved(const tp_graph *g)
{
    return g ? g->host_reserved : 0;
}

tp_status tp_graph_set_host(tp_graph *g, uint32_t v, uint64_t offset, tp_error *err)
{
    tp__sess *s = NULL;
    if (offset > (uint64_t)INT64_MAX)
        return tp__fail(err, TP_ERR_ARG, "'host': offset %llu is more than 2^63-1", (unsigned long long)offset);
    tp_status st = sess_set(g, v, "host", &s, err);
    if (st) return st;
    /* after finalize: this declaration checked at once (overlaps: the planner checks those) */
    if (g->finalized && (st = check_host(g, &g->v[v], s, offset, TP_ERR_ARG, err))) return st;
    s->host_fixed = 1;
    s->host_off = offset;
    return TP_OK;
}

int tp_graph_host(const tp_graph *g, uint32_t v, uint64_t *offset)
{
    const tp__sess *s = sess_get(g, v);
    int r = s && s->host_fixed;
    if (offset) *offset = r ? s->host_off : 0;
    return r;
}

tp_status tp_graph_set_inplace(tp_graph *g, uint32_t v, int k, tp_error *err)
{
    tp__sess *s = NULL;
    tp_status st = sess_set(g, v, "inplace", &s, err);
    if (st) return st;
    if (k < 0) return tp__fail(err, TP_ERR_ARG, "vertex '%s': in-place argument %d is negative", g->v[v].id, k);
    s->inplace1 = (uint32_t)k + 1;
    return TP_OK;
}

tp_status tp_graph_set_resident_flags(tp_graph *g, uint32_t v, unsigned flags, tp_error *err)
{
    const tp__sess *c = sess_get(g, v);
    if (!c || !c->resident) return tp__fail(err, TP_ERR_ARG, "resident flags: vertex %u is not declared resident", v);
    if (flags & ~(TP_RESIDENT_LOAD | TP_RESIDENT_PIN))
        return tp__fail(err, TP_ERR_ARG, "vertex '%s': unknown resident flags 0x%x", g->v[v].id, flags);
    if ((flags & TP_RESIDENT_LOAD) && c->no_host)
        return tp__fail(err, TP_ERR_ARG, "vertex '%s': 'load' needs a host copy to load from (host_copy is false)", g->v[v].id);
    g->sess[v].rflags = (uint8_t)flags;
    return TP_OK;
}

unsigned tp_graph_resident_flags(const tp_graph *g, uint32_t v)
{
    const tp__sess *s = sess_get(g, v);
    return s && s->resident ? s->rflags : 0;
}

void tp_graph_clear_resident(tp_graph *g)
{
    for (size_t i = 0; i < g->cap_sess; i++) {
        g->sess[i].resident = g->sess[i].no_host = g->sess[i].rflags = 0;
        g->sess[i].res_off = 0;
    }
}

tp_status tp_graph_set_keep(tp_graph *g, uint32_t v, tp_error *err)
{
    tp__sess *s = NULL;
    tp_status st = sess_set(g, v, "keep", &s, err);
    if (st) return st;
    if (s->keep) return tp__fail(err, TP_ERR_ARG, "vertex '%s' is in 'keep' twice", g->v[v].id);
    if (g->finalized && g->v[v].kind != TP_V_INPUT && !(v < g->cap_is_out && g->is_out[v]))
        return tp__fail(err, TP_ERR_ARG, "vertex '%s': in 'keep' but neither an output nor an input", g->v[v].id);
    if (!TP__GROW(g->keeps, g->capkeep, g->nkeep + 1)) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    s->keep = 1;
    g->keeps[g->nkeep++] = v;
    return TP_OK;
}
