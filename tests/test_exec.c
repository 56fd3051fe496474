/* test_exec.c - the executor and cpu backend: same results in every order, races visible when
 * a memory dependency is removed, faults that stop the run cleanly naming the vertex. */
#include <string.h>
#include "turnip/turnip.h"
#include "plan/plan_internal.h"
#include "gen.h"
#include "harness.h"

/* a residual MLP chain on `ndev` devices: h = h + silu(h @ w_i), hopping devices */
static tp_graph *mlp_chain(int layers, int ndev, int n)
{
    tp_graph *g = tp_graph_new(ndev);
    tp_error e;
    int64_t shp[2] = {n, n};
    uint32_t h, w, m, a, s;
    char id[32];
    CHECK(tp_graph_add_input(g, "x", 0, TP_DT_F32, 2, shp, 0, &h, &e) == TP_OK);
    for (int l = 0; l < layers; l++) {
        int d = l % ndev;
        if (tp_graph_vertex(g, h)->device != d) {
            snprintf(id, sizeof id, "t%d", l);
            CHECK(tp_graph_add_transfer(g, id, d, h, &h, &e) == TP_OK);
        }
        snprintf(id, sizeof id, "w%d", l);
        CHECK(tp_graph_add_input(g, id, d, TP_DT_F32, 2, shp, 0, &w, &e) == TP_OK);
        uint32_t in2[2] = {h, w};
        snprintf(id, sizeof id, "mm%d", l);
        CHECK(tp_graph_add_kernel(g, id, d, "matmul", 2, in2, TP_DT_F32, 2, shp, 0, NULL, 0, &m, &e) == TP_OK);
        snprintf(id, sizeof id, "act%d", l);
        CHECK(tp_graph_add_kernel(g, id, d, "silu", 1, &m, TP_DT_F32, 2, shp, 0, NULL, 0, &a, &e) == TP_OK);
        uint32_t in3[2] = {h, a};
        snprintf(id, sizeof id, "res%d", l);
        CHECK(tp_graph_add_kernel(g, id, d, "add", 2, in3, TP_DT_F32, 2, shp, 0, NULL, 0, &s, &e) == TP_OK);
        h = s;
    }
    CHECK(tp_graph_add_output(g, h, &e) == TP_OK);
    CHECK(tp_graph_finalize(g, &e) == TP_OK);
    return g;
}

static uint64_t rs = 12345;
static float frand(void)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rs >> 40) & 0xffff) / 65536.0f - 0.5f;
}

/* runs mg and returns the bytes of output 0 (caller frees); status in *st */
static uint8_t *run_once(const tp_memgraph *mg, const tp_run_opts *ro, const tp_cpu_opts *co, tp_status *st, tp_error *e)
{
    tp_backend *be = NULL;
    CHECK(tp_backend_cpu_new(co, &be, e) == TP_OK);
    tp_exec *x;
    uint8_t *out = NULL;
    *st = tp_exec_new(mg, be, ro, &x, e);
    CHECKF(*st == TP_OK, "%s", e->msg);
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    rs = 777;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) continue;
        uint64_t nf = v.write.bytes / 4;
        float *buf = malloc(v.write.bytes);
        for (uint64_t k = 0; k < nf; k++) buf[k] = frand() * (tp_graph_vertex(g, v.task)->id[0] == 'w' ? 0.3f : 1.0f);
        CHECK(tp_exec_write(x, &v.write, buf, e) == TP_OK);
        free(buf);
    }
    tp_run_summary sum;
    *st = tp_exec_run(x, &sum, e);
    if (*st == TP_OK) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[0], &v);
        out = malloc(v.write.bytes);
        CHECK(tp_exec_read(x, &v.write, out, e) == TP_OK);
    }
    tp_exec_free(x);
    tp_backend_free(be);
    return out;
}

/* g planned with every device capped at cap */
static tp_memgraph *plan_at(const tp_graph *g, uint64_t cap)
{
    tp_plan_opts po;
    tp_plan_opts_init(&po, tp_graph_devices(g), cap);
    tp_memgraph *mg = NULL;
    tp_error e;
    CHECKF(tp_plan(g, &po, &mg, &e) == TP_OK, "%s", e.msg);
    return mg;
}

static uint64_t out_bytes(const tp_memgraph *mg)
{
    tp_mvertex v;
    tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[0], &v);
    return v.write.bytes;
}

TEST(exec_same_result_every_policy)
{
    tp_graph *g = mlp_chain(12, 3, 24);
    tp_memgraph *mg = plan_at(g, 4 * 24 * 24 * 4);
    tp_error e;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    tp_status st;
    uint8_t *ref = run_once(mg, &ro, &co, &st, &e);
    CHECK(st == TP_OK);
    co.jitter = 1.0;
    co.link_latency_us = 30;
    for (int k = 0; k < 12; k++) {
        ro.policy = k == 0 ? "fixed" : k % 3 == 1 ? "any" : "random";
        ro.seed = (uint64_t)k;
        ro.streams = 1 + k % 3;
        uint8_t *o = run_once(mg, &ro, &co, &st, &e);
        CHECKF(st == TP_OK, "%s", e.msg);
        CHECKF(!memcmp(o, ref, out_bytes(mg)), "policy %s seed %d streams %d changed the result", ro.policy, k,
               ro.streams);
        free(o);
    }
    free(ref);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* removes memory dependency r -> u from the planner's MemGraph (rebuilds the CSR) */
static void drop_dep(tp_memgraph *mg, uint32_t u, uint32_t r)
{
    uint32_t *off = malloc((mg->n + 1) * sizeof *off), *deps = malloc(mg->deps_off[mg->n] * sizeof *deps);
    uint32_t k = 0;
    for (size_t i = 0; i < mg->n; i++) {
        off[i] = k;
        for (uint32_t j = mg->deps_off[i]; j < mg->deps_off[i + 1]; j++)
            if (!(i == u && mg->deps[j] == r)) deps[k++] = mg->deps[j];
    }
    off[mg->n] = k;
    free(mg->deps_off);
    free(mg->deps);
    mg->deps_off = off;
    mg->deps = deps;
}

TEST(exec_removed_memory_dep_is_a_visible_race)
{
    tp_graph *g = mlp_chain(10, 1, 32);
    tp_memgraph *mg = plan_at(g, 5 * 32 * 32 * 4);
    tp_error e;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    tp_status st;
    uint8_t *ref = run_once(mg, &ro, &co, &st, &e);
    int tried = 0, seen = 0;
    /* each memory dep whose removal the verifier calls a race */
    for (uint32_t u = 0; u < mg->n && !seen && tried < 12; u++) {
        if (mg->v[u].kind == TP_M_INPUT) continue;
        for (uint32_t j = mg->deps_off[u]; j < mg->deps_off[u + 1] && !seen; j++) {
            uint32_t r = mg->deps[j];
            int data = 0;
            for (uint32_t k = 0; k < mg->v[u].nreads; k++) data |= mg->reads[mg->v[u].reads_off + k] == r;
            if (data) continue;
            tp_memgraph *bad = plan_at(g, 5 * 32 * 32 * 4);
            drop_dep(bad, u, r);
            char *text;
            size_t len;
            CHECK(tp_memgraph_to_string(bad, &text, &len, &e) == TP_OK);
            tp_status vs = tp_verify_json(text, len, "mutant", g, &e);
            free(text);
            if (vs != TP_ERR_CHECK) {
                tp_memgraph_free(bad);
                continue; /* implied by another path: not a race */
            }
            tried++;
            ro.policy = "random";
            ro.streams = 2;
            for (int s = 0; s < 40 && !seen; s++) {
                ro.seed = (uint64_t)s;
                uint8_t *o = run_once(bad, &ro, &co, &st, &e);
                CHECK(st == TP_OK);
                seen = memcmp(o, ref, out_bytes(mg)) != 0;
                free(o);
            }
            tp_memgraph_free(bad);
        }
    }
    printf("racy mutants tried: %d, wrong result seen: %s\n", tried, seen ? "yes" : "no");
    CHECK(tried > 0);
    CHECKF(seen, "no order exposed a race in %d racy mutants", tried);
    free(ref);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

TEST(exec_fault_stops_cleanly_naming_the_vertex)
{
    tp_graph *g = mlp_chain(8, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    tp_error e;
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    for (uint32_t f = 0; f < tp_memgraph_size(mg); f += 3) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, f, &v);
        if (v.kind == TP_M_INPUT) continue;
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.fail_vertex = f;
        ro.streams = 2;
        tp_status st;
        uint8_t *o = run_once(mg, &ro, &co, &st, &e);
        CHECK(st != TP_OK && o == NULL);
        char want[64];
        snprintf(want, sizeof want, "vertex %u (", f);
        CHECKF(strstr(e.msg, want) && strstr(e.msg, tp_graph_vertex(g, v.task)->id) && strstr(e.msg, "injected"), "%s", e.msg);
    }
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

TEST(exec_random_opaque_graphs_complete)
{
    /* the planner's random graphs (opaque kernels) run to completion in every policy */
    for (int i = 0; i < 40; i++) {
        tp_graph *g = gen_graph((uint64_t)i + 500, i % GEN_NFAMILIES);
        tp_plan_opts po;
        tp_plan_opts_init(&po, tp_graph_devices(g), 0);
        uint64_t minf[TP_MAX_DEVICES];
        tp_error e;
        CHECK(tp_plan_bounds(g, TP_ORDER_DFS, minf, NULL, &e) == TP_OK);
        memcpy(po.device_mem, minf, sizeof minf);
        tp_memgraph *mg;
        CHECKF(tp_plan(g, &po, &mg, &e) == TP_OK, "%s", e.msg);
        tp_backend *be = NULL;
        CHECK(tp_backend_cpu_new(NULL, &be, NULL) == TP_OK);
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.policy = tp_policy_name(i % 3);
        ro.seed = (uint64_t)i;
        ro.streams = 1 + i % 2;
        tp_exec *x;
        CHECKF(tp_exec_new(mg, be, &ro, &x, &e) == TP_OK, "%s", e.msg);
        tp_run_summary sum;
        CHECKF(tp_exec_run(x, &sum, &e) == TP_OK, "%s", e.msg);
        CHECK(sum.vertices == tp_memgraph_size(mg));
        uint64_t launched = 0;
        for (int d = 0; d < tp_graph_devices(g); d++) {
            launched += sum.dev[d].kernels;
            for (int k = 0; k < sum.nengines; k++) launched += sum.engine_moves[k] ? sum.dev[d].count[k] : 0;
        }
        uint64_t inputs = 0;
        for (uint32_t v = 0; v < tp_memgraph_size(mg); v++) {
            tp_mvertex mv;
            tp_memgraph_vertex(mg, v, &mv);
            inputs += mv.kind == TP_M_INPUT;
        }
        CHECK(launched + inputs == tp_memgraph_size(mg));
        tp_exec_free(x);
        tp_backend_free(be);
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
}
