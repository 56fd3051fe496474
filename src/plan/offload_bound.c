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
 *
 * Scaling: bytes in units of the largest weight (Sb), times in units of Sb / beta (the time to
 * move the largest weight), so beta is 1, weights are in [0, 1] and the link rows have unit
 * coefficients (GLPK's own scaling is not called: it prints to the terminal).
 *
 * The bound: the root LP relaxation's optimum (glp_simplex), then the best node bound seen
 * during branch and bound (glp_ios_best_node in the callback), capped by the incumbent; the MIP
 * optimum when GLPK proves it. A time limit that stops even the LP leaves sum u (idle >= 0). */
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "io/util.h"
#include "turnip/offload.h"

#define TP__BOUND_MAX_LAYERS 160u /* the model has ~10 L^2 columns (the paper's chains: 36-144 layers) */
#define TP__MAX_EXACT (UINT64_C(1) << 53)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

/* The relaxation in lp (solved) with every fractional binary rounded up and O* >= D1, D0:
 * solves that LP on a copy; returns its column values (1-based, malloc'd) and *obj, or NULL. */
static double *round_up(glp_prob *lp, int L, int ncols, double left_ms, double *obj)
{
    if (left_ms < 1) return NULL;
    glp_prob *q = glp_create_prob();
    glp_copy_prob(q, lp, GLP_OFF);
    int first = ncols - 3 * L + 1; /* D1 (L), D0 (L), O* (L): the last 3L columns */
    for (int i = 0; i < L; i++) {
        double d1 = glp_get_col_prim(lp, first + i) > 1e-9, d0 = glp_get_col_prim(lp, first + L + i) > 1e-9;
        double os = glp_get_col_prim(lp, first + 2 * L + i) > 1e-9 || d1 || d0;
        glp_set_col_bnds(q, first + i, GLP_FX, d1, d1);
        glp_set_col_bnds(q, first + L + i, GLP_FX, d0, d0);
        glp_set_col_bnds(q, first + 2 * L + i, GLP_FX, os, os);
    }
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = left_ms >= INT_MAX ? INT_MAX : (int)left_ms;
    double *x = NULL;
    if (glp_simplex(q, &sm) == 0 && glp_get_status(q) == GLP_OPT && (x = malloc(((size_t)ncols + 1) * sizeof *x))) {
        x[0] = 0;
        for (int k = 1; k <= ncols; k++) x[k] = glp_get_col_prim(q, k);
        for (int k = first; k <= ncols; k++) x[k] = round(x[k]);
        *obj = glp_get_obj_val(q);
    }
    glp_delete_prob(q);
    return x;
}

static const char solver_name[] = "GLPK " TP__STR(GLP_MAJOR_VERSION) "." TP__STR(GLP_MINOR_VERSION);

static const char *op_name(uint32_t L, uint32_t k, char *buf, size_t n)
{
    if (k < L) snprintf(buf, n, "B_%u", L - k);
    else snprintf(buf, n, "F_%u", k - L + 1);
    return buf;
}

tp_status tp_chain_bound(const tp_chain *c, double time_limit_s, tp_chain_bound_result *out, tp_error *err)
{
    if (!c || !out) return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: NULL chain or result");
    memset(out, 0, sizeof *out);
    out->solver = solver_name;
    double t0 = now_s(); /* the time limit counts the model's construction too */
    tp_status valid = tp_chain_check(c, err);
    if (valid) return valid;
    const uint32_t L = c->layers;
    if (L < 1 || L > TP__BOUND_MAX_LAYERS)
        return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: %u layers (the MILP takes 1..%u)", L, TP__BOUND_MAX_LAYERS);
    if (!c->uf || !c->ub || !c->w || !c->a) return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: NULL array in chain");
    if (!isfinite(time_limit_s) || time_limit_s <= 0 || time_limit_s > 1e6)
        return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: time limit %g s (want 0 < t <= 1e6)", time_limit_s);
    if (!isfinite(c->beta) || !(c->beta > 0))
        return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: beta %g (want finite > 0)", c->beta);
    double sum_u = 0;
    uint64_t wmax = 0;
    for (uint32_t i = 0; i < L; i++) {
        if (!isfinite(c->uf[i]) || c->uf[i] < 0 || !isfinite(c->ub[i]) || c->ub[i] < 0)
            return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: layer %u: times uf %g ub %g (want finite >= 0)", i + 1,
                            c->uf[i], c->ub[i]);
        if (c->w[i] > TP__MAX_EXACT)
            return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: layer %u: w over 2^53 bytes", i + 1);
        sum_u += c->uf[i] + c->ub[i];
        if (c->w[i] > wmax) wmax = c->w[i];
    }
    for (uint32_t i = 0; i <= L; i++)
        if (c->a[i] > TP__MAX_EXACT) return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: a^%u over 2^53 bytes", i);
    if (!isfinite(sum_u)) return tp__fail(err, TP_ERR_ARG, "tp_chain_bound: the sum of the times overflows");

    /* M_k of eq. (1) for every op; sizes <= 2^53 and L <= 512 keep these sums exact in uint64 */
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
        Mk[L - 1 - i] = 2 * c->w[i] + acc;
        uk[L + i] = c->uf[i];
        uk[L - 1 - i] = c->ub[i];
    }
    for (uint32_t k = 0; k < n; k++)
        if (Mk[k] > c->mgpu) {
            char nm[32];
            tp_status s = tp__fail(err, TP_ERR_INFEASIBLE,
                                   "tp_chain_bound: %s needs %llu bytes with no other weight resident, over mgpu %llu",
                                   op_name(L, k, nm, sizeof nm), (unsigned long long)Mk[k],
                                   (unsigned long long)c->mgpu);
            free(Mk);
            free(uk);
            return s;
        }

    const double Sb = wmax ? (double)wmax : 1.0; /* bytes per model unit */
    const double St = Sb / c->beta;                /* seconds per model unit */

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

    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, ncols);
    for (int j = 0; j < nn; j++) {
        glp_set_col_bnds(lp, C_IDLE(j), GLP_LO, 0, 0);
        glp_set_obj_coef(lp, C_IDLE(j), 1.0);
    }
    for (int i = 0; i < LL; i++) {
        double W = (double)c->w[i] / Sb;
        int b = LL - 1 - i, f = LL + i;
        for (int j = 0; j < nn; j++) {
            glp_set_col_bnds(lp, C_O(i, j), GLP_LO, 0, 0);
            glp_set_col_bnds(lp, C_P(i, j), GLP_LO, 0, 0);
            glp_set_col_bnds(lp, C_D(i, j), GLP_LO, 0, 0);
            if (j == b || j == f || W == 0) glp_set_col_bnds(lp, C_M(i, j), GLP_FX, W, W);
            else glp_set_col_bnds(lp, C_M(i, j), GLP_DB, 0, W);
            if (j == b) glp_set_col_bnds(lp, C_S(i, j), GLP_FX, 0, 0);
            else glp_set_col_bnds(lp, C_S(i, j), GLP_LO, 0, 0);
        }
        glp_set_col_kind(lp, C_D1(i), GLP_BV);
        glp_set_col_kind(lp, C_D0(i), GLP_BV);
        glp_set_col_kind(lp, C_OS(i), GLP_BV);
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
            /* eq. (6) right: sum O + P - D >= 0 since B_i, i.e. s + m >= |w_i| */
            for (int k = 0; k < nn; k++) {
                if (k == b) continue;
                int r = ROW(GLP_LO, W, 0);
                put(&t, r, C_S(i, k), 1);
                put(&t, r, C_M(i, k), 1);
            }
            /* eq. (7): offloaded completely or not at all */
            int r7 = ROW(GLP_FX, 0, 0);
            for (int j = 0; j < nn; j++) put(&t, r7, C_O(i, j), 1);
            put(&t, r7, C_OS(i), -W);
            /* eq. (8): deleted completely or not at all, between F_i and B_i (D1), B_i and F_i (D0) */
            int r81 = ROW(GLP_FX, 0, 0), r80 = ROW(GLP_FX, 0, 0);
            for (int j = f; j != b; j = (j + 1) % nn) put(&t, r81, C_D(i, j), 1);
            put(&t, r81, C_D1(i), -W);
            for (int j = b; j != f; j = (j + 1) % nn) put(&t, r80, C_D(i, j), 1);
            put(&t, r80, C_D0(i), -W);
        }
    }
    int oom = t.oom || !rtype || !rlo || !rhi;
    if (!oom) {
        glp_add_rows(lp, row);
        for (int r = 1; r <= row; r++) glp_set_row_bnds(lp, r, rtype[r], rlo[r], rhi[r]);
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
        return tp__fail(err, TP_ERR_NOMEM, "tp_chain_bound: out of memory");
    }

    double lim_ms = time_limit_s * 1000.0, left0 = lim_ms - (now_s() - t0) * 1000.0; /* after the build */
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    sm.tm_lim = left0 >= INT_MAX ? INT_MAX : left0 < 1 ? 1 : (int)left0;
    double best = 0; /* valid bound on sum idle: idle >= 0 */
    double inc = HUGE_VAL;
    int optimal = 0;
    tp_status st = TP_OK;
    int rc = glp_simplex(lp, &sm);
    if (rc == 0 && glp_get_status(lp) == GLP_NOFEAS) {
        st = tp__fail(err, TP_ERR_INFEASIBLE, "tp_chain_bound: the LP relaxation is infeasible");
    } else if (rc == 0 && glp_get_status(lp) == GLP_OPT) {
        double v = glp_get_obj_val(lp);
        if (v > best) best = v;
        /* an incumbent by rounding the relaxation's binaries up (more deletion never breaks
         * memory; the extra transfers cost idle): an LP with the binaries fixed */
        double *x = round_up(lp, LL, ncols, lim_ms - (now_s() - t0) * 1000.0, &inc);
        if (x && inc <= best + 1e-9 * (1 + best)) { /* the relaxation's optimum is integral */
            optimal = 1;
            best = inc;
        }
        double left_ms = lim_ms - (now_s() - t0) * 1000.0;
        if (!optimal && left_ms >= 1) {
            glp_iocp io;
            glp_init_iocp(&io);
            io.msg_lev = GLP_MSG_OFF;
            io.tm_lim = left_ms >= INT_MAX ? INT_MAX : (int)left_ms;
            io.presolve = GLP_OFF;
            io.mir_cuts = GLP_ON;
            io.fp_heur = GLP_ON;
            cbstate cs = {best, x};
            io.cb_func = on_tree;
            io.cb_info = &cs;
            int irc = glp_intopt(lp, &io);
            int ms = glp_mip_status(lp);
            if (ms == GLP_NOFEAS) {
                st = tp__fail(err, TP_ERR_INFEASIBLE, "tp_chain_bound: the MILP is infeasible");
            } else {
                if ((ms == GLP_OPT || ms == GLP_FEAS) && glp_mip_obj_val(lp) < inc) inc = glp_mip_obj_val(lp);
                if (irc == 0 && ms == GLP_OPT) {
                    optimal = 1;
                    best = inc;
                } else if (cs.best > best) {
                    best = cs.best;
                }
            }
        }
        free(x);
    }
    glp_delete_prob(lp);
    if (st) return st;
    if (best > inc) best = inc;
    if (best < 0) best = 0;
    out->seconds = now_s() - t0;
    out->optimal = optimal;
    out->bound = sum_u + St * best;
    if (isfinite(inc)) {
        out->incumbent = sum_u + St * inc;
        out->gap = optimal || out->incumbent <= 0 ? 0 : (out->incumbent - out->bound) / out->incumbent;
        if (out->gap < 0) out->gap = 0;
    } else {
        out->incumbent = HUGE_VAL;
        out->gap = 1;
    }
    return TP_OK;
}
