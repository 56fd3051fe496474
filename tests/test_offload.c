/* test_offload.c - the OFF model (issue 14): the chain reader, the schedule checker (a valid
 * hand-made schedule and one mutation per rule), Algorithm 1 against an independent coverage
 * recount, the greedy, Greedy* and L2L schedules on seeded random chains through the checker,
 * a chain where the discount matters, and L2L on identical layers against its closed form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "io/util.h"
#include "turnip/offload.h"

static char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tp-chain-XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    size_t n = strlen(text);
    CHECK(write(fd, text, n) == (ssize_t)n);
    close(fd);
    return path;
}

TEST(offload_read_chain)
{
    char *p = write_tmp("{\"format\": \"turnip.chain/1\", \"mgpu\": 1000, \"beta\": 10.5, \"a0\": 3,"
                        " \"layers\": [{\"uf\": 0.5, \"ub\": 1, \"w\": 7, \"a\": 4}, {\"uf\": 1e-3, \"ub\": 2e-3, \"w\": 0, \"a\": 9}]}");
    tp_chain *c;
    tp_error e;
    ASSERT_OK_ERR(tp_chain_read_file(p, &c, &e), e);
    ASSERT_EQ(c->layers, 2);
    ASSERT_EQ(c->mgpu, 1000);
    ASSERT_NEAR(c->beta, 10.5, 0);
    ASSERT_EQ(c->a[0], 3);
    ASSERT_EQ(c->a[1], 4);
    ASSERT_EQ(c->a[2], 9);
    ASSERT_EQ(c->w[0], 7);
    ASSERT_EQ(c->w[1], 0);
    ASSERT_NEAR(c->uf[0], 0.5, 0);
    ASSERT_NEAR(c->ub[1], 2e-3, 0);
    ASSERT_EQ(tp_chain_frozen(c, 0), 0); /* absent: trained */
    ASSERT_EQ(tp_chain_frozen(c, 1), 0);
    tp_chain_free(c);
    unlink(p);
    p = write_tmp("{\"format\": \"turnip.chain/1\", \"mgpu\": 1000, \"beta\": 10.5, \"a0\": 3,"
                  " \"layers\": [{\"uf\": 0.5, \"ub\": 1, \"w\": 7, \"a\": 4, \"frozen\": true},"
                  " {\"uf\": 1, \"ub\": 2, \"w\": 5, \"a\": 9, \"frozen\": false}]}");
    ASSERT_OK_ERR(tp_chain_read_file(p, &c, &e), e);
    ASSERT_EQ(tp_chain_frozen(c, 0), 1);
    ASSERT_EQ(tp_chain_frozen(c, 1), 0);
    tp_chain_free(c);
    unlink(p);
}

TEST(offload_read_chain_rejects)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"[1]", "(top)"},
        {"{\"format\": \"turnip.chain/2\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 0, \"a\": 0}]}", "format"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": []}", "layers"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"extra\": 1, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 0, \"a\": 0}]}", "unknown key \"extra\""},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 0, \"a\": 0, \"x\": 1}]}", "layers[0]: unknown key"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": -1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 0, \"a\": 0}]}", "mgpu"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 0, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 0, \"a\": 0}]}", "beta"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": -1, \"ub\": 1, \"w\": 0, \"a\": 0}]}", "layers[0].uf"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 1.5, \"a\": 0}]}", "layers[0].w"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 9007199254740993, \"a\": 0}]}", "layers[0].w"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1e18, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 9007199254740992, \"a\": 1}]}", "exceeds 2^53"},
        /* a computation takes time (its memory is held at an instant of its own); a transfer at most 1e9 s */
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 0, \"ub\": 1, \"w\": 0, \"a\": 0}]}", "layers[0].uf: 0 out of range"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 2000000000, \"a\": 0}]}", "layers[0].w: its transfer takes over 1e9 s"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"w\": 0, \"a\": 0}]}", "layers[0].ub: missing"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1, \"ub\": 1, \"w\": 0, \"a\": 0, \"frozen\": 1}]}", "layers[0].frozen: not true or false"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"mgpu\": 2, \"beta\": 1, \"a0\": 0, \"layers\": []}", "not JSON"},
        {"{\"format\": \"turnip.chain/1\", \"mgpu\": 1, \"beta\": 1, \"a0\": 0, \"layers\": [{\"uf\": 1e400, \"ub\": 1, \"w\": 0, \"a\": 0}]}", "not JSON"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        char *p = write_tmp(bad[k].text);
        tp_chain *c = (tp_chain *)1;
        tp_error e;
        tp_status s = tp_chain_read_file(p, &c, &e);
        CHECKF(s == TP_ERR_PARSE, "case %zu: status %s", k, tp_status_name(s));
        CHECK(c == NULL);
        CHECKF(strstr(e.msg, bad[k].want) && strstr(e.msg, p) && !strchr(e.msg, '\n'), "case %zu: %s", k, e.msg);
        unlink(p);
    }
    tp_chain *c;
    tp_error e;
    ASSERT_STATUS(tp_chain_read_file("/nonexistent/chain.json", &c, &e), TP_ERR_IO);
}

/* ---- the checker on a hand-made schedule: L = 2, w = 100 each, beta = 100 (1 s per
 * transfer), every F and B 1 s, no activations. Layer 0 takes both choices: offloaded after
 * B_0 (host copy valid), prefetched before F_0, deleted after F_0 (the discount), prefetched
 * before B_0 (at time 0, for this iteration). Layer 1 stays.
 *   B1 [0,1]  prefetch0 [0,1]  B0 [1,2]  offload0 [2,3]  prefetch0 [3,4]  F0 [4,5]  delete0 5  F1 [5,6]
 * Start: w_1 resident (host copy stale: never sent), w_0 away with a valid host copy. Peak 300
 * (during B_1: w_1, its gradient, w_0 arriving; during B_0: w_1, w_0, its gradient). */
static tp_chain *chain2(void)
{
    tp_chain *c = tp_chain_new(2);
    for (int i = 0; i < 2; i++) c->uf[i] = c->ub[i] = 1, c->w[i] = 100;
    c->mgpu = 400;
    c->beta = 100;
    return c;
}

static tp_offload_schedule *base2(void)
{
    static const tp_offload_op ops[] = {
        {TP_OFFOP_B, 1, 0, 1},        {TP_OFFOP_PREFETCH, 0, 0, 1}, {TP_OFFOP_B, 0, 1, 2},
        {TP_OFFOP_OFFLOAD, 0, 2, 3},  {TP_OFFOP_PREFETCH, 0, 3, 4}, {TP_OFFOP_F, 0, 4, 5},
        {TP_OFFOP_DELETE, 0, 5, 5},   {TP_OFFOP_F, 1, 5, 6},
    };
    tp_offload_schedule *s = calloc(1, sizeof *s);
    s->layers = 2;
    s->resident0 = calloc(2, 1);
    s->valid0 = calloc(2, 1);
    s->resident0[1] = 1;
    s->valid0[0] = 1;
    s->nops = sizeof ops / sizeof *ops;
    s->ops = malloc(sizeof ops);
    memcpy(s->ops, ops, sizeof ops);
    s->makespan = 6;
    return s;
}

static tp_offload_op *find_op(tp_offload_schedule *s, tp_offload_op_kind k, uint32_t layer, int nth)
{
    for (uint32_t j = 0; j < s->nops; j++)
        if (s->ops[j].kind == k && s->ops[j].layer == layer && nth-- == 0) return &s->ops[j];
    CHECK(0);
    return NULL;
}

static void drop_op(tp_offload_schedule *s, tp_offload_op *o)
{
    size_t j = (size_t)(o - s->ops);
    memmove(&s->ops[j], &s->ops[j + 1], (s->nops - j - 1) * sizeof *o);
    s->nops--;
}

static void expect_reject(tp_chain *c, tp_offload_schedule *s, const char *want)
{
    tp_offload_report r;
    tp_error e;
    tp_status st = tp_offload_check(c, s, &r, &e);
    CHECKF(st == TP_ERR_CHECK, "expected a rejection with \"%s\", got %s", want, tp_status_name(st));
    CHECKF(strstr(e.msg, want), "expected \"%s\" in: %s", want, e.msg);
    tp_offload_schedule_free(s);
}

TEST(offload_check_rules)
{
    tp_chain *c = chain2();
    tp_offload_schedule *s = base2();
    tp_offload_report r;
    tp_error e;
    ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
    ASSERT_NEAR(r.makespan, 6, 0);
    ASSERT_NEAR(r.compute, 4, 0);
    ASSERT_EQ(r.peak, 300);
    ASSERT_EQ(r.bytes_moved, 300);
    tp_offload_schedule_free(s);

    /* overlap on the GPU: F_1 starts while F_0 runs */
    s = base2();
    *find_op(s, TP_OFFOP_F, 1, 0) = (tp_offload_op){TP_OFFOP_F, 1, 4.5, 5.5};
    expect_reject(c, s, "GPU overlap");
    /* the computations out of order: F_1 before F_0 */
    s = base2();
    *find_op(s, TP_OFFOP_F, 1, 0) = (tp_offload_op){TP_OFFOP_F, 1, 3, 4};
    expect_reject(c, s, "GPU overlap or wrong order");
    /* overlap on one link direction: the second prefetch of w_0 during the first */
    s = base2();
    *find_op(s, TP_OFFOP_PREFETCH, 0, 1) = (tp_offload_op){TP_OFFOP_PREFETCH, 0, 0.5, 1.5};
    expect_reject(c, s, "prefetch link overlap");
    /* overlap on the other direction: an upload of w_1 during the offload of w_0 */
    s = base2();
    s->ops = realloc(s->ops, (s->nops + 1) * sizeof *s->ops);
    s->ops[s->nops++] = (tp_offload_op){TP_OFFOP_UPLOAD, 1, 2.5, 3.5};
    expect_reject(c, s, "offload link overlap");
    /* an upload during B of its own layer, which is changing the weight */
    s = base2();
    s->ops = realloc(s->ops, (s->nops + 1) * sizeof *s->ops);
    s->ops[s->nops++] = (tp_offload_op){TP_OFFOP_UPLOAD, 1, 0.5, 1.5};
    expect_reject(c, s, "overlaps B of layer 1");
    /* a wrong transfer time */
    s = base2();
    find_op(s, TP_OFFOP_OFFLOAD, 0, 0)->end = 2.5;
    expect_reject(c, s, "is not [start >= 0");
    /* a computation on a weight not yet arrived: B_0 at 1 while w_0 arrives until 1.5 */
    s = base2();
    *find_op(s, TP_OFFOP_PREFETCH, 0, 0) = (tp_offload_op){TP_OFFOP_PREFETCH, 0, 0.5, 1.5};
    expect_reject(c, s, "is not resident");
    /* a computation on a weight never prefetched */
    s = base2();
    drop_op(s, find_op(s, TP_OFFOP_PREFETCH, 0, 0));
    expect_reject(c, s, "B of layer 0 at 1: w_0 is not resident");
    /* a prefetch of a stale host copy (the discount rule): w_0's host copy stale at 0 */
    s = base2();
    s->valid0[0] = 0;
    expect_reject(c, s, "host copy of w_0 is stale");
    /* B_0 changed w_0: deleting it instead of offloading loses the update */
    s = base2();
    *find_op(s, TP_OFFOP_OFFLOAD, 0, 0) = (tp_offload_op){TP_OFFOP_DELETE, 0, 2, 2};
    expect_reject(c, s, "delete of layer 0 at 2: the host copy of w_0 is stale");
    /* an offload during B_0, which is changing w_0 */
    s = base2();
    *find_op(s, TP_OFFOP_OFFLOAD, 0, 0) = (tp_offload_op){TP_OFFOP_OFFLOAD, 0, 1.5, 2.5};
    expect_reject(c, s, "overlaps B of layer 0");
    /* a prefetch of a weight already resident */
    s = base2();
    s->resident0[0] = 1;
    expect_reject(c, s, "already resident");
    /* memory over mgpu */
    c->mgpu = 299;
    s = base2();
    expect_reject(c, s, "memory over mgpu");
    c->mgpu = 400;
    /* the wrap: w_0 never deleted after F_0 ends resident, starts away */
    s = base2();
    drop_op(s, find_op(s, TP_OFFOP_DELETE, 0, 0));
    expect_reject(c, s, "wrap: w_0 ends resident");
    /* the wrap: an upload of w_1 during F_1 leaves its host copy valid, it starts stale */
    s = base2();
    s->ops = realloc(s->ops, (s->nops + 1) * sizeof *s->ops);
    s->ops[s->nops++] = (tp_offload_op){TP_OFFOP_UPLOAD, 1, 5, 6};
    expect_reject(c, s, "wrap: w_1 ends resident with a valid host copy");
    /* a delete while its F still runs */
    s = base2();
    *find_op(s, TP_OFFOP_DELETE, 0, 0) = (tp_offload_op){TP_OFFOP_DELETE, 0, 4.5, 4.5};
    expect_reject(c, s, "overlaps another operation on w_0");
    tp_chain_free(c);
}

/* The checker on a frozen layer (tp_chain.frozen), on base2's chain and schedule: B_0 leaves a
 * frozen w_0 as it was, so its host copy stays valid and a delete after B_0 replaces the
 * offload (1 s of link less), and B_0 holds no gradient. */
TEST(offload_check_frozen)
{
    tp_chain *c = chain2();
    tp_offload_report r;
    tp_error e;
    tp_offload_schedule *s = base2();
    *find_op(s, TP_OFFOP_OFFLOAD, 0, 0) = (tp_offload_op){TP_OFFOP_DELETE, 0, 2, 2};
    c->frozen[0] = 1;
    ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
    ASSERT_EQ(r.bytes_moved, 200); /* the two prefetches */
    ASSERT_EQ(r.peak, 300);       /* B_1: w_1, its gradient, w_0 arriving */
    /* both frozen: no gradient anywhere, the peak is two weights */
    c->frozen[1] = 1;
    ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
    ASSERT_EQ(r.peak, 200);
    c->mgpu = 200;
    ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
    c->frozen[1] = 0; /* B_1 holds w_1's gradient again: 300 > 200 */
    ASSERT_STATUS(tp_offload_check(c, s, &r, &e), TP_ERR_CHECK);
    CHECKF(strstr(e.msg, "memory over mgpu"), "%s", e.msg);
    c->mgpu = 400;
    /* trained again, the delete after B_0 loses its update */
    c->frozen[0] = 0;
    expect_reject(c, s, "delete of layer 0 at 2: the host copy of w_0 is stale");
    tp_chain_free(c);
}

/* ---- random chains ---- */

static double urand(uint64_t *st)
{
    *st = tp__mix64(*st + 0x9e3779b97f4a7c15ull);
    return (double)(*st >> 11) / 9007199254740992.0;
}

/* M_o of the paper's equation 1 for op o (o < L: F of layer o; else B of layer o - L) */
static uint64_t m_op(const tp_chain *c, uint32_t o)
{
    uint32_t L = c->layers, i = o % L;
    uint64_t acts = 0;
    for (uint32_t k = 0; k <= i + 1; k++) acts += c->a[k];
    return acts + (o < L || tp_chain_frozen(c, i) ? 1 : 2) * c->w[i]; /* B: + the gradient, unless frozen */
}

/* frac places mgpu between the least any schedule needs and all weights resident; each layer is
 * frozen with probability pfrozen (no draw when 0, so those chains are as they always were) */
static tp_chain *random_chain_frozen(uint64_t seed, uint32_t L, double frac, double pfrozen)
{
    uint64_t st = seed;
    tp_chain *c = tp_chain_new(L);
    c->a[0] = (uint64_t)(urand(&st) * 1000);
    for (uint32_t i = 0; i < L; i++) {
        c->uf[i] = urand(&st) < 0.1 ? 1e-6 : 0.1 + urand(&st); /* 1e-6: a layer of almost no time */
        c->ub[i] = c->uf[i] * (1 + 2 * urand(&st));
        c->w[i] = urand(&st) < 0.1 ? 0 : (uint64_t)(1000 + urand(&st) * 100000);
        c->a[i + 1] = (uint64_t)(urand(&st) * 5000);
    }
    c->beta = 20000 + urand(&st) * 400000;
    for (uint32_t i = 0; i < L && pfrozen > 0; i++) c->frozen[i] = urand(&st) < pfrozen;
    /* from the least memory any schedule needs (the largest M_o, every other weight away) to
     * every weight resident always */
    uint64_t lo = 0, hi = 0, wsum = 0;
    for (uint32_t i = 0; i < L; i++) wsum += c->w[i];
    for (uint32_t o = 0; o < 2 * L; o++) {
        uint64_t m = m_op(c, o);
        if (m > lo) lo = m;
        if (m + wsum - c->w[o % L] > hi) hi = m + wsum - c->w[o % L];
    }
    c->mgpu = lo + (uint64_t)(frac * (double)(hi - lo));
    return c;
}

static tp_chain *random_chain(uint64_t seed, uint32_t L, double frac)
{
    return random_chain_frozen(seed, L, frac, 0);
}

/* Algorithm 1's result, recounted: with the chosen weights away over the operations their
 * choices cover, every operation fits in mgpu */
static void check_selection(const tp_chain *c, const uint8_t *sel)
{
    uint32_t L = c->layers;
    for (uint32_t o = 0; o < 2 * L; o++) {
        uint32_t i = o % L;
        uint64_t m = m_op(c, o);
        for (uint32_t k = 0; k < L; k++) {
            if (k == i) continue;
            int away = (k < i && (sel[k] & TP_OFFLOAD_SEL1)) || (k > i && (sel[k] & TP_OFFLOAD_SEL0));
            if (!away) m += c->w[k];
        }
        CHECKF(m <= c->mgpu, "op %u needs %llu > mgpu %llu", o, (unsigned long long)m, (unsigned long long)c->mgpu);
    }
}

TEST(offload_random_chains)
{
    static const double fracs[] = {0, 0.05, 0.2, 0.5, 0.8, 1.0};
    int planned[TP_OFFLOAD_L2L_SYNC + 1] = {0}, tried = 0, mutated = 0, tight = 0, idle = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint32_t L = 1 + (uint32_t)(tp__mix64(seed * 7919) % 12);
        for (size_t f = 0; f < sizeof fracs / sizeof *fracs; f++) {
            tp_chain *c = random_chain(seed * 131 + f, L, fracs[f]);
            double compute = 0;
            for (uint32_t i = 0; i < L; i++) compute += c->uf[i] + c->ub[i];
            uint8_t sel[16];
            tp_error e;
            for (int d = 0; d < 2; d++) {
                tp_status st = tp_offload_select(c, d, sel, &e);
                CHECKF(st == TP_OK || st == TP_ERR_INFEASIBLE, "select: %s", e.msg);
                if (st == TP_OK) check_selection(c, sel);
                if (fracs[f] == 1.0) { /* everything fits: nothing to offload */
                    ASSERT_OK_ERR(st, e);
                    for (uint32_t k = 0; k < L; k++) ASSERT_EQ(sel[k], 0);
                }
            }
            for (int a = 0; a <= TP_OFFLOAD_L2L_SYNC; a++) {
                if (a == TP_OFFLOAD_MILP) continue; /* below, with its bound */
                tp_offload_schedule *s = NULL;
                tp_status st = tp_offload_plan(c, (tp_offload_algo)a, &s, &e);
                tried++;
                CHECKF(st == TP_OK || st == TP_ERR_INFEASIBLE, "seed %llu algo %d: %s", (unsigned long long)seed, a,
                       e.msg);
                if (fracs[f] == 1.0 && a < 2) ASSERT_OK_ERR(st, e);
                if (st) continue;
                planned[a]++;
                tp_offload_report r;
                tp_status cs = tp_offload_check(c, s, &r, &e);
                CHECKF(cs == TP_OK, "seed %llu L %u frac %g algo %d: %s", (unsigned long long)seed, L, fracs[f], a,
                       e.msg);
                CHECK(r.makespan >= compute * (1 - 1e-12));
                CHECK(fabs(r.makespan - s->makespan) <= 1e-9 * (1 + r.makespan));
                CHECK(r.peak <= c->mgpu);
                tight += r.peak == c->mgpu;
                idle += r.makespan > compute * (1 + 1e-9);
                /* every transfer or delete of a valid schedule is needed: without it a weight is
                 * missing, a host copy stale, a prefetch finds its weight resident, or the wrap
                 * fails */
                for (uint32_t j = 0; j < s->nops; j++) {
                    if (s->ops[j].kind == TP_OFFOP_F || s->ops[j].kind == TP_OFFOP_B) continue;
                    tp_offload_op keep = s->ops[j];
                    s->ops[j] = s->ops[--s->nops];
                    tp_status ms = tp_offload_check(c, s, &r, &e);
                    CHECKF(ms == TP_ERR_CHECK, "seed %llu algo %d: without op %u (%d of layer %u) the schedule passes",
                           (unsigned long long)seed, a, j, (int)keep.kind, keep.layer);
                    s->ops[s->nops++] = s->ops[j];
                    s->ops[j] = keep;
                    mutated++;
                }
                ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
                if (fracs[f] == 1.0 && a < 2) { /* no transfers: the computations back to back */
                    ASSERT_EQ(r.bytes_moved, 0);
                    ASSERT_NEAR(r.makespan, compute, 1e-9 * compute);
                }
                tp_offload_schedule_free(s);
            }
            tp_chain_free(c);
        }
    }
    /* the tight end may be infeasible for a greedy; most cases must plan */
    CHECKF(planned[0] > tried / 4 * 3 / 4 && planned[1] > tried / 4 * 3 / 4, "planned %d %d %d of %d", planned[0],
           planned[1], planned[2], tried);
    CHECK(planned[2] > 0 && planned[TP_OFFLOAD_L2L_SYNC] > 0);
    /* the memory binds (peak == mgpu) and transfers cost time in many cases */
    CHECKF(mutated > 1000 && tight > 100 && idle > 100, "%d removals, %d tight, %d with idle time", mutated, tight, idle);
}

/* The discount. L = 3, only layer 1 has a weight (100 bytes, 1 s over the link); F_2 takes
 * 2 s, every other computation 1 s; a^1 = a^3 = 150, mgpu = 350. Equation 1 gives F_0, B_0
 * 150, F_1 250, B_1 350 (w_1 and its gradient), F_2, B_2 300: w_1 (100) cannot stay during
 * layer 2's computations, so both selections take (1,1) only. The schedules (order B_2 B_1 B_0
 * F_0 F_1 F_2): w_1 cannot arrive during B_2 (300 + 100 > 350), so it is prefetched in [1,2],
 * B_1 runs [2,3], B_0 [3,4], F_0 [4,5], F_1 [5,6].
 *   Greedy: the idle offload link uploads w_1 during B_0 ([3,4]), so after F_1 w_1 is deleted
 *   at 6 for free and F_2 runs [6,8]: makespan 8 (compute 7; no cutoff does better: carrying
 *   w_1 over the wrap needs it back during F_2, 300 + 100 > 350).
 *   Greedy*: w_1 must be offloaded after F_1, [6,7]; its buffer is held until 7, so F_2
 *   (300 + 100 > 350) waits and runs [7,9]: makespan 9. */
TEST(offload_discount)
{
    tp_chain *c = tp_chain_new(3);
    double uf[3] = {1, 1, 2}, ub[3] = {1, 1, 1};
    uint64_t w[3] = {0, 100, 0};
    for (int i = 0; i < 3; i++) c->uf[i] = uf[i], c->ub[i] = ub[i], c->w[i] = w[i];
    c->a[1] = c->a[3] = 150;
    c->mgpu = 350;
    c->beta = 100;
    tp_error e;
    uint8_t s1[3], s0[3];
    ASSERT_OK_ERR(tp_offload_select(c, 1, s1, &e), e);
    ASSERT_OK_ERR(tp_offload_select(c, 0, s0, &e), e);
    check_selection(c, s1);
    check_selection(c, s0);
    tp_offload_schedule *g, *gs;
    ASSERT_OK_ERR(tp_offload_plan(c, TP_OFFLOAD_GREEDY, &g, &e), e);
    ASSERT_OK_ERR(tp_offload_plan(c, TP_OFFLOAD_GREEDY_STAR, &gs, &e), e);
    tp_offload_report rg, rs;
    ASSERT_OK_ERR(tp_offload_check(c, g, &rg, &e), e);
    ASSERT_OK_ERR(tp_offload_check(c, gs, &rs, &e), e);
    for (int k = 0; k < 3; k++) {
        ASSERT_EQ(s1[k], k == 1 ? TP_OFFLOAD_SEL1 : 0);
        ASSERT_EQ(s0[k], k == 1 ? TP_OFFLOAD_SEL1 : 0);
    }
    ASSERT_NEAR(rg.makespan, 8, 1e-12);
    ASSERT_NEAR(rs.makespan, 9, 1e-12);
    tp_offload_schedule_free(g);
    tp_offload_schedule_free(gs);
    tp_chain_free(c);
}

/* L2L on L identical layers (F f, B b, transfer t = w/beta) with memory to spare:
 * T = (L-1)(max(b,t) + max(f,t)) + b + f for L >= 2, b + max(f,t) for L = 1
 * (docs/weight-offload.md derives it); the synchronous L2L: T = L (f + b) + 2 (L-1) t for L >= 2. */
TEST(offload_l2l_closed_form)
{
    static const double fs[] = {1, 0.5, 2}, bs[] = {2, 0.5, 3}, ts[] = {1, 1.5, 0.25};
    static const uint32_t Ls[] = {1, 2, 3, 7, 16};
    for (size_t x = 0; x < 3; x++)
        for (size_t y = 0; y < sizeof Ls / sizeof *Ls; y++) {
            uint32_t L = Ls[y];
            tp_chain *c = tp_chain_new(L);
            for (uint32_t i = 0; i < L; i++) c->uf[i] = fs[x], c->ub[i] = bs[x], c->w[i] = 1000, c->a[i + 1] = 10;
            c->beta = 1000 / ts[x];
            c->mgpu = 1u << 30;
            for (int sync = 0; sync < 2; sync++) {
                tp_offload_schedule *s;
                tp_error e;
                ASSERT_OK_ERR(tp_offload_plan(c, sync ? TP_OFFLOAD_L2L_SYNC : TP_OFFLOAD_L2L, &s, &e), e);
                tp_offload_report r;
                ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
                double f = fs[x], b = bs[x], t = 1000 / c->beta;
                /* synchronous: every operation on a new weight waits for its transfer; the two turns
                 * (B_L on w_L kept from F_L, F_1 on w_1 kept from B_1) wait for none */
                double want = L == 1 ? b + fmax(f, t)
                              : sync ? L * (f + b) + 2.0 * (L - 1) * t
                                     : (L - 1) * (fmax(b, t) + fmax(f, t)) + b + f;
                CHECKF(fabs(r.makespan - want) <= 1e-9 * want, "sync %d L %u f %g b %g t %g: %.17g, closed form %.17g",
                       sync, L, f, b, t, r.makespan, want);
                /* L2L holds at most the weight in use, the next and one leaving (and B's gradient) */
                CHECK(r.peak <= 4 * 1000 + 10 * (uint64_t)L);
                tp_offload_schedule_free(s);
            }
            tp_chain_free(c);
        }
}

/* Transfers shorter than every F and B (38 GPT-2-sized layers: 453 MB weights, 53 / 105 ms,
 * 12 GB/s) and 8 GB for 17 GB of weights: Greedy and Greedy* offload and still hide every
 * transfer (the paper's Table 1: about 1% over the bound); Greedy moves less than Greedy*
 * (the discount). With the exact excess instead of the paper's this chain idled ~10%. */
TEST(offload_greedy_hides_transfers)
{
    const uint32_t L = 38;
    tp_chain *c = tp_chain_new(L);
    c->a[0] = 20u << 20;
    double compute = 0;
    for (uint32_t i = 0; i < L; i++) {
        c->uf[i] = 0.0527, c->ub[i] = 0.105, c->w[i] = 12ull * 3072 * 3072 * 4, c->a[i + 1] = 20u << 20;
        compute += c->uf[i] + c->ub[i];
    }
    c->beta = 12e9;
    c->mgpu = 8000000000ull;
    uint64_t moved[2];
    for (int a = 0; a < 2; a++) {
        tp_offload_schedule *s;
        tp_error e;
        ASSERT_OK_ERR(tp_offload_plan(c, (tp_offload_algo)a, &s, &e), e);
        tp_offload_report r;
        ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
        CHECKF(fabs(r.makespan - compute) <= 1e-9 * compute, "algo %d: makespan %.17g, compute %.17g", a, r.makespan,
               compute);
        CHECK(r.bytes_moved > 0);
        moved[a] = r.bytes_moved;
        tp_offload_schedule_free(s);
    }
    CHECK(moved[0] < moved[1]);
    tp_chain_free(c);
}

/* The MILP bound of c with a 5 s solver into *b: 1, or 0 when c fits nowhere (then c is freed) */
static int bound_or_free(tp_chain *c, uint64_t seed, tp_chain_bound_result *b)
{
    tp_error e;
    tp_status bs = tp_chain_bound(c, 5.0, b, &e);
    CHECKF(bs == TP_OK || bs == TP_ERR_INFEASIBLE, "seed %llu: bound: %s", (unsigned long long)seed, e.msg);
    if (bs) tp_chain_free(c);
    return bs == TP_OK;
}

/* Strategy a on c (milp with a 5 s solver), its schedule checked and at or above bound; NULL when
 * it fits no schedule (TP_ERR_INFEASIBLE, the only failure allowed) */
static tp_offload_schedule *plan_checked(const tp_chain *c, int a, double bound, uint64_t seed, tp_offload_report *r)
{
    tp_offload_schedule *s = NULL;
    tp_chain_bound_result mb;
    tp_error e;
    tp_status ps = a == TP_OFFLOAD_MILP ? tp_offload_plan_milp(c, 5.0, &s, &mb, &e) : tp_offload_plan(c, (tp_offload_algo)a, &s, &e);
    CHECKF(ps == TP_OK || ps == TP_ERR_INFEASIBLE, "seed %llu algo %d: %s", (unsigned long long)seed, a, e.msg);
    if (ps) return NULL;
    tp_status cs = tp_offload_check(c, s, r, &e);
    CHECKF(cs == TP_OK, "seed %llu algo %d: %s", (unsigned long long)seed, a, e.msg);
    if (cs) return s; /* (failed already: *r is not filled) */
    CHECKF(r->makespan >= bound * (1 - 1e-6), "seed %llu L %u algo %d: makespan %.9g < bound %.9g", (unsigned long long)seed,
           c->layers, a, r->makespan, bound);
    return s;
}

/* No strategy beats the lower bound (issue 14): on random chains of 1..6 layers from the tightest
 * memory to all weights resident, each schedule the checker accepts is at least the MILP bound
 * of the paper's section 6 (tp_chain_bound; its proven bound even when the time limit stops it),
 * and the bound at least the compute sum. Counts of planned schedules and of bounds above the
 * compute sum keep the test from passing on nothing. */
TEST(offload_strategies_above_bound)
{
    static const double fracs[] = {0, 0.2, 0.6, 1.0};
    int compared = 0, above = 0, proved = 0, milp[2] = {0, 0}, milp_all = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint32_t L = 1 + (uint32_t)(tp__mix64(seed * 104729) % 6);
        for (size_t f = 0; f < sizeof fracs / sizeof *fracs; f++) {
            tp_chain *c = random_chain(seed * 977 + f, L, fracs[f]);
            double compute = 0;
            for (uint32_t i = 0; i < L; i++) compute += c->uf[i] + c->ub[i];
            tp_chain_bound_result b;
            if (!bound_or_free(c, seed, &b)) continue;
            CHECK(b.bound >= compute * (1 - 1e-9));
            proved += b.optimal;
            above += b.bound > compute * (1 + 1e-6);
            for (int a = 0; a <= TP_OFFLOAD_L2L_SYNC; a++) {
                tp_offload_report r;
                tp_offload_schedule *s = plan_checked(c, a, b.bound, seed, &r);
                if (a == TP_OFFLOAD_MILP) milp[s != NULL]++;
                if (!s) continue;
                /* milp drops what the MILP moves for nothing: with every weight resident, nothing */
                if (a == TP_OFFLOAD_MILP && fracs[f] == 1.0) {
                    CHECKF(r.bytes_moved == 0, "seed %llu: milp moves %llu bytes", (unsigned long long)seed,
                           (unsigned long long)r.bytes_moved);
                    milp_all++;
                }
                compared++;
                tp_offload_schedule_free(s);
            }
            tp_chain_free(c);
        }
    }
    CHECKF(compared >= 120, "only %d schedules compared", compared);
    CHECKF(above >= 10, "only %d bounds above the compute sum", above);
    CHECKF(proved >= 40, "only %d bounds proved optimal", proved);
    /* the MILP's selection scheduled by Algorithm 2: 48 of 48 when written */
    CHECKF(milp[1] >= 40, "the milp strategy planned %d chains, failed %d", milp[1], milp[0]);
    CHECKF(milp_all >= 10, "only %d milp plans with every weight resident", milp_all);
}

/* Frozen layers (tp_chain.frozen) on random chains, half or all of their layers frozen: every
 * strategy's schedule passes the checker, is at or above the MILP bound and moves a frozen weight
 * only host to GPU (its removals are deletes); with every layer frozen the discount changes
 * nothing, so Greedy and Greedy* make one schedule; and freezing a chain's layers never raises
 * its bound (it takes a gradient and write-backs away), compared between proved optima. */
TEST(offload_frozen_chains)
{
    static const double fracs[] = {0, 0.2, 0.6, 1.0};
    int compared = 0, same = 0, lower = 0, moved = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint32_t L = 1 + (uint32_t)(tp__mix64(seed * 7907) % 7);
        for (size_t f = 0; f < sizeof fracs / sizeof *fracs; f++) {
            double pf = seed % 3 == 0 ? 1.0 : 0.5;
            tp_chain *c = random_chain_frozen(seed * 613 + f, L, fracs[f], pf);
            tp_chain_bound_result b;
            if (!bound_or_free(c, seed, &b)) continue;
            tp_offload_schedule *sch[TP_OFFLOAD_L2L_SYNC + 1] = {NULL};
            for (int a = 0; a <= TP_OFFLOAD_L2L_SYNC; a++) {
                tp_offload_report r;
                if (!(sch[a] = plan_checked(c, a, b.bound, seed, &r))) continue;
                for (uint32_t j = 0; j < sch[a]->nops; j++) {
                    const tp_offload_op *o = &sch[a]->ops[j];
                    CHECKF(!tp_chain_frozen(c, o->layer) || (o->kind != TP_OFFOP_OFFLOAD && o->kind != TP_OFFOP_UPLOAD),
                           "seed %llu algo %d: frozen w_%u is sent to the host", (unsigned long long)seed, a, o->layer);
                    moved += o->kind == TP_OFFOP_PREFETCH && tp_chain_frozen(c, o->layer);
                }
                compared++;
            }
            if (pf == 1.0 && sch[0] && sch[1]) {
                CHECK(sch[0]->nops == sch[1]->nops &&
                      !memcmp(sch[0]->ops, sch[1]->ops, sch[0]->nops * sizeof *sch[0]->ops) &&
                      !memcmp(sch[0]->resident0, sch[1]->resident0, L) && !memcmp(sch[0]->valid0, sch[1]->valid0, L));
                same++;
            }
            for (int a = 0; a <= TP_OFFLOAD_L2L_SYNC; a++) tp_offload_schedule_free(sch[a]);
            /* the same chain with nothing frozen: its bound is at least the frozen one */
            memset(c->frozen, 0, L);
            tp_chain_bound_result u;
            tp_error e;
            if (b.optimal && tp_chain_bound(c, 5.0, &u, &e) == TP_OK && u.optimal) {
                CHECKF(u.bound >= b.bound * (1 - 1e-6), "seed %llu: trained %.9g < frozen %.9g", (unsigned long long)seed,
                       u.bound, b.bound);
                lower += u.bound > b.bound * (1 + 1e-6);
            }
            tp_chain_free(c);
        }
    }
    printf("  %d schedules compared, %d Greedy = Greedy*, %d frozen prefetches, %d bounds lowered by freezing\n", compared,
           same, moved, lower);
    CHECKF(compared >= 100 && same >= 8 && moved >= 50 && lower >= 3,
           "%d schedules compared, %d Greedy = Greedy*, %d frozen prefetches, %d bounds lowered by freezing", compared, same,
           moved, lower);
}

/* Two frozen layers, |w| = 1000 each, no activations, every computation 1 s, mgpu = 1000 (one
 * weight), W / beta = x s. Trained, B needs its weight and its gradient (2000): infeasible. Frozen,
 * each computation holds its own weight alone, so w_1 leaves (a delete) after F_1 and is back for
 * B_1, w_2 leaves after B_2 and is back for F_2; a prefetch starts only when the other weight is
 * gone: B_2 [0,1], prefetch w_1 [1,1+x], B_1, F_1, prefetch w_2, F_2: 4 + 2x, the optimum. The
 * MILP checks memory at operation starts only, so it lets w_1 arrive during B_2 and w_2 during
 * F_1: idle max(0, x - 1) twice, bound 4 + 2 max(0, x - 1). Greedy, Greedy* and the MILP's
 * selection find 4 + 2x; L2L, which holds the next weight beside the current one, fits nothing. */
TEST(offload_frozen_two_layer_closed_form)
{
    static const double xs[] = {0.5, 1, 2, 3};
    for (size_t q = 0; q < sizeof xs / sizeof *xs; q++) {
        double x = xs[q];
        tp_chain *c = tp_chain_new(2);
        for (int i = 0; i < 2; i++) c->uf[i] = c->ub[i] = 1, c->w[i] = 1000;
        c->mgpu = 1000;
        c->beta = 1000 / x;
        tp_chain_bound_result b;
        tp_error e;
        ASSERT_STATUS(tp_chain_bound(c, 10, &b, &e), TP_ERR_INFEASIBLE);
        c->frozen[0] = c->frozen[1] = 1;
        ASSERT_OK_ERR(tp_chain_bound(c, 10, &b, &e), e);
        CHECK(b.optimal);
        ASSERT_NEAR(b.bound, 4 + 2 * (x > 1 ? x - 1 : 0), 1e-6);
        tp_offload_schedule *s;
        /* L2L prefetches the next weight while the current one computes: 2W, no room */
        ASSERT_STATUS(tp_offload_plan(c, TP_OFFLOAD_L2L, &s, &e), TP_ERR_INFEASIBLE);
        for (int a = 0; a < 4; a++) {
            if (a == TP_OFFLOAD_L2L) continue;
            tp_chain_bound_result mb;
            ASSERT_OK_ERR(a == TP_OFFLOAD_MILP ? tp_offload_plan_milp(c, 10, &s, &mb, &e) : tp_offload_plan(c, (tp_offload_algo)a, &s, &e), e);
            tp_offload_report r;
            ASSERT_OK_ERR(tp_offload_check(c, s, &r, &e), e);
            ASSERT_NEAR(r.makespan, 4 + 2 * x, 1e-9);
            ASSERT_EQ(r.bytes_moved, 2000);
            tp_offload_schedule_free(s);
        }
        tp_chain_free(c);
    }
}

/* The milp strategy (tp_offload_plan_milp) against Greedy on a link-bound chain shaped like the
 * BERT rows of Table 1 (docs/weight-offload.md): 12 identical layers of bert-96-b16 (uf 14.8 ms,
 * ub 44.3 ms, |w| 453 MB, 9.4 MB activations, 12 GB/s), memory for 36% of the weights plus two
 * buffers. Algorithm 1 keeps the middle layers resident and moves both ends twice; the MILP's
 * selection balances the link over both phases. When written: Greedy 1.20 x the bound, milp
 * 1.077 x. Asserted: milp's schedule passes the checker, is at or above the bound the same call
 * reports, and is at least 5% shorter than Greedy's. */
TEST(offload_milp_beats_greedy_link_bound)
{
    const uint32_t L = 12;
    tp_chain *c = tp_chain_new(L);
    CHECK(c != NULL);
    const uint64_t w = 453144576, a = 9437184;
    c->a[0] = a;
    for (uint32_t i = 0; i < L; i++)
        c->uf[i] = 0.014779589857627118, c->ub[i] = 0.044338769572881354, c->w[i] = w, c->a[i + 1] = a;
    c->beta = 12e9;
    c->mgpu = (uint64_t)(0.36 * L * (double)w) + 2 * w + (L + 1) * a;
    tp_error e;
    tp_offload_schedule *g = NULL, *m = NULL;
    tp_chain_bound_result b;
    ASSERT_OK_ERR(tp_offload_plan(c, TP_OFFLOAD_GREEDY, &g, &e), e);
    ASSERT_OK_ERR(tp_offload_plan_milp(c, 30.0, &m, &b, &e), e);
    tp_offload_report rg, rm;
    ASSERT_OK_ERR(tp_offload_check(c, g, &rg, &e), e);
    ASSERT_OK_ERR(tp_offload_check(c, m, &rm, &e), e);
    CHECKF(rm.makespan >= b.bound * (1 - 1e-6), "milp %.9g below its bound %.9g", rm.makespan, b.bound);
    CHECKF(rm.makespan <= 0.95 * rg.makespan, "milp %.9g, greedy %.9g", rm.makespan, rg.makespan);
    /* the selection behind it: every weight away at some point in memory this tight */
    uint8_t sel[12];
    ASSERT_OK_ERR(tp_chain_bound_select(c, 30.0, &b, sel, &e), e);
    int chosen = 0;
    for (uint32_t k = 0; k < L; k++) chosen += sel[k] != 0;
    CHECKF(chosen >= 6, "the MILP's selection moves %d of %u weights", chosen, L);
    ASSERT_STATUS(tp_chain_bound_select(c, 30.0, &b, NULL, &e), TP_ERR_ARG);
    tp_offload_schedule_free(g);
    tp_offload_schedule_free(m);
    tp_chain_free(c);
}
