/* test_offload_brute.c - the weight-offload strategies and the MILP lower bound (issue 14;
 * docs/weight-offload.md) against a brute force over explicit schedules of tiny chains, L = 2..4.
 *
 * The brute force, written here and sharing no code with src/plan/offload*.c:
 * - a selection gives each layer k one of ten plans (`plans` below): nothing; (k,0) (offload
 *   after B_k, prefetch before F_k); (k,1) (away between F_k and the next B_k), its copy made by
 *   an offload after F_k or by an upload after B_k and a free delete after F_k, its prefetch at
 *   the start of the iteration (away at time 0) or at the end (carried: resident at 0); or both
 *   choices, after F_k a delete (the discount: the host copy is still valid) or an offload (no
 *   discount), prefetched at the start or carried. So 10^L selections.
 * - for a selection, every order of the transfers on each link direction (all permutations of
 *   the prefetches on host->GPU, of the offloads and uploads on GPU->host), decided lazily in a
 *   depth-first search and cut where the order deadlocks (a computation waits for a prefetch
 *   queued behind a transfer that waits for a later computation) or memory cannot fit.
 * - placement, as early as possible, in a fixed sequence: the computations in their order
 *   B_L..B_1 F_1..F_L; before each, the prefetches up to the one it needs in the link's order;
 *   after each, every offload, upload and delete whose inputs are placed, in the link's order;
 *   at the end the carried prefetches. Each operation starts at the earliest instant (the first
 *   such instant or the end of some placed reservation) at which its inputs have ended, its link
 *   or the GPU is free in its order and memory, counted as the checker counts it, stays within
 *   mgpu from that instant on against everything placed (a reservation not yet released is held
 *   for ever).
 * - every complete schedule is replayed by the checker (tp_offload_check), which must accept it
 *   and agree on its makespan; the minimum over them is the brute-force optimum of this family.
 *   L = 2, 3 visit every schedule (38 to 61,220 a chain); L = 4 cuts branches that cannot beat
 *   the best found (each resource's free time plus its remaining work: exact for the minimum;
 *   without the cut a chain has 0.3 to 1.1 million schedules, about 3 s each, same minima).
 * The family is not every schedule (placement is greedy, in one sequence; idle time inserted on
 * purpose is not in it), so its minimum is an upper bound on the OFF optimum and the MILP
 * optimum a lower bound. Asserted:
 * - every schedule visited is at least the MILP bound (the bound is valid);
 * - Greedy, Greedy* and L2L are at least the brute-force minimum (their selections, uploads,
 *   cutoffs and link orders are in the family; their placement follows the same rule: not a
 *   theorem, an observation that would fail if a strategy found a schedule the family misses);
 * - where the brute force reaches the compute sum, the bound equals it (compute sum <= bound <=
 *   any schedule); with memory for every weight the brute force is the compute sum;
 * - on a two-layer chain whose OFF optimum is derived by hand, the brute force finds exactly it,
 *   and the MILP equals it only where the derivation says so;
 * - on chains with whole-second durations, an exact search over every schedule (breadth-first
 *   over whole seconds, below) gives the OFF optimum: MILP bound <= optimum <= the family's
 *   minimum <= each strategy (the family reached the optimum on all 32 such chains).
 * Equality of the brute-force minimum and the MILP optimum is otherwise only counted and printed:
 * the MILP is a relaxation (memory only at operation starts; a transfer is an amount of bytes
 * that may be split over intervals and freed or counted in part), so it may lie strictly below
 * every schedule, as the two-layer chain shows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "io/util.h"
#include "turnip/offload.h"
#include "offload_chains.h"

#define BL 4                 /* most layers */
#define NOPS (2 * BL + 5 * BL) /* computations, then per layer at most two prefetches, two d2h transfers, a delete */
#define NHOLD (4 * NOPS)

enum { K_B, K_F, K_P1, K_P0, K_PC, K_O0, K_U, K_O1, K_DEL };
enum { R_GPU, R_H2D, R_D2H, R_NONE };

typedef struct {
    int sel0, sel1, carried, upload, discount;
} plan;
static const plan plans[10] = {
    {0, 0, 0, 0, 0}, {1, 0, 0, 0, 0},                  /* nothing; (k,0) */
    {0, 1, 0, 0, 0}, {0, 1, 1, 0, 0},                  /* (k,1): offload after F, prefetched at the start / carried */
    {0, 1, 0, 1, 0}, {0, 1, 1, 1, 0},                  /* (k,1): upload after B, delete after F */
    {1, 1, 0, 0, 1}, {1, 1, 1, 0, 1},                  /* both, delete after F (discount) */
    {1, 1, 0, 0, 0}, {1, 1, 1, 0, 0},                  /* both, offload after F (no discount) */
};

typedef struct {
    double a, b; /* [a, b), b = INFINITY while not released */
    uint64_t x;
} hold;

typedef struct {
    double start[NOPS], end[NOPS];
    uint8_t placed[NOPS];
    hold h[NHOLD];
    int nh;
    int wopen[BL]; /* the holding of w_k not yet released, or -1 */
    int rest;      /* the holding of what rests after the last placed computation */
    int ci;        /* next computation (position in B_L..B_1 F_1..F_L) */
    int hord[NOPS], nhord, hnext; /* host->GPU order decided so far, next to place */
    int dord[NOPS], ndord, dnext;
    double gfree, hfree, dfree;
} state;

typedef struct {
    const tp_chain *c;
    int L, n;
    int kind[NOPS], layer[NOPS], res[NOPS], dep[NOPS][2];
    double dur[NOPS];
    int need[2 * BL]; /* the prefetch computation p waits for, or -1 */
    int nh2d, nd2h;
    uint8_t res0[BL], valid0[BL];
    uint64_t act[2 * BL], rest[2 * BL], rest0;
    int bb;          /* cut branches that cannot beat best */
    double bound;    /* the MILP bound, 0 when none */
    double best;     /* the least makespan found */
    long leaves;     /* complete schedules checked */
} prob;

/* memory: the largest sum of holdings over [lo, hi), leaving out holding `skip` */
static uint64_t max_use(const state *S, double lo, double hi, int skip)
{
    uint64_t mx = 0;
    for (int q = -1; q < S->nh; q++) {
        double t = q < 0 ? lo : S->h[q].a;
        if (q >= 0 && !(t > lo && t < hi)) continue;
        uint64_t u = 0;
        for (int j = 0; j < S->nh; j++)
            if (j != skip && S->h[j].a <= t && t < S->h[j].b) u += S->h[j].x;
        if (u > mx) mx = u;
    }
    return mx;
}

/* the earliest instant >= t0 (t0 or the end of a holding) at which op i fits; -1 if none */
static double earliest(const prob *P, const state *S, int i, double t0)
{
    uint64_t M = P->c->mgpu;
    double cand = t0;
    for (;;) {
        int ok;
        if (P->res[i] == R_H2D) {
            ok = max_use(S, cand, INFINITY, -1) + P->c->w[P->layer[i]] <= M;
        } else { /* a computation: its charge replaces the rest of the previous one */
            ok = max_use(S, cand, cand + P->dur[i], S->rest) + P->act[i] <= M &&
                 max_use(S, cand + P->dur[i], INFINITY, S->rest) + P->rest[i] <= M;
        }
        if (ok) return cand;
        double nx = INFINITY;
        for (int j = 0; j < S->nh; j++)
            if (S->h[j].b > cand && S->h[j].b < nx) nx = S->h[j].b;
        if (nx == INFINITY) return -1;
        cand = nx;
    }
}

static int add_hold(state *S, double a, double b, uint64_t x)
{
    CHECK(S->nh < NHOLD);
    S->h[S->nh] = (hold){a, b, x};
    return S->nh++;
}

static double dep_end(const prob *P, const state *S, int i)
{
    double t = 0;
    for (int q = 0; q < 2; q++)
        if (P->dep[i][q] >= 0 && S->end[P->dep[i][q]] > t) t = S->end[P->dep[i][q]];
    return t;
}

static int deps_placed(const prob *P, const state *S, int i)
{
    for (int q = 0; q < 2; q++)
        if (P->dep[i][q] >= 0 && !S->placed[P->dep[i][q]]) return 0;
    return 1;
}

/* places op i; 0 when memory never fits */
static int place(const prob *P, state *S, int i)
{
    int k = P->layer[i];
    double t = dep_end(P, S, i);
    switch (P->res[i]) {
    case R_GPU:
        if (S->gfree > t) t = S->gfree;
        if ((t = earliest(P, S, i, t)) < 0) return 0;
        S->h[S->rest].b = t;
        add_hold(S, t, t + P->dur[i], P->act[i]);
        S->rest = add_hold(S, t + P->dur[i], INFINITY, P->rest[i]);
        S->gfree = t + P->dur[i];
        break;
    case R_H2D:
        if (S->hfree > t) t = S->hfree;
        if ((t = earliest(P, S, i, t)) < 0) return 0;
        CHECK(S->wopen[k] < 0);
        S->wopen[k] = add_hold(S, t, INFINITY, P->c->w[k]);
        S->hfree = t + P->dur[i];
        break;
    case R_D2H:
        if (S->dfree > t) t = S->dfree;
        S->dfree = t + P->dur[i];
        break;
    default: break;
    }
    S->start[i] = t;
    S->end[i] = t + P->dur[i];
    S->placed[i] = 1;
    if (P->kind[i] == K_O0 || P->kind[i] == K_O1 || P->kind[i] == K_DEL) { /* the buffer is freed at the end */
        CHECK(S->wopen[k] >= 0);
        S->h[S->wopen[k]].b = S->end[i];
        S->wopen[k] = -1;
    }
    return 1;
}

enum { DONE, FAIL, NEED_H, NEED_D };

/* places what the decided orders allow, in the sequence of the file comment */
static int advance(const prob *P, state *S)
{
    int L2 = 2 * P->L;
    for (;;) {
        int progress = 0;
        while (S->dnext < P->nd2h) { /* offloads and uploads: as soon as their inputs are placed */
            if (S->dnext == S->ndord) return NEED_D;
            int i = S->dord[S->dnext];
            if (!deps_placed(P, S, i)) break;
            place(P, S, i);
            S->dnext++;
            progress = 1;
        }
        for (int i = 0; i < P->n; i++)
            if (P->res[i] == R_NONE && !S->placed[i] && deps_placed(P, S, i)) {
                place(P, S, i);
                progress = 1;
            }
        if (progress) continue;
        int want = S->ci < L2 ? P->need[S->ci] : -1;
        if ((want >= 0 && !S->placed[want]) || (S->ci == L2 && S->hnext < P->nh2d)) {
            if (S->hnext == S->nhord) return NEED_H;
            int i = S->hord[S->hnext];
            if (deps_placed(P, S, i)) {
                if (!place(P, S, i)) return FAIL;
                S->hnext++;
                continue;
            }
            return FAIL; /* the link waits for a later computation: deadlock, or past the last one */
        }
        if (S->ci < L2) {
            if (!place(P, S, S->ci)) return FAIL;
            S->ci++;
            continue;
        }
        return S->dnext == P->nd2h ? DONE : FAIL;
    }
}

static int in_order(const int *ord, int n, int i)
{
    for (int q = 0; q < n; q++)
        if (ord[q] == i) return 1;
    return 0;
}

/* a complete schedule: the checker must take it and agree */
static void leaf(prob *P, const state *S)
{
    int L = P->L;
    tp_offload_op ops[NOPS];
    uint8_t res0[BL], valid0[BL];
    memcpy(res0, P->res0, sizeof res0);
    memcpy(valid0, P->valid0, sizeof valid0);
    double mk = 0;
    static const tp_offload_op_kind map[] = {TP_OFFOP_B, TP_OFFOP_F, TP_OFFOP_PREFETCH, TP_OFFOP_PREFETCH,
                                             TP_OFFOP_PREFETCH, TP_OFFOP_OFFLOAD, TP_OFFOP_UPLOAD, TP_OFFOP_OFFLOAD,
                                             TP_OFFOP_DELETE};
    /* in start order, an op before what depends on it at one instant (a delete before the
     * carried prefetch of its weight) */
    int ord[NOPS];
    for (int i = 0; i < P->n; i++) ord[i] = i;
    for (int x = 1; x < P->n; x++)
        for (int y = x; y > 0; y--) {
            int a = ord[y - 1], b = ord[y];
            int swap = S->start[b] < S->start[a] || (S->start[b] == S->start[a] && (P->dep[a][0] == b || P->dep[a][1] == b));
            if (!swap) break;
            ord[y - 1] = b;
            ord[y] = a;
        }
    for (int x = 0; x < P->n; x++) {
        int i = ord[x];
        ops[x] = (tp_offload_op){map[P->kind[i]], (uint32_t)P->layer[i], S->start[i], S->end[i]};
        if (S->end[i] > mk) mk = S->end[i];
    }
    tp_offload_schedule s = {(uint32_t)L, res0, valid0, (uint32_t)P->n, ops, mk};
    tp_offload_report rep;
    tp_error err = {0};
    tp_status st = tp_offload_check(P->c, &s, &rep, &err);
    CHECKF(st == TP_OK, "brute-force schedule refused by the checker: %s", err.msg);
    CHECKF(fabs(rep.makespan - mk) <= 1e-12 * (1 + mk), "checker %.17g, placed %.17g", rep.makespan, mk);
    if (P->bound > 0)
        CHECKF(mk >= P->bound * (1 - 1e-9), "a valid schedule of makespan %.17g beats the MILP bound %.17g", mk, P->bound);
    P->leaves++;
    if (mk < P->best) P->best = mk;
}

/* the least the rest can take: each resource's free time plus its unplaced work */
static double lower(const prob *P, const state *S)
{
    double g = S->gfree, h = S->hfree, d = S->dfree, mx = 0;
    for (int i = 0; i < P->n; i++) {
        if (S->placed[i]) {
            if (S->end[i] > mx) mx = S->end[i];
            continue;
        }
        if (P->res[i] == R_GPU) g += P->dur[i];
        if (P->res[i] == R_H2D) h += P->dur[i];
        if (P->res[i] == R_D2H) d += P->dur[i];
    }
    return fmax(fmax(mx, g), fmax(h, d));
}

static void dfs(prob *P, state *S)
{
    int r = advance(P, S);
    if (r == DONE) {
        leaf(P, S);
        return;
    }
    if (r == FAIL || (P->bb && lower(P, S) >= P->best * (1 - 1e-12))) return;
    int link = r == NEED_H ? R_H2D : R_D2H;
    for (int i = 0; i < P->n; i++) {
        if (P->res[i] != link || in_order(link == R_H2D ? S->hord : S->dord, link == R_H2D ? S->nhord : S->ndord, i))
            continue;
        state T = *S;
        if (link == R_H2D) T.hord[T.nhord++] = i;
        else T.dord[T.ndord++] = i;
        dfs(P, &T);
    }
}

/* the problem of one selection (sel[k] indexes plans) */
static void build(prob *P, const tp_chain *c, const int *sel)
{
    int L = (int)c->layers, n = 2 * L;
    P->c = c;
    P->L = L;
    P->nh2d = P->nd2h = 0;
    uint64_t pref[BL + 1], acc = 0;
    for (int k = 0; k <= L; k++) pref[k] = acc += c->a[k];
    P->rest0 = pref[L];
    int B[BL], F[BL];
    for (int p = 0; p < 2 * L; p++) { /* B_L..B_1 F_1..F_L; layer k is index k, the paper's k+1 */
        int k = p < L ? L - 1 - p : p - L, isb = p < L;
        P->kind[p] = isb ? K_B : K_F;
        P->layer[p] = k;
        P->res[p] = R_GPU;
        P->dep[p][0] = P->dep[p][1] = -1;
        P->dur[p] = isb ? c->ub[k] : c->uf[k];
        P->act[p] = isb && !tp_chain_frozen(c, k) ? pref[k + 1] + c->w[k] : pref[k + 1]; /* + the gradient */
        P->rest[p] = isb ? pref[k] : pref[k + 1];
        P->need[p] = -1;
        (isb ? B : F)[k] = p;
    }
#define OP(K, k, R, d0, d1)                                                                    \
    (P->kind[n] = (K), P->layer[n] = (k), P->res[n] = (R), P->dep[n][0] = (d0), P->dep[n][1] = (d1), \
     P->dur[n] = (R) == R_NONE ? 0 : (double)c->w[k] / c->beta, P->nh2d += (R) == R_H2D, P->nd2h += (R) == R_D2H, n++)
    for (int k = 0; k < L; k++) {
        const plan *pl = &plans[sel[k]];
        int fz = tp_chain_frozen(c, k); /* its host copy always valid: every removal a delete */
        P->res0[k] = !(pl->sel1 && !pl->carried);
        P->valid0[k] = pl->sel0 || pl->sel1 || fz;
        int o0 = -1, u = -1, rel = -1;
        if (pl->sel0) {
            o0 = fz ? OP(K_DEL, k, R_NONE, B[k], -1) : OP(K_O0, k, R_D2H, B[k], -1);
            P->dep[F[k]][0] = P->need[F[k]] = OP(K_P0, k, R_H2D, o0, -1);
        }
        if (pl->sel1) {
            if (!pl->carried) P->dep[B[k]][0] = P->need[B[k]] = OP(K_P1, k, R_H2D, -1, -1);
            if (pl->upload && !fz) u = OP(K_U, k, R_D2H, B[k], -1);
            if (pl->upload || pl->discount || fz) rel = OP(K_DEL, k, R_NONE, F[k], u);
            else rel = OP(K_O1, k, R_D2H, F[k], -1);
            if (pl->carried) OP(K_PC, k, R_H2D, rel, -1);
        }
    }
#undef OP
    P->n = n;
}

static void init_state(const prob *P, state *S)
{
    memset(S, 0, sizeof *S);
    S->rest = add_hold(S, 0, INFINITY, P->rest0);
    for (int k = 0; k < P->L; k++) S->wopen[k] = P->res0[k] ? add_hold(S, 0, INFINITY, P->c->w[k]) : -1;
}

/* the least makespan over every selection and every pair of link orders (INFINITY: none fits) */
static double brute(const tp_chain *c, double bound, int bb, long *leaves)
{
    int L = (int)c->layers, nsel = 1;
    for (int k = 0; k < L; k++) nsel *= 10;
    prob *P = calloc(1, sizeof *P);
    CHECK(P);
    P->best = INFINITY;
    P->bb = bb;
    P->bound = bound;
    for (int m = 0; m < nsel; m++) {
        int sel[BL], dup = 0;
        for (int k = 0, x = m; k < L; k++, x /= 10) {
            sel[k] = x % 10;
            /* a frozen layer deletes where the others offload or upload: plans 4, 5, 8, 9 are 2, 3, 6, 7 */
            dup |= tp_chain_frozen(c, (uint32_t)k) && (plans[sel[k]].upload || (plans[sel[k]].sel0 && plans[sel[k]].sel1 && !plans[sel[k]].discount));
        }
        if (dup) continue;
        build(P, c, sel);
        state S;
        init_state(P, &S);
        dfs(P, &S);
    }
    double b = P->best;
    *leaves = P->leaves;
    free(P);
    return b;
}

/* ---- chains ---- */

static uint64_t rng_counter;
static double rnd01(void)
{
    return (double)(tp__mix64(0xb5ad4eceda1ce2a9ull + ++rng_counter) >> 11) / 9007199254740992.0;
}




/* L layers; times 1..3 (B about twice F); weights 100..1000 bytes, activations 0..200; a
 * transfer of the mean weight 0.5..3 x the mean computation; memory at level q of 4 between
 * the least any schedule needs (q = 0) and room for every weight (q = 4) */
static void random_chain(tpt_chain *o, uint32_t L, int q, int freeze)
{
    memset(o, 0, sizeof *o);
    tpt_chain_wire(o, L);
    for (uint32_t i = 0; i < L; i++) {
        o->uf[i] = 1 + rnd01();
        o->ub[i] = 2 + rnd01();
        o->w[i] = 100 + (uint64_t)(900 * rnd01());
    }
    for (uint32_t i = 0; i <= L; i++) o->a[i] = (uint64_t)(200 * rnd01());
    if (freeze) { /* each layer frozen with probability 1/2, at least one */
        o->c.frozen = o->frozen;
        for (uint32_t i = 0; i < L; i++) o->frozen[i] = rnd01() < 0.5;
        o->frozen[(uint32_t)(rnd01() * L) % L] = 1;
    }
    o->c.beta = 550.0 / (2.0 * (0.5 + 2.5 * rnd01()));
    uint64_t lo = tpt_need_alone(&o->c), hi = tpt_need_all(&o->c);
    o->c.mgpu = lo + (hi - lo) * (uint64_t)q / 4;
}

static int equal_count, proved_count; /* over the chains of the running test (brute_summary resets) */
static long total_leaves;

static void one_chain(uint32_t L, int q, int bb, int freeze)
{
    tpt_chain o;
    random_chain(&o, L, q, freeze);
    tp_error err = {0};
    tp_chain_bound_result r;
    ASSERT_OK_ERR(tp_chain_bound(&o.c, 10, &r, &err), err);
    long leaves = 0;
    double bf = brute(&o.c, r.bound, bb, &leaves);
    double s = tpt_sum_u(&o.c);
    CHECKF(bf < INFINITY, "L %u q %d: no schedule in the family fits", L, q);
    CHECKF(bf >= r.bound * (1 - 1e-9), "brute force %.17g < bound %.17g", bf, r.bound);
    if (bf <= s * (1 + 1e-9))
        CHECKF(fabs(r.bound - s) <= 1e-6 * s, "a schedule reaches the compute sum %.17g, the bound is %.17g", s, r.bound);
    if (q == 4) CHECKF(fabs(bf - s) <= 1e-9 * s, "all weights fit: brute force %.17g, compute sum %.17g", bf, s);
    const char *names[] = {"greedy", "greedy-star", "l2l"};
    double ms[3];
    for (int a = 0; a < 3; a++) {
        tp_offload_schedule *sc = NULL;
        tp_status st = tp_offload_plan(&o.c, (tp_offload_algo)a, &sc, &err);
        ms[a] = NAN;
        if (st == TP_ERR_INFEASIBLE && q < 4) continue; /* a heuristic may fail under tight memory, never where all fits */
        ASSERT_OK_ERR(st, err);
        tp_offload_report rep;
        ASSERT_OK_ERR(tp_offload_check(&o.c, sc, &rep, &err), err);
        ms[a] = rep.makespan;
        tp_offload_schedule_free(sc);
        CHECKF(rep.makespan >= bf * (1 - 1e-9), "L %u q %d: %s %.17g beats the brute force %.17g", L, q, names[a],
               rep.makespan, bf);
    }
    int eq = r.optimal && fabs(bf - r.bound) <= 1e-6 * bf;
    equal_count += eq;
    proved_count += r.optimal;
    total_leaves += leaves;
    printf("L %u mem %d/4: compute %.4f bound %.4f%s brute %.4f (%ld schedules)%s greedy %.4f greedy* %.4f l2l %.4f\n", L,
           q, s, r.bound, r.optimal ? "" : " (not proved)", bf, leaves, eq ? " =" : " >", ms[0], ms[1], ms[2]);
}

/* prints the running test's counts over its n chains and starts them again */
static void brute_summary(int n)
{
    printf("brute force = MILP optimum (1e-6 relative) on %d of %d chains (%d proved); %ld schedules checked\n", equal_count,
           n, proved_count, total_leaves);
    equal_count = proved_count = 0;
    total_leaves = 0;
}

TEST(offload_brute_force_tiny_chains)
{
    int n = 0;
    for (uint32_t L = 2; L <= 3; L++)
        for (int rep = 0; rep < 3; rep++)
            for (int q = 0; q <= 4; q++) one_chain(L, q, 0, 0), n++;
    brute_summary(n);
}

TEST(offload_brute_force_four_layers)
{
    int n = 0;
    for (int rep = 0; rep < 2; rep++)
        for (int q = 0; q <= 3; q++) one_chain(4, q, 1, 0), n++;
    brute_summary(n);
}

/* Frozen layers (tp_chain.frozen: no gradient, every removal a delete), half of each chain's at
 * random: the family deletes a frozen weight wherever it would offload or upload it, and the same
 * assertions hold: every schedule at or above the MILP bound (whose frozen reading, eq. (6) right
 * dropped and one |w| in B's M_k, is thereby checked against schedules it shares no code with),
 * every strategy at or above the family's minimum, the bound the compute sum where the family
 * reaches it. */
TEST(offload_brute_force_frozen)
{
    int n = 0;
    for (uint32_t L = 2; L <= 3; L++)
        for (int rep = 0; rep < 3; rep++)
            for (int q = 0; q <= 4; q++) one_chain(L, q, 0, 1), n++;
    for (int q = 0; q <= 3; q++) one_chain(4, q, 1, 1), n++;
    brute_summary(n);
}

/* The two-layer chain of test_offload_bound.c (|w| = W each, no activations, every computation
 * 1 s, mgpu = 2W, W/beta = x), whose MILP optimum is 4 + x + max(0, x - 2). Every schedule: B_2
 * and B_1 each hold 2W, so w_1 is away at B_2 and w_2 at B_1. w_2, changed by B_2, must be copied
 * to the host after B_2 (offload or upload, x s, not during B_2) before B_1 starts: B_1 starts at
 * 1 + x at the earliest. w_2 returns for F_2 by a prefetch that cannot overlap B_1 (2W already):
 * F_2 starts at max(3 + x, 2 + 2x) at the earliest, so makespan >= max(4 + x, 3 + 2x). That is
 * reached: w_1 prefetched beside the offload of w_2 (2W while the GPU idles), uploaded beside
 * F_1 and deleted, w_2 prefetched from the end of B_1. So the OFF optimum is max(4 + x, 3 + 2x):
 * the brute force must find exactly it; the MILP equals it for x <= 1 and lies below for x > 1
 * (by x - 1 up to x = 2, by 1 from there): the relaxation lets a transfer overlap a computation
 * in part. */
TEST(offload_brute_force_two_layer_closed_form)
{
    const double xs[] = {0.25, 0.5, 1, 2, 3, 5};
    for (size_t q = 0; q < sizeof xs / sizeof xs[0]; q++) {
        tpt_chain o;
        tpt_chain_two_layer(&o, xs[q]);
        double x = xs[q], opt = fmax(4 + x, 3 + 2 * x), milp = 4 + x + fmax(0, x - 2);
        tp_error err = {0};
        tp_chain_bound_result r;
        ASSERT_OK_ERR(tp_chain_bound(&o.c, 10, &r, &err), err);
        CHECK(r.optimal);
        ASSERT_NEAR(r.bound, milp, 1e-6 * milp);
        long leaves = 0;
        double bf = brute(&o.c, r.bound, 0, &leaves);
        CHECKF(fabs(bf - opt) <= 1e-9 * opt, "x %g: brute force %.17g, the optimum %.17g", x, bf, opt);
        if (x <= 1) ASSERT_NEAR(bf, r.bound, 1e-6 * bf);
        else CHECKF(bf > r.bound * (1 + 1e-3), "x %g: brute force %.17g, MILP %.17g", x, bf, r.bound);
        printf("x %g: OFF optimum %g (brute force, %ld schedules), MILP %g\n", x, bf, leaves, r.bound);
    }
}

/* ---- an exact search for chains with integer durations ----
 * With every computation and transfer a whole number of seconds, some optimal schedule starts
 * each operation at 0 or at the end of another (shift each left until a start, a link, the GPU,
 * a weight's state or memory stops it: what stops it ends then), so at whole seconds. A
 * breadth-first search over whole seconds, from every start state (resident, host copy valid)
 * of every weight, choosing at each second any set of actions the checker's rules allow (start
 * the next computation or wait; a prefetch on an idle host->GPU link; an offload or upload on an
 * idle GPU->host link; deletes), memory checked over each second, finds the least makespan over
 * all schedules: the OFF optimum. Then: MILP bound <= optimum <= the brute-force family's
 * minimum <= each strategy; how often the family reaches the optimum is printed. */

enum { X_NONE, X_PRE, X_OFF, X_UP };
typedef struct {
    uint8_t p, rem;         /* next computation; seconds left of the running one (p - 1) */
    uint8_t res[BL], val[BL], x[BL], xr[BL];
    uint8_t res0, val0;     /* the start state, as bits */
} xs;

static uint64_t xs_key(const xs *s, int L)
{
    uint64_t k = (uint64_t)s->p << 4 | s->rem;
    for (int i = 0; i < L; i++) k = k << 8 | (uint64_t)s->res[i] << 7 | (uint64_t)s->val[i] << 6 | (uint64_t)s->x[i] << 4 | s->xr[i];
    return (k << 8 | s->res0) << 8 | s->val0;
}

typedef struct {
    xs *v;
    uint64_t *keys;
    size_t n, cap; /* cap a power of two; keys[h] = xs_key + 1 (at most 57 bits), 0 = empty */
} xset;

static void xset_add(xset *S, const xs *s, int L)
{
    if (2 * (S->n + 1) > S->cap) {
        xset T = {NULL, NULL, 0, S->cap ? 2 * S->cap : 1024};
        T.v = malloc(T.cap * sizeof *T.v);
        T.keys = calloc(T.cap, sizeof *T.keys);
        CHECK(T.v && T.keys);
        for (size_t i = 0; i < S->cap; i++)
            if (S->keys[i]) xset_add(&T, &S->v[i], L);
        free(S->v);
        free(S->keys);
        *S = T;
    }
    uint64_t k = xs_key(s, L) + 1;
    size_t h = (size_t)tp__mix64(k) & (S->cap - 1);
    while (S->keys[h]) {
        if (S->keys[h] == k) return;
        h = (h + 1) & (S->cap - 1);
    }
    S->keys[h] = k;
    S->v[h] = *s;
    S->n++;
}

static void xset_free(xset *S)
{
    free(S->v);
    free(S->keys);
    memset(S, 0, sizeof *S);
}

typedef struct {
    const tp_chain *c;
    int L;
    int dur[2 * BL], tw[BL]; /* whole seconds */
    int lay[2 * BL], isb[2 * BL];
    uint64_t act[2 * BL], rest[2 * BL], rest0;
} xprob;

/* the successors of s over one second: deletes, then the starts, memory over the second, then
 * what ends at its close */
static void x_expand(const xprob *X, const xs *s, xset *next)
{
    int L = X->L, L2 = 2 * L;
    int run = s->rem > 0 ? s->p - 1 : -1;
    int h2d = 0, d2h = 0;
    for (int i = 0; i < L; i++) h2d |= s->x[i] == X_PRE, d2h |= s->x[i] == X_OFF || s->x[i] == X_UP;
    for (int del = 0; del < (1 << L); del++) {
        xs a = *s;
        int ok = 1;
        for (int i = 0; i < L && ok; i++)
            if (del >> i & 1) {
                ok = a.res[i] && a.val[i] && a.x[i] == X_NONE && !(run >= 0 && X->lay[run] == i);
                a.res[i] = 0;
            }
        if (!ok) continue;
        for (int go = 0; go < 2; go++) { /* start computation p now */
            xs b = a;
            int c = -1;
            if (go) {
                if (b.rem || b.p >= L2) continue;
                c = b.p;
                int i = X->lay[c];
                if (!b.res[i] || b.x[i] == X_PRE || b.x[i] == X_OFF || (X->isb[c] && b.x[i] == X_UP)) continue;
                if (X->isb[c]) b.val[i] = 0;
                b.p++;
                b.rem = (uint8_t)X->dur[c];
            }
            int cur = c >= 0 ? c : run;
            for (int pf = -1; pf < L; pf++) {
                xs d = b;
                if (pf >= 0) {
                    if (h2d || d.res[pf] || !d.val[pf]) continue;
                    d.res[pf] = 1;
                    d.x[pf] = X_PRE;
                    d.xr[pf] = (uint8_t)X->tw[pf];
                }
                for (int of = -1; of < 2 * L; of++) {
                    xs e = d;
                    if (of >= 0) {
                        int i = of % L, up = of >= L;
                        if (d2h || !e.res[i] || e.x[i] != X_NONE) continue;
                        if (cur >= 0 && X->lay[cur] == i && (!up || X->isb[cur])) continue;
                        e.x[i] = up ? X_UP : X_OFF;
                        e.xr[i] = (uint8_t)X->tw[i];
                    }
                    /* memory over the second */
                    uint64_t m = cur >= 0 ? X->act[cur] : e.p ? X->rest[e.p - 1] : X->rest0;
                    for (int i = 0; i < L; i++) m += e.res[i] ? X->c->w[i] : 0;
                    if (m > X->c->mgpu) continue;
                    /* the second passes */
                    if (e.rem) e.rem--;
                    for (int i = 0; i < L; i++)
                        if (e.x[i] != X_NONE && --e.xr[i] == 0) {
                            if (e.x[i] == X_OFF) e.res[i] = 0, e.val[i] = 1;
                            if (e.x[i] == X_UP) e.val[i] = 1;
                            e.x[i] = X_NONE;
                        }
                    xset_add(next, &e, L);
                }
            }
        }
    }
}

/* the least makespan over every schedule, or -1 past `horizon` seconds */
static int x_optimum(const tp_chain *c, int horizon, size_t *states)
{
    xprob X;
    int L = (int)c->layers;
    X.c = c;
    X.L = L;
    uint64_t pref[BL + 1] = {0}, acc = 0;
    for (int k = 0; k <= L; k++) pref[k] = acc += c->a[k];
    X.rest0 = pref[L];
    for (int p = 0; p < 2 * L; p++) {
        int k = p < L ? L - 1 - p : p - L, isb = p < L;
        X.lay[p] = k;
        X.isb[p] = isb;
        X.dur[p] = (int)(isb ? c->ub[k] : c->uf[k]);
        X.act[p] = isb ? pref[k + 1] + c->w[k] : pref[k + 1];
        X.rest[p] = isb ? pref[k] : pref[k + 1];
    }
    for (int k = 0; k < L; k++) X.tw[k] = (int)lround((double)c->w[k] / c->beta);
    xset cur = {0}, nxt = {0};
    for (int r0 = 0; r0 < (1 << L); r0++)
        for (int v0 = 0; v0 < (1 << L); v0++) {
            xs s;
            memset(&s, 0, sizeof s);
            s.res0 = (uint8_t)r0;
            s.val0 = (uint8_t)v0;
            for (int i = 0; i < L; i++) s.res[i] = r0 >> i & 1, s.val[i] = v0 >> i & 1;
            xset_add(&cur, &s, L);
        }
    *states = 0;
    int found = -1;
    for (int t = 0; t <= horizon && found < 0; t++) {
        for (size_t h = 0; h < cur.cap && found < 0; h++) {
            if (!cur.keys[h]) continue;
            const xs *s = &cur.v[h];
            int done = s->p == 2 * L && !s->rem;
            for (int i = 0; i < L && done; i++)
                done = s->x[i] == X_NONE && s->res[i] == (s->res0 >> i & 1) && s->val[i] == (s->val0 >> i & 1);
            if (done) found = t;
        }
        if (found >= 0) break;
        *states += cur.n;
        for (size_t h = 0; h < cur.cap; h++)
            if (cur.keys[h]) x_expand(&X, &cur.v[h], &nxt);
        xset_free(&cur);
        cur = nxt;
        memset(&nxt, 0, sizeof nxt);
    }
    xset_free(&cur);
    xset_free(&nxt);
    return found;
}

TEST(offload_exact_integer_chains)
{
    int n = 0, fam = 0, milp = 0;
    for (uint32_t L = 2; L <= 3; L++)
        for (int rp = 0; rp < 4; rp++)
            for (int q = 0; q <= 3; q++) {
                tpt_chain o;
                memset(&o, 0, sizeof o);
                tpt_chain_wire(&o, L);
                for (uint32_t i = 0; i < L; i++) {
                    o.uf[i] = 1 + (int)(2 * rnd01());
                    o.ub[i] = 1 + (int)(3 * rnd01());
                    o.w[i] = 100 * (uint64_t)(1 + (int)(3 * rnd01()));
                }
                for (uint32_t i = 0; i <= L; i++) o.a[i] = (uint64_t)(60 * rnd01());
                o.c.beta = 100;
                uint64_t lo = tpt_need_alone(&o.c), hi = tpt_need_all(&o.c);
                o.c.mgpu = lo + (hi - lo) * (uint64_t)q / 4;
                tp_error err = {0};
                tp_chain_bound_result r;
                ASSERT_OK_ERR(tp_chain_bound(&o.c, 10, &r, &err), err);
                long leaves = 0;
                double bf = brute(&o.c, r.bound, L > 2, &leaves);
                size_t states = 0;
                int opt = x_optimum(&o.c, (int)ceil(bf), &states);
                CHECKF(opt >= 0, "L %u q %d: no schedule within the family's %g", L, q, bf);
                CHECKF(opt >= r.bound * (1 - 1e-9), "L %u q %d: the optimum %d is below the MILP bound %.17g", L, q, opt,
                       r.bound);
                CHECKF(opt <= bf * (1 + 1e-12), "L %u q %d: the optimum %d above a schedule found, %.17g", L, q, opt, bf);
                for (int a = 0; a <= TP_OFFLOAD_L2L_SYNC; a++) {
                    if (a == TP_OFFLOAD_MILP) continue;
                    tp_offload_schedule *sc = NULL;
                    tp_status st = tp_offload_plan(&o.c, (tp_offload_algo)a, &sc, &err);
                    if (st == TP_ERR_INFEASIBLE) continue;
                    ASSERT_OK_ERR(st, err);
                    tp_offload_report rep;
                    ASSERT_OK_ERR(tp_offload_check(&o.c, sc, &rep, &err), err);
                    tp_offload_schedule_free(sc);
                    CHECKF(rep.makespan >= opt * (1 - 1e-9), "strategy %d: %.17g below the optimum %d", a, rep.makespan, opt);
                }
                n++;
                fam += fabs(bf - opt) <= 1e-9 * opt;
                milp += r.optimal && fabs(r.bound - opt) <= 1e-6 * opt;
                printf("L %u mem %d/4: compute %g MILP %.4f optimum %d (%zu states) family %.4f\n", L, q, tpt_sum_u(&o.c), r.bound,
                       opt, states, bf);
            }
    printf("integer chains: the family reaches the optimum on %d of %d, the MILP on %d\n", fam, n, milp);
}
