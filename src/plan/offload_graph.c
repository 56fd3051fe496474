/* offload_graph.c - a training chain inside turnip (issue 14, part 5; docs/weight-offload.md
 * "Inside turnip"): one steady-state iteration of the chain as a TaskGraph that every command
 * plans, simulates and runs, and the weight-offload strategies as directed evictions of the
 * planner (tp_plan_opts.evictions) on such a graph.
 *
 * The graph follows the chain model of offload.h, operation for operation: the iteration
 * B_L..B_1 then F_1..F_L, activations a^0..a^L on the device at the start (resident inputs),
 * weights w_k resident or on the host as a schedule's start state says, B_k as three kernels
 * (G_k the weight gradient, X_k the gradient of the activation, U_k the update of w_k in place:
 * the memory equation 1 gives B_k), and F_k of the next iteration reading the updated weight.
 * Kernel flops are the chain's seconds times a rate, so a sim profile of that rate (launch 0,
 * unbounded device memory bandwidth) replays the chain's times. Vertices are found by name
 * (docs/weight-offload.md), so a graph written to a file and read back is recognised too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/offload.h"
#include "plan/alloc.h"
#include "io/util.h"

/* an activation as a TaskGraph value, which holds at least one byte (weights of 0 are refused) */
static uint64_t vbytes(uint64_t b)
{
    return b ? b : 1;
}

typedef struct {
    tp_graph *g;
    tp_error *err;
    tp_status st;
} gb;

static uint32_t kernel(gb *b, const char *id, uint32_t n, const uint32_t *ins, uint64_t bytes, double flops)
{
    uint32_t v = 0;
    if (!b->st) b->st = tp_graph_add_kernel(b->g, id, 0, "opaque", n, ins, TP_DT_NONE, -1, NULL, bytes, NULL, flops, &v, b->err);
    return v;
}

static uint32_t input(gb *b, const char *id, uint64_t bytes)
{
    uint32_t v = 0;
    if (!b->st) b->st = tp_graph_add_input(b->g, id, 0, TP_DT_NONE, -1, NULL, bytes, &v, b->err);
    return v;
}

typedef struct {
    uint32_t v;
    int host_copy;
    uint64_t align, bytes;
} res;

static int res_cmp(const void *x, const void *y)
{
    const res *a = x, *b = y;
    if (a->align != b->align) return a->align < b->align ? 1 : -1;
    return a->v < b->v ? -1 : a->v > b->v;
}

tp_status tp_chain_taskgraph(const tp_chain *c, double flops_per_s, const tp_offload_schedule *start, tp_graph **out,
                             tp_error *err)
{
    if (!c || !out) return tp__fail(err, TP_ERR_ARG, "tp_chain_taskgraph: NULL argument");
    tp_status st = tp_chain_check(c, err);
    if (st) return st;
    if (!(flops_per_s >= TP_CHAIN_RATE_MIN && flops_per_s <= TP_CHAIN_RATE_MAX))
        return tp__fail(err, TP_ERR_ARG, "chain taskgraph: flops per second must be in [%g, %g]", TP_CHAIN_RATE_MIN, TP_CHAIN_RATE_MAX);
    if (c->layers > TP_OFFLOAD_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "chain taskgraph: %u layers, at most %u", c->layers, TP_OFFLOAD_MAX_LAYERS);
    for (uint32_t k = 0; k < c->layers; k++)
        if (!c->w[k]) /* a 1-byte stand-in would be selected, a weight of 0 never is */
            return tp__fail(err, TP_ERR_ARG, "chain taskgraph: layer %u has a weight of 0 bytes; give each weight 1 byte or more", k);
    if (start && start->layers != c->layers)
        return tp__fail(err, TP_ERR_ARG, "chain taskgraph: the start state has %u layers, the chain %u", start->layers,
                        c->layers);
    uint32_t L = c->layers;
    gb b = {tp_graph_new(1), err, TP_OK};
    uint32_t *a = malloc((L + 1) * sizeof *a), *w = malloc(L * sizeof *w), *u = malloc(L * sizeof *u);
    res *r = malloc((2 * L + 1) * sizeof *r);
    if (!b.g || !a || !w || !u || !r) {
        b.st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto done;
    }
    char id[32];
    for (uint32_t i = 0; i <= L; i++) {
        snprintf(id, sizeof id, "a%u", i);
        a[i] = input(&b, id, vbytes(c->a[i]));
    }
    for (uint32_t k = 1; k <= L; k++) {
        snprintf(id, sizeof id, "w%u", k);
        w[k - 1] = input(&b, id, c->w[k - 1]);
    }
    /* backward, k = L..1, d_L being a^L: X_k (a^{k-1}, w_k, d_k) -> d_{k-1} in place on a^{k-1}
     * (k >= 2); G_k (d_k, d_{k-1}) -> g_k (a^0 for d_0); U_k (w_k, g_k) -> w_k' in place on w_k.
     * The memory is equation 1's: X_k holds w_k + a^0..a^{k-1} + d_k, G_k and U_k at most
     * 2 w_k + a^0..a^{k-2} + d_{k-1} + d_k (a frozen G_k, in place on d_k, one w_k); and X_k
     * comes first, so the weight's prefetch is the first need of B_k in the planner's order */
    uint32_t d = a[L];
    for (uint32_t k = L; k >= 1 && !b.st; k--) {
        double ub = c->ub[k - 1] * flops_per_s;
        uint32_t dn = a[0];
        if (k > 1) {
            uint32_t xi[3] = {a[k - 1], w[k - 1], d};
            snprintf(id, sizeof id, "X%u", k);
            dn = kernel(&b, id, 3, xi, vbytes(c->a[k - 1]), 0.5 * ub);
            if (!b.st) b.st = tp_graph_set_inplace(b.g, dn, 0, err);
        }
        snprintf(id, sizeof id, "G%u", k);
        if (tp_chain_frozen(c, k - 1)) { /* no gradient of w_k, no update: G_k (d_k, d_{k-1}, w_k) in place on d_k */
            uint32_t ins[3] = {d, dn, w[k - 1]};
            uint32_t gk = kernel(&b, id, 3, ins, vbytes(c->a[k]), k > 1 ? 0.5 * ub : ub);
            if (!b.st) b.st = tp_graph_set_inplace(b.g, gk, 0, err); /* d_k's last reader: no bytes of its own */
            u[k - 1] = w[k - 1];
        } else {
            uint32_t ins[2] = {d, dn};
            uint32_t gk = kernel(&b, id, 2, ins, c->w[k - 1], k > 1 ? 0.45 * ub : 0.95 * ub);
            uint32_t ui[2] = {w[k - 1], gk};
            snprintf(id, sizeof id, "U%u", k);
            u[k - 1] = kernel(&b, id, 2, ui, c->w[k - 1], 0.05 * ub);
            if (!b.st) b.st = tp_graph_set_inplace(b.g, u[k - 1], 0, err);
        }
        d = dn;
    }
    /* forward of the next iteration, k = 1..L: F_k (a'^{k-1}, w_k') -> a'^k, kept (the next
     * iteration's activations), like every updated weight the start state had on the device */
    uint32_t prev = a[0];
    for (uint32_t k = 1; k <= L && !b.st; k++) {
        uint32_t ins[2] = {prev, u[k - 1]};
        snprintf(id, sizeof id, "F%u", k);
        prev = kernel(&b, id, 2, ins, vbytes(c->a[k]), c->uf[k - 1] * flops_per_s);
        if (!b.st) b.st = tp_graph_add_output(b.g, prev, err);
        if (!b.st) b.st = tp_graph_set_keep(b.g, prev, err);
    }
    for (uint32_t k = 1; k <= L && !b.st; k++) { /* a frozen w_k: an output only to be kept (its host copy stays valid) */
        int keep = start && start->resident0[k - 1];
        if (!tp_chain_frozen(c, k - 1) || keep) b.st = tp_graph_add_output(b.g, u[k - 1], err);
        if (!b.st && keep) b.st = tp_graph_set_keep(b.g, u[k - 1], err);
    }
    if (!b.st) b.st = tp_graph_finalize(b.g, err);
    /* the start state: every activation on the device (no host copy), the weights the schedule
     * starts with there too, packed from 0 in decreasing alignment (no padding) */
    uint32_t nr = 0;
    for (uint32_t i = 0; i <= L && !b.st; i++) r[nr++] = (res){a[i], 0, tp__align_of(vbytes(c->a[i])), vbytes(c->a[i])};
    for (uint32_t k = 0; k < L && !b.st; k++)
        if (start && start->resident0[k])
            r[nr++] = (res){w[k], start->valid0[k] || tp_chain_frozen(c, k), tp__align_of(c->w[k]), c->w[k]};
    qsort(r, nr, sizeof *r, res_cmp);
    uint64_t off = 0;
    for (uint32_t i = 0; i < nr && !b.st; i++) {
        b.st = tp_graph_set_resident(b.g, r[i].v, off, r[i].host_copy, err);
        off += r[i].bytes;
    }
done:
    free(a);
    free(w);
    free(u);
    free(r);
    if (b.st) {
        tp_graph_free(b.g);
        return b.st;
    }
    *out = b.g;
    return TP_OK;
}

/* vertex `prefix``k` of g if it is of kind `kind`, else -1; its name into id (32 bytes) */
static int64_t lookup(const tp_graph *g, char prefix, uint32_t k, tp_vkind kind, char *id)
{
    snprintf(id, 32, "%c%u", prefix, k);
    int64_t v = tp_graph_find(g, id);
    return v >= 0 && tp_graph_vertex(g, (uint32_t)v)->kind == kind ? v : -1;
}

/* vertex `prefix``k` of g, of kind `kind`, or -1 with err filled */
static int64_t named(const tp_graph *g, char prefix, uint32_t k, tp_vkind kind, tp_error *err)
{
    char id[32];
    int64_t v = lookup(g, prefix, k, kind, id);
    if (v < 0) {
        tp__fail(err, TP_ERR_INVALID,
                 "not a chain graph (turnip offload-plan --taskgraph): no %s '%s'", kind == TP_V_INPUT ? "input" : "kernel", id);
        return -1;
    }
    return v;
}

/* c, read from a graph's sizes (and, for milp, its flops at m's rate), within the chain model's
 * ranges (tp_chain_check): TP_ERR_INVALID naming where the numbers came from otherwise */
static tp_status chain_from_graph_ok(const tp_chain *c, const tp_chain_machine *m, tp_error *err)
{
    if (!tp_chain_check(c, err)) return TP_OK;
    tp_error why = err ? *err : (tp_error){0};
    if (m)
        return tp__fail(err, TP_ERR_INVALID, "weight offload milp: the kernels' times at %g flops/s and the link at %g B/s: %s",
                        m->flops_per_s, m->beta, why.msg);
    return tp__fail(err, TP_ERR_INVALID, "weight offload: the chain graph's sizes: %s", why.msg);
}

/* the flops of kernel `prefix``k` of g, 0 when g has none of that name */
static double flops_of(const tp_graph *g, char prefix, uint32_t k)
{
    char id[32];
    int64_t v = lookup(g, prefix, k, TP_V_KERNEL, id);
    return v < 0 ? 0 : tp_graph_vertex(g, (uint32_t)v)->flops;
}

tp_status tp_chain_graph_evictions(const tp_graph *g, tp_offload_algo algo, uint64_t mgpu, const tp_chain_machine *machine,
                                   tp_plan_evict **out, uint32_t *n, tp_error *err)
{
    if (!g || !out || !n) return tp__fail(err, TP_ERR_ARG, "tp_chain_graph_evictions: NULL argument");
    if ((unsigned)algo > TP_OFFLOAD_L2L_SYNC) /* the last strategy */
        return tp__fail(err, TP_ERR_ARG, "weight offload: unknown strategy %d", (int)algo);
    const tp_chain_machine *mc = machine;
    if (algo == TP_OFFLOAD_MILP &&
        (!mc || !(mc->flops_per_s >= TP_CHAIN_RATE_MIN && mc->flops_per_s <= TP_CHAIN_RATE_MAX &&
                  mc->beta >= TP_CHAIN_RATE_MIN && mc->beta <= TP_CHAIN_RATE_MAX && mc->time_limit_s >= 0 &&
                  mc->time_limit_s <= TP_CHAIN_TIME_LIMIT_MAX)))
        return tp__fail(err, TP_ERR_ARG,
                        "weight offload milp: needs the machine's kernel rate and link bandwidth (got %g flops/s, %g "
                        "bytes/s; each in [%g, %g]) and a time limit in [0, %g] s",
                        mc ? mc->flops_per_s : 0, mc ? mc->beta : 0, TP_CHAIN_RATE_MIN, TP_CHAIN_RATE_MAX, TP_CHAIN_TIME_LIMIT_MAX);
    if (tp_graph_devices(g) != 1) return tp__fail(err, TP_ERR_INVALID, "not a chain graph: %d devices, a chain has one", tp_graph_devices(g));
    uint32_t L = 0;
    char id[32];
    while (L < TP_OFFLOAD_MAX_LAYERS) {
        snprintf(id, sizeof id, "w%u", L + 1);
        if (tp_graph_find(g, id) < 0) break;
        L++;
    }
    if (!L) return tp__fail(err, TP_ERR_INVALID, "not a chain graph (turnip offload-plan --taskgraph): no input 'w1'");
    snprintf(id, sizeof id, "w%u", L + 1);
    if (tp_graph_find(g, id) >= 0)
        return tp__fail(err, TP_ERR_INVALID, "chain graph: more than %u layers, the strategies take 1..%u", L, TP_OFFLOAD_MAX_LAYERS);
    if (algo == TP_OFFLOAD_MILP && L > TP_CHAIN_BOUND_MAX_LAYERS) /* the graph's layers: its numbers, not the call */
        return tp__fail(err, TP_ERR_INVALID, "offload: %u layers, the milp strategy takes 1..%u (its MILP's limit)", L,
                        TP_CHAIN_BOUND_MAX_LAYERS);
    /* the chain the selection needs: sizes from the graph (times play no part in Algorithm 1;
     * the MILP's come from the kernels' flops at flops_per_s, B_k being X_k + G_k + U_k) */
    tp_chain *c = tp_chain_new(L);
    uint32_t *uv = malloc(L * sizeof *uv), *fv = malloc(L * sizeof *fv), *bv = malloc(L * sizeof *bv);
    uint8_t *sel = calloc(L, 1);
    tp_plan_evict *ev = malloc(2 * L * sizeof *ev);
    tp_status st = TP_OK;
    if (!c || !uv || !fv || !bv || !sel || !ev) st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
    else {
        c->mgpu = mgpu;
        c->beta = algo == TP_OFFLOAD_MILP ? mc->beta : 1e9;
    }
    for (uint32_t i = 0; i <= L && !st; i++) {
        int64_t av = named(g, 'a', i, TP_V_INPUT, err);
        if (av < 0) st = TP_ERR_INVALID;
        else c->a[i] = tp_graph_vertex(g, (uint32_t)av)->bytes;
    }
    for (uint32_t k = 1; k <= L && !st; k++) {
        /* a trained layer: U_k updates w_k, F_k reads U_k; a frozen one (tp_chain_taskgraph): no
         * U_k, F_k reads w_k, and w_k leaves after G_k, the last kernel of B_k */
        char uid[32];
        int64_t wv = named(g, 'w', k, TP_V_INPUT, err), uq = -1, gq = -1, f = -1;
        if (wv >= 0) uq = lookup(g, 'U', k, TP_V_KERNEL, uid);
        if (wv >= 0 && uq < 0) gq = named(g, 'G', k, TP_V_KERNEL, err); /* frozen, or not a chain graph */
        if (uq >= 0 || gq >= 0) f = named(g, 'F', k, TP_V_KERNEL, err);
        if (f < 0) {
            st = TP_ERR_INVALID;
            break;
        }
        int frozen = uq < 0;
        /* u: the weight F_k reads (U_k's output, or w_k itself); b: B_k's kernel that reads w_k
         * (U_k; for a frozen layer G_k, as a trained G_k never reads its weight) */
        uint32_t u = (uint32_t)(frozen ? wv : uq), bq = (uint32_t)(frozen ? gq : uq);
        const tp_vertex *fk = tp_graph_vertex(g, (uint32_t)f), *bk = tp_graph_vertex(g, bq);
        int reads_w = 0, reads_u = 0;
        for (uint32_t j = 0; j < bk->ninputs; j++) reads_w |= bk->inputs[j] == (uint32_t)wv;
        for (uint32_t j = 0; j < fk->ninputs; j++) reads_u |= fk->inputs[j] == u;
        if (!reads_w || !reads_u)
            st = tp__fail(err, TP_ERR_INVALID, "not a chain graph: '%s' must read 'w%u' and '%s' must read '%s'%s", bk->id, k,
                          fk->id, tp_graph_vertex(g, u)->id, frozen ? " (no 'U' kernel: a frozen layer)" : "");
        c->w[k - 1] = tp_graph_vertex(g, (uint32_t)wv)->bytes;
        c->frozen[k - 1] = (uint8_t)frozen;
        c->uf[k - 1] = c->ub[k - 1] = 1;
        if (algo == TP_OFFLOAD_MILP) {
            c->uf[k - 1] = fk->flops / mc->flops_per_s;
            c->ub[k - 1] = (flops_of(g, 'X', k) + flops_of(g, 'G', k) + flops_of(g, 'U', k)) / mc->flops_per_s;
        }
        uv[k - 1] = u;
        bv[k - 1] = bq;
        fv[k - 1] = (uint32_t)f;
    }
    if (!st) st = chain_from_graph_ok(c, algo == TP_OFFLOAD_MILP ? mc : NULL, err);
    if (!st && (algo == TP_OFFLOAD_L2L || algo == TP_OFFLOAD_L2L_SYNC)) /* only the weight in use stays; w_L stays from F_L to B_L */
        for (uint32_t k = 0; k < L; k++) sel[k] = (uint8_t)(TP_OFFLOAD_SEL0 | (k + 1 < L ? TP_OFFLOAD_SEL1 : 0));
    else if (!st && algo == TP_OFFLOAD_MILP) {
        st = tp_offload_select_milp(c, mc->time_limit_s > 0 ? mc->time_limit_s : TP_OFFLOAD_MILP_TIME_LIMIT, sel, NULL, err);
    }
    else if (!st)
        st = tp_offload_select(c, algo == TP_OFFLOAD_GREEDY, sel, err);
    uint32_t m = 0;
    for (uint32_t k = 0; k < L && !st; k++) { /* (k,0): away from B_k to F_k; (k,1): from F_k to the next B_k */
        if (sel[k] & TP_OFFLOAD_SEL0) ev[m++] = (tp_plan_evict){uv[k], bv[k]};
        if (sel[k] & TP_OFFLOAD_SEL1) ev[m++] = (tp_plan_evict){uv[k], fv[k]};
    }
    tp_chain_free(c);
    free(uv);
    free(fv);
    free(bv);
    free(sel);
    if (st) {
        free(ev);
        return st;
    }
    *out = ev;
    *n = m;
    return TP_OK;
}
