/* gen.c - random TaskGraph families: chains, diamonds, wide fan-in and fan-out, several
 * devices with transfers, general random DAGs with repeated inputs, tiny and large sizes. */
#include <stdio.h>
#include <string.h>
#include "gen.h"
#include "harness.h"

const char *gen_family_name[GEN_NFAMILIES] = {"chain", "diamond", "fanin", "fanout", "multidev", "random", "tiny", "big", "accum"};

uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t rng_below(rng *r, uint64_t n)
{
    return n ? rng_next(r) % n : 0;
}

typedef struct {
    tp_graph *g;
    rng r;
    int ndev;
    uint64_t smin, smax;
    uint32_t vals[TP_MAX_DEVICES][4096]; /* values living on each device */
    uint32_t nvals[TP_MAX_DEVICES];
    int counter;
} gctx;

static uint64_t rsize(gctx *c)
{
    /* log-uniform between smin and smax */
    uint64_t lo = c->smin, hi = c->smax;
    int bits = 0;
    while ((hi >> bits) > lo) bits++;
    uint64_t s = lo << rng_below(&c->r, (uint64_t)bits + 1);
    if (s > hi) s = hi;
    s += rng_below(&c->r, s / 2 + 1);
    return s > hi ? hi : s;
}

static void note(gctx *c, int d, uint32_t v)
{
    if (c->nvals[d] < 4096) c->vals[d][c->nvals[d]++] = v;
}

static uint32_t add_input(gctx *c, int d)
{
    char id[32];
    snprintf(id, sizeof id, "in%d", c->counter++);
    uint32_t v;
    tp_error e;
    CHECKF(tp_graph_add_input(c->g, id, d, TP_DT_NONE, -1, NULL, rsize(c), &v, &e) == TP_OK, "%s", e.msg);
    note(c, d, v);
    return v;
}

/* a kernel of `bytes`; typed: f32 of shape [bytes / 4] (bytes a multiple of 4), so a real backend
 * can run the sums of accum_step (opaque kernels compute nothing) */
static uint32_t add_kernel_op(gctx *c, int d, uint32_t n, const uint32_t *in, const char *op, uint64_t bytes, const char *attrs,
                              int typed)
{
    char id[32];
    snprintf(id, sizeof id, "k%d", c->counter++);
    uint32_t v;
    tp_error e;
    int64_t shape[1] = {(int64_t)(bytes / 4)};
    CHECKF(tp_graph_add_kernel(c->g, id, d, op, n, in, typed ? TP_DT_F32 : TP_DT_NONE, typed ? 1 : -1, shape, bytes, attrs, 1e6, &v,
                               &e) == TP_OK,
           "%s", e.msg);
    note(c, d, v);
    return v;
}

static uint32_t add_kernel(gctx *c, int d, uint32_t n, const uint32_t *in)
{
    return add_kernel_op(c, d, n, in, "opaque", rsize(c), NULL, 0);
}

/* value v made available on device d (a transfer when it lives elsewhere) */
static uint32_t on_device(gctx *c, uint32_t v, int d)
{
    if (tp_graph_vertex(c->g, v)->device == d) return v;
    char id[32];
    snprintf(id, sizeof id, "t%d", c->counter++);
    uint32_t t;
    tp_error e;
    CHECKF(tp_graph_add_transfer(c->g, id, d, v, &t, &e) == TP_OK, "%s", e.msg);
    note(c, d, t);
    return t;
}

/* a recent value on device d (or a fresh input) */
static uint32_t pick(gctx *c, int d, uint32_t window)
{
    if (!c->nvals[d] || rng_below(&c->r, 8) == 0) return add_input(c, d);
    uint32_t n = c->nvals[d], w = window < n ? window : n;
    return c->vals[d][n - 1 - rng_below(&c->r, w)];
}

/* sums of one size (the paper's gradient partials): see gen.h */
static void accum_step(gctx *c, int d, uint32_t *last_sum)
{
    uint64_t S = (rsize(c) + 3) & ~(uint64_t)3;
    uint32_t k = 3 + (uint32_t)rng_below(&c->r, 6), part[8];
    for (uint32_t i = 0; i < k; i++) {
        int e = rng_below(&c->r, 3) == 0 ? (int)rng_below(&c->r, (uint64_t)c->ndev) : d;
        uint32_t p;
        if (i == 1 && *last_sum != UINT32_MAX && rng_below(&c->r, 3) == 0) { /* a sum of sums */
            p = *last_sum;
            e = tp_graph_vertex(c->g, p)->device;
            if (tp_graph_vertex(c->g, p)->bytes != S) p = add_kernel_op(c, e, 1, &p, "opaque", S, NULL, 1);
        } else { /* its own subtree: 1-3 kernels over recent values */
            uint32_t in[2] = {pick(c, e, 8), pick(c, e, 8)};
            p = add_kernel_op(c, e, 1 + (uint32_t)rng_below(&c->r, 2), in, "opaque", S, NULL, 1);
            for (uint64_t j = rng_below(&c->r, 3); j; j--) p = add_kernel_op(c, e, 1, &p, "opaque", S, NULL, 1);
        }
        part[i] = on_device(c, p, d);
    }
    if (rng_below(&c->r, 8) == 0) part[k - 1] = part[0]; /* a repeated input: not lowerable */
    uint32_t s = add_kernel_op(c, d, k, part, "sum", S, rng_below(&c->r, 6) ? "{\"accumulate\":true}" : NULL, 1);
    if (rng_below(&c->r, 4) == 0) { /* a partial read elsewhere too: the init is another one */
        uint32_t in[2] = {part[0], s};
        add_kernel_op(c, d, 2, in, "opaque", rsize(c), NULL, 0);
    }
    *last_sum = s;
}

tp_graph *gen_graph(uint64_t seed, int family)
{
    return gen_graph_opt(seed, family, family == GEN_ACCUM);
}

tp_graph *gen_graph_opt(uint64_t seed, int family, int accumulate)
{
    static gctx c; /* large; tests are single-threaded */
    memset(&c, 0, sizeof c);
    c.r.s = seed * 7919 + (uint64_t)family;
    c.ndev = 1 + (int)rng_below(&c.r, family == GEN_MULTIDEV ? 4 : 3);
    c.smin = 64;
    c.smax = 64 << 10;
    if (family == GEN_TINY) {
        c.smin = 1;
        c.smax = 16;
    }
    if (family == GEN_BIG) {
        c.smin = 64 << 10;
        c.smax = 1 << 20;
    }
    c.g = tp_graph_new(c.ndev);
    int steps = 4 + (int)rng_below(&c.r, family == GEN_BIG ? 12 : 40);
    uint32_t in[24], last_sum = UINT32_MAX;
    for (int s = 0; s < steps; s++) {
        int d = (int)rng_below(&c.r, (uint64_t)c.ndev);
        if (accumulate && rng_below(&c.r, family == GEN_ACCUM ? 2 : 3) == 0) {
            accum_step(&c, d, &last_sum);
            continue;
        }
        switch (family) {
        case GEN_CHAIN: {
            uint32_t n = 0;
            in[n++] = c.nvals[d] ? on_device(&c, c.vals[d][c.nvals[d] - 1], d) : add_input(&c, d);
            if (rng_below(&c.r, 2)) in[n++] = add_input(&c, d);
            add_kernel(&c, d, n, in);
            break;
        }
        case GEN_DIAMOND: {
            uint32_t x = pick(&c, d, 3);
            uint32_t a = add_kernel(&c, d, 1, &x), b = add_kernel(&c, d, 1, &x);
            in[0] = a;
            in[1] = b;
            in[2] = x;
            add_kernel(&c, d, 2 + (uint32_t)rng_below(&c.r, 2), in);
            break;
        }
        case GEN_FANIN: {
            uint32_t k = 2 + (uint32_t)rng_below(&c.r, 20);
            for (uint32_t i = 0; i < k; i++) in[i] = on_device(&c, pick(&c, (int)rng_below(&c.r, (uint64_t)c.ndev), 6), d);
            add_kernel(&c, d, k, in);
            break;
        }
        case GEN_FANOUT: {
            uint32_t x = pick(&c, d, 4), k = 2 + (uint32_t)rng_below(&c.r, 12), last = x;
            for (uint32_t i = 0; i < k; i++) {
                in[0] = x;
                in[1] = last;
                last = add_kernel(&c, d, 1 + (uint32_t)rng_below(&c.r, 2), in);
            }
            break;
        }
        default: { /* multidev, random, tiny, big: general random DAG, repeats allowed */
            uint32_t k = 1 + (uint32_t)rng_below(&c.r, 4);
            for (uint32_t i = 0; i < k; i++) {
                int src = rng_below(&c.r, 3) == 0 ? (int)rng_below(&c.r, (uint64_t)c.ndev) : d;
                in[i] = (i && rng_below(&c.r, 5) == 0) ? in[i - 1] : on_device(&c, pick(&c, src, 8), d);
            }
            add_kernel(&c, d, k, in);
            break;
        }
        }
    }
    /* outputs: about half the sinks, and a few others */
    tp_error e;
    uint32_t nv = tp_graph_size(c.g);
    uint8_t *used = calloc(nv, 1);
    for (uint32_t v = 0; v < nv; v++) {
        const tp_vertex *x = tp_graph_vertex(c.g, v);
        for (uint32_t k = 0; k < x->ninputs; k++) used[x->inputs[k]] = 1;
    }
    for (uint32_t v = 0; v < nv; v++)
        if ((!used[v] && rng_below(&c.r, 2)) || rng_below(&c.r, 25) == 0) tp_graph_add_output(c.g, v, &e);
    free(used);
    CHECKF(tp_graph_finalize(c.g, &e) == TP_OK, "%s", e.msg);
    return c.g;
}

tp_status gen_plan_min(const tp_graph *g, tp_memgraph **mg, tp_error *e)
{
    uint64_t minf[TP_MAX_DEVICES];
    tp_status s = tp_plan_bounds(g, TP_ORDER_DFS, minf, NULL, e);
    if (s) return s;
    tp_plan_opts po;
    tp_plan_opts_init(&po, tp_graph_devices(g), 0);
    memcpy(po.device_mem, minf, sizeof minf);
    return tp_plan(g, &po, mg, e);
}
