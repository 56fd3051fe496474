/* test_plan.c - planner cases: the paper's worked example, errors, determinism. */
#include <string.h>
#include "turnip/turnip.h"
#include "harness.h"
#include "plan_check.h"

#ifndef TP_SOURCE_DIR
#define TP_SOURCE_DIR "."
#endif

static tp_memgraph *plan_verified(const tp_graph *g, const tp_plan_opts *o)
{
    tp_memgraph *mg;
    tp_error e;
    ASSERT_OK_ERR(tp_plan(g, o, &mg, &e), e);
    verify(mg, g);
    return mg;
}

/* Figure 3 of the paper: six kernels and three transfers on three devices, equal-sized
 * tensors (1 KiB = one "slot"), planned in file order. */
TEST(plan_paper_example_five_and_four_slots)
{
    tp_graph *g;
    tp_error e;
    ASSERT_OK_ERR(tp_graph_read_file(TP_SOURCE_DIR "/examples/figure3.json", &g, &e), e);
    tp_plan_opts o;
    tp_plan_opts_init(&o, 3, 5 * 1024);
    o.order = TP_ORDER_TOPO;
    tp_memgraph *m5 = plan_verified(g, &o);
    ASSERT_EQ(count_kind(m5, TP_M_OFFLOAD), 0);
    ASSERT_EQ(count_kind(m5, TP_M_RELOAD), 3); /* the three first loads only */
    tp_plan_opts_init(&o, 3, 4 * 1024);
    o.order = TP_ORDER_TOPO;
    tp_memgraph *m4 = plan_verified(g, &o);
    ASSERT_EQ(count_kind(m4, TP_M_OFFLOAD), 1);
    ASSERT_EQ(count_kind(m4, TP_M_RELOAD), 4); /* plus the reload of the offloaded value */
    /* the offload's value is reloaded, and the reload reads the offload's host region */
    for (uint32_t i = 0; i < tp_memgraph_size(m4); i++) {
        tp_mvertex v, src;
        tp_memgraph_vertex(m4, i, &v);
        if (v.kind != TP_M_RELOAD) continue;
        tp_memgraph_vertex(m4, v.reads[0], &src);
        ASSERT_EQ(src.task, v.task);
        CHECK(src.kind == TP_M_OFFLOAD || src.kind == TP_M_INPUT);
    }
    /* with three slots, vertex 3 (three inputs... ) cannot run */
    tp_plan_opts_init(&o, 3, 3 * 1024);
    tp_memgraph *m3;
    ASSERT_STATUS(tp_plan(g, &o, &m3, &e), TP_ERR_INFEASIBLE);
    CHECKF(strstr(e.msg, "vertex '3': needs 4.0 KiB of inputs and output on device 0, capacity is 3.0 KiB"), "%s", e.msg);
    tp_memgraph_free(m5);
    tp_memgraph_free(m4);
    tp_graph_free(g);
}

TEST(plan_unconstrained_has_no_memory_deps)
{
    tp_graph *g;
    tp_error e;
    ASSERT_OK_ERR(tp_graph_read_file(TP_SOURCE_DIR "/examples/figure3.json", &g, &e), e);
    tp_plan_opts o;
    tp_plan_opts_init(&o, 3, 1 << 20);
    tp_memgraph *mg = plan_verified(g, &o);
    tp_plan_stats st;
    tp_memgraph_stats(mg, &st);
    for (int d = 0; d < 3; d++) {
        ASSERT_EQ(st.dev[d].mem_deps, 0);
        ASSERT_EQ(st.dev[d].offload_count, 0);
    }
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

#define HDR "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["

/* tp_plan_bounds counts a kernel the planner runs in place without output bytes: k2 (k1, b) in
 * place on k1 needs k1 and b (2000 B), not 3000; the planner plans at the bound and refuses a
 * byte less. When k1 is read again later, k2 cannot overwrite it: then 3000. */
TEST(plan_bounds_in_place)
{
    for (int later = 0; later < 2; later++) {
        tp_graph *g = tp_graph_new(1);
        tp_error e;
        uint32_t a, b, k1, k2, k3 = 0;
        ASSERT_OK_ERR(tp_graph_add_input(g, "a", 0, TP_DT_NONE, -1, NULL, 1000, &a, &e), e);
        ASSERT_OK_ERR(tp_graph_add_input(g, "b", 0, TP_DT_NONE, -1, NULL, 1000, &b, &e), e);
        ASSERT_OK_ERR(tp_graph_add_kernel(g, "k1", 0, "opaque", 1, &a, TP_DT_NONE, -1, NULL, 1000, NULL, 0, &k1, &e), e);
        uint32_t in2[2] = {k1, b};
        ASSERT_OK_ERR(tp_graph_add_kernel(g, "k2", 0, "opaque", 2, in2, TP_DT_NONE, -1, NULL, 1000, NULL, 0, &k2, &e), e);
        ASSERT_OK_ERR(tp_graph_set_inplace(g, k2, 0, &e), e);
        if (later) {
            uint32_t in3[2] = {k2, k1};
            ASSERT_OK_ERR(tp_graph_add_kernel(g, "k3", 0, "opaque", 2, in3, TP_DT_NONE, -1, NULL, 8, NULL, 0, &k3, &e), e);
        }
        ASSERT_OK_ERR(tp_graph_add_output(g, later ? k3 : k2, &e), e);
        ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
        uint64_t minf[TP_MAX_DEVICES];
        ASSERT_OK_ERR(tp_plan_bounds(g, TP_ORDER_TOPO, minf, NULL, &e), e);
        ASSERT_EQ(minf[0], later ? 3000 : 2000);
        tp_plan_opts o;
        tp_plan_opts_init(&o, 1, minf[0]);
        o.order = TP_ORDER_TOPO;
        tp_memgraph *mg = plan_verified(g, &o);
        tp_memgraph_free(mg);
        o.device_mem[0] = minf[0] - 1;
        ASSERT_STATUS(tp_plan(g, &o, &mg, &e), TP_ERR_INFEASIBLE);
        tp_graph_free(g);
    }
}

/* The allocation horizon runs past a reader of a value made in place by a position not yet
 * run: a state s updated in place by u1..u4, u_i reading weight w_i. The MemGraph's vertices
 * are made in the order the planner issues them, the in-place kernels when the execution
 * horizon reaches them, the weights' loads by the allocation horizon as memory allows: with
 * room for every weight, all four loads come before u1 (waiting at u2, which reads u1's value,
 * would issue each load only after the kernel before it). With room for two weights at a time
 * beside s and u0 the loads follow the memory: w2's still before u1, w3's after it. */
TEST(plan_horizon_passes_in_place_values)
{
    const uint64_t S = 4096, W = 16384; /* multiples of the regions' alignment: the caps are exact */
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t s, w[4], u[5];
    ASSERT_OK_ERR(tp_graph_add_input(g, "s", 0, TP_DT_NONE, -1, NULL, S, &s, &e), e);
    for (int i = 0; i < 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "w%d", i + 1);
        ASSERT_OK_ERR(tp_graph_add_input(g, id, 0, TP_DT_NONE, -1, NULL, W, &w[i], &e), e);
    }
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "u0", 0, "opaque", 1, &s, TP_DT_NONE, -1, NULL, S, NULL, 0, &u[0], &e), e);
    for (int i = 1; i <= 4; i++) {
        char id[8];
        snprintf(id, sizeof id, "u%d", i);
        uint32_t in[2] = {u[i - 1], w[i - 1]};
        ASSERT_OK_ERR(tp_graph_add_kernel(g, id, 0, "opaque", 2, in, TP_DT_NONE, -1, NULL, S, NULL, 0, &u[i], &e), e);
        ASSERT_OK_ERR(tp_graph_set_inplace(g, u[i], 0, &e), e);
    }
    ASSERT_OK_ERR(tp_graph_add_output(g, u[4], &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    for (int tight = 0; tight < 2; tight++) {
        tp_plan_opts o;
        tp_plan_opts_init(&o, 1, tight ? 2 * S + 2 * W : 1 << 20);
        o.order = TP_ORDER_TOPO;
        tp_memgraph *mg = plan_verified(g, &o);
        uint32_t load[4] = {0}, kern[5] = {0}, n = (uint32_t)tp_memgraph_size(mg);
        for (uint32_t i = 0; i < n; i++) {
            tp_mvertex v;
            tp_memgraph_vertex(mg, i, &v);
            for (int k = 0; k < 5; k++) {
                if (k < 4 && v.kind == TP_M_RELOAD && v.task == w[k]) load[k] = i;
                if (v.kind == TP_M_KERNEL && v.task == u[k]) {
                    kern[k] = i;
                    ASSERT_EQ(v.inplace, k ? 0 : -1); /* every update honoured in place */
                }
            }
        }
        for (int k = 0; k < 4; k++) {
            CHECK(load[k] > 0 && kern[k + 1] > 0);
            if (!tight) CHECKF(load[k] < kern[1], "w%d loaded at vertex %u, after u1 (%u)", k + 1, load[k], kern[1]);
        }
        if (tight) CHECKF(load[1] < kern[1] && load[2] > kern[1], "w2 at %u, w3 at %u, u1 at %u", load[1], load[2], kern[1]);
        tp_memgraph_free(mg);
    }
    tp_graph_free(g);
}

/* A value read last by a kernel in place on it does not die there: its bytes pass to the
 * kernel's value. The allocation horizon waits for bytes dying before a position only when
 * they would make room (may_wait), so counting such a value as dying made it wait where it
 * should evict ahead. Units of U = 4 KiB, cap 6U: a (2U) from s, V (1U) from s, b in place on
 * a, z (3U) from b and s, out from z and V. At z the horizon finds 2U free and nothing dying
 * (s is read by z; a's bytes are b's), so it offloads V (next used after z) at once, before
 * b's kernel is made; counting a as dying, it waited for the execution horizon to force it. */
TEST(plan_horizon_in_place_input_is_not_dying)
{
    const uint64_t U = 4096;
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t s, a, V, b, z, out;
    ASSERT_OK_ERR(tp_graph_add_input(g, "s", 0, TP_DT_NONE, -1, NULL, U, &s, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "a", 0, "opaque", 1, &s, TP_DT_NONE, -1, NULL, 2 * U, NULL, 0, &a, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "V", 0, "opaque", 1, &s, TP_DT_NONE, -1, NULL, U, NULL, 0, &V, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "b", 0, "opaque", 1, &a, TP_DT_NONE, -1, NULL, 2 * U, NULL, 0, &b, &e), e);
    ASSERT_OK_ERR(tp_graph_set_inplace(g, b, 0, &e), e);
    uint32_t zin[2] = {b, s}, oin[2] = {0, V};
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "z", 0, "opaque", 2, zin, TP_DT_NONE, -1, NULL, 3 * U, NULL, 0, &z, &e), e);
    oin[0] = z;
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "out", 0, "opaque", 2, oin, TP_DT_NONE, -1, NULL, U, NULL, 0, &out, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, out, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_plan_opts o;
    tp_plan_opts_init(&o, 1, 6 * U);
    o.order = TP_ORDER_TOPO;
    tp_memgraph *mg = plan_verified(g, &o);
    uint32_t off = 0, kb = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_OFFLOAD && v.task == V) off = i;
        if (v.kind == TP_M_KERNEL && v.task == b) {
            kb = i;
            ASSERT_EQ(v.inplace, 0);
        }
    }
    CHECKF(off > 0 && kb > 0, "V offloaded at vertex %u, b's kernel %u", off, kb);
    CHECKF(off < kb, "V offloaded at vertex %u, after b's kernel (%u): the horizon waited", off, kb);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* Whether value x (a TaskGraph vertex) is offloaded anywhere in mg. */
static int offloaded(const tp_memgraph *mg, uint32_t x)
{
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_OFFLOAD && v.task == x) return 1;
    }
    return 0;
}

/* The bounded eviction search's fallback evicts the furthest next use first (Belady).
 * x1..x5 (4 KiB each) fill the device in address order after a 256-byte input; y reads x2
 * (so x2 cannot move) and needs an 8 KiB window. The values are read next in the order x3,
 * x4, x5, x1. The best window is x4 and x5 (the largest smallest next use); x1, the furthest,
 * lies alone between the input's 256 bytes and x2. With a budget of 2 the keyed search takes
 * in x1 and x5, finds no window, and the planner evicts x1 before searching again (then x4 and
 * x5); the exact search never evicts x1. Evicting the second of the two (x5) would give the
 * exact plan, and so would not pass. */
TEST(plan_belady_fallback_evicts_furthest)
{
    const uint64_t S = 4096, A = 256;
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t a, x[6], y, r3, r4, r5, r1;
    ASSERT_OK_ERR(tp_graph_add_input(g, "a", 0, TP_DT_NONE, -1, NULL, A, &a, &e), e);
    for (int i = 1; i <= 5; i++) {
        char name[8];
        snprintf(name, sizeof name, "x%d", i);
        ASSERT_OK_ERR(tp_graph_add_kernel(g, name, 0, "opaque", 1, &a, TP_DT_NONE, -1, NULL, S, NULL, 0, &x[i], &e), e);
    }
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "y", 0, "opaque", 1, &x[2], TP_DT_NONE, -1, NULL, 2 * S, NULL, 0, &y, &e), e);
    uint32_t i3[2] = {x[3], y}, i4[2], i5[2], i1[2];
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "r3", 0, "opaque", 2, i3, TP_DT_NONE, -1, NULL, A, NULL, 0, &r3, &e), e);
    i4[0] = x[4], i4[1] = r3;
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "r4", 0, "opaque", 2, i4, TP_DT_NONE, -1, NULL, A, NULL, 0, &r4, &e), e);
    i5[0] = x[5], i5[1] = r4;
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "r5", 0, "opaque", 2, i5, TP_DT_NONE, -1, NULL, A, NULL, 0, &r5, &e), e);
    i1[0] = x[1], i1[1] = r5;
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "r1", 0, "opaque", 2, i1, TP_DT_NONE, -1, NULL, A, NULL, 0, &r1, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, r1, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    for (int exact = 0; exact < 2; exact++) {
        tp_plan_opts o;
        tp_plan_opts_init(&o, 1, A + 5 * S);
        o.order = TP_ORDER_TOPO;
        o.evict_budget = exact ? TP_EVICT_EXACT : 2;
        tp_memgraph *mg = plan_verified(g, &o);
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        CHECKF(st.dev[0].window_belady == (exact ? 0u : 1u), "exact %d: %llu Belady evictions", exact,
               (unsigned long long)st.dev[0].window_belady);
        ASSERT_EQ(offloaded(mg, x[1]), !exact);
        ASSERT_EQ(offloaded(mg, x[4]), 1);
        ASSERT_EQ(offloaded(mg, x[5]), 1);
        ASSERT_EQ(offloaded(mg, x[3]), 0);
        tp_memgraph_free(mg);
    }
    tp_graph_free(g);
}

TEST(plan_host_memory_limits)
{
    tp_graph *g = load(HDR "{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":1000},"
                           "{\"id\":\"b\",\"kind\":\"input\",\"device\":0,\"bytes\":1000},"
                           "{\"id\":\"k1\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"a\"],\"bytes\":1000},"
                           "{\"id\":\"k2\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"b\"],\"bytes\":1000},"
                           "{\"id\":\"k3\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"k1\",\"k2\"],\"bytes\":1000}"
                           "], \"outputs\":[\"k3\"]}");
    tp_plan_opts o;
    tp_plan_opts_init(&o, 1, 3000);
    o.order = TP_ORDER_TOPO;
    o.host_mem = 1500;
    tp_memgraph *mg;
    tp_error e;
    ASSERT_STATUS(tp_plan(g, &o, &mg, &e), TP_ERR_INFEASIBLE);
    CHECKF(strstr(e.msg, "host memory too small") && strstr(e.msg, "'b'"), "%s", e.msg);
    o.host_mem = 0;
    tp_memgraph *mg0 = plan_verified(g, &o);
    tp_memgraph_free(mg0);
    tp_graph_free(g);
    /* In topo order k4 reads k1 (made first) after k2 and k3, and 3000 bytes hold three values:
     * k2 takes the place of a (dead after k1), and k3 finds b, k1 and k2 resident, b and k2 its
     * inputs: k1 must go to the host. 2000 bytes of host hold the inputs but not that offload;
     * 3000 hold it, and the plan makes exactly one. */
    g = load(HDR "{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":1000},"
                 "{\"id\":\"b\",\"kind\":\"input\",\"device\":0,\"bytes\":1000},"
                 "{\"id\":\"k1\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"a\"],\"bytes\":1000},"
                 "{\"id\":\"k2\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"b\"],\"bytes\":1000},"
                 "{\"id\":\"k3\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"k2\",\"b\"],\"bytes\":1000},"
                 "{\"id\":\"k4\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"k1\",\"k3\"],\"bytes\":1000}"
                 "], \"outputs\":[\"k4\"]}");
    o.host_mem = 2000;
    ASSERT_STATUS(tp_plan(g, &o, &mg, &e), TP_ERR_INFEASIBLE);
    CHECKF(strstr(e.msg, "host memory too small") && strstr(e.msg, "offloading 'k1' needs 1000 B more"), "%s", e.msg);
    o.host_mem = 3000;
    mg = plan_verified(g, &o);
    ASSERT_LE(tp_memgraph_host_bytes(mg), 3000);
    tp_plan_stats st;
    tp_memgraph_stats(mg, &st);
    ASSERT_EQ(st.dev[0].offload_count, 1);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

TEST(plan_is_deterministic_and_handles_odd_shapes)
{
    /* repeated input, a kernel with no inputs, an input that is an output, tiny sizes */
    tp_graph *g = load(HDR "{\"id\":\"a\",\"kind\":\"input\",\"device\":0,\"bytes\":3},"
                           "{\"id\":\"z\",\"kind\":\"kernel\",\"device\":0,\"bytes\":5},"
                           "{\"id\":\"k1\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"a\",\"a\",\"z\"],\"bytes\":7},"
                           "{\"id\":\"k2\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"k1\",\"z\"],\"bytes\":1},"
                           "{\"id\":\"k3\",\"kind\":\"kernel\",\"device\":0,\"inputs\":[\"k2\",\"a\"],\"bytes\":2}"
                           "], \"outputs\":[\"a\",\"k3\",\"z\"]}");
    for (uint64_t cap = 15; cap <= 40; cap++) {
        tp_plan_opts o;
        tp_plan_opts_init(&o, 1, cap);
        tp_memgraph *m1 = plan_verified(g, &o), *m2 = plan_verified(g, &o);
        char *t1, *t2;
        size_t l1, l2;
        tp_error e;
        ASSERT_OK_ERR(tp_memgraph_to_string(m1, &t1, &l1, &e), e);
        ASSERT_OK_ERR(tp_memgraph_to_string(m2, &t2, &l2, &e), e);
        ASSERT_EQ(l1, l2);
        CHECK(!memcmp(t1, t2, l1));
        free(t1);
        free(t2);
        tp_memgraph_free(m1);
        tp_memgraph_free(m2);
    }
    tp_plan_opts o;
    tp_plan_opts_init(&o, 1, 14);
    tp_memgraph *mg;
    tp_error e;
    ASSERT_STATUS(tp_plan(g, &o, &mg, &e), TP_ERR_INFEASIBLE);
    CHECKF(strstr(e.msg, "'k1'"), "%s", e.msg);
    tp_graph_free(g);
}
