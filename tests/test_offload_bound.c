/* test_offload_bound.c - tp_chain_bound (src/plan/offload_bound.c), the MILP lower bound of the
 * weight-offload paper's section 6, against references derived by hand here:
 * - the sum of the compute times (no schedule is shorter), and equality when memory holds every
 *   weight at every op (idle 0 is then feasible);
 * - the fully serial schedule (prefetch each weight before its use, offload after, nothing
 *   overlapped), whose makespan has a closed form (serial_makespan below);
 * - a two-layer chain whose MILP optimum is derived by hand (two_layer_*);
 * - monotonicity: less memory or less bandwidth never lowers the optimum;
 * - a brute force for L = 2, 3: every setting of the 3L binaries, each LP built here from the
 *   paper's equations in their cumulative-sum form (not the recurrence of offload_bound.c) and
 *   solved by GLPK's simplex; the minimum must equal the MILP optimum;
 * - the interior-point path (tp__chain_bound_method): its relaxation bound against the simplex's
 *   optimum of the same relaxation, never above the MILP optimum; stopped by the time limit
 *   inside glp_interior, still a valid bound. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "io/util.h"
#include "plan/offload_bound.h"
#include "turnip/offload.h"
#include "offload_chains.h"


static uint64_t rng_counter;
static uint64_t rnd(void) /* the project's one RNG, counter-based */
{
    return tp__mix64(0x9e3779b97f4a7c15ull + ++rng_counter);
}
static double rnd01(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}





/* The fully serial schedule, a valid OFF schedule whenever need_alone <= mgpu: nothing is
 * resident at the start of B_L but w_L's prefetch. For B_i: prefetch w_i (|w_i|/beta), B_i,
 * offload w_i (|w_i|/beta; the host copy is then current), delete it. For F_i: prefetch w_i,
 * F_i, delete w_i (its host copy is current since the offload after B_i: no transfer). One
 * operation at a time, so the memory at any instant is at most that op's M_k (a prefetch buffer
 * of w_i plus the activations then live, or B_i's 2|w_i| plus them). Makespan: sum u + 3 sum w /
 * beta. */
static double serial_makespan(const tp_chain *c)
{
    double sw = 0;
    for (uint32_t i = 0; i < c->layers; i++)
        sw += (double)c->w[i];
    return tpt_sum_u(c) + 3 * sw / c->beta;
}

static void random_chain(tpt_chain *o, uint32_t L)
{
    tpt_chain_wire(o, L);
    for (uint32_t i = 0; i < L; i++) {
        o->uf[i] = 1e-3 * (0.2 + rnd01());
        o->ub[i] = 1e-3 * (0.4 + 2 * rnd01());
        o->w[i] = 1000000 + rnd() % 50000000;
    }
    for (uint32_t i = 0; i <= L; i++)
        o->a[i] = rnd() % 5000000;
    /* transfers of the mean weight take 0.3x..3x the mean op time */
    o->c.beta = 25e6 / (1e-3 * (0.3 + 2.7 * rnd01()));
    uint64_t lo = tpt_need_alone(&o->c), hi = tpt_need_all(&o->c);
    o->c.mgpu = lo + (uint64_t)((double)(hi - lo) * rnd01());
}

static void bound_ok(const tp_chain *c, double tl, tp_chain_bound_result *r)
{
    tp_error err = {0};
    ASSERT_OK_ERR(tp_chain_bound(c, tl, r, &err), err);
    CHECK(r->solver && strncmp(r->solver, "GLPK", 4) == 0);
    CHECKF(r->bound <= r->incumbent * (1 + 1e-9) + 1e-12, "bound %.17g incumbent %.17g", r->bound,
           r->incumbent);
    CHECK(r->gap >= 0 && r->gap <= 1);
    CHECK(r->seconds >= 0);
    if (r->optimal) ASSERT_NEAR(r->gap, 0, 1e-12);
}

TEST(bound_rejects_bad_input)
{
    tpt_chain o;
    random_chain(&o, 3);
    tp_chain_bound_result r;
    tp_error err = {0};
    ASSERT_STATUS(tp_chain_bound(NULL, 1, &r, &err), TP_ERR_ARG);
    ASSERT_STATUS(tp_chain_bound(&o.c, 1, NULL, &err), TP_ERR_ARG);
    ASSERT_STATUS(tp_chain_bound(&o.c, 0, &r, &err), TP_ERR_ARG);
    ASSERT_STATUS(tp_chain_bound(&o.c, NAN, &r, &err), TP_ERR_ARG);
    tpt_chain b = o;
    tpt_chain_wire(&b, 3);
    b.c.beta = 0;
    ASSERT_STATUS(tp_chain_bound(&b.c, 1, &r, &err), TP_ERR_ARG);
    b.c.beta = INFINITY;
    ASSERT_STATUS(tp_chain_bound(&b.c, 1, &r, &err), TP_ERR_ARG);
    b.c.beta = o.c.beta;
    b.ub[1] = -1;
    ASSERT_STATUS(tp_chain_bound(&b.c, 1, &r, &err), TP_ERR_ARG);
    b.ub[1] = NAN;
    ASSERT_STATUS(tp_chain_bound(&b.c, 1, &r, &err), TP_ERR_ARG);
    b.ub[1] = o.ub[1];
    b.w[2] = (UINT64_C(1) << 53) + 1;
    ASSERT_STATUS(tp_chain_bound(&b.c, 1, &r, &err), TP_ERR_ARG);
    b.w[2] = o.w[2];
    b.c.layers = 0;
    ASSERT_STATUS(tp_chain_bound(&b.c, 1, &r, &err), TP_ERR_ARG);
    b.c.layers = 3;
    /* one op that cannot run even alone */
    b.c.mgpu = tpt_need_alone(&b.c) - 1;
    ASSERT_STATUS(tp_chain_bound(&b.c, 1, &r, &err), TP_ERR_INFEASIBLE);
    CHECKF(strstr(err.msg, "B of layer 2") != NULL, "%s", err.msg); /* named by its file layer (0..L-1) */
    b.c.mgpu = tpt_need_alone(&b.c);
    bound_ok(&b.c, 10, &r);
}

/* with memory for everything, idle 0 is feasible: the bound is exactly the compute sum */
TEST(bound_all_fit_equals_compute_sum)
{
    for (int it = 0; it < 20; it++) {
        tpt_chain o;
        random_chain(&o, 1 + (uint32_t)(rnd() % 8));
        o.c.mgpu = tpt_need_all(&o.c) + (it % 2 ? rnd() % 1000000 : 0);
        tp_chain_bound_result r;
        bound_ok(&o.c, 10, &r);
        CHECK(r.optimal);
        double s = tpt_sum_u(&o.c);
        CHECKF(fabs(r.bound - s) <= 1e-6 * s, "L %u bound %.17g sum %.17g", o.c.layers, r.bound, s);
    }
    /* one layer: no other weight, never any idle */
    tpt_chain o;
    random_chain(&o, 1);
    o.c.mgpu = tpt_need_alone(&o.c);
    tp_chain_bound_result r;
    bound_ok(&o.c, 10, &r);
    ASSERT_NEAR(r.bound, tpt_sum_u(&o.c), 1e-6 * tpt_sum_u(&o.c));
}

/* Two layers, |w| = W each, no activations, u = 1 for all four ops, mgpu = 2W, W/beta = x.
 * Ops (paper numbering) 1 = B_2, 2 = B_1, 3 = F_1, 4 = F_2. B_1 needs 2W alone, so w_2 must be
 * gone at the start of op 2: deleted in interval 1, which needs w_2 offloaded in interval 1,
 * during idle only (eq. 3): idle_1 >= x. w_1 must be gone at the start of op 1 (B_2): deleted in
 * intervals 3-4 after an offload in intervals 2 (idle only), 3, 4: idle_2 + 2 + idle_3 + idle_4
 * >= x. w_2 comes back in intervals 2-3: 1 + idle_2 + 1 + idle_3 >= x. w_1 comes back in interval
 * 1 (1 + idle_1 >= x, already). F_1, F_2 have room for the other weight (2W - W). So the optimum
 * is 4 + x + max(0, x - 2) (idle_3 = max(0, x - 2) serves both). */
TEST(bound_two_layer_closed_form)
{
    const double xs[] = {0.25, 0.5, 1, 2, 3, 5};
    for (size_t q = 0; q < sizeof xs / sizeof xs[0]; q++) {
        tpt_chain o;
        tpt_chain_two_layer(&o, xs[q]);
        tp_chain_bound_result r;
        bound_ok(&o.c, 10, &r);
        CHECK(r.optimal);
        double want = 4 + xs[q] + (xs[q] > 2 ? xs[q] - 2 : 0);
        CHECKF(fabs(r.bound - want) <= 1e-6 * want, "x %g bound %.17g want %.17g", xs[q], r.bound,
               want);
        /* one byte more memory than B alone changes nothing; room for both removes all idle */
        o.c.mgpu = 3000;
        bound_ok(&o.c, 10, &r);
        ASSERT_NEAR(r.bound, 4, 1e-6 * 4);
    }
}

TEST(bound_between_compute_sum_and_serial_schedule)
{
    for (int it = 0; it < 30; it++) {
        tpt_chain o;
        random_chain(&o, 2 + (uint32_t)(rnd() % 7));
        if (it % 3 == 0) o.c.mgpu = tpt_need_alone(&o.c); /* the tightest */
        tp_chain_bound_result r;
        bound_ok(&o.c, 5, &r);
        double s = tpt_sum_u(&o.c), ser = serial_makespan(&o.c);
        CHECKF(r.bound >= s * (1 - 1e-9), "bound %.17g < compute sum %.17g", r.bound, s);
        CHECKF(r.bound <= ser * (1 + 1e-9), "bound %.17g > serial %.17g", r.bound, ser);
        if (r.optimal)
            CHECKF(r.incumbent <= ser * (1 + 1e-6), "MILP optimum %.17g > serial %.17g",
                   r.incumbent, ser);
    }
}

/* a chain too big to solve in the time given still gets a valid bound and a gap */
TEST(bound_time_limit_reports_valid_bound)
{
    tpt_chain o;
    memset(&o, 0, sizeof o);
    random_chain(&o, 16);
    o.c.mgpu = tpt_need_alone(&o.c);
    tp_chain_bound_result r;
    bound_ok(&o.c, 0.05, &r);
    CHECK(r.bound >= tpt_sum_u(&o.c) * (1 - 1e-9));
    CHECK(r.bound <= serial_makespan(&o.c) * (1 + 1e-9));
    CHECK(r.seconds < 30);
}

TEST(bound_monotone_in_memory_and_bandwidth)
{
    int compared = 0;
    for (int it = 0; it < 12; it++) {
        tpt_chain o;
        random_chain(&o, 2 + (uint32_t)(rnd() % 5));
        uint64_t lo = tpt_need_alone(&o.c), hi = tpt_need_all(&o.c);
        double prev = 0;
        int all_opt = 1;
        /* memory from loose to tight */
        for (int q = 4; q >= 0; q--) {
            o.c.mgpu = lo + (hi - lo) * (uint64_t)q / 4;
            tp_chain_bound_result r;
            bound_ok(&o.c, 10, &r);
            all_opt &= r.optimal;
            if (all_opt && q < 4) {
                CHECKF(r.bound >= prev * (1 - 1e-6), "mgpu %llu: %.17g < %.17g",
                       (unsigned long long)o.c.mgpu, r.bound, prev);
                compared++;
            }
            prev = r.bound;
        }
        /* bandwidth from high to low, at a middle memory */
        o.c.mgpu = lo + (hi - lo) / 3;
        double beta0 = o.c.beta;
        all_opt = 1;
        for (int q = 0; q < 4; q++) {
            o.c.beta = beta0 / (double)(1 << (2 * q));
            tp_chain_bound_result r;
            bound_ok(&o.c, 10, &r);
            all_opt &= r.optimal;
            if (all_opt && q > 0) {
                CHECKF(r.bound >= prev * (1 - 1e-6), "beta %g: %.17g < %.17g", o.c.beta, r.bound,
                       prev);
                compared++;
            }
            prev = r.bound;
        }
    }
    CHECKF(compared >= 60, "only %d comparisons between proved optima", compared);
}


/* ---- brute force: the paper's equations, cumulative-sum form, one LP per binary setting ---- */

/* ops 1..2L as in the paper; interval j from op j to op j+1 (2L+1 is 1) */
static int bf_layer_b(int L, int i)
{
    return L - i + 1;
} /* op of B_i, i = 1..L */
static int bf_layer_f(int L, int i)
{
    return L + i;
}

/* cyclic range a..b of ops (inclusive; a > b wraps): membership of j */
static int in_cyc(int n, int a, int b, int j)
{
    (void)n;
    if (a <= b) return j >= a && j <= b;
    return j >= a || j <= b;
}

/* the LP with binaries fixed; returns min sum idle (model units: beta 1, times u), or -1 if
 * infeasible */
static double bf_lp(const tp_chain *c, const int *d1, const int *d0, const int *os)
{
    int L = (int)c->layers, n = 2 * L;
    double wmax = 1;
    for (int i = 0; i < L; i++)
        if ((double)c->w[i] > wmax) wmax = (double)c->w[i];
    double St = wmax / c->beta;
    /* columns: idle_j (j=1..n), then O,P,D (i=1..L, j=1..n) */
#define BI(j) (j)
#define BO(i, j) (n + ((i)-1) * n + (j))
#define BP(i, j) (n + L * n + ((i)-1) * n + (j))
#define BD(i, j) (n + 2 * L * n + ((i)-1) * n + (j))
    int ncol = n + 3 * L * n;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, ncol);
    for (int k = 1; k <= ncol; k++)
        glp_set_col_bnds(lp, k, GLP_LO, 0, 0);
    for (int j = 1; j <= n; j++)
        glp_set_obj_coef(lp, BI(j), 1);
    int cap = 64 * n * L * n + 1024;
    int *ia = malloc((size_t)cap * sizeof *ia), *ja = malloc((size_t)cap * sizeof *ja);
    double *ar = malloc((size_t)cap * sizeof *ar);
    CHECK(ia && ja && ar);
    int nz = 0, row = 0;
    double W[17], Mk[33], u[33];
    uint64_t acc = c->a[0];
    for (int i = 1; i <= L; i++) {
        W[i] = (double)c->w[i - 1] / wmax;
        acc += c->a[i];
        Mk[bf_layer_f(L, i)] = (double)(c->w[i - 1] + acc) / wmax;
        Mk[bf_layer_b(L, i)] = (double)(2 * c->w[i - 1] + acc) / wmax;
        u[bf_layer_f(L, i)] = c->uf[i - 1] / St;
        u[bf_layer_b(L, i)] = c->ub[i - 1] / St;
    }
#define NEWROW(t, lo, hi)                                                                          \
    (glp_add_rows(lp, 1), row++, glp_set_row_bnds(lp, row, (t), (lo), (hi)), row)
#define EL(r, col, v) (nz++, ia[nz] = (r), ja[nz] = (col), ar[nz] = (v))
    for (int j = 1; j <= n; j++) { /* (2) */
        int r1 = NEWROW(GLP_UP, 0, u[j]), r2 = NEWROW(GLP_UP, 0, u[j]);
        EL(r1, BI(j), -1);
        EL(r2, BI(j), -1);
        for (int i = 1; i <= L; i++) {
            EL(r1, BO(i, j), 1);
            EL(r2, BP(i, j), 1);
        }
    }
    for (int i = 1; i <= L; i++) { /* (3) */
        int b = bf_layer_b(L, i), r = NEWROW(GLP_UP, 0, 0);
        EL(r, BO(i, b), 1);
        EL(r, BI(b), -1);
    }
    /* m_{i,k} - |w_i| = sum_{j=b_i}^{k-1} (P - D), empty for k = b_i */
    for (int k = 1; k <= n; k++) { /* (4), own layer's weight counted once (in M_k) */
        int own = k <= L ? L - k + 1 : k - L;
        double rhs = ((double)c->mgpu / wmax) - Mk[k];
        int r = NEWROW(GLP_UP, 0, 0);
        for (int i = 1; i <= L; i++) {
            if (i == own) continue;
            int b = bf_layer_b(L, i);
            rhs -= W[i];
            if (k != b)
                for (int j = 1; j <= n; j++)
                    if (in_cyc(n, b, k - 1 >= 1 ? k - 1 : n, j)) {
                        EL(r, BP(i, j), 1);
                        EL(r, BD(i, j), -1);
                    }
        }
        glp_set_row_bnds(lp, r, GLP_UP, 0, rhs);
    }
    for (int i = 1; i <= L; i++) {
        int b = bf_layer_b(L, i), f = bf_layer_f(L, i);
        int r = NEWROW(GLP_FX, 0, 0); /* (5) left: the whole cycle */
        for (int j = 1; j <= n; j++) {
            EL(r, BP(i, j), 1);
            EL(r, BD(i, j), -1);
        }
        r = NEWROW(GLP_FX, 0, 0); /* (5) right: b .. f-1 */
        for (int j = b; j <= f - 1; j++) {
            EL(r, BP(i, j), 1);
            EL(r, BD(i, j), -1);
        }
        for (int k = 1; k <= n; k++) { /* (6), sums b .. k-1 (k = b: empty) */
            if (k == b) continue;
            int r1 = NEWROW(GLP_UP, 0, 0), r2 = NEWROW(GLP_LO, 0, 0);
            for (int j = 1; j <= n; j++)
                if (in_cyc(n, b, k - 1 >= 1 ? k - 1 : n, j)) {
                    EL(r1, BP(i, j), 1);
                    EL(r1, BD(i, j), -1);
                    EL(r2, BO(i, j), 1);
                    EL(r2, BP(i, j), 1);
                    EL(r2, BD(i, j), -1);
                }
        }
        r = NEWROW(GLP_FX, W[i] * os[i], W[i] * os[i]); /* (7) */
        for (int j = 1; j <= n; j++)
            EL(r, BO(i, j), 1);
        r = NEWROW(GLP_FX, W[i] * d1[i], W[i] * d1[i]); /* (8) left: F_i .. before B_i */
        for (int j = 1; j <= n; j++)
            if (in_cyc(n, f, b - 1 >= 1 ? b - 1 : n, j)) EL(r, BD(i, j), 1);
        r = NEWROW(GLP_FX, W[i] * d0[i], W[i] * d0[i]); /* (8) right: B_i .. before F_i */
        for (int j = b; j <= f - 1; j++)
            EL(r, BD(i, j), 1);
    }
    CHECK(nz < cap);
    glp_load_matrix(lp, nz, ia, ja, ar);
    free(ia);
    free(ja);
    free(ar);
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.presolve = GLP_ON;
    int rc = glp_simplex(lp, &sm);
    double v = -1;
    if (rc == 0 && glp_get_status(lp) == GLP_OPT)
        v = glp_get_obj_val(lp);
    else
        CHECKF(rc == GLP_ENOPFS || (rc == 0 && glp_get_status(lp) == GLP_NOFEAS),
               "simplex rc %d status %d", rc, rc == 0 ? glp_get_status(lp) : -1);
    glp_delete_prob(lp);
    return v < 0 ? -1 : v * St;
#undef NEWROW
#undef EL
}

/* The least idle over every setting of the 3L binaries (L <= 4), each by its own LP; -1 when
 * none is feasible. */
static double bf_min(const tp_chain *c, unsigned L)
{
    double best = -1;
    for (int m = 0; m < (1 << (3 * L)); m++) {
        int d1[5] = {0}, d0[5] = {0}, os[5] = {0};
        for (int i = 1; i <= (int)L; i++) {
            d1[i] = (m >> (3 * (i - 1))) & 1;
            d0[i] = (m >> (3 * (i - 1) + 1)) & 1;
            os[i] = (m >> (3 * (i - 1) + 2)) & 1;
        }
        double v = bf_lp(c, d1, d0, os);
        if (v >= 0 && (best < 0 || v < best)) best = v;
    }
    return best;
}

TEST(bound_brute_force_tiny_chains)
{
    int tight = 0;
    for (int it = 0; it < 8; it++) {
        tpt_chain o;
        uint32_t L = 2 + (uint32_t)(it % 2);
        random_chain(&o, L);
        if (it % 4 < 2) o.c.mgpu = tpt_need_alone(&o.c);
        double best = bf_min(&o.c, L);
        CHECK(best >= 0);
        double want = tpt_sum_u(&o.c) + best;
        tp_chain_bound_result r;
        bound_ok(&o.c, 10, &r);
        CHECK(r.optimal);
        CHECKF(fabs(r.bound - want) <= 1e-6 * want, "L %u: MILP %.17g brute force %.17g", L,
               r.bound, want);
        if (best > 1e-9 * want) tight++;
    }
    CHECKF(tight >= 2, "only %d brute-force cases had idle time", tight);
}

/* ---- L = 4 (issue 14's "tiny chains (3-4 layers)"): the same brute force, 2^12 LPs a chain,
 * about 0.4 s each; two chains at the tightest memory, two at a random one. It checks the MILP
 * against its own relaxation's binaries; a brute force over explicit schedules replayed by the
 * checker, and how far the MILP lies below them, is tests/test_offload_brute.c. ---- */

TEST(bound_brute_force_four_layers)
{
    int tight = 0;
    for (int it = 0; it < 4; it++) {
        tpt_chain o;
        random_chain(&o, 4);
        if (it % 2 == 0) o.c.mgpu = tpt_need_alone(&o.c);
        double best = bf_min(&o.c, 4);
        CHECK(best >= 0);
        double want = tpt_sum_u(&o.c) + best;
        tp_chain_bound_result r;
        bound_ok(&o.c, 10, &r);
        CHECK(r.optimal);
        CHECKF(fabs(r.bound - want) <= 1e-6 * want, "L 4: MILP %.17g brute force %.17g", r.bound, want);
        if (best > 1e-9 * want) tight++;
    }
    CHECKF(tight >= 2, "only %d four-layer brute-force cases had idle time", tight);
}

/* ---- the interior point (tp__chain_bound_method, src/plan/offload_bound.h) ---- */

/* Forced interior point against forced simplex on the same chains: the interior point's dual
 * bound on the relaxation agrees with the simplex's optimum of it (1e-6 relative), is never
 * above it (beyond 1e-9: the simplex's own tolerance), and the interior path's bound is never
 * above the MILP optimum the simplex path proves; the automatic path reports the same optimum. */
TEST(bound_interior_matches_simplex)
{
    int positive = 0, proved = 0, failed = 0;
    for (int it = 0; it < 24; it++) {
        tpt_chain o;
        random_chain(&o, 2 + (uint32_t)(rnd() % 7));
        if (it % 3 == 0) o.c.mgpu = tpt_need_alone(&o.c);
        tp_chain_bound_result rs, ri, ra;
        tp__bound_detail ds, di;
        tp_error err = {0};
        ASSERT_OK_ERR(tp__chain_bound_method(&o.c, 10, TP__LP_SIMPLEX, &rs, &ds, &err), err);
        ASSERT_OK_ERR(tp__chain_bound_method(&o.c, 10, TP__LP_INTERIOR, &ri, &di, &err), err);
        bound_ok(&o.c, 10, &ra);
        CHECK(ds.lp_method == TP__LP_SIMPLEX && !di.ipm_stopped && strstr(rs.solver, "simplex"));
        double s = tpt_sum_u(&o.c), lp = ds.lp_obj;
        /* the simplex's own dual bound equals its objective (its duals are optimal) */
        CHECKF(fabs(ds.lp_bound - lp) <= 1e-9 * lp,
               "L %u: simplex dual bound %.17g objective %.17g", o.c.layers, ds.lp_bound, lp);
        if (di.ipm_failed) { /* GLPK's interior point gave up: only the validity of its best point's
                                bound */
            failed++;
            CHECK(di.lp_method == 0 && di.ipm_failed_bound <= lp * (1 + 1e-9));
            CHECK(ri.bound >= s * (1 - 1e-12) && ri.bound <= lp * (1 + 1e-9));
            continue;
        }
        CHECK(di.lp_method == TP__LP_INTERIOR && strstr(ri.solver, "interior"));
        CHECKF(fabs(di.lp_bound - lp) <= 1e-6 * lp, "L %u: interior %.17g simplex %.17g",
               o.c.layers, di.lp_bound, lp);
        CHECKF(di.lp_bound <= lp * (1 + 1e-9), "L %u: interior %.17g above the LP optimum %.17g",
               o.c.layers, di.lp_bound, lp);
        CHECK(ri.bound >= s * (1 - 1e-12) && ri.bound <= ri.incumbent * (1 + 1e-9) + 1e-12);
        CHECK(fabs(ri.bound - di.lp_bound) <= 1e-12 * ri.bound || ri.optimal);
        if (rs.optimal) {
            proved++;
            CHECKF(ri.bound <= rs.bound * (1 + 1e-9),
                   "L %u: interior %.17g above the MILP optimum %.17g", o.c.layers, ri.bound,
                   rs.bound);
            if (ra.optimal)
                CHECKF(fabs(ra.bound - rs.bound) <= 1e-6 * rs.bound, "auto %.17g simplex %.17g",
                       ra.bound, rs.bound);
        }
        if (lp > s * (1 + 1e-6)) positive++;
    }
    CHECKF(positive >= 4, "only %d relaxations with idle time", positive);
    CHECKF(proved >= 20, "only %d MILP optima", proved);
    CHECKF(failed <= 3, "the interior point failed on %d of 24 chains", failed);
}

/* a chain of NL layers (the relaxation takes the interior point tens of iterations) */
#define NL TPT_CHAIN_MAXL
static void chain_n(tpt_chain *o)
{
    tpt_chain_wire(o, NL);
    for (int i = 0; i < NL; i++) {
        o->uf[i] = 1e-3 * (0.2 + rnd01());
        o->ub[i] = 3 * o->uf[i];
        o->w[i] = 20000000 + rnd() % 10000000;
    }
    for (int i = 0; i <= NL; i++)
        o->a[i] = rnd() % 1000000;
    o->c.beta = 8e9; /* a transfer takes 2.5-3.8 ms, a forward 0.2-1.2 ms: link-bound */
    o->c.mgpu = tpt_need_alone(&o->c) + 12 * 25000000ull;
}

/* The time limit stops the interior point inside glp_interior (its terminal hook, a longjmp,
 * the worker's whole GLPK environment freed: ASan's leak check covers it): the bound stays
 * valid, and the call returns within about one iteration of the limit. A limit shorter than the
 * model's construction stops it at its first message, deterministically; longer limits land in
 * some iteration or not at all. */
TEST(bound_interior_time_limit)
{
    tpt_chain o;
    chain_n(&o);
    double s = tpt_sum_u(&o.c);
    tp_chain_bound_result r;
    tp__bound_detail d;
    tp_error err = {0};
    ASSERT_OK_ERR(tp__chain_bound_method(&o.c, 1e-4, TP__LP_INTERIOR, &r, &d, &err), err);
    CHECK(d.ipm_stopped && d.lp_method == 0);
    ASSERT_NEAR(r.bound, s, 1e-12 * s);
    CHECK(!r.optimal && r.gap == 1 && isinf(r.incumbent));
    CHECK(r.seconds < 5);
    /* the full solve, for reference, then limits that stop it part way */
    tp_chain_bound_result full;
    tp__bound_detail dfull;
    ASSERT_OK_ERR(tp__chain_bound_method(&o.c, 60, TP__LP_INTERIOR, &full, &dfull, &err), err);
    CHECK(!dfull.ipm_stopped && dfull.lp_method == TP__LP_INTERIOR);
    CHECKF(full.bound > s * (1 + 1e-3),
           "the relaxation has no idle: %.17g vs %.17g (lp obj %.17g bound %.17g, failed %d)",
           full.bound, s, dfull.lp_obj, dfull.lp_bound, dfull.ipm_failed);
    for (double lim = full.seconds / 4; lim < full.seconds; lim *= 2) {
        ASSERT_OK_ERR(tp__chain_bound_method(&o.c, lim, TP__LP_INTERIOR, &r, &d, &err), err);
        CHECK(r.bound >= s * (1 - 1e-12) && r.bound <= full.bound * (1 + 1e-9));
        if (d.ipm_stopped)
            CHECKF(r.seconds < lim + full.seconds, "stopped after %g s, limit %g", r.seconds, lim);
    }
    /* the automatic path on the same chain (the simplex solves this relaxation; branch and
     * bound does not finish): at least the relaxation's optimum, within the limit */
    double lim = 3 * full.seconds + 0.5;
    ASSERT_OK_ERR(tp__chain_bound_method(&o.c, lim, TP__LP_AUTO, &r, &d, &err), err);
    CHECKF(d.lp_method == TP__LP_SIMPLEX || d.lp_method == TP__LP_INTERIOR,
           "method %d stopped %d, %g s (interior alone %g s)", d.lp_method, d.ipm_stopped,
           r.seconds, full.seconds);
    CHECKF(r.bound >= full.bound * (1 - 1e-6), "auto %.17g, the interior point's %.17g", r.bound,
           full.bound);
    CHECK(r.seconds < lim + full.seconds);
    ASSERT_STATUS(tp__chain_bound_method(&o.c, 1, (tp__lp_method)7, &r, &d, &err), TP_ERR_ARG);
}
