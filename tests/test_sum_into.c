/* test_sum_into.c - sum-into groups in the executor and the backends (issue 13): on the cpu
 * backend a lowered f32 sum with --deterministic is bit-identical to the sum kernel (both add
 * the partials in argument order in f32) under every policy, seed and stream count, and within
 * rounding of it without; a group's members never overlap in time and its join comes after
 * them all; the sim backend runs lowered plans under every policy; random graphs with groups
 * complete under every policy, deterministic or not, on the sim backend. */
#include <math.h>
#include <string.h>
#include "turnip/turnip.h"
#include "exec/exec_internal.h"
#include "gen.h"
#include "harness.h"
#include "sim_profile.h"

/* k partials p_i = x_i * (i + 1) of [n, n] f32, x_i on device i % ndev, summed on device 0
 * (marked "accumulate"); outputs the sum and silu of it */
static tp_graph *grad_graph(int ndev, int k, int n)
{
    tp_graph *g = tp_graph_new(ndev);
    tp_error e;
    int64_t shp[2] = {n, n};
    uint32_t p[16], s, y;
    char id[32], attrs[64];
    for (int i = 0; i < k; i++) {
        uint32_t x;
        int d = i % ndev;
        snprintf(id, sizeof id, "x%d", i);
        ASSERT_OK_ERR(tp_graph_add_input(g, id, d, TP_DT_F32, 2, shp, 0, &x, &e), e);
        snprintf(id, sizeof id, "p%d", i);
        snprintf(attrs, sizeof attrs, "{\"alpha\":%d}", i + 1);
        ASSERT_OK_ERR(tp_graph_add_kernel(g, id, d, "scale", 1, &x, TP_DT_F32, 2, shp, 0, attrs, 0, &p[i], &e), e);
        if (d) {
            snprintf(id, sizeof id, "t%d", i);
            ASSERT_OK_ERR(tp_graph_add_transfer(g, id, 0, p[i], &p[i], &e), e);
        }
    }
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "s", 0, "sum", (uint32_t)k, p, TP_DT_F32, 2, shp, 0, "{\"accumulate\":true}", 0, &s, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "y", 0, "silu", 1, &s, TP_DT_F32, 2, shp, 0, NULL, 0, &y, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, s, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, y, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    return g;
}

static tp_memgraph *plan(const tp_graph *g, uint64_t cap, int sum_into)
{
    tp_plan_opts po;
    tp_plan_opts_init(&po, tp_graph_devices(g), cap);
    po.sum_into = sum_into;
    tp_memgraph *mg = NULL;
    tp_error e;
    ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
    char *text;
    size_t len;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &text, &len, &e), e);
    ASSERT_OK_ERR(tp_verify_json(text, len, "plan", g, &e), e);
    free(text);
    return mg;
}

static int groups(const tp_memgraph *mg)
{
    int n = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        n += v.kind == TP_M_JOIN;
    }
    return n;
}

/* runs mg on the cpu backend (inputs: a fixed pseudo-random pattern per input) and returns
 * output 0's bytes (caller frees); the run record's vertex times into t0/t1 when not NULL */
static float *run_cpu(const tp_memgraph *mg, const tp_run_opts *ro, double jitter, double **t0, double **t1)
{
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.jitter = jitter;
    co.link_latency_us = jitter > 0 ? 30 : 0;
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK_ERR(tp_backend_cpu_new(&co, &be, &e), e);
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new(mg, be, ro, &x, &e), e);
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) continue;
        float *buf = malloc(v.write.bytes);
        uint64_t st = 0x9e3779b97f4a7c15ull * (v.task + 1);
        for (uint64_t k = 0; k < v.write.bytes / 4; k++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            buf[k] = (float)((double)(st >> 11) * 0x1.0p-53 - 0.5) * 3.7f; /* full mantissas: sums round in f32 */
        }
        ASSERT_OK_ERR(tp_exec_write(x, &v.write, buf, &e), e);
        free(buf);
    }
    tp_run_summary sum;
    ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
    tp_mvertex o;
    tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[0], &o);
    float *out = malloc(o.write.bytes);
    ASSERT_OK_ERR(tp_exec_read(x, &o.write, out, &e), e);
    if (t0) {
        tp__run_record rr;
        CHECK(tp__exec_record(x, &rr));
        *t0 = malloc(rr.n * sizeof **t0);
        *t1 = malloc(rr.n * sizeof **t1);
        for (uint32_t i = 0; i < rr.n; i++) (*t0)[i] = rr.v[i].t0, (*t1)[i] = rr.v[i].t1;
    }
    tp_exec_free(x);
    tp_backend_free(be);
    return out;
}

TEST(exec_sum_into_deterministic_equals_the_sum_kernel)
{
    const int n = 48, k = 7;
    tp_graph *g = grad_graph(2, k, n);
    tp_memgraph *plain = plan(g, 1 << 20, 0), *low = plan(g, 1 << 20, 1);
    ASSERT_EQ(groups(plain), 0);
    ASSERT_EQ(groups(low), 1);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ASSERT_EQ(ro.deterministic, 0);
    float *ref = run_cpu(plain, &ro, 0, NULL, NULL);
    size_t nb = (size_t)n * n * 4;
    int runs = 0, differ = 0;
    double worst = 0;
    for (int pol = 0; pol < tp_policy_count(); pol++)
        for (int det = 0; det < 2; det++)
            for (int seed = 0; seed < 4; seed++) {
                tp_run_opts_init(&ro);
                ro.policy = tp_policy_name(pol);
                ro.seed = (uint64_t)seed;
                ro.streams = 1 + seed % 3;
                ro.deterministic = det;
                float *out = run_cpu(low, &ro, 0.5, NULL, NULL);
                runs++;
                if (det) CHECKF(!memcmp(out, ref, nb), "--deterministic, order %s, seed %d: not bit-identical to the sum kernel",
                                ro.policy, seed);
                else differ += memcmp(out, ref, nb) != 0;
                for (int i = 0; i < n * n; i++) {
                    double d = fabs((double)out[i] - ref[i]);
                    if (d > worst) worst = d;
                }
                free(out);
            }
    printf("%d runs; without --deterministic %d of %d differ from the sum kernel in the last bits; largest difference %.3g\n", runs,
           differ, runs / 2, worst);
    ASSERT_NEAR(worst, 0, 1e-5 * k * 3.7); /* reordering f32 additions of k values of magnitude below 3.7 k / 2 */
    free(ref);
    tp_memgraph_free(plain);
    tp_memgraph_free(low);
    tp_graph_free(g);
}

/* members hold their group's lock for their whole run; the join completes after them all;
 * with --deterministic they start in member order */
TEST(exec_sum_into_members_hold_the_lock)
{
    tp_graph *g = grad_graph(1, 8, 96);
    tp_memgraph *mg = plan(g, 1 << 20, 1);
    ASSERT_EQ(groups(mg), 1);
    uint32_t nv = tp_memgraph_size(mg), join = 0, mem[16], nm = 0;
    for (uint32_t i = 0; i < nv; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_ACCUMULATE) mem[nm++] = i;
        if (v.kind == TP_M_JOIN) join = i;
    }
    ASSERT_EQ(nm, 7u);
    for (int det = 0; det < 2; det++)
        for (int seed = 0; seed < 6; seed++) {
            tp_run_opts ro;
            tp_run_opts_init(&ro);
            ro.policy = seed % 2 ? "random" : "any";
            ro.seed = (uint64_t)seed;
            ro.streams = 4;
            ro.deterministic = det;
            double *t0, *t1;
            free(run_cpu(mg, &ro, 0.5, &t0, &t1));
            for (uint32_t a = 0; a < nm; a++) {
                CHECKF(t1[mem[a]] <= t0[join], "accumulate %u ends after its join completes", mem[a]);
                for (uint32_t b = a + 1; b < nm; b++)
                    CHECKF(t1[mem[a]] <= t0[mem[b]] || t1[mem[b]] <= t0[mem[a]], "accumulates %u and %u overlap in time", mem[a], mem[b]);
                if (det && a + 1 < nm)
                    CHECKF(t1[mem[a]] <= t0[mem[a + 1]], "--deterministic: accumulate %u starts before %u ends", mem[a + 1], mem[a]);
            }
            free(t0);
            free(t1);
        }
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

static tp_run_summary sim_run(const tp_memgraph *mg, const char *policy, uint64_t seed, int det, int streams)
{
    tp_sim_profile p = test_sim_profile("sum-into", 4, 0.5, 1e11, 3e-6, 1e9, 2e9);
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK_ERR(tp_backend_sim_new(&p, 0.3, &be, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.policy = policy;
    ro.seed = seed;
    ro.deterministic = det;
    ro.streams = streams;
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
    tp_run_summary sum;
    ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
    tp_exec_free(x);
    tp_backend_free(be);
    return sum;
}

/* the sim backend runs a lowered plan: every accumulate is a kernel of its compute engine, the
 * join none; the time of an accumulate is an elementwise add's */
TEST(exec_sum_into_sim_runs_lowered_plans)
{
    tp_graph *g = grad_graph(3, 9, 256);
    tp_memgraph *mg = plan(g, 3 << 20, 1), *plain = plan(g, 3 << 20, 0);
    ASSERT_EQ(groups(mg), 1);
    uint64_t kernels = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        kernels += v.kind == TP_M_KERNEL || v.kind == TP_M_ACCUMULATE;
    }
    for (int pol = 0; pol < tp_policy_count(); pol++)
        for (int det = 0; det < 2; det++) {
            tp_run_summary s = sim_run(mg, tp_policy_name(pol), 7, det, 2);
            uint64_t k = 0;
            for (int d = 0; d < s.ndevices; d++) k += s.dev[d].kernels;
            ASSERT_EQ(k, kernels);
            CHECK(s.makespan > 0 && s.makespan >= s.lower_bound * (1 - 1e-9));
        }
    tp_run_summary a = sim_run(mg, "any", 1, 0, 1), b = sim_run(plain, "any", 1, 0, 1);
    printf("sim makespan: lowered %.3f ms, unlowered %.3f ms\n", a.makespan * 1e3, b.makespan * 1e3);
    tp_memgraph_free(mg);
    tp_memgraph_free(plain);
    tp_graph_free(g);
}

/* random graphs with groups, at tight caps, complete in virtual time under every policy and
 * stream count, with and without --deterministic (fixed serves locks in its own order) */
TEST(exec_sum_into_random_graphs_complete_every_policy)
{
    int grouped = 0;
    for (int i = 0; i < 30; i++) {
        tp_graph *g = gen_graph((uint64_t)i + 900, GEN_ACCUM);
        tp_error e;
        tp_memgraph *mg;
        ASSERT_OK_ERR(gen_plan_min(g, &mg, &e), e);
        grouped += groups(mg) > 0;
        for (int pol = 0; pol < tp_policy_count(); pol++)
            for (int det = 0; det < 2; det++) {
                tp_run_summary s = sim_run(mg, tp_policy_name(pol), (uint64_t)i, det, 1 + (i + pol) % 3);
                ASSERT_EQ(s.vertices, (uint64_t)tp_memgraph_size(mg));
            }
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
    CHECKF(grouped >= 20, "only %d of 30 graphs had groups", grouped);
}
