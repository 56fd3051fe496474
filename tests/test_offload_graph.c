/* test_offload_graph.c - weight offloading inside turnip (issue 14, part 5): the planner's
 * directed evictions on a hand-made graph (counted by hand), and the chain's TaskGraph planned
 * with turnip's own eviction and with each strategy's directed evictions on seeded random chains:
 * every plan passes the independent verifier and runs to completion on the sim and cpu backends
 * in a session, and the evictions made from the graph are exactly Algorithm 1's choices on the
 * chain, by name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "plan_check.h"
#include "io/util.h"
#include "turnip/offload.h"
#include "offload_chains.h"

/* reloads (first loads included) of task x in mg */
static int reloads_of(const tp_memgraph *mg, uint32_t x, tp_mkind kind)
{
    int n = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        n += v.kind == kind && v.task == x;
    }
    return n;
}

/* x -> A -> B -> D -> E, C = (x, E), every value 1 KiB: at 3 KiB everything fits with x kept, and
 * the allocation horizon waits at D while A runs (A's bytes free only after B), so an eviction of
 * x after A is carried out (x is next read by C) and C reloads it */
static const char *chain4 =
    "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
    "{\"id\": \"x\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024},"
    "{\"id\": \"A\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"x\"], \"bytes\": 1024},"
    "{\"id\": \"B\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"A\"], \"bytes\": 1024},"
    "{\"id\": \"D\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"B\"], \"bytes\": 1024},"
    "{\"id\": \"E\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"D\"], \"bytes\": 1024},"
    "{\"id\": \"C\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"x\", \"E\"], \"bytes\": 1024}],"
    " \"outputs\": [\"C\"]}";

TEST(plan_directed_evictions)
{
    tp_graph *g = load(chain4);
    uint32_t x = (uint32_t)tp_graph_find(g, "x"), A = (uint32_t)tp_graph_find(g, "A");
    tp_plan_opts o;
    tp_plan_opts_init(&o, 1, 3072);
    o.order = TP_ORDER_TOPO;
    tp_memgraph *mg;
    tp_error e;
    ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
    verify(mg, g);
    ASSERT_EQ(reloads_of(mg, x, TP_M_RELOAD), 1); /* loaded once, never evicted */
    ASSERT_EQ(count_kind(mg, TP_M_OFFLOAD), 0);
    tp_memgraph_free(mg);

    tp_plan_evict ev[1] = {{x, A}}; /* x after A: dropped (its host copy is valid), reloaded for C */
    o.evictions = ev;
    o.nevictions = 1;
    ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
    verify(mg, g);
    ASSERT_EQ(reloads_of(mg, x, TP_M_RELOAD), 2);
    tp_plan_stats st;
    tp_memgraph_stats(mg, &st);
    ASSERT_EQ(st.dev[0].directed_count, 1);
    ASSERT_EQ(st.dev[0].directed_bytes, 1024);
    ASSERT_GE(st.dev[0].drop_count, 1);
    tp_memgraph_free(mg);

    /* with room for everything the horizon places all at once: x's reload for C is already done,
     * so its eviction is skipped (no second load) */
    o.device_mem[0] = 1 << 20;
    ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
    verify(mg, g);
    ASSERT_EQ(reloads_of(mg, x, TP_M_RELOAD), 1);
    tp_memgraph_free(mg);

    /* misuse */
    tp_plan_evict bad[3] = {{x, x}, {99, A}, {x, 99}};
    for (int i = 0; i < 3; i++) {
        o.evictions = &bad[i];
        o.nevictions = 1;
        ASSERT_EQ(tp_plan(g, &o, &mg, &e), TP_ERR_ARG);
    }
    o.evictions = NULL;
    ASSERT_EQ(tp_plan(g, &o, &mg, &e), TP_ERR_ARG);
    tp_graph_free(g);
}

/* A directed plan's placement under fragmentation (docs/weight-offload.md "Inside turnip"), 1 KiB
 * units. Outputs wait for deaths: r1 @0, r2 @2, r3 @4 are resident, 1..2 and 3..4 and 5..8 free;
 * K1 puts k1 (2) at 5..7, so 3 are free, in three 1 KiB pieces, when O (2) is placed. r1 dies
 * after K1, which leaves 0..2 whole: O waits for it rather than evict r2 or r3 (read only by Z,
 * last), which Z would then reload. */
static const char *frag_wait =
    "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
    "{\"id\": \"r1\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024, \"resident\": {\"offset\": 0, \"host_copy\": true}},"
    "{\"id\": \"r2\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024, \"resident\": {\"offset\": 2048, \"host_copy\": true}},"
    "{\"id\": \"r3\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024, \"resident\": {\"offset\": 4096, \"host_copy\": true}},"
    "{\"id\": \"K1\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"r1\"], \"bytes\": 2048},"
    "{\"id\": \"O\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"K1\"], \"bytes\": 2048},"
    "{\"id\": \"Z\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"r2\", \"r3\", \"O\"], \"bytes\": 1024}],"
    " \"outputs\": [\"Z\"]}";

/* Kept values the end reloads: U (8), a kept output in place on the resident W @0, and S0 @8,
 * S1 @9, kept and resident without a host copy; 10..12 free. A reads i (loaded at 10) into a
 * (11), and A2's output waits for i to die; U leaves after A (offloaded: now its host copy is
 * valid), a2 takes i's place, B reads U back (0..8) and a2, into b (11). C's output (2) finds 1
 * free, at 10: a window of 2 takes U (whose drop costs no transfer now, but the end reloads all 8
 * of it) or S1 (offloaded, then reloaded at the end: 2). */
static const char *frag_kept =
    "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
    "{\"id\": \"W\", \"kind\": \"input\", \"device\": 0, \"bytes\": 8192, \"resident\": {\"offset\": 0, \"host_copy\": true}},"
    "{\"id\": \"S0\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024, \"resident\": {\"offset\": 8192, \"host_copy\": false}},"
    "{\"id\": \"S1\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024, \"resident\": {\"offset\": 9216, \"host_copy\": false}},"
    "{\"id\": \"i\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024},"
    "{\"id\": \"U\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"W\"], \"bytes\": 8192, \"inplace\": 0},"
    "{\"id\": \"A\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"i\"], \"bytes\": 1024},"
    "{\"id\": \"A2\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"A\"], \"bytes\": 1024},"
    "{\"id\": \"B\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"U\", \"A2\"], \"bytes\": 1024},"
    "{\"id\": \"C\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"opaque\", \"inputs\": [\"B\"], \"bytes\": 2048}],"
    " \"outputs\": [\"U\", \"C\"], \"keep\": [\"U\", \"S0\", \"S1\"]}";

TEST(plan_directed_fragmentation)
{
    tp_plan_opts o;
    tp_memgraph *mg;
    tp_error e;
    tp_graph *g = load(frag_wait);
    uint32_t r2 = (uint32_t)tp_graph_find(g, "r2"), r3 = (uint32_t)tp_graph_find(g, "r3"), Z = (uint32_t)tp_graph_find(g, "Z");
    tp_plan_opts_init(&o, 1, 8192);
    o.order = TP_ORDER_TOPO;
    tp_plan_evict none[1] = {{r2, Z}}; /* after its last use: carried out by nobody, but the plan is a directed one */
    o.evictions = none;
    o.nevictions = 1;
    ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
    verify(mg, g);
    ASSERT_EQ(reloads_of(mg, r2, TP_M_RELOAD), 0);
    ASSERT_EQ(reloads_of(mg, r3, TP_M_RELOAD), 0);
    ASSERT_EQ(count_kind(mg, TP_M_RELOAD), 0);
    tp_memgraph_free(mg);
    tp_graph_free(g);

    g = load(frag_kept);
    uint32_t U = (uint32_t)tp_graph_find(g, "U"), S0 = (uint32_t)tp_graph_find(g, "S0"), S1 = (uint32_t)tp_graph_find(g, "S1"),
             A = (uint32_t)tp_graph_find(g, "A");
    tp_plan_opts_init(&o, 1, 12288);
    o.order = TP_ORDER_TOPO;
    tp_plan_evict ev[1] = {{U, A}};
    o.evictions = ev;
    o.nevictions = 1;
    ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
    verify(mg, g);
    ASSERT_EQ(reloads_of(mg, U, TP_M_RELOAD), 1); /* for B only: it stays to the end */
    ASSERT_EQ(reloads_of(mg, S0, TP_M_RELOAD), 0);
    ASSERT_EQ(reloads_of(mg, S1, TP_M_RELOAD), 1); /* at the end */
    tp_plan_stats st;
    tp_memgraph_stats(mg, &st);
    ASSERT_EQ(st.dev[0].directed_count, 1);
    ASSERT_EQ(st.dev[0].offload_bytes, 8192 + 1024); /* U after A, S1 for C */
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

static uint64_t rng(uint64_t *s)
{
    return tp__mix64(++*s);
}

/* a chain of L layers with sizes in [lo, hi) bytes (multiples of 256) */
static tp_chain *random_chain(uint64_t *s, uint32_t L)
{
    tp_chain *c = tp_chain_new(L);
    for (uint32_t i = 0; i < L; i++) {
        c->uf[i] = 1e-3 * (1 + (double)(rng(s) % 100));
        c->ub[i] = c->uf[i] * (1.5 + (double)(rng(s) % 20) / 10);
        c->w[i] = 256 * (16 + rng(s) % 240);
    }
    for (uint32_t i = 0; i <= L; i++) c->a[i] = 256 * (1 + rng(s) % 16);
    c->beta = 1e6 * (1 + (double)(rng(s) % 64));
    return c;
}

/* runs mg to completion in a session of be */
static void run_in_session(tp_backend *be, const tp_memgraph *mg, const char *policy, tp_run_summary *sum)
{
    tp_error e;
    uint64_t cap = tp_memgraph_device_capacity(mg, 0);
    tp_session *ss;
    ASSERT_OK_ERR(tp_session_new(be, 1, &cap, tp_memgraph_host_bytes(mg) + 1, &ss, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.policy = policy;
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new_in(ss, mg, &ro, &x, &e), e);
    ASSERT_OK_ERR(tp_exec_run(x, sum, &e), e);
    tp_exec_free(x);
    tp_session_free(ss);
}

/* vertex `prefix``k` of g ("U3"), -1 if none */
static int64_t find_k(const tp_graph *g, char prefix, uint32_t k)
{
    char id[16];
    snprintf(id, sizeof id, "%c%u", prefix, k);
    return tp_graph_find(g, id);
}

/* a sim backend whose one device replays c: kernels of 1e9 flops/s, the link at beta (caller frees) */
static tp_backend *chain_sim(const tp_chain *c)
{
    tp_sim_profile prof;
    memset(&prof, 0, sizeof prof);
    snprintf(prof.name, sizeof prof.name, "chain");
    prof.devices = 1;
    prof.device_mem = c->mgpu;
    prof.peak_flops = 1e9;
    prof.efficiency = 1;
    prof.mem_bw = 1e18;
    prof.h2d_bw = prof.d2h_bw = prof.peer_bw = c->beta;
    tp_backend *sim = NULL;
    tp_error e;
    tp_status st = tp_backend_sim_new(&prof, 0, &sim, &e);
    CHECKF(st == TP_OK, "sim: %s", e.msg);
    return sim;
}

static void free_case(tp_backend *sim, tp_graph *g, tp_offload_schedule *sc, tp_chain *c)
{
    tp_backend_free(sim);
    tp_graph_free(g);
    tp_offload_schedule_free(sc);
    tp_chain_free(c);
}

/* ev (n pairs) is exactly sel on c, by name: (k,0) U_k after U_k and (k,1) U_k after F_k; a frozen
 * layer's w_k after G_k and after F_k */
static void same_evictions(const tp_graph *g, const tp_chain *c, const uint8_t *sel, const tp_plan_evict *ev, uint32_t n)
{
    uint32_t want = 0;
    for (uint32_t k = 0; k < c->layers; k++)
        for (int ch = 0; ch < 2; ch++) {
            if (!(sel[k] & (ch ? TP_OFFLOAD_SEL1 : TP_OFFLOAD_SEL0))) continue;
            int fz = tp_chain_frozen(c, k);
            char vn[16], an[16];
            snprintf(vn, sizeof vn, "%c%u", fz ? 'w' : 'U', k + 1);
            snprintf(an, sizeof an, "%c%u", ch ? 'F' : (fz ? 'G' : 'U'), k + 1);
            ASSERT_LT(want, n);
            ASSERT_STR_EQ(tp_graph_vertex(g, ev[want].value)->id, vn);
            ASSERT_STR_EQ(tp_graph_vertex(g, ev[want].after)->id, an);
            want++;
        }
    ASSERT_EQ(n, want);
}

/* tp_offload_select_milp on c with the times the graph's flops give at 1e9/s, summed as a reader
 * of the graph would (F_k; X_k + G_k + U_k): equal inputs, so the same solve as the graph's */
static void milp_sel_of_graph(const tp_graph *g, const tp_chain *c, uint8_t *sel)
{
    uint32_t L = c->layers;
    tp_chain *cg = tp_chain_new(L);
    memcpy(cg->w, c->w, L * sizeof *c->w);
    memcpy(cg->a, c->a, (L + 1) * sizeof *c->a);
    memcpy(cg->frozen, c->frozen, L);
    cg->mgpu = c->mgpu, cg->beta = c->beta;
    for (uint32_t k = 1; k <= L; k++) {
        double fl[4] = {0, 0, 0, 0};
        for (int q = 0; q < 4; q++) {
            int64_t v = find_k(g, "FXGU"[q], k);
            if (v >= 0) fl[q] = tp_graph_vertex(g, (uint32_t)v)->flops;
        }
        cg->uf[k - 1] = fl[0] / 1e9;
        cg->ub[k - 1] = (fl[1] + fl[2] + fl[3]) / 1e9;
    }
    tp_chain_bound_result br;
    tp_error e;
    ASSERT_OK_ERR(tp_offload_select_milp(cg, TP_OFFLOAD_MILP_TIME_LIMIT, sel, &br, &e), e);
    tp_chain_free(cg);
}

/* ev (n pairs) is strategy algo's selection on c (l2l: all but w_L's (L,1); milp: the solver's,
 * on the times the graph's flops give), by name (same_evictions) */
static void expect_selection(const tp_graph *g, const tp_chain *c, int algo, const tp_plan_evict *ev, uint32_t n)
{
    uint32_t L = c->layers;
    uint8_t *sel = calloc(L, 1);
    tp_error e;
    if (algo == TP_OFFLOAD_MILP)
        milp_sel_of_graph(g, c, sel);
    else if (algo == TP_OFFLOAD_L2L || algo == TP_OFFLOAD_L2L_SYNC) /* the same evictions */
        for (uint32_t k = 0; k < L; k++) sel[k] = (uint8_t)(TP_OFFLOAD_SEL0 | (k + 1 < L ? TP_OFFLOAD_SEL1 : 0));
    else
        ASSERT_OK_ERR(tp_offload_select(c, algo == TP_OFFLOAD_GREEDY, sel, &e), e);
    same_evictions(g, c, sel, ev, n);
    free(sel);
}

TEST(offload_chain_taskgraph_plans)
{
    uint64_t s = 0x0ff10ad;
    tp_error e;
    tp_backend *cpu;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &cpu, &e), e);
    int planned = 0, directed = 0, fewer = 0, tight = 0, milp_directed = 0;
    static const char *pol[] = {"any", "fixed", "random", "priority"};
    for (int it = 0; it < 40; it++) {
        uint32_t L = 2 + (uint32_t)(rng(&s) % 9);
        tp_chain *c = random_chain(&s, L);
        /* memory between the least any schedule needs and all weights resident */
        uint64_t lo = tpt_need_alone(c), hi = tpt_need_all(c);
        int frac = (int)(rng(&s) % 5); /* 0: tight .. 4: all resident */
        c->mgpu = lo + (hi - lo) * (uint64_t)frac / 4 + c->a[L] * 2 + 4096; /* room for alignment */
        tight += frac == 0;
        tp_offload_schedule *sc = NULL;
        tp_status ps = tp_offload_plan(c, TP_OFFLOAD_GREEDY, &sc, &e);
        CHECKF(ps == TP_OK || ps == TP_ERR_INFEASIBLE, "greedy: %s", e.msg);
        if (ps) { /* no schedule fits: nothing to compare */
            tp_chain_free(c);
            continue;
        }
        tp_graph *g;
        ASSERT_OK_ERR(tp_chain_taskgraph(c, 1e9, sc, &g, &e), e);
        ASSERT_EQ(tp_graph_size(g), 2 * L + 1 + 3 * L - 1 + L);
        tp_backend *sim = chain_sim(c);
        double compute = tpt_sum_u(c);
        for (int algo = -1; algo <= TP_OFFLOAD_L2L_SYNC; algo++) {
            tp_plan_opts o;
            tp_plan_opts_init(&o, 1, c->mgpu);
            o.order = TP_ORDER_TOPO;
            tp_plan_evict *ev = NULL;
            uint32_t n = 0;
            if (algo >= 0) {
                tp_chain_machine mach = {1e9, c->beta, 0};
                ASSERT_OK_ERR(tp_chain_graph_evictions(g, (tp_offload_algo)algo, c->mgpu, &mach, &ev, &n, &e), e);
                /* exactly the pairs of the selection (Algorithm 1 on the chain; l2l: all but w_L's (L,1);
                 * milp: tp_offload_select_milp on the chain itself, whose times the graph's flops at 1e9/s
                 * give back),
                 * by name: (k,0) is U_k after U_k, (k,1) U_k after F_k */
                expect_selection(g, c, algo, ev, n);
                o.evictions = ev;
                o.nevictions = n;
            }
            tp_memgraph *mg;
            ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e); /* every chain here plans, with and without the strategy */
            verify(mg, g);
            planned++;
            tp_plan_stats pst;
            tp_memgraph_stats(mg, &pst);
            directed += pst.dev[0].directed_count > 0;
            tp_run_summary sum;
            run_in_session(sim, mg, pol[it % 4], &sum);
            CHECK(sum.makespan >= compute * (1 - 1e-9)); /* no kernel time is lost or overlapped */
            CHECK(sum.makespan >= sum.lower_bound * (1 - 1e-9));
            run_in_session(cpu, mg, pol[(it + 1) % 4], &sum);
            fewer += algo == TP_OFFLOAD_GREEDY && pst.dev[0].directed_count > 0;
            milp_directed += algo == TP_OFFLOAD_MILP && pst.dev[0].directed_count > 0;
            tp_memgraph_free(mg);
            free(ev);
        }
        free_case(sim, g, sc, c);
    }
    tp_backend_free(cpu);
    printf("  %d plans verified and run on sim and cpu, %d with directed evictions (%d greedy, %d milp), %d tight chains\n",
           planned, directed, fewer, milp_directed, tight);
    ASSERT_GE(planned, 80);
    ASSERT_GE(directed, 20);
    ASSERT_GE(fewer, 5);
    ASSERT_GE(milp_directed, 5);
}

/* Frozen layers inside turnip: random chains with some layers frozen, as a TaskGraph
 * (tp_chain_taskgraph) and with each strategy's directed evictions. Checked against the chain
 * itself: a frozen layer has no U_k, its G_k and F_k read w_k, which is an output and kept
 * exactly where it starts resident; the graph plans at the chain's least memory, to the byte; the evictions are the strategy's selection on the chain (frozen flags
 * included: the graph's reader finds them), by name, w_k after G_k for (k,0) and after F_k for
 * (k,1); every plan verifies, never offloads a frozen weight (its host copy is valid: drops), and
 * its simulated makespan, on a profile that replays the chain's times, is at least the chain's
 * MILP bound (the graph holds equation 1's memory, a byte or two more). */
TEST(offload_chain_taskgraph_frozen)
{
    uint64_t s = 0xf202e7;
    tp_error e;
    int planned = 0, frozen_layers = 0, dropped = 0, directed = 0;
    for (int it = 0; it < 24; it++) {
        uint32_t L = 2 + (uint32_t)(rng(&s) % 7);
        tp_chain *c = random_chain(&s, L);
        for (uint32_t k = 0; k < L; k++) frozen_layers += c->frozen[k] = (uint8_t)(rng(&s) % 2 || it % 6 == 0);
        uint64_t lo = tpt_need_alone(c), hi = tpt_need_all(c);
        c->mgpu = lo + (hi - lo) * (rng(&s) % 5) / 4 + c->a[L] * 2 + 4096; /* room for alignment */
        tp_offload_schedule *sc = NULL;
        tp_status ps = tp_offload_plan(c, TP_OFFLOAD_GREEDY, &sc, &e);
        CHECKF(ps == TP_OK || ps == TP_ERR_INFEASIBLE, "greedy: %s", e.msg);
        tp_chain_bound_result b;
        if (ps || tp_chain_bound(c, 5.0, &b, &e)) {
            tp_offload_schedule_free(sc);
            tp_chain_free(c);
            continue;
        }
        tp_graph *g;
        ASSERT_OK_ERR(tp_chain_taskgraph(c, 1e9, sc, &g, &e), e);
        uint32_t trained = 0;
        for (uint32_t k = 1; k <= L; k++) {
            int64_t uk = find_k(g, 'U', k);
            trained += uk >= 0;
            CHECK((uk < 0) == (c->frozen[k - 1] != 0));
            const tp_vertex *fk = tp_graph_vertex(g, (uint32_t)find_k(g, 'F', k));
            uint32_t wk = (uint32_t)find_k(g, 'w', k);
            CHECK((fk->inputs[1] == wk) == (c->frozen[k - 1] != 0));
            int is_out = 0;
            for (uint32_t q = 0; q < tp_graph_num_outputs(g); q++) is_out |= tp_graph_outputs(g)[q] == wk;
            CHECK(is_out == (c->frozen[k - 1] && sc->resident0[k - 1]));
            CHECK(tp_graph_keep(g, wk) == (c->frozen[k - 1] && sc->resident0[k - 1]));
            const tp_vertex *gk = tp_graph_vertex(g, (uint32_t)find_k(g, 'G', k));
            CHECK((gk->inputs[gk->ninputs - 1] == wk) == (c->frozen[k - 1] != 0));
        }
        ASSERT_EQ(tp_graph_size(g), 2 * L + 1 + (L - 1) + L + trained + L);
        { /* equation 1's memory, to the byte: from a start with every weight on the host, the graph
           * plans at the least memory any schedule needs (sizes are multiples of 256) */
            tp_graph *g0;
            ASSERT_OK_ERR(tp_chain_taskgraph(c, 1e9, NULL, &g0, &e), e);
            tp_plan_opts o;
            tp_plan_opts_init(&o, 1, lo);
            o.order = TP_ORDER_TOPO;
            tp_memgraph *mg;
            ASSERT_OK_ERR(tp_plan(g0, &o, &mg, &e), e);
            verify(mg, g0);
            tp_memgraph_free(mg);
            tp_graph_free(g0);
        }
        tp_backend *sim = chain_sim(c);
        for (int algo = 0; algo <= TP_OFFLOAD_L2L_SYNC; algo++) {
            tp_plan_evict *ev = NULL;
            uint32_t n = 0;
            tp_chain_machine mach = {1e9, c->beta, 5.0};
            tp_status es = tp_chain_graph_evictions(g, (tp_offload_algo)algo, c->mgpu, &mach, &ev, &n, &e);
            CHECKF(es == TP_OK || es == TP_ERR_INFEASIBLE, "algo %d: %s", algo, e.msg);
            if (es) continue;
            expect_selection(g, c, algo, ev, n); /* the selection, by name */
            tp_plan_opts o;
            tp_plan_opts_init(&o, 1, c->mgpu);
            o.order = TP_ORDER_TOPO;
            o.evictions = ev;
            o.nevictions = n;
            tp_memgraph *mg;
            ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
            verify(mg, g);
            planned++;
            tp_plan_stats pst;
            tp_memgraph_stats(mg, &pst);
            directed += pst.dev[0].directed_count > 0;
            for (uint32_t k = 1; k <= L; k++) {
                if (!c->frozen[k - 1]) continue;
                uint32_t wk = (uint32_t)find_k(g, 'w', k);
                ASSERT_EQ(reloads_of(mg, wk, TP_M_OFFLOAD), 0);
                dropped += reloads_of(mg, wk, TP_M_RELOAD) > 0;
            }
            tp_run_summary sum;
            run_in_session(sim, mg, "fixed", &sum);
            CHECKF(sum.makespan >= b.bound * (1 - 1e-6), "it %d algo %d: makespan %.9g < the chain's bound %.9g", it, algo,
                   sum.makespan, b.bound);
            tp_memgraph_free(mg);
            free(ev);
        }
        free_case(sim, g, sc, c);
    }
    printf("  %d plans of chains with %d frozen layers, %d with directed evictions, %d frozen weights reloaded\n", planned,
           frozen_layers, directed, dropped);
    ASSERT_GE(planned, 40);
    ASSERT_GE(directed, 10);
    ASSERT_GE(dropped, 10);
}

TEST(offload_chain_graph_rejects)
{
    tp_graph *g = load(chain4);
    tp_plan_evict *ev;
    uint32_t n;
    tp_error e;
    ASSERT_EQ(tp_chain_graph_evictions(g, TP_OFFLOAD_GREEDY, 1 << 20, NULL, &ev, &n, &e), TP_ERR_INVALID);
    CHECK(strstr(e.msg, "not a chain graph") != NULL);
    tp_graph_free(g);
    /* a chain whose weights fit nowhere: no selection */
    uint64_t s = 7;
    tp_chain *c = random_chain(&s, 3);
    c->mgpu = 1 << 30;
    tp_graph *cg;
    ASSERT_OK_ERR(tp_chain_taskgraph(c, 1e9, NULL, &cg, &e), e);
    tp_chain_machine mach = {1e9, c->beta, 0};
    ASSERT_OK_ERR(tp_chain_graph_evictions(cg, TP_OFFLOAD_GREEDY, 1 << 30, NULL, &ev, &n, &e), e);
    ASSERT_EQ(n, 0); /* everything fits: nothing selected */
    free(ev);
    ASSERT_OK_ERR(tp_chain_graph_evictions(cg, TP_OFFLOAD_MILP, 1 << 30, &mach, &ev, &n, &e), e);
    ASSERT_EQ(n, 0); /* the MILP moves nothing either */
    free(ev);
    ASSERT_EQ(tp_chain_graph_evictions(cg, TP_OFFLOAD_GREEDY, 1024, NULL, &ev, &n, &e), TP_ERR_INFEASIBLE);
    ASSERT_EQ(tp_chain_graph_evictions(cg, TP_OFFLOAD_MILP, 1024, &mach, &ev, &n, &e), TP_ERR_INFEASIBLE);
    /* milp without the machine or with its numbers out of range */
    ASSERT_EQ(tp_chain_graph_evictions(cg, TP_OFFLOAD_MILP, 1 << 30, NULL, &ev, &n, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "kernel rate") != NULL);
    tp_chain_machine bad[] = {{0, c->beta, 0}, {1e9, NAN, 0}, {1e9, c->beta, -1}, {1e9, c->beta, NAN}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ASSERT_EQ(tp_chain_graph_evictions(cg, TP_OFFLOAD_MILP, 1 << 30, &bad[i], &ev, &n, &e), TP_ERR_ARG);
    /* a rate that makes a kernel shorter than the chain model's 1e-9 s: the graph's numbers, said so */
    tp_chain_machine fast = {1e18, c->beta, 0};
    ASSERT_EQ(tp_chain_graph_evictions(cg, TP_OFFLOAD_MILP, 1 << 30, &fast, &ev, &n, &e), TP_ERR_INVALID);
    CHECK(strstr(e.msg, "flops/s") != NULL);
    ASSERT_EQ(tp_chain_taskgraph(c, 0, NULL, &cg, &e), TP_ERR_ARG);
    c->w[1] = 0; /* a weight of 0 bytes: no stand-in */
    tp_graph *zg = NULL;
    ASSERT_EQ(tp_chain_taskgraph(c, 1e9, NULL, &zg, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "weight of 0 bytes") != NULL);
    tp_graph_free(cg);
    tp_chain_free(c);
}
