/* offload_greedy.c - the strategies of shared/papers/weight-offloading-strategies.txt
 * (section 5; docs/weight-offload.md): Algorithm 1 (greedy selection by profit, with or without
 * the discount), Algorithm 2 (greedy list scheduling over every cutoff) and L2L.
 *
 * The schedulers keep their own memory timeline (sorted (time, delta) events: weight buffers
 * from a prefetch's start to an offload's end or a delete, each computation's memory beyond its
 * weight, what rests between computations) and place each operation at the earliest time its
 * inputs, its resource and the memory allow, the memory checked from that time on against every
 * event already placed. The checker (offload.c) replays the result independently. A frozen layer
 * (tp_chain.frozen) has no gradient and is never written back: each of its choices costs one
 * prefetch, and every strategy deletes it where another layer's weight is offloaded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/offload.h"
#include "io/util.h"

/* ---- Algorithm 1 ---- */

/* own = 1: the paper's excess E_o = sum_i |w_i| + M_o - M_GPU, which counts the operation's
 * own weight once more than equation 1 and so keeps |w_o| free during o (room for the buffer
 * of a transfer in flight); own = 0: the exact excess (every computation just fits). */
static tp_status select_once(const tp_chain *c, int discount, int own, uint8_t *sel, tp_error *err)
{
    uint32_t L = c->layers;
    /* operations: layer i's F is op i, its B op L + i; E[o] excess in bytes (double: exact below 2^53) */
    double *E = malloc(2 * (size_t)L * sizeof *E);
    if (!E) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    double wsum = 0, pre = (double)c->a[0];
    for (uint32_t i = 0; i < L; i++) wsum += (double)c->w[i];
    for (uint32_t i = 0; i < L; i++) {
        pre += (double)c->a[i + 1];                                /* a^0..a^{i+1}: the paper's sum_{k<=i} */
        E[i] = wsum + own * (double)c->w[i] + pre - (double)c->mgpu;             /* M_F = w_i + acts */
        E[L + i] = wsum + own * (double)c->w[i] + (double)tp_chain_grad_bytes(c, i) + pre - (double)c->mgpu; /* M_B */
    }
    memset(sel, 0, L);
    tp_status st = TP_OK;
    for (;;) {
        double emax = 0;
        uint32_t omax = 0;
        for (uint32_t o = 0; o < 2 * L; o++)
            if (E[o] > emax) emax = E[o], omax = o;
        if (emax <= 0) break;
        double best = 0;
        uint32_t bk = 0, bd = 0;
        for (uint32_t k = 0; k < L; k++) {
            if (!c->w[k]) continue;
            double wk = (double)c->w[k];
            for (uint32_t d = 0; d < 2; d++) {
                uint8_t bit = d ? TP_OFFLOAD_SEL1 : TP_OFFLOAD_SEL0, other = d ? TP_OFFLOAD_SEL0 : TP_OFFLOAD_SEL1;
                if (sel[k] & bit) continue;
                /* (k,1) covers the operations of layers after k, (k,0) those before k */
                uint32_t lo = d ? k + 1 : 0, hi = d ? L : k;
                double ben = 0;
                for (uint32_t i = lo; i < hi; i++) {
                    if (E[i] > 0) ben += E[i] < wk ? E[i] : wk;
                    if (E[L + i] > 0) ben += E[L + i] < wk ? E[L + i] : wk;
                }
                /* a frozen weight is never written back: each choice is one prefetch */
                double cost = (tp_chain_frozen(c, k) || (discount && (sel[k] & other))) ? wk : 2 * wk;
                double profit = ben / cost;
                if (profit > best) best = profit, bk = k, bd = d;
            }
        }
        if (best <= 0) {
            st = tp__fail(err, TP_ERR_INFEASIBLE,
                          "offload: %s of layer %u needs %.0f bytes more than mgpu %llu with every useful weight away",
                          omax < L ? "F" : "B", omax % L, emax, (unsigned long long)c->mgpu);
            break;
        }
        sel[bk] |= bd ? TP_OFFLOAD_SEL1 : TP_OFFLOAD_SEL0;
        uint32_t lo = bd ? bk + 1 : 0, hi = bd ? L : bk;
        double wk = (double)c->w[bk];
        for (uint32_t i = lo; i < hi; i++) {
            E[i] = E[i] - wk > 0 ? E[i] - wk : (E[i] > 0 ? 0 : E[i]);
            E[L + i] = E[L + i] - wk > 0 ? E[L + i] - wk : (E[L + i] > 0 ? 0 : E[L + i]);
        }
    }
    free(E);
    return st;
}

tp_status tp_offload_select(const tp_chain *c, int discount, uint8_t *sel, tp_error *err)
{
    uint32_t L = c->layers;
    if (L < 1 || L > TP_OFFLOAD_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "offload: %u layers, the algorithms take 1..%u", L, TP_OFFLOAD_MAX_LAYERS);
    /* nothing to move when every weight fits beside every computation; else the paper's
     * excess, or the exact one where the paper's cannot be met */
    tp_status st = select_once(c, discount, 0, sel, err);
    uint32_t any = 0;
    for (uint32_t k = 0; k < L && !st; k++) any |= sel[k];
    if (st || !any) return st;
    st = select_once(c, discount, 1, sel, err);
    if (st == TP_ERR_INFEASIBLE) st = select_once(c, discount, 0, sel, err);
    return st;
}

/* ---- the memory timeline ---- */

typedef struct {
    double t;
    int64_t d;
} tev;

typedef struct {
    tev *e;
    size_t n, cap;
    int64_t mgpu;
} tline;

static int tl_add(tline *tl, double t, int64_t d)
{
    if (!TP__GROW(tl->e, tl->cap, tl->n + 1)) return 0;
    size_t i = tl->n;
    while (i > 0 && (tl->e[i - 1].t > t || (tl->e[i - 1].t == t && tl->e[i - 1].d > d))) {
        tl->e[i] = tl->e[i - 1];
        i--;
    }
    tl->e[i] = (tev){t, d};
    tl->n++;
    return 1;
}

/* 1 if for every tau >= t: U(tau) + (tau < until ? d1 : d2) <= mgpu */
static int tl_fits(const tline *tl, double t, double until, int64_t d1, int64_t d2)
{
    int64_t cur = 0;
    size_t i = 0;
    while (i < tl->n && tl->e[i].t <= t) cur += tl->e[i++].d;
    if (cur + (t < until ? d1 : d2) > tl->mgpu) return 0;
    while (i < tl->n) {
        double g = tl->e[i].t;
        while (i < tl->n && tl->e[i].t == g) cur += tl->e[i++].d;
        if (cur + (g < until ? d1 : d2) > tl->mgpu) return 0;
    }
    return 1;
}

/* earliest t >= t0 (t0 or an event time) where tl_fits(t, t + dur, d1, d2); INFINITY if none */
static double tl_earliest(const tline *tl, double t0, double dur, int64_t d1, int64_t d2)
{
    if (tl_fits(tl, t0, t0 + dur, d1, d2)) return t0;
    for (size_t i = 0; i < tl->n; i++) {
        if (tl->e[i].t <= t0 || (i && tl->e[i].t == tl->e[i - 1].t)) continue;
        if (tl_fits(tl, tl->e[i].t, tl->e[i].t + dur, d1, d2)) return tl->e[i].t;
    }
    return INFINITY;
}

/* ---- schedules under construction ---- */

typedef struct {
    tp_offload_schedule *s;
    uint32_t cap;
    int nomem;
} sbuild;

static void put(sbuild *b, tp_offload_op_kind k, uint32_t layer, double start, double end)
{
    if (b->nomem) return;
    if (b->s->nops == b->cap) {
        uint32_t nc = b->cap ? 2 * b->cap : 64;
        tp_offload_op *o = realloc(b->s->ops, nc * sizeof *o);
        if (!o) {
            b->nomem = 1;
            return;
        }
        b->s->ops = o;
        b->cap = nc;
    }
    b->s->ops[b->s->nops++] = (tp_offload_op){k, layer, start, end};
}

static tp_offload_schedule *sched_new(uint32_t L)
{
    tp_offload_schedule *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->layers = L;
    s->resident0 = calloc(L, 1);
    s->valid0 = calloc(L, 1);
    if (!s->resident0 || !s->valid0) {
        tp_offload_schedule_free(s);
        return NULL;
    }
    return s;
}

/* a^0..a^k for k = 0..L */
static uint64_t *prefix_acts(const tp_chain *c)
{
    uint64_t *p = malloc(((size_t)c->layers + 1) * sizeof *p), s = 0;
    if (!p) return NULL;
    for (uint32_t k = 0; k <= c->layers; k++) p[k] = s += c->a[k];
    return p;
}

/* ---- Algorithm 2 for one cutoff: the first `cut` backward prefetches (largest k first) were
 * done at the end of the previous iteration. 0 ok, 1 infeasible, -1 out of memory. */
typedef struct {
    double *bend, *valid_at, *gone_at, *up_end;
    uint32_t *wl;
    uint8_t *carried;
} scratch;

/* w_k (w bytes, tw seconds on the link) leaves the GPU after a computation ending at `at`: deleted
 * there where its host copy is valid (del), else offloaded once the offload link is free (*toff,
 * moved on). Returns when it is gone (offloaded: valid on the host), -1 out of memory. */
static double leave(sbuild *b, tline *tl, uint32_t k, double at, int del, double tw, int64_t w, double *toff)
{
    if (del) {
        put(b, TP_OFFOP_DELETE, k, at, at);
        return tl_add(tl, at, -w) ? at : -1;
    }
    double t = at > *toff ? at : *toff;
    put(b, TP_OFFOP_OFFLOAD, k, t, t + tw);
    *toff = t + tw;
    return tl_add(tl, t + tw, -w) ? t + tw : -1;
}

static int greedy_cut(const tp_chain *c, const uint8_t *sel, int discount, uint32_t cut, const uint64_t *pref,
                      scratch *z, tline *tl, sbuild *b)
{
    uint32_t L = c->layers, nwl = 0;
    const double beta = c->beta;
    tp_offload_schedule *s = b->s;
    tl->n = 0;
    s->nops = 0;
    memset(z->carried, 0, L);
    for (uint32_t k = L, n = 0; k-- > 0 && n < cut;)
        if (sel[k] & TP_OFFLOAD_SEL1) z->carried[k] = 1, n++;
    if (!tl_add(tl, 0, (int64_t)pref[L])) return -1; /* after F_L: a^0..a^L rest */
    for (uint32_t k = 0; k < L; k++) {
        s->resident0[k] = !(sel[k] & TP_OFFLOAD_SEL1) || z->carried[k];
        s->valid0[k] = sel[k] || tp_chain_frozen(c, k) ? 1 : 0;
        if (s->resident0[k] && !tl_add(tl, 0, (int64_t)c->w[k])) return -1;
        z->up_end[k] = -1;
    }
    double tpre = 0, toff = 0, tgpu = 0;
    int64_t rest = (int64_t)pref[L];
    for (uint32_t k = L; k-- > 0;) {
        double tw = (double)c->w[k] / beta, ready = 0;
        int64_t w = (int64_t)c->w[k];
        if ((sel[k] & TP_OFFLOAD_SEL1) && !z->carried[k]) {
            double t = tl_earliest(tl, tpre, 0, w, w);
            if (!isfinite(t)) return 1;
            put(b, TP_OFFOP_PREFETCH, k, t, t + tw);
            if (!tl_add(tl, t, w)) return -1;
            tpre = ready = t + tw;
        }
        int fz = tp_chain_frozen(c, k);
        int64_t x = (int64_t)pref[k + 1] + (int64_t)tp_chain_grad_bytes(c, k), r = (int64_t)pref[k];
        double s0 = tgpu > ready ? tgpu : ready, st = tl_earliest(tl, s0, c->ub[k], x - rest, r - rest);
        if (!isfinite(st)) return 1;
        put(b, TP_OFFOP_B, k, st, st + c->ub[k]);
        if (!tl_add(tl, st, x - rest) || !tl_add(tl, st + c->ub[k], r - x)) return -1;
        rest = r;
        tgpu = z->bend[k] = st + c->ub[k];
        /* best effort: idle offload-link time uploads the smallest waiting (k,1)-only weight */
        while (nwl) {
            uint32_t m = 0;
            for (uint32_t q = 1; q < nwl; q++)
                if (c->w[z->wl[q]] < c->w[z->wl[m]]) m = q;
            uint32_t j = z->wl[m];
            double t = toff > z->bend[j] ? toff : z->bend[j], e = t + (double)c->w[j] / beta;
            if (e > tgpu) break;
            put(b, TP_OFFOP_UPLOAD, j, t, e);
            toff = z->up_end[j] = e;
            z->wl[m] = z->wl[--nwl];
        }
        if (sel[k] & TP_OFFLOAD_SEL0) { /* a frozen weight's host copy is still valid */
            if ((z->valid_at[k] = leave(b, tl, k, tgpu, fz, tw, w, &toff)) < 0) return -1;
        } else if ((sel[k] & TP_OFFLOAD_SEL1) && discount && !fz) {
            z->wl[nwl++] = k;
        }
    }
    for (uint32_t k = 0; k < L; k++) {
        double tw = (double)c->w[k] / beta, ready = 0;
        int64_t w = (int64_t)c->w[k];
        if (sel[k] & TP_OFFLOAD_SEL0) {
            double t0 = tpre > z->valid_at[k] ? tpre : z->valid_at[k], t = tl_earliest(tl, t0, 0, w, w);
            if (!isfinite(t)) return 1;
            put(b, TP_OFFOP_PREFETCH, k, t, t + tw);
            if (!tl_add(tl, t, w)) return -1;
            tpre = ready = t + tw;
        }
        int64_t x = (int64_t)pref[k + 1], r = x;
        double s0 = tgpu > ready ? tgpu : ready, st = tl_earliest(tl, s0, c->uf[k], x - rest, r - rest);
        if (!isfinite(st)) return 1;
        put(b, TP_OFFOP_F, k, st, st + c->uf[k]);
        if (!tl_add(tl, st, x - rest) || !tl_add(tl, st + c->uf[k], r - x)) return -1;
        rest = r;
        tgpu = st + c->uf[k];
        if (sel[k] & TP_OFFLOAD_SEL1) { /* deleted where the host copy is valid (once uploaded) */
            int del = tp_chain_frozen(c, k) || (discount && ((sel[k] & TP_OFFLOAD_SEL0) || z->up_end[k] >= 0));
            double at = del && z->up_end[k] > tgpu ? z->up_end[k] : tgpu;
            if ((z->gone_at[k] = leave(b, tl, k, at, del, tw, w, &toff)) < 0) return -1;
        }
    }
    /* the carried prefetches, for the next iteration's backward phase */
    for (uint32_t k = L; k-- > 0;) {
        if (!z->carried[k]) continue;
        int64_t w = (int64_t)c->w[k];
        double t0 = tpre > z->gone_at[k] ? tpre : z->gone_at[k], t = tl_earliest(tl, t0, 0, w, w);
        if (!isfinite(t)) return 1;
        put(b, TP_OFFOP_PREFETCH, k, t, t + (double)c->w[k] / beta);
        if (!tl_add(tl, t, w)) return -1;
        tpre = t + (double)c->w[k] / beta;
    }
    double mk = tgpu;
    if (toff > mk) mk = toff;
    if (tpre > mk) mk = tpre;
    for (uint32_t j = 0; j < s->nops; j++)
        if (s->ops[j].end > mk) mk = s->ops[j].end;
    s->makespan = mk;
    return b->nomem ? -1 : 0;
}

static tp_status copy_schedule(const tp_offload_schedule *from, tp_offload_schedule **to)
{
    tp_offload_schedule *s = sched_new(from->layers);
    if (!s) return TP_ERR_NOMEM;
    memcpy(s->resident0, from->resident0, from->layers);
    memcpy(s->valid0, from->valid0, from->layers);
    s->ops = malloc(((size_t)from->nops + 1) * sizeof *s->ops);
    if (!s->ops) {
        tp_offload_schedule_free(s);
        return TP_ERR_NOMEM;
    }
    memcpy(s->ops, from->ops, (size_t)from->nops * sizeof *s->ops);
    s->nops = from->nops;
    s->makespan = from->makespan;
    tp_offload_schedule_free(*to);
    *to = s;
    return TP_OK;
}

tp_status tp_offload_schedule_greedy(const tp_chain *c, const uint8_t *sel, int discount, tp_offload_schedule **out,
                                     tp_error *err)
{
    *out = NULL;
    uint32_t L = c->layers;
    if (L < 1 || L > TP_OFFLOAD_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "offload: %u layers, the algorithms take 1..%u", L, TP_OFFLOAD_MAX_LAYERS);
    scratch z = {0};
    tline tl = {0};
    tl.mgpu = c->mgpu > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)c->mgpu;
    sbuild b = {sched_new(L), 0, 0};
    uint64_t *pref = prefix_acts(c);
    z.bend = malloc(L * sizeof *z.bend);
    z.valid_at = calloc(L, sizeof *z.valid_at);
    z.gone_at = calloc(L, sizeof *z.gone_at);
    z.up_end = malloc(L * sizeof *z.up_end);
    z.wl = malloc(L * sizeof *z.wl);
    z.carried = malloc(L);
    tp_offload_schedule *best = NULL;
    tp_status st = TP_OK;
    if (!b.s || !pref || !z.bend || !z.valid_at || !z.gone_at || !z.up_end || !z.wl || !z.carried) {
        st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto out;
    }
    uint32_t npb = 0;
    for (uint32_t k = 0; k < L; k++) npb += (sel[k] & TP_OFFLOAD_SEL1) ? 1 : 0;
    for (uint32_t cut = 0; cut <= npb; cut++) {
        int r = greedy_cut(c, sel, discount, cut, pref, &z, &tl, &b);
        if (r < 0) {
            st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            goto out;
        }
        if (r == 0 && (!best || b.s->makespan < best->makespan) && copy_schedule(b.s, &best)) {
            st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            goto out;
        }
    }
    if (!best) st = tp__fail(err, TP_ERR_INFEASIBLE, "offload: no cutoff of the greedy schedule fits in mgpu %llu",
                             (unsigned long long)c->mgpu);
out:
    if (st) tp_offload_schedule_free(best);
    else *out = best;
    tp_offload_schedule_free(b.s);
    free(tl.e);
    free(pref);
    free(z.bend);
    free(z.valid_at);
    free(z.gone_at);
    free(z.up_end);
    free(z.wl);
    free(z.carried);
    return st;
}

/* ---- L2L: computations in order B_L..B_1 F_1..F_L (position p, layer lay(p)); only w_lay(p)
 * stays; the next position's weight is prefetched from the current computation's start (its
 * end in the synchronous L2L); after
 * B_k, w_k goes back to the host (an offload, or an upload for B_1 whose F_1 follows; a frozen
 * w_k is deleted, or kept for F_1); after F_k it is deleted (its host copy is valid); F_L keeps
 * w_L for B_L. */
static uint32_t lay(uint32_t L, uint32_t p)
{
    return p < L ? L - 1 - p : p - L;
}

/* sync 0: the next weight's prefetch starts with the current computation (overlapped); sync 1:
 * when it ends (the paper's "synchronous parameter-server": every computation waits for its
 * weight) */
static tp_status l2l(const tp_chain *c, int sync, tp_offload_schedule **out, tp_error *err)
{
    *out = NULL;
    uint32_t L = c->layers;
    if (L < 1 || L > TP_OFFLOAD_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "offload: %u layers, the algorithms take 1..%u", L, TP_OFFLOAD_MAX_LAYERS);
    tline tl = {0};
    tl.mgpu = c->mgpu > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)c->mgpu;
    sbuild b = {sched_new(L), 0, 0};
    uint64_t *pref = prefix_acts(c);
    double *ready = calloc(L, sizeof *ready), *valid_at = calloc(L, sizeof *valid_at), *up_end = calloc(L, sizeof *up_end);
    tp_status st = TP_OK;
    if (!b.s || !pref || !ready || !valid_at || !up_end || !tl_add(&tl, 0, (int64_t)pref[L]) ||
        !tl_add(&tl, 0, (int64_t)c->w[L - 1])) {
        st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto out;
    }
    tp_offload_schedule *s = b.s;
    for (uint32_t k = 0; k < L; k++) s->valid0[k] = 1;
    s->resident0[L - 1] = 1;
    double tpre = 0, toff = 0, tgpu = 0;
    int64_t rest = (int64_t)pref[L];
    for (uint32_t p = 0; p < 2 * L; p++) {
        uint32_t k = lay(L, p);
        int isb = p < L;
        double u = isb ? c->ub[k] : c->uf[k];
        int64_t x = (int64_t)pref[k + 1] + (isb ? (int64_t)tp_chain_grad_bytes(c, k) : 0), r = isb ? (int64_t)pref[k] : x;
        double s0 = tgpu > ready[k] ? tgpu : ready[k], t = tl_earliest(&tl, s0, u, x - rest, r - rest);
        if (!isfinite(t)) goto infeasible;
        put(&b, isb ? TP_OFFOP_B : TP_OFFOP_F, k, t, t + u);
        if (!tl_add(&tl, t, x - rest) || !tl_add(&tl, t + u, r - x)) goto nomem;
        rest = r;
        double start = t;
        tgpu = t + u;
        if (p + 1 < 2 * L && lay(L, p + 1) != k) { /* prefetch the next weight during this computation */
            uint32_t n = lay(L, p + 1);
            int64_t w = (int64_t)c->w[n];
            double t0 = sync ? tgpu : start;
            if (tpre > t0) t0 = tpre;
            if (valid_at[n] > t0) t0 = valid_at[n];
            double tp = tl_earliest(&tl, t0, 0, w, w);
            if (!isfinite(tp)) goto infeasible;
            put(&b, TP_OFFOP_PREFETCH, n, tp, tp + (double)w / c->beta);
            if (!tl_add(&tl, tp, w)) goto nomem;
            tpre = ready[n] = tp + (double)w / c->beta;
        }
        double tw = (double)c->w[k] / c->beta;
        if (isb && tp_chain_frozen(c, k)) { /* its host copy is still valid: B_1 keeps it for F_1 */
            valid_at[k] = tgpu;
            if (p != L - 1) {
                put(&b, TP_OFFOP_DELETE, k, tgpu, tgpu);
                if (!tl_add(&tl, tgpu, -(int64_t)c->w[k])) goto nomem;
            }
        } else if (isb) {
            double t1 = tgpu > toff ? tgpu : toff;
            if (p == L - 1) { /* B_1: F_1 follows on the same weight */
                put(&b, TP_OFFOP_UPLOAD, k, t1, t1 + tw);
                up_end[k] = t1 + tw;
            } else {
                put(&b, TP_OFFOP_OFFLOAD, k, t1, t1 + tw);
                if (!tl_add(&tl, t1 + tw, -(int64_t)c->w[k])) goto nomem;
            }
            toff = valid_at[k] = t1 + tw;
        } else if (p != 2 * L - 1) {
            double t1 = tgpu > up_end[k] ? tgpu : up_end[k];
            put(&b, TP_OFFOP_DELETE, k, t1, t1);
            if (!tl_add(&tl, t1, -(int64_t)c->w[k])) goto nomem;
        }
    }
    if (b.nomem) goto nomem;
    s->makespan = tgpu;
    for (uint32_t j = 0; j < s->nops; j++)
        if (s->ops[j].end > s->makespan) s->makespan = s->ops[j].end;
    *out = s;
    b.s = NULL;
    goto out;
infeasible:
    st = tp__fail(err, TP_ERR_INFEASIBLE, "offload: L2L does not fit in mgpu %llu", (unsigned long long)c->mgpu);
    goto out;
nomem:
    st = tp__fail(err, TP_ERR_NOMEM, "out of memory");
out:
    tp_offload_schedule_free(b.s);
    free(tl.e);
    free(pref);
    free(ready);
    free(valid_at);
    free(up_end);
    return st;
}

tp_status tp_offload_schedule_l2l(const tp_chain *c, tp_offload_schedule **out, tp_error *err)
{
    return l2l(c, 0, out, err);
}

/* a chain the algorithms take: valid, 1..TP_OFFLOAD_MAX_LAYERS layers */
static tp_status chain_ok(const tp_chain *c, tp_error *err)
{
    tp_status st = tp_chain_check(c, err);
    if (st) return st;
    if (c->layers < 1 || c->layers > TP_OFFLOAD_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "offload: %u layers, the algorithms take 1..%u", c->layers,
                        TP_OFFLOAD_MAX_LAYERS);
    return TP_OK;
}

tp_status tp_offload_plan(const tp_chain *c, tp_offload_algo algo, tp_offload_schedule **out, tp_error *err)
{
    *out = NULL;
    if (algo == TP_OFFLOAD_MILP) return tp_offload_plan_milp(c, TP_OFFLOAD_MILP_TIME_LIMIT, out, NULL, err); /* checks c */
    tp_status cs = chain_ok(c, err);
    if (cs) return cs;
    if (algo == TP_OFFLOAD_L2L || algo == TP_OFFLOAD_L2L_SYNC) return l2l(c, algo == TP_OFFLOAD_L2L_SYNC, out, err);
    if (algo != TP_OFFLOAD_GREEDY && algo != TP_OFFLOAD_GREEDY_STAR)
        return tp__fail(err, TP_ERR_ARG, "offload: unknown algorithm %d", (int)algo);
    uint8_t *sel = malloc(c->layers);
    if (!sel) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    int discount = algo == TP_OFFLOAD_GREEDY;
    tp_status st = tp_offload_select(c, discount, sel, err);
    if (!st) st = tp_offload_schedule_greedy(c, sel, discount, out, err);
    free(sel);
    return st;
}

/* Algorithm 2 (discount on) for sel into *s (NULL when no cutoff fits: not an error) */
static tp_status schedule_or_none(const tp_chain *c, const uint8_t *sel, tp_offload_schedule **s, tp_error *err)
{
    tp_status st = tp_offload_schedule_greedy(c, sel, 1, s, err);
    return st == TP_ERR_INFEASIBLE ? TP_OK : st;
}

/* tp_offload_select_milp on a checked chain; *best (may be NULL) gets Algorithm 2's schedule of
 * the selection returned */
static tp_status select_milp(const tp_chain *c, double time_limit_s, uint8_t *sel, tp_chain_bound_result *bound,
                             tp_offload_schedule **best, tp_error *err)
{
    if (c->layers > TP_CHAIN_BOUND_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "offload: %u layers, the milp strategy takes 1..%u (its MILP's limit)",
                        c->layers, TP_CHAIN_BOUND_MAX_LAYERS);
    tp_chain_bound_result b;
    tp_status st = tp_chain_bound_select(c, time_limit_s, &b, sel, err);
    if (st) return st;
    if (bound) *bound = b; /* a valid bound, incumbent or not */
    if (!isfinite(b.incumbent))
        return tp__fail(err, TP_ERR_INFEASIBLE, "offload: the MILP solver found no solution in %g s (a longer time limit may)",
                        time_limit_s);
    tp_offload_schedule *cur = NULL;
    if ((st = schedule_or_none(c, sel, &cur, err))) return st;
    if (!cur) return tp__fail(err, TP_ERR_INFEASIBLE, "offload: Algorithm 2 fits no schedule to the MILP's selection");
    /* the MILP is indifferent to transfers that cost no idle (it minimises idle alone): drop
     * each choice whose removal leaves Algorithm 2's makespan as it was, layer 1 to L */
    for (uint32_t k = 0; k < c->layers && !st; k++)
        for (int d = 1; d >= 0 && !st; d--) {
            uint8_t bit = d ? TP_OFFLOAD_SEL1 : TP_OFFLOAD_SEL0;
            if (!(sel[k] & bit)) continue;
            sel[k] &= (uint8_t)~bit;
            tp_offload_schedule *s = NULL;
            st = schedule_or_none(c, sel, &s, err);
            if (!st && s && s->makespan <= cur->makespan * (1 + 1e-12)) {
                tp_offload_schedule_free(cur);
                cur = s;
            } else {
                sel[k] |= bit;
                tp_offload_schedule_free(s);
            }
        }
    if (!st && best) *best = cur;
    else tp_offload_schedule_free(cur);
    return st;
}

tp_status tp_offload_select_milp(const tp_chain *c, double time_limit_s, uint8_t *sel, tp_chain_bound_result *bound,
                                 tp_error *err)
{
    if (!sel) return tp__fail(err, TP_ERR_ARG, "tp_offload_select_milp: NULL selection");
    tp_status st = chain_ok(c, err);
    return st ? st : select_milp(c, time_limit_s, sel, bound, NULL, err);
}

tp_status tp_offload_plan_milp(const tp_chain *c, double time_limit_s, tp_offload_schedule **out,
                               tp_chain_bound_result *bound, tp_error *err)
{
    if (!out) return tp__fail(err, TP_ERR_ARG, "tp_offload_plan_milp: NULL result");
    *out = NULL;
    tp_status st = chain_ok(c, err);
    if (st) return st;
    uint8_t *sel = malloc(c->layers);
    if (!sel) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    st = select_milp(c, time_limit_s, sel, bound, out, err); /* the pruning's last schedule is the plan */
    free(sel);
    return st;
}
