/* offload_bound.c - the MILP lower bound of shared/papers/weight-offloading-strategies.txt,
 * section 6, solved with GLPK (docs/weight-offload.md, "Lower bound").
 *
 * Operations are numbered as in the paper, here from 0: op j < L is B_{L-j}, op L+i is F_{i+1},
 * so the cycle is B_L..B_1, F_1..F_L and back to B_L. Interval j runs from the start of op j to
 * the start of op j+1 (mod 2L). Per layer i and interval j: O (offloaded), P (prefetched), D
 * (deleted), all continuous; per interval idle_j; per layer the binaries D1 (deleted between F_i
 * and B_i), D0 (between B_i and F_i) and O* (offloaded at all). The objective is sum_j u_j +
 * idle_j; the sum of u is added outside the solver, which minimises sum idle_j only.
 *
 * The paper's cumulative sums are written with two auxiliary variables per layer and op, so each
 * row stays short (the model is the same, not a relaxation of it):
 *   m_{i,k} = |w_i| + sum_{j=b_i}^{k-1} (P_{i,j} - D_{i,j})  (the paper's m, the memory of w_i at
 *             the start of op k; b_i = the op of B_i), a recurrence m_{i,k+1} = m_{i,k} + P - D
 *             with m_{i,b_i} = |w_i|; its wrap-around row is eq. (5) left, m_{i,f_i} = |w_i| eq. (5)
 *             right;
 *   s_{i,k} = sum_{j=b_i}^{k-1} O_{i,j}, s_{i,b_i} = 0.
 * Eq. (6) left is m_{i,k} <= |w_i| (the column's upper bound; the paper prints the inequality
 * reversed, its words say "prefetched not higher than deleted"), eq. (6) right s + m >= |w_i|.
 * m_{i,k} >= 0 (the column's lower bound) is implied by eqs. (5) and (8) and changes nothing.
 * Eq. (4) counts the weight of op k's own layer once: the paper's M_k (eq. 1) already holds it,
 * and m_{own,k} = |w_own| at that op, so the row is sum_{i != layer(k)} m_{i,k} <= M_GPU - M_k
 * (the literal sum over every i would count it twice; include/turnip/offload.h states the model).
 * A frozen layer (tp_chain.frozen): B_i's M_k holds |w_i| once (no gradient), and eq. (6) right
 * is not written for it (B_i leaves its host copy valid, so a delete needs no offload before).
 *
 * Scaling: bytes in units of the largest weight (Sb), times in units of Sb / beta (the time to
 * move the largest weight), so beta is 1, weights are in [0, 1] and the link rows have unit
 * coefficients (GLPK's own scaling is not called).
 *
 * Solving, in a thread of its own (below): the root LP relaxation by GLPK's primal simplex from
 * an advanced initial basis (glp_adv_basis; from the standard all-slack basis the 96- and
 * 144-layer chains did not finish in minutes, from this one in seconds), with half the time
 * limit; then an incumbent: the relaxation's binaries rounded up, an LP with them fixed; then
 * branch and bound in the time left. If the simplex did not finish, GLPK's interior point
 * (glp_interior) with the rest, and its relaxation rounded the same way. TP__LP_SIMPLEX and
 * TP__LP_INTERIOR (src/plan/offload_bound.h) force one or the other.
 *
 * The bound: the relaxation's bound is never a solver's objective but a dual bound computed
 * here from the solver's row duals (dual_bound), valid for any duals however inexact, so an
 * interior point stopped at its tolerance (or failed, from its best point) cannot overstate it;
 * then the best node bound seen during branch and bound (glp_ios_best_node in the callback),
 * capped by the incumbent; the MIP optimum when GLPK proves it. A time limit that stops even the
 * LP leaves sum u (idle >= 0).
 *
 * The time limit: the simplex and branch and bound take one (tm_lim); glp_interior does not.
 * The solve runs in a thread of its own, with its own GLPK environment (thread-local in GLPK 5),
 * whose terminal hook checks the clock at every message (the interior point prints one per
 * iteration) and past the limit leaves glp_interior by longjmp; the thread then frees its whole
 * environment (glp_free_env), which holds every GLPK object of the solve and nothing of the
 * caller's. GLPK's terminal output (scaling, the interior point) goes to the hook, not stdout. */
#include <float.h>
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "io/util.h"
#include "plan/offload_bound.h"
#include "turnip/offload.h"


typedef struct trip {
    int *ia, *ja;
    double *ar;
    size_t n, cap;
    int oom;
} trip;

static void put(trip *t, int row, int col, double v)
{
    if (v == 0.0 || t->oom) return;
    if (t->n + 2 > t->cap) { /* index 0 unused (GLPK arrays are 1-based) */
        size_t cap = t->cap ? 2 * t->cap : 1024;
        int *ia = realloc(t->ia, cap * sizeof *ia);
        if (ia) t->ia = ia;
        int *ja = realloc(t->ja, cap * sizeof *ja);
        if (ja) t->ja = ja;
        double *ar = realloc(t->ar, cap * sizeof *ar);
        if (ar) t->ar = ar;
        if (!ia || !ja || !ar) {
            t->oom = 1;
            return;
        }
        t->cap = cap;
    }
    t->n++;
    t->ia[t->n] = row;
    t->ja[t->n] = col;
    t->ar[t->n] = v;
}

/* ---- one solve, run in a thread of its own (see the top) ---- */

typedef struct job {
    /* in */
    const tp_chain *c;
    double deadline; /* tp__now() at the call plus the limit */
    tp__lp_method method;
    /* out */
    tp_status st;
    tp_error err;
    tp_chain_bound_result res;
    tp__bound_detail det;
    uint8_t *sel; /* the caller's L bytes, or NULL: the incumbent's choices (TP_OFFLOAD_SEL bits) */
    /* the interior point's way out */
    jmp_buf jb;
    volatile int in_ipm;
} job;

static double left_ms(const job *j)
{
    return (j->deadline - tp__now()) * 1000.0;
}

static int tm_lim(double ms)
{
    return ms >= INT_MAX ? INT_MAX : ms < 1 ? 1 : (int)ms;
}

/* GLPK's terminal output, all of it swallowed; during glp_interior, the clock */
static int on_term(void *info, const char *s)
{
    (void)s;
    job *j = info;
    if (j->in_ipm && tp__now() > j->deadline) {
        j->in_ipm = 0;
        longjmp(j->jb, 1);
    }
    return 1;
}

/* glp_interior on P: 0 optimal, 1 anything else (GLPK 5 then keeps the best point it reached,
 * unless glp_ipt_status is GLP_UNDEF), 2 stopped by the time limit (then no GLPK call may
 * touch the solve's objects: they are abandoned, and the worker frees the whole environment). */
static int ipm(job *j, glp_prob *P)
{
    glp_iptcp ip;
    glp_init_iptcp(&ip);
    ip.msg_lev = GLP_MSG_ALL; /* a message per iteration: the hook's clock */
    if (setjmp(j->jb)) {
        j->det.ipm_stopped = 1;
        return 2;
    }
    j->in_ipm = 1;
    int rc = glp_interior(P, &ip);
    j->in_ipm = 0;
    return rc == 0 && glp_ipt_status(P) == GLP_OPT ? 0 : 1;
}

/* A solved LP's values, from the interior point's solution (ipt) or the simplex's */
static double col_prim(glp_prob *lp, int ipt, int k)
{
    return ipt ? glp_ipt_col_prim(lp, k) : glp_get_col_prim(lp, k);
}

static double row_dual(glp_prob *lp, int ipt, int r)
{
    return ipt ? glp_ipt_row_dual(lp, r) : glp_get_row_dual(lp, r);
}

static double obj_val(glp_prob *lp, int ipt)
{
    return ipt ? glp_ipt_obj_val(lp) : glp_get_obj_val(lp);
}

/* A lower bound on the LP's optimum (min c'x, lo_r <= A_r x <= hi_r, l <= x <= u) from any row
 * duals y: for every feasible x, c'x = d'x + y'Ax with d = c - A'y, and
 *   y'Ax >= sum_r min{y_r z : lo_r <= z <= hi_r},   d'x >= sum_j min{d_j t : l_j <= t <= u_j}.
 * Each y_r is first clamped to the sign its row's finite bounds allow (y_r <= 0 on a row with no
 * lower bound, >= 0 with no upper); columns with no upper bound of their own take colub[j], a
 * bound every feasible point (idle: some optimal point) satisfies. Whatever y's accuracy, the
 * result is a valid bound; the closer y is to optimal, the closer to the optimum. The sums'
 * rounding error is bounded (gamma_n = n eps / (1 - n eps) times the sum of the magnitudes) and
 * subtracted. -HUGE_VAL on out of memory. ipt: the interior point's duals, else the simplex's. */
static double dual_bound(glp_prob *lp, int ipt, const double *colub)
{
    int m = glp_get_num_rows(lp), n = glp_get_num_cols(lp);
    double *y = malloc(((size_t)m + 1) * sizeof *y), *val = malloc(((size_t)m + 1) * sizeof *val);
    int *ind = malloc(((size_t)m + 1) * sizeof *ind);
    if (!y || !val || !ind) {
        free(y);
        free(val);
        free(ind);
        return -HUGE_VAL;
    }
    double sum = 0, mag = 0, err = 0;
    for (int r = 1; r <= m; r++) {
        double v = row_dual(lp, ipt, r),
               lo = glp_get_row_lb(lp, r), hi = glp_get_row_ub(lp, r), term = 0;
        switch (glp_get_row_type(lp, r)) {
        case GLP_UP:
            if (v > 0) v = 0;
            term = v * hi;
            break;
        case GLP_LO:
            if (v < 0) v = 0;
            term = v * lo;
            break;
        case GLP_FX:
            term = v * lo;
            break;
        case GLP_DB:
            term = v > 0 ? v * lo : v * hi;
            break;
        default:
            v = 0; /* free row */
        }
        y[r] = v;
        sum += term;
        mag += fabs(term);
    }
    for (int k = 1; k <= n; k++) {
        int len = glp_get_mat_col(lp, k, ind, val);
        double d = glp_get_obj_coef(lp, k), dm = fabs(d);
        for (int q = 1; q <= len; q++) {
            d -= val[q] * y[ind[q]];
            dm += fabs(val[q] * y[ind[q]]);
        }
        int type = glp_get_col_type(lp, k);
        double l = glp_get_col_lb(lp, k),
               u = type == GLP_DB || type == GLP_FX ? glp_get_col_ub(lp, k) : colub[k];
        double term = d >= 0 ? d * l : d * u;
        sum += term;
        mag += fabs(term);
        /* d's own rounding (len + 1 operations), times the larger bound */
        double g = (len + 2) * DBL_EPSILON;
        err += g / (1 - g) * dm * (fabs(l) > fabs(u) ? fabs(l) : fabs(u));
    }
    double g = ((double)m + (double)n + 2) * DBL_EPSILON;
    err += g / (1 - g) * mag;
    free(y);
    free(val);
    free(ind);
    return sum - 2 * err; /* twice: the error terms are themselves rounded */
}

typedef struct cbstate {
    double best;     /* the best valid bound on sum idle seen, scaled */
    const double *x; /* the rounded-up solution (1-based columns), offered once, or NULL */
} cbstate;

static void on_tree(glp_tree *T, void *info)
{
    cbstate *st = info;
    if (st->x && glp_ios_reason(T) == GLP_IHEUR) {
        glp_ios_heur_sol(T, st->x);
        st->x = NULL;
    }
    int p = glp_ios_best_node(T);
    if (!p) return;
    double lb = glp_ios_node_bound(T, p);
    glp_prob *P = glp_ios_get_prob(T);
    int ms = glp_mip_status(P);
    if (ms == GLP_FEAS || ms == GLP_OPT) {
        double inc = glp_mip_obj_val(P);
        if (inc < lb) lb = inc;
    }
    if (isfinite(lb) && lb > st->best) st->best = lb;
}

/* The relaxation in lp (solved by the interior point if ipt, else the simplex) with every
 * binary above a threshold rounded up and O* >= D1, D0: solves that LP on a copy, by the same
 * method; returns its column values (1-based, malloc'd, binaries exact) and *obj, or NULL
 * (*stopped = 1: the time limit stopped the interior point; its objects are abandoned, as in ipm). */
static double *round_up(job *j, glp_prob *lp, int ipt, int L, int ncols, double *obj, int *stopped)
{
    *stopped = 0;
    if (left_ms(j) < 1) return NULL;
    const double thr = ipt ? 1e-6 : 1e-9; /* an interior point's zeros are small, not 0 */
    glp_prob *q = glp_create_prob();
    glp_copy_prob(q, lp, GLP_OFF);
    int first = ncols - 3 * L + 1; /* D1 (L), D0 (L), O* (L): the last 3L columns */
    for (int i = 0; i < L; i++) {
        double d1 = col_prim(lp, ipt, first + i) > thr, d0 = col_prim(lp, ipt, first + L + i) > thr;
        /* a frozen weight's deletes need no offload before them, nor does it ever need one */
        double os = !tp_chain_frozen(j->c, (uint32_t)i) && (col_prim(lp, ipt, first + 2 * L + i) > thr || d1 || d0);
        glp_set_col_bnds(q, first + i, GLP_FX, d1, d1);
        glp_set_col_bnds(q, first + L + i, GLP_FX, d0, d0);
        glp_set_col_bnds(q, first + 2 * L + i, GLP_FX, os, os);
    }
    int ok;
    if (ipt) {
        int r = ipm(j, q);
        if (r == 2) {
            *stopped = 1;
            return NULL;
        }
        ok = r == 0;
    } else {
        glp_smcp sm;
        glp_init_smcp(&sm);
        sm.msg_lev = GLP_MSG_OFF;
        sm.tm_lim = tm_lim(left_ms(j));
        ok = glp_simplex(q, &sm) == 0 && glp_get_status(q) == GLP_OPT;
    }
    double *x = NULL;
    if (ok && (x = malloc(((size_t)ncols + 1) * sizeof *x))) {
        x[0] = 0;
        for (int k = 1; k <= ncols; k++)
            x[k] = col_prim(q, ipt, k);
        for (int k = first; k <= ncols; k++)
            x[k] = round(x[k]);
        *obj = obj_val(q, ipt);
    }
    glp_delete_prob(q);
    return x;
}

/* The incumbent's choices into j->sel (when asked): D1 -> (k,1), D0 -> (k,0), from x (1-based
 * column values) or, x NULL, from mip's solution; the binaries are the last 3L columns. */
static void keep_sel(job *j, int L, int ncols, const double *x, glp_prob *mip)
{
    if (!j->sel) return;
    int first = ncols - 3 * L + 1;
    for (int i = 0; i < L; i++) {
        double d1 = x ? x[first + i] : glp_mip_col_val(mip, first + i);
        double d0 = x ? x[first + L + i] : glp_mip_col_val(mip, first + L + i);
        j->sel[i] = (uint8_t)((d1 > 0.5 ? TP_OFFLOAD_SEL1 : 0) | (d0 > 0.5 ? TP_OFFLOAD_SEL0 : 0));
    }
}

#define GLPK_NAME "GLPK " TP__STR(GLP_MAJOR_VERSION) "." TP__STR(GLP_MINOR_VERSION)
static const char solver_ipm[] = GLPK_NAME " interior point";
static const char solver_spx[] = GLPK_NAME " simplex";
static const char solver_none[] = GLPK_NAME;

/* op k of the model (B_L..B_1, F_1..F_L) as messages name it: by the chain file's layer, 0..L-1,
 * as Algorithm 1's messages do */
static const char *op_name(uint32_t L, uint32_t k, char *buf, size_t n)
{
    if (k < L)
        snprintf(buf, n, "B of layer %u", L - 1 - k);
    else
        snprintf(buf, n, "F of layer %u", k - L);
    return buf;
}

/* Refuses an op that does not fit M_GPU alone (TP_ERR_INFEASIBLE), builds the model into *lpo (colub: each column's upper bound for
 * dual_bound, malloc'd) and fills *sum_u, *St. Runs in the worker. */
static tp_status build(job *jo, glp_prob **lpo, double **colubo, int *ncolso, double *sum_uo,
                       double *Sto)
{
    const tp_chain *c = jo->c;
    tp_error *err = &jo->err;
    const uint32_t L = c->layers;
    double sum_u = 0;
    uint64_t wmax = 0;
    double wsum = 0;
    for (uint32_t i = 0; i < L; i++) {
        sum_u += c->uf[i] + c->ub[i];
        if (c->w[i] > wmax) wmax = c->w[i];
        wsum += (double)c->w[i];
    }

    /* M_k of eq. (1) for every op; sizes <= 2^53 (tp_chain_check) keep these sums exact in uint64 */
    const uint32_t n = 2 * L;
    uint64_t *Mk = malloc(n * sizeof *Mk);
    double *uk = malloc(n * sizeof *uk);
    if (!Mk || !uk) {
        free(Mk);
        free(uk);
        return tp__fail(err, TP_ERR_NOMEM, "tp_chain_bound: out of memory");
    }
    uint64_t acc = c->a[0];
    for (uint32_t i = 0; i < L; i++) {
        acc += c->a[i + 1]; /* sum_{k <= i+1} |a^k|, paper's layer i+1 */
        Mk[L + i] = c->w[i] + acc;
        Mk[L - 1 - i] = c->w[i] + tp_chain_grad_bytes(c, i) + acc;
        uk[L + i] = c->uf[i];
        uk[L - 1 - i] = c->ub[i];
    }
    for (uint32_t k = 0; k < n; k++)
        if (Mk[k] > c->mgpu) {
            char nm[32];
            tp_status s = tp__fail(
                err, TP_ERR_INFEASIBLE,
                "bound: %s needs %llu bytes with no other weight resident, over mgpu %llu",
                op_name(L, k, nm, sizeof nm), (unsigned long long)Mk[k],
                (unsigned long long)c->mgpu);
            free(Mk);
            free(uk);
            return s;
        }

    const double Sb = wmax ? (double)wmax : 1.0; /* bytes per model unit */
    const double St = Sb / c->beta;              /* seconds per model unit */

    /* columns (1-based) */
    const int nn = (int)n, LL = (int)L, Ln = LL * nn;
#define C_IDLE(j) (1 + (j))
#define C_O(i, j) (1 + nn + (i)*nn + (j))
#define C_P(i, j) (1 + nn + Ln + (i)*nn + (j))
#define C_D(i, j) (1 + nn + 2 * Ln + (i)*nn + (j))
#define C_M(i, k) (1 + nn + 3 * Ln + (i)*nn + (k))
#define C_S(i, k) (1 + nn + 4 * Ln + (i)*nn + (k))
#define C_D1(i) (1 + nn + 5 * Ln + (i))
#define C_D0(i) (1 + nn + 5 * Ln + LL + (i))
#define C_OS(i) (1 + nn + 5 * Ln + 2 * LL + (i))
    const int ncols = nn + 5 * Ln + 3 * LL;
    double *colub = malloc(((size_t)ncols + 1) * sizeof *colub);
    if (!colub) {
        free(Mk);
        free(uk);
        return tp__fail(err, TP_ERR_NOMEM, "tp_chain_bound: out of memory");
    }

    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, ncols);
    /* colub: what every feasible point satisfies: O <= |w| (eq. 7, O* <= 1), D <= |w| (eq. 8),
     * P <= 2|w| (P = m' - m + D), s <= |w|; idle_j: replacing it by the largest of 0 and its
     * rows' needs (eqs. 2, 3), at most sum O or sum P <= 2 sum |w|, keeps a point feasible and
     * no worse, so some optimal point has idle_j <= 2 sum |w| (+1 for safety) */
    const double idle_ub = 2 * wsum / Sb + 1;
    for (int j = 0; j < nn; j++) {
        glp_set_col_bnds(lp, C_IDLE(j), GLP_LO, 0, 0);
        glp_set_obj_coef(lp, C_IDLE(j), 1.0);
        colub[C_IDLE(j)] = idle_ub;
    }
    for (int i = 0; i < LL; i++) {
        double W = (double)c->w[i] / Sb;
        int b = LL - 1 - i, f = LL + i;
        for (int j = 0; j < nn; j++) {
            glp_set_col_bnds(lp, C_O(i, j), GLP_LO, 0, 0);
            glp_set_col_bnds(lp, C_P(i, j), GLP_LO, 0, 0);
            glp_set_col_bnds(lp, C_D(i, j), GLP_LO, 0, 0);
            colub[C_O(i, j)] = W;
            colub[C_P(i, j)] = 2 * W;
            colub[C_D(i, j)] = W;
            colub[C_M(i, j)] = W;
            colub[C_S(i, j)] = W;
            if (j == b || j == f || W == 0)
                glp_set_col_bnds(lp, C_M(i, j), GLP_FX, W, W);
            else
                glp_set_col_bnds(lp, C_M(i, j), GLP_DB, 0, W);
            if (j == b)
                glp_set_col_bnds(lp, C_S(i, j), GLP_FX, 0, 0);
            else
                glp_set_col_bnds(lp, C_S(i, j), GLP_LO, 0, 0);
        }
        glp_set_col_kind(lp, C_D1(i), GLP_BV);
        glp_set_col_kind(lp, C_D0(i), GLP_BV);
        glp_set_col_kind(lp, C_OS(i), GLP_BV);
        colub[C_D1(i)] = colub[C_D0(i)] = colub[C_OS(i)] = 1;
    }

    trip t = {0};
    int row = 0;
    /* rows are added in one block at the end; bounds recorded as we go */
    size_t rcap = (size_t)(2 * nn + LL + nn + Ln + Ln + Ln + 3 * LL) + 1;
    int *rtype = malloc(rcap * sizeof *rtype);
    double *rlo = malloc(rcap * sizeof *rlo), *rhi = malloc(rcap * sizeof *rhi);
    if (!rtype || !rlo || !rhi) t.oom = 1;
#define ROW(type, lo, hi) (row++, rtype[row] = (type), rlo[row] = (lo), rhi[row] = (hi), row)
    if (!t.oom) {
        /* eq. (2): both link directions finish within u_j + idle_j (beta = 1 in model units) */
        for (int j = 0; j < nn; j++) {
            double u = uk[j] / St;
            int ro = ROW(GLP_UP, 0, u), rp = ROW(GLP_UP, 0, u);
            put(&t, ro, C_IDLE(j), -1);
            put(&t, rp, C_IDLE(j), -1);
            for (int i = 0; i < LL; i++) {
                put(&t, ro, C_O(i, j), 1);
                put(&t, rp, C_P(i, j), 1);
            }
        }
        /* eq. (3): w_i is not offloaded during B_i */
        for (int i = 0; i < LL; i++) {
            int b = LL - 1 - i, r = ROW(GLP_UP, 0, 0);
            put(&t, r, C_O(i, b), 1);
            put(&t, r, C_IDLE(b), -1);
        }
        /* eq. (4): memory at the start of each op (own weight counted once, in M_k) */
        for (int k = 0; k < nn; k++) {
            if (LL == 1) break;
            int own = k < LL ? LL - 1 - k : k - LL;
            int r = ROW(GLP_UP, 0, (double)(c->mgpu - Mk[k]) / Sb);
            for (int i = 0; i < LL; i++)
                if (i != own) put(&t, r, C_M(i, k), 1);
        }
        for (int i = 0; i < LL; i++) {
            double W = (double)c->w[i] / Sb;
            int b = LL - 1 - i, f = LL + i;
            /* m recurrence from B_i around the cycle; the last row (back to b) is eq. (5) left */
            for (int s = 0; s < nn; s++) {
                int k = (b + s) % nn, k1 = (k + 1) % nn, r = ROW(GLP_FX, 0, 0);
                put(&t, r, C_M(i, k1), 1);
                put(&t, r, C_M(i, k), -1);
                put(&t, r, C_P(i, k), -1);
                put(&t, r, C_D(i, k), 1);
            }
            /* s recurrence (cumulated offload since B_i) */
            for (int s = 0; s + 1 < nn; s++) {
                int k = (b + s) % nn, k1 = (k + 1) % nn, r = ROW(GLP_FX, 0, 0);
                put(&t, r, C_S(i, k1), 1);
                put(&t, r, C_S(i, k), -1);
                put(&t, r, C_O(i, k), -1);
            }
            /* eq. (6) right: sum O + P - D >= 0 since B_i, i.e. s + m >= |w_i|; not for a frozen
             * layer, whose host copy B_i leaves valid (its deletes need no offload) */
            for (int k = 0; k < nn; k++) {
                if (k == b || tp_chain_frozen(c, (uint32_t)i)) continue;
                int r = ROW(GLP_LO, W, 0);
                put(&t, r, C_S(i, k), 1);
                put(&t, r, C_M(i, k), 1);
            }
            /* eq. (7): offloaded completely or not at all */
            int r7 = ROW(GLP_FX, 0, 0);
            for (int j = 0; j < nn; j++)
                put(&t, r7, C_O(i, j), 1);
            put(&t, r7, C_OS(i), -W);
            /* eq. (8): deleted completely or not at all, between F_i and B_i (D1), B_i and F_i (D0)
             */
            int r81 = ROW(GLP_FX, 0, 0), r80 = ROW(GLP_FX, 0, 0);
            for (int j = f; j != b; j = (j + 1) % nn)
                put(&t, r81, C_D(i, j), 1);
            put(&t, r81, C_D1(i), -W);
            for (int j = b; j != f; j = (j + 1) % nn)
                put(&t, r80, C_D(i, j), 1);
            put(&t, r80, C_D0(i), -W);
        }
    }
    int oom = t.oom || !rtype || !rlo || !rhi;
    if (!oom) {
        glp_add_rows(lp, row);
        for (int r = 1; r <= row; r++)
            glp_set_row_bnds(lp, r, rtype[r], rlo[r], rhi[r]);
        glp_load_matrix(lp, (int)t.n, t.ia, t.ja, t.ar);
    }
    free(t.ia);
    free(t.ja);
    free(t.ar);
    free(rtype);
    free(rlo);
    free(rhi);
    free(Mk);
    free(uk);
#undef ROW
    if (oom) {
        glp_delete_prob(lp);
        free(colub);
        return tp__fail(err, TP_ERR_NOMEM, "tp_chain_bound: out of memory");
    }
    *lpo = lp;
    *colubo = colub;
    *ncolso = ncols;
    *sum_uo = sum_u;
    *Sto = St;
    return TP_OK;
}

/* The solved relaxation (by the interior point if ipt, else the simplex): its dual bound raises
 * *best (idle, scaled), and the details record it in seconds. */
static void relaxation(job *j, glp_prob *lp, int ipt, const double *colub, double sum_u, double St, double *best)
{
    double v = dual_bound(lp, ipt, colub);
    j->det.lp_method = ipt ? TP__LP_INTERIOR : TP__LP_SIMPLEX;
    j->det.lp_obj = sum_u + St * obj_val(lp, ipt);
    j->det.lp_bound = sum_u + St * (v > 0 ? v : 0);
    if (v > *best) *best = v;
}

/* The solve (see the top), in the worker: j->res, or j->st. When the time limit stops the
 * interior point, j->res holds what was proved before and the GLPK objects are left to the
 * worker's glp_free_env. */
static void solve(job *j)
{
    const int L = (int)j->c->layers;
    glp_prob *lp = NULL;
    double *colub = NULL, sum_u = 0, St = 0;
    int ncols = 0;
    j->st = build(j, &lp, &colub, &ncols, &sum_u, &St);
    if (j->st) return;
    double best = 0; /* a valid bound on sum idle: idle >= 0 */
    double inc = HUGE_VAL;
    int optimal = 0, stopped = 0, solved = 0;
    double *x = NULL;
    const char *name = solver_none;

    /* the simplex from an advanced basis (GLPK's triangular crash, glp_adv_basis): on the
     * 96-layer BERT chain 4 s where the standard (all-slack) basis needed 4-5 minutes */
    if (j->method != TP__LP_INTERIOR) {
        glp_adv_basis(lp, 0);
        glp_smcp sm;
        glp_init_smcp(&sm);
        sm.msg_lev = GLP_MSG_OFF;
        sm.tm_lim =
            tm_lim(j->method == TP__LP_AUTO ? left_ms(j) / 2
                                            : left_ms(j)); /* AUTO: half, then the interior point */
        int rc = glp_simplex(lp, &sm);
        /* the model is feasible once every op fits alone (build checks it: every weight moved
         * in and out around its own ops, with idle enough), so any other outcome is numerical
         * trouble or the time limit: the interior point, or the compute sum, stands in */
        if (rc == 0 && glp_get_status(lp) == GLP_OPT) {
            solved = 1;
            relaxation(j, lp, 0, colub, sum_u, St, &best);
            name = solver_spx;
            /* an incumbent by rounding the relaxation's binaries up (more deletion never breaks
             * memory; the extra transfers cost idle): an LP with the binaries fixed */
            x = round_up(j, lp, 0, L, ncols, &inc, &stopped);
            if (x) keep_sel(j, L, ncols, x, NULL);
            if (x && inc <= best + 1e-9 * (1 + best)) { /* the relaxation's optimum is integral */
                optimal = 1;
                best = inc;
            }
            if (!optimal && left_ms(j) >= 1) {
                glp_iocp io;
                glp_init_iocp(&io);
                io.msg_lev = GLP_MSG_OFF;
                io.tm_lim = tm_lim(left_ms(j));
                io.presolve = GLP_OFF;
                io.mir_cuts = GLP_ON;
                io.fp_heur = GLP_ON;
                cbstate cs = {best, x};
                io.cb_func = on_tree;
                io.cb_info = &cs;
                int irc = glp_intopt(lp, &io);
                int ms = glp_mip_status(lp); /* (GLP_NOFEAS: numerical, as above; the bound stands) */
                if ((ms == GLP_OPT || ms == GLP_FEAS) && glp_mip_obj_val(lp) < inc) {
                    inc = glp_mip_obj_val(lp);
                    keep_sel(j, L, ncols, NULL, lp);
                }
                if (irc == 0 && ms == GLP_OPT) {
                    optimal = 1;
                    best = inc;
                } else if (ms != GLP_NOFEAS && cs.best > best) {
                    best = cs.best;
                }
            }
        }
    }
    /* the interior point: forced, or the simplex did not finish in its time */
    if (!solved && j->method != TP__LP_SIMPLEX) {
        int r = ipm(j, lp);
        if (r == 2) goto out;
        if (r == 0) {
            relaxation(j, lp, 1, colub, sum_u, St, &best);
            name = solver_ipm;
            x = round_up(j, lp, 1, L, ncols, &inc, &stopped);
            if (stopped) goto out;
            if (x) keep_sel(j, L, ncols, x, NULL);
            /* the rounded LP's value (the interior point's primal, to its tolerance) meets the
             * dual bound: proved, and the bound stays the dual one */
            if (x && inc <= best + 1e-7 * (1 + best)) optimal = 1;
        } else {
            /* no convergence, numerical instability (about 2% of small random chains) or a
             * verdict of infeasibility (the model is feasible: see the simplex): the best
             * point's duals still give a valid, if weaker, bound */
            j->det.ipm_failed = 1;
            double v = glp_ipt_status(lp) == GLP_UNDEF ? 0 : dual_bound(lp, 1, colub);
            if (v > 0) j->det.ipm_failed_bound = sum_u + St * v;
            if (v > best) best = v;
        }
    }
    glp_delete_prob(lp);
out:
    free(x);
    free(colub);
    if (best > inc) best = inc;
    if (best < 0) best = 0;
    j->res.solver = name;
    j->res.optimal = optimal;
    j->res.bound = sum_u + St * best;
    if (isfinite(inc)) {
        j->res.incumbent = sum_u + St * inc;
        if (j->res.incumbent < j->res.bound) j->res.incumbent = j->res.bound;
        j->res.gap = optimal || j->res.incumbent <= 0
                         ? 0
                         : (j->res.incumbent - j->res.bound) / j->res.incumbent;
        if (j->res.gap < 0) j->res.gap = 0;
    } else {
        j->res.incumbent = HUGE_VAL;
        j->res.gap = 1;
    }
}

static void *worker(void *arg)
{
    job *j = arg;
    glp_term_hook(on_term, j);
    solve(j);
    glp_term_hook(NULL, NULL);
    glp_free_env(); /* this thread's environment: every GLPK object of the solve, stopped or not */
    return NULL;
}

/* the bound (see the top), and the incumbent's choices into sel (L bytes, or NULL) */
static tp_status bound_run(const tp_chain *c, double time_limit_s, tp__lp_method method, tp_chain_bound_result *out,
                           tp__bound_detail *det, uint8_t *sel, tp_error *err)
{
    if (!c || !out) return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: NULL chain or result");
    memset(out, 0, sizeof *out);
    if (det) memset(det, 0, sizeof *det);
    out->solver = solver_none;
    double t0 = tp__now(); /* the time limit counts the model's construction too */
    tp_status valid = tp_chain_check(c, err);
    if (valid) return valid;
    const uint32_t L = c->layers;
    if (L < 1 || L > TP_CHAIN_BOUND_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: %u layers (the MILP takes 1..%u)", L,
                        TP_CHAIN_BOUND_MAX_LAYERS);
    if (!isfinite(time_limit_s) || time_limit_s <= 0 || time_limit_s > TP_CHAIN_TIME_LIMIT_MAX)
        return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: time limit %g s (want 0 < t <= %g)",
                        time_limit_s, TP_CHAIN_TIME_LIMIT_MAX);
    if ((unsigned)method > TP__LP_INTERIOR)
        return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: LP method %d", (int)method);
    job *j = calloc(1, sizeof *j);
    if (!j) return tp__fail(err, TP_ERR_NOMEM, "tp_chain_bound: out of memory");
    j->c = c;
    j->sel = sel;
    if (sel) memset(sel, 0, L);
    j->deadline = t0 + time_limit_s;
    j->method = method;
    pthread_t th;
    int prc = pthread_create(&th, NULL, worker, j);
    if (prc) {
        free(j);
        return tp__fail(err, TP_ERR_NOMEM,
                        "tp_chain_bound: cannot start the solver's thread (error %d)", prc);
    }
    pthread_join(th, NULL);
    tp_status st = j->st;
    if (st) {
        if (err) *err = j->err;
    } else {
        *out = j->res;
        out->seconds = tp__now() - t0;
        if (det) *det = j->det;
    }
    free(j);
    return st;
}

tp_status tp__chain_bound_method(const tp_chain *c, double time_limit_s, tp__lp_method method,
                                 tp_chain_bound_result *out, tp__bound_detail *det, tp_error *err)
{
    return bound_run(c, time_limit_s, method, out, det, NULL, err);
}

tp_status tp_chain_bound(const tp_chain *c, double time_limit_s, tp_chain_bound_result *out,
                         tp_error *err)
{
    return bound_run(c, time_limit_s, TP__LP_AUTO, out, NULL, NULL, err);
}

tp_status tp_chain_bound_select(const tp_chain *c, double time_limit_s, tp_chain_bound_result *out, uint8_t *sel,
                                tp_error *err)
{
    if (!sel) return tp__fail(err, TP_ERR_ARG, "tp_chain_bound_select: NULL selection");
    return bound_run(c, time_limit_s, TP__LP_AUTO, out, NULL, sel, err);
}
