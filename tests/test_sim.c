/* test_sim.c - the sim backend: a chain on one device takes exactly its summed kernel time
 * (which is also its lower bound, both its resource part and its critical path); copies
 * sharing a link or the host bus slow each other by their fair share; runs are a function of
 * the seed; the critical path counts a load that must precede the first kernel, and no run of
 * a random graph beats the bound. */
#include <math.h>
#include <string.h>
#include "turnip/turnip.h"
#include "gen.h"
#include "harness.h"
#include "sim_profile.h"

static tp_sim_profile prof(void)
{
    return test_sim_profile("test", 4, 0.5, 1e11, 3e-6, 1e9, 2e9);
}

static double simulate(const tp_graph *g, const tp_sim_profile *p, double jitter, uint64_t seed, tp_run_summary *sum)
{
    tp_plan_opts po;
    tp_plan_opts_init(&po, tp_graph_devices(g), p->device_mem);
    tp_memgraph *mg;
    tp_error e;
    CHECKF(tp_plan(g, &po, &mg, &e) == TP_OK, "%s", e.msg);
    tp_backend *be = NULL;
    CHECK(tp_backend_sim_new(p, jitter, &be, NULL) == TP_OK);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.seed = seed;
    ro.policy = "random";
    tp_exec *x;
    CHECKF(tp_exec_new(mg, be, &ro, &x, &e) == TP_OK, "%s", e.msg);
    CHECKF(tp_exec_run(x, sum, &e) == TP_OK, "%s", e.msg);
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    return sum->makespan;
}

TEST(sim_chain_equals_summed_kernel_time)
{
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    tp_sim_profile p = prof();
    uint32_t prev = 0, v;
    double want = 0;
    char id[16];
    for (int i = 0; i < 50; i++) {
        double flops = 1e6 * (i % 7 + 1);
        uint64_t bytes = 1024u * (uint64_t)(i % 5 + 1);
        snprintf(id, sizeof id, "k%d", i);
        CHECK(tp_graph_add_kernel(g, id, 0, "opaque", i ? 1 : 0, &prev, TP_DT_NONE, -1, NULL, bytes, NULL, flops, &v, &e) == TP_OK);
        double touched = (double)bytes + (i ? (double)(1024u * (uint64_t)((i - 1) % 5 + 1)) : 0);
        double c = flops / (p.peak_flops * p.efficiency), m = touched / p.mem_bw;
        want += p.launch_s + (c > m ? c : m);
        prev = v;
    }
    CHECK(tp_graph_add_output(g, v, &e) == TP_OK && tp_graph_finalize(g, &e) == TP_OK);
    tp_run_summary s;
    double got = simulate(g, &p, 0, 1, &s);
    CHECKF(fabs(got - want) <= 1e-15 * want, "makespan %.17g, summed kernel time %.17g", got, want);
    CHECKF(s.lower_bound == got, "bound %.17g vs makespan %.17g", s.lower_bound, got);
    CHECKF(s.bound_resources == got, "resource bound %.17g vs makespan %.17g", s.bound_resources, got);
    CHECKF(s.bound_critical_path == got, "critical path %.17g vs makespan %.17g (the sum of the chain's times)",
           s.bound_critical_path, got);
    tp_graph_free(g);
}

/* one input per device (B bytes), each read by a free kernel: the reloads run at once */
static tp_graph *loads(int ndev, uint64_t B)
{
    tp_graph *g = tp_graph_new(ndev);
    tp_error e;
    for (int d = 0; d < ndev; d++) {
        char id[16];
        uint32_t x, k;
        snprintf(id, sizeof id, "x%d", d);
        CHECK(tp_graph_add_input(g, id, d, TP_DT_NONE, -1, NULL, B, &x, &e) == TP_OK);
        snprintf(id, sizeof id, "k%d", d);
        CHECK(tp_graph_add_kernel(g, id, d, "opaque", 1, &x, TP_DT_NONE, -1, NULL, 8, NULL, 0, &k, &e) == TP_OK);
        CHECK(tp_graph_add_output(g, k, &e) == TP_OK);
    }
    CHECK(tp_graph_finalize(g, &e) == TP_OK);
    return g;
}

TEST(sim_links_are_shared_fairly)
{
    tp_sim_profile p = prof();
    p.launch_s = 0;
    p.mem_bw = 1e30; /* kernels take no time */
    uint64_t B = 1u << 20;
    tp_run_summary s;
    tp_graph *g = loads(2, B);
    /* own links, no bus: both loads in B / bw */
    double t = simulate(g, &p, 0, 1, &s);
    CHECKF(fabs(t - (double)B / p.h2d_bw) < 1e-12, "separate links: %.9g s, wanted %.9g", t, (double)B / p.h2d_bw);
    /* a host bus as fast as one link, shared by both: 2B / bw */
    p.host_bus_bw = p.h2d_bw;
    t = simulate(g, &p, 0, 1, &s);
    CHECKF(fabs(t - 2.0 * (double)B / p.h2d_bw) < 1e-12, "shared bus: %.9g s, wanted %.9g", t, 2.0 * (double)B / p.h2d_bw);
    CHECK(fabs(s.lower_bound - t) < 1e-12); /* the bus carries 2B: the bound is tight */
    /* a bus twice as fast: each flow gets its own link's rate again */
    p.host_bus_bw = 2 * p.h2d_bw;
    t = simulate(g, &p, 0, 1, &s);
    CHECK(fabs(t - (double)B / p.h2d_bw) < 1e-12);
    tp_graph_free(g);
    /* three devices on a bus of one link's rate: 3B / bw */
    g = loads(3, B);
    p.host_bus_bw = p.h2d_bw;
    t = simulate(g, &p, 0, 1, &s);
    CHECK(fabs(t - 3.0 * (double)B / p.h2d_bw) < 1e-12);
    tp_graph_free(g);
}

TEST(sim_runs_are_functions_of_the_seed)
{
    tp_layered_opts lo;
    tp_layered_opts_init(&lo);
    lo.layers = 3;
    tp_graph *g;
    tp_error e;
    CHECK(tp_model_layered(&lo, &g, &e) == TP_OK);
    tp_sim_profile p = prof();
    p.device_mem = 3u << 20; /* forces offloads */
    tp_run_summary s;
    double a = simulate(g, &p, 0.3, 7, &s), b = simulate(g, &p, 0.3, 7, &s), c = simulate(g, &p, 0.3, 8, &s);
    CHECK(a == b);
    CHECK(a != c);
    CHECK(s.makespan >= s.lower_bound * (1 - 1e-12)); /* never faster than the bound */
    tp_graph_free(g);
}

/* The work cost models weigh (tp_memgraph_work): a write_slice in place touches its part twice
 * (read, then its elements written into the base's region in the base's dtype), not the base;
 * out of place it reads both and writes a whole new tensor. Base [256, 1024] f32 (1 MiB), part
 * [2, 1024] f32 (8 KiB), or bf16 (4 KiB read, 8 KiB written). */
TEST(sim_work_of_write_slice_in_place_is_its_part)
{
    for (int c = 0; c < 3; c++) {
        int inplace = c > 0, half = c == 2;
        tp_graph *g = tp_graph_new(1);
        tp_error e;
        int64_t sb[2] = {256, 1024}, sp[2] = {2, 1024};
        uint32_t in[2], k;
        ASSERT_OK_ERR(tp_graph_add_input(g, "base", 0, TP_DT_F32, 2, sb, 0, &in[0], &e), e);
        ASSERT_OK_ERR(tp_graph_add_input(g, "part", 0, half ? TP_DT_BF16 : TP_DT_F32, 2, sp, 0, &in[1], &e), e);
        ASSERT_OK_ERR(tp_graph_add_kernel(g, "w", 0, "write_slice", 2, in, TP_DT_F32, 2, sb, 0, "{\"axis\":0,\"start\":5}", 0, &k, &e),
                      e);
        if (inplace) ASSERT_OK_ERR(tp_graph_set_inplace(g, k, 0, &e), e);
        ASSERT_OK_ERR(tp_graph_add_output(g, k, &e), e);
        ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
        tp_plan_opts po;
        tp_plan_opts_init(&po, 1, 4u << 20);
        tp_memgraph *mg;
        ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
        int seen = 0;
        for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
            tp_mvertex v;
            tp_memgraph_vertex(mg, i, &v);
            if (v.kind != TP_M_KERNEL) continue;
            ASSERT_EQ(v.inplace, inplace ? 0 : -1);
            double flops, bytes;
            tp_memgraph_work(mg, i, &flops, &bytes);
            ASSERT_NEAR(bytes, half ? 4096.0 + 8192 : inplace ? 2.0 * 8192 : 2.0 * 1048576 + 8192, 0); /* exact: small integers */
            seen++;
        }
        ASSERT_EQ(seen, 1);
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
}

/* A copy engine moves one copy at a time, in order: two loads onto one device, each read by
 * its own kernel, end at B/bw and 2B/bw (not both at 2B/bw, as two flows sharing the link
 * would); the first kernel can start at B/bw. Latency keeps the engine busy. */
TEST(sim_copy_engine_is_in_order)
{
    tp_sim_profile p = prof();
    p.launch_s = 0;
    p.mem_bw = 1e30;
    p.copy_latency_s = 1e-4;
    uint64_t B = 1u << 20;
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t x[2], k[2];
    CHECK(tp_graph_add_input(g, "x0", 0, TP_DT_NONE, -1, NULL, B, &x[0], &e) == TP_OK);
    CHECK(tp_graph_add_input(g, "x1", 0, TP_DT_NONE, -1, NULL, B, &x[1], &e) == TP_OK);
    CHECK(tp_graph_add_kernel(g, "k0", 0, "opaque", 1, &x[0], TP_DT_NONE, -1, NULL, 8, NULL, 0, &k[0], &e) == TP_OK);
    CHECK(tp_graph_add_kernel(g, "k1", 0, "opaque", 1, &x[1], TP_DT_NONE, -1, NULL, 8, NULL, 0, &k[1], &e) == TP_OK);
    CHECK(tp_graph_add_output(g, k[0], &e) == TP_OK && tp_graph_add_output(g, k[1], &e) == TP_OK);
    CHECK(tp_graph_finalize(g, &e) == TP_OK);
    tp_run_summary s;
    double one = (double)B / p.h2d_bw + p.copy_latency_s, t = simulate(g, &p, 0, 1, &s);
    CHECKF(fabs(t - 2 * one) < 1e-12, "makespan %.9g, wanted two copies in turn %.9g", t, 2 * one);
    int h2d = tp_run_summary_engine(&s, "h2d");
    CHECK(h2d >= 0);
    CHECKF(fabs(s.dev[0].busy[h2d] - 2 * one) < 1e-12, "h2d busy %.9g, wanted %.9g (no overlap on one engine)",
           s.dev[0].busy[h2d], 2 * one);
    tp_graph_free(g);
}

/* Sleeping threads: a load then a kernel that needs it, on a machine with wake_s. The load
 * starts at time 0 (engines count as idle from the start of the run: no charge), ends with
 * the executor asleep (+wake_s before anything sees it), and the kernel starts on a stream
 * idle since the start (+wake_s): B/bw + 2 wake_s + kernel time. */
TEST(sim_wake_ups_are_charged_where_threads_sleep)
{
    tp_sim_profile p = prof();
    p.wake_s = 5e-5;
    p.wake_after_s = 2e-5;
    uint64_t B = 1u << 20;
    tp_graph *g = loads(1, B);
    tp_run_summary s;
    double kern = p.launch_s + (double)(B + 8) / p.mem_bw, want = (double)B / p.h2d_bw + 2 * p.wake_s + kern;
    double t = simulate(g, &p, 0, 1, &s);
    CHECKF(fabs(t - want) < 1e-12, "makespan %.12g, wanted %.12g", t, want);
    p.wake_s = 0; /* without: exactly the load and the kernel */
    t = simulate(g, &p, 0, 1, &s);
    CHECKF(fabs(t - ((double)B / p.h2d_bw + kern)) < 1e-12, "makespan %.12g without wake-ups", t);
    tp_graph_free(g);
    /* load, kernel, load, kernel in turn (the cap holds one input): the second load starts on
     * an engine idle since the first ended (+wake_s) and ends with the executor asleep
     * (+wake_s), its kernel on an idle stream (+wake_s): 2 B/bw + 5 wake_s + both kernels */
    p.wake_s = 5e-5;
    g = tp_graph_new(1);
    tp_error e;
    uint32_t x0, x1, k0, k1;
    CHECK(tp_graph_add_input(g, "x0", 0, TP_DT_NONE, -1, NULL, B, &x0, &e) == TP_OK);
    CHECK(tp_graph_add_input(g, "x1", 0, TP_DT_NONE, -1, NULL, B, &x1, &e) == TP_OK);
    CHECK(tp_graph_add_kernel(g, "k0", 0, "opaque", 1, &x0, TP_DT_NONE, -1, NULL, 8, NULL, 0, &k0, &e) == TP_OK);
    uint32_t in[2] = {x1, k0};
    CHECK(tp_graph_add_kernel(g, "k1", 0, "opaque", 2, in, TP_DT_NONE, -1, NULL, 8, NULL, 0, &k1, &e) == TP_OK);
    CHECK(tp_graph_add_output(g, k1, &e) == TP_OK && tp_graph_finalize(g, &e) == TP_OK);
    p.device_mem = B + 64;
    double k0t = p.launch_s + (double)(B + 8) / p.mem_bw, k1t = p.launch_s + (double)(B + 16) / p.mem_bw;
    want = 2 * (double)B / p.h2d_bw + 5 * p.wake_s + k0t + k1t;
    t = simulate(g, &p, 0, 1, &s);
    CHECKF(fabs(t - want) < 1e-12, "load-kernel-load-kernel: makespan %.12g, wanted %.12g", t, want);
    tp_graph_free(g);
}

/* A weight load must precede the first kernel: the resources alone bound the run by the larger
 * of the load and the kernel, the critical path by their sum, which is the makespan exactly. */
TEST(sim_critical_path_counts_the_load_before_the_kernel)
{
    tp_sim_profile p = prof();
    p.copy_latency_s = 2e-5;
    uint64_t B = 1u << 20;
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t w, k;
    ASSERT_OK_ERR(tp_graph_add_input(g, "w", 0, TP_DT_NONE, -1, NULL, B, &w, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "k", 0, "opaque", 1, &w, TP_DT_NONE, -1, NULL, 8, NULL, 1e9, &k, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, k, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_run_summary s;
    double t = simulate(g, &p, 0, 1, &s);
    double load = (double)B / p.h2d_bw + p.copy_latency_s;
    double c = 1e9 / (p.peak_flops * p.efficiency), m = (double)(B + 8) / p.mem_bw, kern = p.launch_s + (c > m ? c : m);
    double res = kern > (double)B / p.h2d_bw ? kern : (double)B / p.h2d_bw;
    ASSERT_NEAR(s.bound_resources, res, 1e-12 * res);
    ASSERT_NEAR(s.bound_critical_path, load + kern, 1e-12 * (load + kern));
    CHECKF(s.lower_bound == s.bound_critical_path && s.lower_bound > s.bound_resources,
           "bound %.12g: critical path %.12g should beat the resources' %.12g", s.lower_bound, s.bound_critical_path,
           s.bound_resources);
    CHECKF(t >= s.lower_bound * (1 - 1e-12) && fabs(t - s.lower_bound) <= 1e-12 * t, "makespan %.15g, bound %.15g", t,
           s.lower_bound);
    tp_graph_free(g);
}

/* A transfer between devices lies on the critical path too: load w onto device 0, kernel k1
 * there, its output moved to device 1, kernel k2 there; each step waits for the one before,
 * so the bound's critical path is their sum (the transfer at the peer links' rate, with the
 * copy latency), and so is the makespan. */
TEST(sim_critical_path_counts_a_transfer_between_devices)
{
    tp_sim_profile p = prof();
    p.copy_latency_s = 2e-5;
    uint64_t B = 1u << 20, T = 4u << 20;
    tp_graph *g = tp_graph_new(2);
    tp_error e;
    uint32_t w, k1, t, k2;
    ASSERT_OK_ERR(tp_graph_add_input(g, "w", 0, TP_DT_NONE, -1, NULL, B, &w, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "k1", 0, "opaque", 1, &w, TP_DT_NONE, -1, NULL, T, NULL, 1e9, &k1, &e), e);
    ASSERT_OK_ERR(tp_graph_add_transfer(g, "t", 1, k1, &t, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "k2", 1, "opaque", 1, &t, TP_DT_NONE, -1, NULL, 8, NULL, 1e9, &k2, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, k2, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_run_summary s;
    double mk = simulate(g, &p, 0, 1, &s);
    double c = 1e9 / (p.peak_flops * p.efficiency);
    double load = (double)B / p.h2d_bw + p.copy_latency_s, move = (double)T / p.peer_bw + p.copy_latency_s;
    double m1 = (double)(B + T) / p.mem_bw, m2 = (double)(T + 8) / p.mem_bw;
    double kern1 = p.launch_s + (c > m1 ? c : m1), kern2 = p.launch_s + (c > m2 ? c : m2);
    double path = load + kern1 + move + kern2;
    CHECKF(fabs(s.bound_critical_path - path) <= 1e-12 * path, "critical path %.15g, wanted %.15g (the transfer %.15g)",
           s.bound_critical_path, path, move);
    CHECKF(fabs(mk - path) <= 1e-12 * path, "makespan %.15g, wanted the chain's %.15g", mk, path);
    tp_graph_free(g);
}

/* Property: the random graphs of every family, planned at the smallest caps (offloads forced),
 * on a machine with copy latency, a host bus and wake-ups, its links as slow as the test's
 * profile or 100x faster (kernels then dominate), with and without jitter, under every policy
 * and 1-3 streams, with and without --deterministic: the makespan is never below the bound
 * (1e-9 relative: the sim ends a copy whose bytes left are within rounding), and the bound is
 * the larger of its two parts. */
TEST(sim_makespan_is_never_below_the_bound)
{
    tp_sim_profile p = prof();
    p.copy_latency_s = 5e-6;
    p.host_bus_bw = 1.5e9;
    p.wake_s = 2e-5;
    p.wake_after_s = 1e-5;
    int runs = 0, cp_wins = 0;
    double worst = INFINITY;
    for (int i = 0; i < 4 * GEN_NFAMILIES; i++) {
        tp_graph *g = gen_graph((uint64_t)i + 4242, i % GEN_NFAMILIES);
        tp_error e;
        tp_memgraph *mg;
        ASSERT_OK_ERR(gen_plan_min(g, &mg, &e), e);
        for (int pol = 0; pol < 2 * tp_policy_count(); pol++) {
            tp_sim_profile q = p;
            if (pol % 2) q.h2d_bw = q.d2h_bw = q.peer_bw = q.host_bus_bw = 100 * p.h2d_bw;
            tp_backend *be = NULL;
            ASSERT_OK_ERR(tp_backend_sim_new(&q, i % 2 ? 0.3 : 0, &be, &e), e);
            tp_run_opts ro;
            tp_run_opts_init(&ro);
            ro.policy = tp_policy_name(pol / 2);
            ro.seed = (uint64_t)i;
            ro.streams = 1 + (i + pol / 2) % 3;
            ro.deterministic = (i / GEN_NFAMILIES) % 2;
            tp_exec *x;
            ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
            tp_run_summary s;
            ASSERT_OK_ERR(tp_exec_run(x, &s, &e), e);
            double hi = s.bound_resources > s.bound_critical_path ? s.bound_resources : s.bound_critical_path;
            CHECKF(s.lower_bound == hi, "bound %.17g is not the larger of its parts %.17g, %.17g", s.lower_bound, s.bound_resources,
                   s.bound_critical_path);
            CHECKF(s.makespan >= s.lower_bound * (1 - 1e-9), "graph %d (%s), order %s: makespan %.17g below the bound %.17g", i,
                   gen_family_name[i % GEN_NFAMILIES], ro.policy, s.makespan, s.lower_bound);
            CHECK(s.bound_critical_path > 0 && s.bound_resources > 0);
            if (s.lower_bound > 0 && s.makespan / s.lower_bound < worst) worst = s.makespan / s.lower_bound;
            cp_wins += s.bound_critical_path > s.bound_resources;
            runs++;
            tp_exec_free(x);
            tp_backend_free(be);
        }
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
    printf("%d runs: the critical path is the bound in %d; smallest makespan / bound %.6f\n", runs, cp_wins, worst);
    ASSERT_GT(cp_wins, 0);
}
