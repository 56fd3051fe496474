/* gen.c - random TaskGraph families: chains, diamonds, wide fan-in and fan-out, several
 * devices with transfers, general random DAGs with repeated inputs, tiny and large sizes. */
#include <stdio.h>
#include <string.h>
#include "gen.h"
#include "harness.h"

const char *gen_family_name[GEN_NFAMILIES] = {"chain", "diamond", "fanin", "fanout", "multidev", "random", "tiny", "big"};

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

static uint32_t add_kernel(gctx *c, int d, uint32_t n, const uint32_t *in)
{
    char id[32];
    snprintf(id, sizeof id, "k%d", c->counter++);
    uint32_t v;
    tp_error e;
    CHECKF(tp_graph_add_kernel(c->g, id, d, "opaque", n, in, TP_DT_NONE, -1, NULL, rsize(c), NULL, 1e6, &v, &e) == TP_OK,
           "%s", e.msg);
    note(c, d, v);
    return v;
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

tp_graph *gen_graph(uint64_t seed, int family)
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
    uint32_t in[24];
    for (int s = 0; s < steps; s++) {
        int d = (int)rng_below(&c.r, (uint64_t)c.ndev);
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
