/* test_exec.c - the executor and cpu backend: same results in every order, races visible when
 * a memory dependency is removed, faults that stop the run cleanly naming the vertex. */
#include <math.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include "turnip/turnip.h"
#include "plan/plan_internal.h"
#include "backend/common.h"
#include "exec/exec_internal.h"
#include "gen.h"
#include "harness.h"
#include "sim_profile.h"

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

/* mlp_chain's output computed naively in double (h = x; per layer h += silu(h w_l)) from the
 * inputs run_once writes (the same draws, in the plan's order of its input vertices). */
static double *mlp_reference(const tp_memgraph *mg, int layers, int n)
{
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    size_t nn = (size_t)n * (size_t)n;
    double *in = calloc(nn * (size_t)(layers + 1), sizeof *in); /* x, then w0.. */
    rs = 777;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) continue;
        const char *id = tp_graph_vertex(g, v.task)->id;
        int slot = id[0] == 'w' ? 1 + atoi(id + 1) : 0;
        CHECK(v.write.bytes == nn * 4 && slot <= layers);
        for (size_t k = 0; k < nn; k++) in[(size_t)slot * nn + k] = frand() * (id[0] == 'w' ? 0.3f : 1.0f);
    }
    double *h = malloc(nn * sizeof *h), *m = malloc(nn * sizeof *m);
    memcpy(h, in, nn * sizeof *h);
    for (int l = 0; l < layers; l++) {
        const double *w = in + (size_t)(l + 1) * nn;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0;
                for (int k = 0; k < n; k++) acc += h[i * n + k] * w[k * n + j];
                m[i * n + j] = acc;
            }
        for (size_t k = 0; k < nn; k++) h[k] += m[k] / (1 + exp(-m[k]));
    }
    free(in);
    free(m);
    return h;
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
    /* the first run against a naive reference (f32 kernels against double: 1e-4 relative) */
    double *want = mlp_reference(mg, 12, 24), worst = 0;
    const float *got = (const float *)ref;
    for (int k = 0; k < 24 * 24; k++) {
        double d = fabs(got[k] - want[k]) / (1 + fabs(want[k]));
        worst = d > worst ? d : worst;
    }
    CHECKF(worst < 1e-4, "the run differs from the naive reference by %.3g (relative)", worst);
    free(want);
    co.jitter = 1.0;
    co.link_latency_us = 30;
    for (int k = 0; k < 12; k++) {
        ro.policy = k == 0 ? "fixed" : tp_policy_name(k % tp_policy_count()); /* priority too: every policy */
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

/* Calls fn for each memory dependency r -> u of g's plan at cap whose removal the verifier
 * calls a race, with `bad` that plan without it, until fn returns nonzero or `most` were
 * tried. Returns how many were tried. */
static int each_racy_mutant(const tp_graph *g, uint64_t cap, int most,
                            int (*fn)(void *ctx, const tp_memgraph *bad, uint32_t u, uint32_t r), void *ctx)
{
    tp_memgraph *mg = plan_at(g, cap);
    tp_error e;
    int tried = 0, stop = 0;
    for (uint32_t u = 0; u < mg->n && !stop && tried < most; u++) {
        if (mg->v[u].kind == TP_M_INPUT) continue;
        for (uint32_t j = mg->deps_off[u]; j < mg->deps_off[u + 1] && !stop && tried < most; j++) {
            uint32_t r = mg->deps[j];
            int data = 0;
            for (uint32_t k = 0; k < mg->v[u].nreads; k++) data |= mg->reads[mg->v[u].reads_off + k] == r;
            if (data) continue;
            tp_memgraph *bad = plan_at(g, cap);
            drop_dep(bad, u, r);
            char *text;
            size_t len;
            CHECK(tp_memgraph_to_string(bad, &text, &len, &e) == TP_OK);
            tp_status vs = tp_verify_json(text, len, "mutant", g, &e);
            free(text);
            if (vs == TP_ERR_CHECK) { /* else implied by another path: not a race */
                tried++;
                stop = fn(ctx, bad, u, r);
            }
            tp_memgraph_free(bad);
        }
    }
    tp_memgraph_free(mg);
    return tried;
}

typedef struct {
    const uint8_t *ref;
    uint64_t bytes;
    int seen; /* a wrong result was seen */
} race_ctx;

/* some random order with two streams gives a wrong result */
static int wrong_in_some_order(void *ctx, const tp_memgraph *bad, uint32_t u, uint32_t r)
{
    (void)u, (void)r;
    race_ctx *rc = ctx;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    tp_error e;
    tp_status st;
    ro.policy = "random";
    ro.streams = 2;
    int seen = 0;
    for (int s = 0; s < 40 && !seen; s++) {
        ro.seed = (uint64_t)s;
        uint8_t *o = run_once(bad, &ro, &co, &st, &e);
        CHECK(st == TP_OK);
        seen = memcmp(o, rc->ref, rc->bytes) != 0;
        free(o);
    }
    rc->seen |= seen;
    return seen;
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
    race_ctx rc = {ref, out_bytes(mg), 0};
    /* each memory dep whose removal the verifier calls a race: until one is seen, at most 12 */
    int tried = each_racy_mutant(g, 5 * 32 * 32 * 4, 12, wrong_in_some_order, &rc);
    printf("racy mutants tried: %d, wrong result seen: %s\n", tried, rc.seen ? "yes" : "no");
    CHECK(tried > 0);
    CHECKF(rc.seen, "no order exposed a race in %d racy mutants", tried);
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

/* The trace of a failed run holds what ran: no slice or memory event for a vertex that never
 * started (they were written at the run's start less its clock, a large negative time). */
TEST(exec_trace_of_failed_run_only_what_ran)
{
    tp_graph *g = mlp_chain(8, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    uint32_t f = 0, engine_vertices = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) engine_vertices++;
        if (!f && v.kind == TP_M_RELOAD) f = i; /* the first reload fails: little has run */
    }
    CHECK(f > 0);
    tp_error e;
    tp_backend *be = NULL;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.fail_vertex = f;
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
    tp_run_summary sum;
    CHECK(tp_exec_run(x, &sum, &e) != TP_OK);
    char path[] = "/tmp/tp_failtraceXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    ASSERT_OK_ERR(tp_exec_trace_write(x, path, &e), e);
    FILE *fp = fopen(path, "r");
    char line[1024];
    uint32_t slices = 0;
    int negative = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        slices += strstr(line, "\"ph\": \"X\"") != NULL;
        negative |= strstr(line, "\"ts\": -") != NULL;
    }
    if (fp) fclose(fp);
    unlink(path);
    CHECKF(!negative, "a failed run's trace has events before the run started");
    CHECKF(slices > 0 && slices < engine_vertices, "%u slices of %u vertices, in a run that stopped early", slices, engine_vertices);
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

TEST(exec_random_opaque_graphs_complete)
{
    /* the planner's random graphs (opaque kernels; sums of the accum family, lowered) run to
     * completion in every policy */
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
        ro.policy = tp_policy_name(i % tp_policy_count());
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
            inputs += mv.kind == TP_M_INPUT || mv.kind == TP_M_JOIN; /* joins run on no engine */
        }
        CHECK(launched + inputs == tp_memgraph_size(mg));
        tp_exec_free(x);
        tp_backend_free(be);
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
}

/* ---- the sim backend: deterministic companions ------------------------------------------- */

static tp_sim_profile slow_kernels(void)
{
    return test_sim_profile("slow-kernels", 4, 1, 1e6, 1e-6, 1e12, 1e12) /* kernels take milliseconds, copies microseconds: a write may overtake a read */;
}

/* runs mg on the sim backend; the run record's times in t0/t1 (caller frees) if asked */
static tp_status sim_run(const tp_memgraph *mg, const tp_run_opts *ro, double **t0, double **t1, tp_error *e)
{
    tp_sim_profile p = slow_kernels();
    tp_backend *be = NULL;
    CHECK(tp_backend_sim_new(&p, 0, &be, e) == TP_OK);
    tp_exec *x;
    tp_status st = tp_exec_new(mg, be, ro, &x, e);
    CHECKF(st == TP_OK, "%s", e->msg);
    tp_run_summary sum;
    st = tp_exec_run(x, &sum, e);
    if (t0) {
        tp__run_record rr;
        tp__exec_record(x, &rr);
        *t0 = malloc(rr.n * sizeof **t0);
        *t1 = malloc(rr.n * sizeof **t1);
        for (uint32_t i = 0; i < rr.n; i++) {
            (*t0)[i] = rr.v[i].t0;
            (*t1)[i] = rr.v[i].t1;
        }
    }
    tp_exec_free(x);
    tp_backend_free(be);
    return st;
}

/* in virtual time, u (which overwrites what r reads) starts before r ends, the same in two
 * runs; counts it in *ctx */
static int overtakes(void *ctx, const tp_memgraph *bad, uint32_t u, uint32_t r)
{
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_error e;
    double *a0, *a1, *b0, *b1;
    ASSERT_OK(sim_run(bad, &ro, &a0, &a1, &e));
    ASSERT_OK(sim_run(bad, &ro, &b0, &b1, &e)); /* the same run again: the same times */
    uint32_t n = tp_memgraph_size(bad);
    CHECK(!memcmp(a0, b0, n * sizeof *a0) && !memcmp(a1, b1, n * sizeof *a1));
    *(int *)ctx += a0[u] < a1[r];
    free(a0);
    free(a1);
    free(b0);
    free(b1);
    return 0;
}

/* Deterministic companion of exec_removed_memory_dep_is_a_visible_race: in virtual time no
 * thread timing is involved. In the real plan every memory dependency r -> u holds in the run
 * record (u starts after r ends); with a racy dependency dropped, u overwrites the bytes r
 * still reads: it starts before r ends, in every run. */
TEST(exec_removed_memory_dep_is_a_race_in_virtual_time)
{
    tp_graph *g = mlp_chain(10, 1, 32);
    tp_memgraph *mg = plan_at(g, 5 * 32 * 32 * 4);
    tp_error e;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    double *t0, *t1;
    ASSERT_OK(sim_run(mg, &ro, &t0, &t1, &e));
    uint32_t memdeps = 0;
    for (uint32_t u = 0; u < mg->n; u++)
        for (uint32_t j = mg->deps_off[u]; j < mg->deps_off[u + 1]; j++) {
            uint32_t r = mg->deps[j];
            CHECKF(t0[u] >= t1[r], "vertex %u started at %.9g before its dependency %u ended at %.9g", u, t0[u], r, t1[r]);
            memdeps++;
        }
    free(t0);
    free(t1);
    int overtaken = 0;
    int tried = each_racy_mutant(g, 5 * 32 * 32 * 4, INT32_MAX, overtakes, &overtaken);
    printf("memory deps held: %u; racy mutants: %d, write before the read ended: %d\n", memdeps, tried, overtaken);
    ASSERT_GT(tried, 0);
    ASSERT_GT(overtaken, 0);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

TEST(exec_sim_fault_stops_cleanly_naming_the_vertex)
{
    tp_graph *g = mlp_chain(8, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    tp_error e;
    int faults = 0;
    for (uint32_t f = 0; f < tp_memgraph_size(mg); f++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, f, &v);
        if (v.kind == TP_M_INPUT) continue;
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.fail_vertex = f;
        ro.streams = 2;
        ro.policy = f % 2 ? "random" : "fixed";
        ro.seed = f;
        tp_status st = sim_run(mg, &ro, NULL, NULL, &e);
        ASSERT_EQ(st, TP_ERR_INVALID);
        char want[64];
        snprintf(want, sizeof want, "vertex %u (", f);
        CHECKF(strstr(e.msg, want) && strstr(e.msg, tp_graph_vertex(g, v.task)->id) && strstr(e.msg, "injected"), "%s", e.msg);
        faults++;
    }
    ASSERT_GT(faults, 10);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* ---- backends that break the contract ------------------------------------------------------ */

typedef struct {
    tp_backend base;
    tp__plan_info pi;
    int mode; /* 0: drops every event (advance posts nothing); 1: posts twice; 2: fails copies,
                 then reuses the error storage at once; 3: floods the sink (64 failed posts per
                 launch, each carrying an error) */
    tp_error scratch;
} fake;

static int fake_engines(tp_backend *be, const tp_run_opts *o, tp__engine *out)
{
    (void)be;
    return tp__engines_gpu_like(o, out);
}
static tp_status fake_prepare(tp_backend *be, const tp__plan_info *pi, tp_error *err)
{
    (void)err;
    ((fake *)be)->pi = *pi;
    return TP_OK;
}
static void fake_launch(tp_backend *be, uint32_t v, int unit)
{
    (void)unit;
    fake *f = (fake *)be;
    tp__done d;
    if (f->mode == 0) return; /* the event is lost */
    if (f->mode == 3) {
        tp__fail(&f->scratch, TP_ERR_IO, "flood");
        for (int k = 0; k < 64; k++) {
            tp__done_set(&d, v, TP_ERR_IO, 0, 0, &f->scratch);
            tp__sink_post(f->pi.sink, &d);
        }
        return;
    }
    if (f->mode == 1) {
        tp__done_set(&d, v, TP_OK, 0, 0, NULL);
        tp__sink_post(f->pi.sink, &d);
        tp__done_set(&d, v, TP_OK, 0, 0, NULL);
        tp__sink_post(f->pi.sink, &d);
        return;
    }
    int copy = f->pi.engines[f->pi.engine[v]].moves;
    tp__fail(&f->scratch, TP_ERR_IO, "copy %u failed", v);
    tp__done_set(&d, v, copy ? TP_ERR_IO : TP_OK, 0, 0, &f->scratch);
    tp__sink_post(f->pi.sink, &d);
    tp__fail(&f->scratch, TP_ERR_IO, "storage reused"); /* the unit moves on before the loop reads */
}
static tp_status fake_rw(tp_backend *be, const tp_region *r, const void *src, tp_error *err)
{
    (void)be, (void)r, (void)src, (void)err;
    return TP_OK;
}
static tp_status fake_read(tp_backend *be, const tp_region *r, void *dst, tp_error *err)
{
    (void)be, (void)r, (void)dst, (void)err;
    return TP_OK;
}
static void fake_release(tp_backend *be)
{
    (void)be;
}
static void fake_destroy(tp_backend *be)
{
    free(be);
}
static double fake_now(tp_backend *be)
{
    (void)be;
    return 0;
}
static int fake_advance(tp_backend *be)
{
    (void)be;
    return 0;
}
static const tp__backend_ops fake_sim_ops = {.name = "fake-sim", .engines = fake_engines, .prepare = fake_prepare,
                                              .launch = fake_launch, .write = fake_rw, .read = fake_read,
                                              .release = fake_release, .destroy = fake_destroy, .now = fake_now,
                                              .advance = fake_advance};
static const tp__backend_ops fake_real_ops = {.name = "fake-real", .engines = fake_engines, .prepare = fake_prepare,
                                               .launch = fake_launch, .write = fake_rw, .read = fake_read,
                                               .release = fake_release, .destroy = fake_destroy};

static tp_status fake_run(const tp_memgraph *mg, int mode, int copy_depth, tp_error *e)
{
    fake *f = calloc(1, sizeof *f);
    f->base.ops = mode == 0 ? &fake_sim_ops : &fake_real_ops;
    f->mode = mode;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.copy_depth = copy_depth;
    tp_exec *x;
    ASSERT_OK(tp_exec_new(mg, &f->base, &ro, &x, e));
    tp_run_summary sum;
    tp_status st = tp_exec_run(x, &sum, e);
    if (mode == 3) { /* the contract is broken: the executor refuses to go on */
        tp_error e2;
        tp_mvertex v;
        tp_memgraph_vertex(mg, 0, &v);
        char buf[16];
        ASSERT_EQ(tp_exec_run(x, &sum, &e2), TP_ERR_INVALID);
        CHECKF(strstr(e2.msg, "broke the completion contract"), "%s", e2.msg);
        ASSERT_EQ(tp_exec_read(x, &v.write, buf, &e2), TP_ERR_INVALID);
    } else if (mode == 0) { /* no trace of a run that never finished a vertex properly: still a record */
        tp_error e2;
        ASSERT_EQ(tp_exec_run(x, &sum, &e2), TP_ERR_INVALID);
    }
    tp_exec_free(x); /* frees the errors nobody took (ASan checks) */
    tp_backend_free(&f->base);
    return st;
}

/* a simulating backend whose advance() stops posting while vertices are in flight (a dropped
 * event) fails the run naming a vertex; it used to wait forever */
TEST(exec_backend_that_stops_advancing_fails_naming_a_vertex)
{
    tp_graph *g = mlp_chain(4, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    tp_error e;
    ASSERT_EQ(fake_run(mg, 0, 2, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "stopped making progress") && strstr(e.msg, "never completed") && strstr(e.msg, "vertex "), "%s", e.msg);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* a backend posting two completions for one launch breaks the contract: a failed run, not a
 * corrupted count */
TEST(exec_backend_posting_twice_fails_the_run)
{
    tp_graph *g = mlp_chain(4, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    tp_error e;
    ASSERT_EQ(fake_run(mg, 1, 2, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "not running") || strstr(e.msg, "overflowed"), "%s", e.msg);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* a backend flooding the completion queue overflows it: a failed run, never a lost completion
 * taken for a real one, and an executor that refuses to go on */
TEST(exec_backend_overflowing_the_sink_fails_the_run)
{
    tp_graph *g = mlp_chain(4, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    tp_error e;
    ASSERT_NE(fake_run(mg, 3, 2, &e), TP_OK);
    CHECKF(strstr(e.msg, "overflowed") || strstr(e.msg, "flood") || strstr(e.msg, "not running"), "%s", e.msg);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* a trace needs a finished run */
TEST(exec_trace_before_any_run_is_an_error)
{
    tp_graph *g = mlp_chain(2, 1, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK(tp_backend_cpu_new(NULL, &be, &e));
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *x;
    ASSERT_OK(tp_exec_new(mg, be, &ro, &x, &e));
    ASSERT_EQ(tp_exec_trace_write(x, "/nonexistent-dir/t.json", &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "no run"), "%s", e.msg);
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* a failed completion carries its own error: a backend unit (a copy engine queueing
 * copy_depth > 1 vertices) may reuse its storage at once; the message names the vertex that
 * failed, not whatever the unit did next */
TEST(exec_failed_completion_keeps_its_own_message)
{
    tp_graph *g = mlp_chain(6, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    tp_error e;
    for (int depth = 1; depth <= TP_MAX_COPY_DEPTH; depth++) {
        ASSERT_EQ(fake_run(mg, 2, depth, &e), TP_ERR_IO);
        unsigned v;
        CHECKF(sscanf(e.msg, "vertex %u", &v) == 1, "%s", e.msg);
        char want[64];
        snprintf(want, sizeof want, "copy %u failed", v);
        CHECKF(strstr(e.msg, want) && !strstr(e.msg, "reused"), "%s", e.msg);
    }
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* ---- sessions: memory kept across executors (issue 11) ------------------------------------ */

/* the bytes the session tests give input vertex i of mg: f32 seeded by i, weights scaled
 * down (caller frees) */
static float *input_data(const tp_memgraph *mg, uint32_t i)
{
    tp_mvertex v;
    tp_memgraph_vertex(mg, i, &v);
    float *buf = malloc(v.write.bytes + 4);
    rs = 1000 + i;
    int w = tp_graph_vertex(tp_memgraph_taskgraph(mg), v.task)->id[0] == 'w';
    for (uint64_t k = 0; k < v.write.bytes / 4; k++) buf[k] = frand() * (w ? 0.3f : 1.0f);
    return buf;
}

/* writes every input (not the resident ones), runs once, returns output 0 (caller frees) */
static uint8_t *inputs_run_output(tp_exec *x, tp_run_summary *sum)
{
    const tp_memgraph *mg = tp_exec_memgraph(x);
    tp_error e;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) continue;
        float *buf = input_data(mg, i);
        ASSERT_OK_ERR(tp_exec_write(x, &v.write, buf, &e), e);
        free(buf);
    }
    tp_run_summary s;
    ASSERT_OK_ERR(tp_exec_run(x, sum ? sum : &s, &e), e);
    uint8_t *out = malloc(out_bytes(mg));
    tp_mvertex v;
    tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[0], &v);
    ASSERT_OK_ERR(tp_exec_read(x, &v.write, out, &e), e);
    return out;
}

/* output 0 of mg run without a session on a fresh cpu backend (caller frees) */
static uint8_t *reference_output(const tp_memgraph *mg)
{
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK(tp_backend_cpu_new(NULL, &be, &e));
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
    uint8_t *out = inputs_run_output(x, NULL);
    tp_exec_free(x);
    tp_backend_free(be);
    return out;
}

/* session sizes that fit each of the n plans: per device the largest capacity plus `extra` */
static void session_sizes(const tp_memgraph *const *mgs, int n, uint64_t extra, uint64_t cap[TP_MAX_DEVICES], uint64_t *host)
{
    memset(cap, 0, TP_MAX_DEVICES * sizeof *cap);
    *host = 0;
    for (int k = 0; k < n; k++) {
        for (int d = 0; d < tp_graph_devices(tp_memgraph_taskgraph(mgs[k])); d++)
            if (tp_memgraph_device_capacity(mgs[k], d) + extra > cap[d]) cap[d] = tp_memgraph_device_capacity(mgs[k], d) + extra;
        if (tp_memgraph_host_bytes(mgs[k]) > *host) *host = tp_memgraph_host_bytes(mgs[k]);
    }
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* (a) bytes one executor leaves on a device and in the host block are there for the next
 * executor of another plan in the same session; plans run in a session give the results they
 * give alone; and the no-session path still starts from zeroed memory */
TEST(exec_session_keeps_memory_across_executors)
{
    tp_graph *g1 = mlp_chain(2, 2, 8), *g2 = mlp_chain(5, 2, 8);
    tp_memgraph *m1 = plan_at(g1, 4 * 8 * 8 * 4), *m2 = plan_at(g2, 5 * 8 * 8 * 4);
    uint8_t *ref1 = reference_output(m1), *ref2 = reference_output(m2);
    const tp_memgraph *mgs[2] = {m1, m2};
    uint64_t cap[TP_MAX_DEVICES], host;
    session_sizes(mgs, 2, 0, cap, &host);
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK(tp_backend_cpu_new(NULL, &be, &e));
    tp_session *s;
    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.streams = 2;

    /* executor 1: runs its plan, then leaves a pattern on device 1 and in the host block */
    tp_exec *x1;
    ASSERT_OK_ERR(tp_exec_new_in(s, m1, &ro, &x1, &e), e);
    uint8_t *o1 = inputs_run_output(x1, NULL);
    CHECK(!memcmp(o1, ref1, out_bytes(m1)));
    tp_region rd = {TP_SPACE_DEVICE, 1, 100, 300}, rh = {TP_SPACE_HOST, -1, 8, 64};
    uint8_t pat[300], back[300];
    for (int i = 0; i < 300; i++) pat[i] = (uint8_t)(i * 7 + 1);
    ASSERT_OK_ERR(tp_exec_write(x1, &rd, pat, &e), e);
    ASSERT_OK_ERR(tp_exec_write(x1, &rh, pat + 5, &e), e);
    tp_exec_free(x1);

    /* executor 2, another plan: the bytes are still there, and its plan runs as alone */
    tp_exec *x2;
    ASSERT_OK_ERR(tp_exec_new_in(s, m2, &ro, &x2, &e), e);
    memset(back, 0, sizeof back);
    ASSERT_OK_ERR(tp_exec_read(x2, &rd, back, &e), e);
    CHECK(!memcmp(back, pat, 300));
    ASSERT_OK_ERR(tp_exec_read(x2, &rh, back, &e), e);
    CHECK(!memcmp(back, pat + 5, 64));
    uint8_t *o2 = inputs_run_output(x2, NULL);
    CHECK(!memcmp(o2, ref2, out_bytes(m2)));
    tp_exec_free(x2);
    tp_session_free(s);

    /* no session on the same backend: fresh memory, zeroed */
    tp_exec *x3;
    ASSERT_OK_ERR(tp_exec_new(m2, be, &ro, &x3, &e), e);
    memset(back, 0xAB, sizeof back);
    ASSERT_OK_ERR(tp_exec_read(x3, &rd, back, &e), e);
    CHECK(all_zero(back, 300));
    ASSERT_OK_ERR(tp_exec_read(x3, &rh, back, &e), e);
    CHECK(all_zero(back, 64));
    tp_exec_free(x3);

    tp_backend_free(be);
    free(o1);
    free(o2);
    free(ref1);
    free(ref2);
    tp_memgraph_free(m1);
    tp_memgraph_free(m2);
    tp_graph_free(g1);
    tp_graph_free(g2);
}

/* The shared start of the session tests: an MLP chain of `layers` on 2 devices planned at a
 * small cap, the session sizes that hold it, a cpu backend and default run options. */
typedef struct {
    tp_graph *g;
    tp_memgraph *mg;
    uint64_t cap[TP_MAX_DEVICES], host;
    tp_backend *be;
    tp_run_opts ro;
} sess_fixture;

static void sess_fixture_init(sess_fixture *f, int layers)
{
    tp_error e;
    f->g = mlp_chain(layers, 2, 8);
    f->mg = plan_at(f->g, 4 * 8 * 8 * 4);
    const tp_memgraph *mgs[1] = {f->mg};
    session_sizes(mgs, 1, 0, f->cap, &f->host);
    f->be = NULL;
    ASSERT_OK(tp_backend_cpu_new(NULL, &f->be, &e));
    tp_run_opts_init(&f->ro);
}

/* (b) a plan bigger than the session (a device, the host block, the device count) is refused
 * naming what does not fit; one executor at a time; a backend in a session makes no executor
 * outside it, and opens no second session; a backend with a live executor opens none */
TEST(exec_session_refuses_what_does_not_fit)
{
    sess_fixture fx;
    sess_fixture_init(&fx, 4);
    tp_graph *g = fx.g;
    tp_memgraph *mg = fx.mg;
    uint64_t *cap = fx.cap, host = fx.host;
    tp_backend *be = fx.be;
    tp_run_opts ro = fx.ro;
    tp_error e;
    tp_session *s;
    tp_exec *x, *y;
    char want[128];

    uint64_t small[TP_MAX_DEVICES];
    memcpy(small, cap, sizeof small);
    small[1] = cap[1] - 1;
    ASSERT_OK_ERR(tp_session_new(be, 2, small, host, &s, &e), e);
    ASSERT_STATUS(tp_exec_new_in(s, mg, &ro, &x, &e), TP_ERR_ARG);
    snprintf(want, sizeof want, "(%llu bytes), the session has", (unsigned long long)cap[1]);
    CHECKF(strstr(e.msg, "device 1") && strstr(e.msg, want), "%s", e.msg);
    snprintf(want, sizeof want, "(%llu bytes)", (unsigned long long)small[1]);
    CHECKF(strstr(e.msg, want), "%s", e.msg);
    tp_session_free(s);

    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host - 1, &s, &e), e);
    ASSERT_STATUS(tp_exec_new_in(s, mg, &ro, &x, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "host memory") && strstr(e.msg, "session"), "%s", e.msg);
    tp_session_free(s);

    ASSERT_OK_ERR(tp_session_new(be, 3, cap, host, &s, &e), e); /* cap[2] is 0 */
    ASSERT_STATUS(tp_exec_new_in(s, mg, &ro, &x, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "2 devices") && strstr(e.msg, "session 3"), "%s", e.msg);
    tp_session_free(s);

    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    ASSERT_OK_ERR(tp_exec_new_in(s, mg, &ro, &x, &e), e);
    ASSERT_STATUS(tp_exec_new_in(s, mg, &ro, &y, &e), TP_ERR_ARG); /* a second live executor */
    CHECKF(strstr(e.msg, "another executor"), "%s", e.msg);
    tp_exec_free(x);
    ASSERT_STATUS(tp_exec_new(mg, be, &ro, &y, &e), TP_ERR_ARG); /* outside the open session */
    CHECKF(strstr(e.msg, "tp_exec_new_in"), "%s", e.msg);
    tp_session *s2;
    ASSERT_STATUS(tp_session_new(be, 2, cap, host, &s2, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "already open"), "%s", e.msg);
    ASSERT_OK_ERR(tp_exec_new_in(s, mg, &ro, &x, &e), e); /* the first is gone: the next may come */
    tp_run_summary sum;
    ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
    tp_exec_free(x);
    tp_session_free(s);

    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e); /* no session: a live executor */
    ASSERT_STATUS(tp_session_new(be, 2, cap, host, &s, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "executor is using it"), "%s", e.msg);
    tp_exec_free(x);

    ASSERT_STATUS(tp_session_new(be, 0, cap, host, &s, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_session_new(be, TP_MAX_DEVICES + 1, cap, host, &s, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_session_new(be, 2, NULL, host, &s, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_session_new(NULL, 2, cap, host, &s, &e), TP_ERR_ARG);
    fake *f = calloc(1, sizeof *f); /* a backend with no sessions */
    f->base.ops = &fake_real_ops;
    ASSERT_STATUS(tp_session_new(&f->base, 2, cap, host, &s, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "no sessions"), "%s", e.msg);
    tp_backend_free(&f->base);

    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* mg with input `id` made resident: its region on `device` at `offset` (planners make such
 * vertices; the MemGraph record is changed here, as drop_dep does); returns its vertex */
static uint32_t make_resident(tp_memgraph *mg, const char *id, int device, uint64_t offset)
{
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    for (uint32_t i = 0; i < mg->n; i++)
        if (mg->v[i].kind == TP_M_INPUT && !strcmp(tp_graph_vertex(g, mg->v[i].task)->id, id)) {
            mg->v[i].kind = TP_M_RESIDENT;
            mg->v[i].space = TP_SPACE_DEVICE;
            mg->v[i].device = (int16_t)device;
            mg->v[i].offset = offset;
            return i;
        }
    CHECKF(0, "no input '%s'", id);
    return 0;
}

/* (c) tp_exec_new refuses resident inputs; in a session an executor of the same plan runs
 * on the bytes an earlier executor left on the device (a region past the plan's own arena) */
TEST(exec_resident_inputs_need_a_session)
{
    tp_graph *g = mlp_chain(3, 2, 8);
    tp_memgraph *plain = plan_at(g, 4 * 8 * 8 * 4), *res = plan_at(g, 4 * 8 * 8 * 4);
    uint64_t at = tp_memgraph_device_capacity(res, 1); /* past the plan's arena on device 1 */
    uint32_t rv = make_resident(res, "w1", 1, at);
    ASSERT_STR_EQ(tp_mkind_name(TP_M_RESIDENT), "resident");
    uint8_t *ref = reference_output(plain);
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK(tp_backend_cpu_new(NULL, &be, &e));
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *x;
    ASSERT_STATUS(tp_exec_new(res, be, &ro, &x, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "resident") && strstr(e.msg, "session") && strstr(e.msg, "tp_exec_new_in"), "%s", e.msg);

    const tp_memgraph *mgs[1] = {plain};
    uint64_t cap[TP_MAX_DEVICES], host;
    tp_mvertex v;
    tp_memgraph_vertex(res, rv, &v);
    session_sizes(mgs, 1, v.write.bytes, cap, &host);
    tp_session *s;
    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    /* an earlier executor puts w1 on device 1 (the plain plan's input vertex of w1 has its bytes) */
    ASSERT_OK_ERR(tp_exec_new_in(s, plain, &ro, &x, &e), e);
    float *w1 = input_data(plain, rv);
    ASSERT_OK_ERR(tp_exec_write(x, &v.write, w1, &e), e);
    free(w1);
    tp_exec_free(x);
    /* the plan with w1 resident runs on it */
    ASSERT_OK_ERR(tp_exec_new_in(s, res, &ro, &x, &e), e);
    tp_run_summary sum;
    uint8_t *o = inputs_run_output(x, &sum);
    CHECK(!memcmp(o, ref, out_bytes(res)));
    tp__run_record rr;
    CHECK(tp__exec_record(x, &rr));
    ASSERT_EQ(rr.v[rv].engine, TP__NO_ENGINE); /* done at the start, like an input */
    ASSERT_EQ(rr.v[rv].device, 1);
    CHECK(rr.v[rv].t1 == rr.start);
    tp_exec_free(x);
    tp_session_free(s);

    /* a resident vertex whose region is not on a device is a broken MemGraph */
    res->v[rv].space = TP_SPACE_HOST;
    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    ASSERT_STATUS(tp_exec_new_in(s, res, &ro, &x, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "not in the memory of a device"), "%s", e.msg);
    tp_session_free(s);

    free(o);
    free(ref);
    tp_backend_free(be);
    tp_memgraph_free(plain);
    tp_memgraph_free(res);
    tp_graph_free(g);
}

/* (d) the sim backend in a session: two plans in a row, each timed as it is alone; a plan
 * bigger than the session refused; a session bigger than the machine refused */
TEST(exec_session_sim_runs_plans_in_a_row)
{
    tp_graph *g1 = mlp_chain(4, 2, 16), *g2 = mlp_chain(6, 2, 16);
    tp_memgraph *m1 = plan_at(g1, 4 * 16 * 16 * 4), *m2 = plan_at(g2, 5 * 16 * 16 * 4);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_error e;
    tp_sim_profile p = test_sim_profile("two", 2, 0.5, 1e11, 5e-6, 1e9, 1e9);
    double alone[2];
    const tp_memgraph *mgs[2] = {m1, m2};
    for (int k = 0; k < 2; k++) {
        tp_backend *b = NULL;
        ASSERT_OK(tp_backend_sim_new(&p, 0, &b, &e));
        tp_exec *x;
        ASSERT_OK_ERR(tp_exec_new(mgs[k], b, &ro, &x, &e), e);
        tp_run_summary sum;
        ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
        alone[k] = sum.makespan;
        tp_exec_free(x);
        tp_backend_free(b);
    }
    uint64_t cap[TP_MAX_DEVICES], host;
    session_sizes(mgs, 2, 0, cap, &host);
    tp_backend *be = NULL;
    ASSERT_OK(tp_backend_sim_new(&p, 0, &be, &e));
    tp_session *s;
    uint64_t huge[2] = {cap[0], p.device_mem + 1};
    ASSERT_STATUS(tp_session_new(be, 2, huge, host, &s, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "device 1") && strstr(e.msg, "machine"), "%s", e.msg);
    ASSERT_STATUS(tp_session_new(be, 3, cap, host, &s, &e), TP_ERR_ARG);

    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    for (int k = 0; k < 2; k++) {
        tp_exec *x;
        ASSERT_OK_ERR(tp_exec_new_in(s, mgs[k], &ro, &x, &e), e);
        tp_run_summary sum;
        ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
        CHECKF(sum.makespan == alone[k], "plan %d: %.9g s in the session, %.9g s alone", k, sum.makespan, alone[k]);
        tp_exec_free(x);
    }
    tp_session_free(s);
    /* m2 is bigger than a session sized for m1 */
    session_sizes(mgs, 1, 0, cap, &host);
    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    tp_exec *x;
    ASSERT_STATUS(tp_exec_new_in(s, m2, &ro, &x, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "the session has"), "%s", e.msg);
    tp_session_free(s);

    tp_backend_free(be);
    tp_memgraph_free(m1);
    tp_memgraph_free(m2);
    tp_graph_free(g1);
    tp_graph_free(g2);
}

/* every run's summary counts that run alone: the bytes its copies moved, and on the sim
 * backend its lower bound, the same in each of three runs of one executor */
TEST(exec_summary_counts_each_run_on_its_own)
{
    tp_graph *g = mlp_chain(6, 2, 16);
    tp_memgraph *mg = plan_at(g, 4 * 16 * 16 * 4);
    uint64_t copies = 0; /* bytes of every copy vertex */
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_TRANSFER || v.kind == TP_M_OFFLOAD || v.kind == TP_M_RELOAD) copies += v.write.bytes;
    }
    ASSERT_GT(copies, 0);
    tp_sim_profile p = test_sim_profile("two", 2, 0.5, 1e11, 5e-6, 1e9, 1e9);
    tp_error e;
    for (int sim = 0; sim < 2; sim++) {
        tp_backend *be = NULL;
        if (sim) ASSERT_OK(tp_backend_sim_new(&p, 0, &be, &e));
        else ASSERT_OK(tp_backend_cpu_new(NULL, &be, &e));
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        tp_exec *x;
        ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
        tp_run_summary first;
        for (int r = 0; r < 3; r++) {
            tp_run_summary sum;
            ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
            ASSERT_EQ(sum.bytes_moved, copies);
            uint64_t summed = 0;
            for (int d = 0; d < sum.ndevices; d++)
                for (int k = 0; k < sum.nengines; k++) summed += sum.dev[d].bytes[k];
            ASSERT_EQ(summed, copies);
            if (!r) first = sum;
            for (int d = 0; d < sum.ndevices; d++) CHECK(!memcmp(sum.dev[d].bytes, first.dev[d].bytes, sizeof sum.dev[d].bytes));
            if (sim) {
                CHECK(sum.lower_bound > 0);
                CHECKF(sum.lower_bound == first.lower_bound, "run %d: bound %.9g, first run %.9g", r, sum.lower_bound,
                       first.lower_bound);
                ASSERT_NEAR(sum.makespan, first.makespan, 1e-9 * first.makespan); /* later on the clock: rounding */
            }
        }
        tp_exec_free(x);
        tp_backend_free(be);
    }
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* (e) a session freed while its executor lives stops it: the executor refuses to run, read or
 * write until it is freed, nothing leaks (ASan), and the backend is free for more */
TEST(exec_session_freed_before_its_executor)
{
    sess_fixture fx;
    sess_fixture_init(&fx, 3);
    tp_graph *g = fx.g;
    tp_memgraph *mg = fx.mg;
    uint64_t *cap = fx.cap, host = fx.host;
    tp_backend *be = fx.be;
    tp_run_opts ro = fx.ro;
    tp_error e;
    tp_session *s;
    tp_exec *x;
    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    ASSERT_OK_ERR(tp_exec_new_in(s, mg, &ro, &x, &e), e);
    uint8_t *o = inputs_run_output(x, NULL);
    free(o);
    tp_session_free(s);
    tp_run_summary sum;
    ASSERT_STATUS(tp_exec_run(x, &sum, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "session was freed"), "%s", e.msg);
    tp_region r = {TP_SPACE_DEVICE, 0, 0, 4};
    uint8_t b[4] = {0};
    ASSERT_STATUS(tp_exec_read(x, &r, b, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_exec_write(x, &r, b, &e), TP_ERR_ARG);
    tp_exec_free(x);
    /* the backend takes a new session, and an executor without one after it */
    ASSERT_OK_ERR(tp_session_new(be, 2, cap, host, &s, &e), e);
    tp_session_free(s);
    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
    o = inputs_run_output(x, NULL);
    free(o);
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* One executor at a time on a backend: a second on the sim backend is refused and leaves the
 * first able to run (sim_prepare freed the first's state, whose run then crashed); a region on
 * a device the plan does not have, or in no space, is refused by read and write (it passed
 * with 0 bytes and indexed past the arenas). */
TEST(exec_second_executor_and_bad_regions_refused)
{
    tp_graph *g = mlp_chain(4, 2, 16);
    tp_memgraph *mg = plan_at(g, 1u << 20);
    tp_sim_profile p = slow_kernels();
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK_ERR(tp_backend_sim_new(&p, 0, &be, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *a, *b = NULL;
    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &a, &e), e);
    ASSERT_STATUS(tp_exec_new(mg, be, &ro, &b, &e), TP_ERR_ARG);
    CHECKF(strstr(e.msg, "already prepared"), "%s", e.msg);
    tp_run_summary sum;
    ASSERT_OK_ERR(tp_exec_run(a, &sum, &e), e);
    tp_exec_free(a);
    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &b, &e), e); /* free again: the next one is made */
    tp_exec_free(b);
    tp_backend_free(be);
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &a, &e), e);
    float buf[4] = {0};
    const tp_region bad[] = {{TP_SPACE_DEVICE, -1, 0, 0}, {TP_SPACE_DEVICE, 2, 0, 0}, {TP_SPACE_DEVICE, 100000000, 0, 0},
                             {(tp_space)7, 0, 0, 4}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        ASSERT_STATUS(tp_exec_write(a, &bad[k], buf, &e), TP_ERR_ARG);
        ASSERT_STATUS(tp_exec_read(a, &bad[k], buf, &e), TP_ERR_ARG);
    }
    tp_region ok = {TP_SPACE_DEVICE, 1, 0, 4};
    ASSERT_OK_ERR(tp_exec_write(a, &ok, buf, &e), e);
    tp_exec_free(a);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* Compute-stream stall on memory counts a kernel with no successor that waits at the start
 * of the run: K reads only a resident input and must wait for the offload of A (the plan
 * below, written by hand). It was counted only for vertices with successors, so this run
 * reported 0 (and release() took the count below 0). */
TEST(exec_stall_mem_counts_a_waiting_sink)
{
    static const char tg[] =
        "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": [\n"
        " {\"id\": \"x\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024, \"resident\": {\"offset\": 0}},\n"
        " {\"id\": \"A\", \"kind\": \"kernel\", \"device\": 0, \"inputs\": [\"x\"], \"bytes\": 1048576, \"flops\": 1000},\n"
        " {\"id\": \"B\", \"kind\": \"kernel\", \"device\": 0, \"inputs\": [\"x\"], \"bytes\": 4194304, \"flops\": 1000},\n"
        " {\"id\": \"K\", \"kind\": \"kernel\", \"device\": 0, \"inputs\": [\"x\"], \"bytes\": 1024, \"flops\": 1000}\n"
        "], \"outputs\": [\"A\", \"B\", \"K\"]}\n";
    static const char mgj[] =
        "{\"format\": \"turnip.memgraph/1\",\n"
        " \"devices\": [{\"capacity\": 5243904}],\n"
        " \"host_bytes\": 1049600,\n"
        " \"vertices\": [\n"
        "  {\"id\": 0, \"kind\": \"input\", \"task\": \"x\", \"writes\": {\"space\": \"host\", \"offset\": 0, \"bytes\": 1024}, \"reads\": [], \"deps\": []},\n"
        "  {\"id\": 1, \"kind\": \"resident\", \"task\": \"x\", \"device\": 0, \"writes\": {\"space\": \"device\", \"device\": 0, \"offset\": 0, \"bytes\": 1024}, \"reads\": [], \"deps\": []},\n"
        "  {\"id\": 2, \"kind\": \"kernel\", \"task\": \"A\", \"device\": 0, \"writes\": {\"space\": \"device\", \"device\": 0, \"offset\": 1024, \"bytes\": 1048576}, \"reads\": [{\"from\": 1, \"space\": \"device\", \"device\": 0, \"offset\": 0, \"bytes\": 1024}], \"deps\": [1]},\n"
        "  {\"id\": 3, \"kind\": \"kernel\", \"task\": \"B\", \"device\": 0, \"writes\": {\"space\": \"device\", \"device\": 0, \"offset\": 1049600, \"bytes\": 4194304}, \"reads\": [{\"from\": 1, \"space\": \"device\", \"device\": 0, \"offset\": 0, \"bytes\": 1024}], \"deps\": [1]},\n"
        "  {\"id\": 4, \"kind\": \"offload\", \"task\": \"A\", \"device\": 0, \"writes\": {\"space\": \"host\", \"offset\": 1024, \"bytes\": 1048576}, \"reads\": [{\"from\": 2, \"space\": \"device\", \"device\": 0, \"offset\": 1024, \"bytes\": 1048576}], \"deps\": [2]},\n"
        "  {\"id\": 5, \"kind\": \"kernel\", \"task\": \"K\", \"device\": 0, \"writes\": {\"space\": \"device\", \"device\": 0, \"offset\": 1024, \"bytes\": 1024}, \"reads\": [{\"from\": 1, \"space\": \"device\", \"device\": 0, \"offset\": 0, \"bytes\": 1024}], \"deps\": [1, 4]}\n"
        " ],\n"
        " \"outputs\": [\n"
        "  {\"task\": \"A\", \"from\": 4, \"space\": \"host\", \"offset\": 1024, \"bytes\": 1048576},\n"
        "  {\"task\": \"B\", \"from\": 3, \"space\": \"device\", \"device\": 0, \"offset\": 1049600, \"bytes\": 4194304},\n"
        "  {\"task\": \"K\", \"from\": 5, \"space\": \"device\", \"device\": 0, \"offset\": 1024, \"bytes\": 1024}]}\n";
    char tp[] = "/tmp/tp_stall_tgXXXXXX", mp[] = "/tmp/tp_stall_mgXXXXXX";
    int ft = mkstemp(tp), fm = mkstemp(mp);
    CHECK(ft >= 0 && fm >= 0);
    CHECK(write(ft, tg, sizeof tg - 1) == (ssize_t)(sizeof tg - 1) && write(fm, mgj, sizeof mgj - 1) == (ssize_t)(sizeof mgj - 1));
    close(ft);
    close(fm);
    tp_graph *g;
    tp_memgraph *mg;
    tp_error e;
    ASSERT_OK_ERR(tp_graph_read_file(tp, &g, &e), e);
    ASSERT_OK_ERR(tp_memgraph_read_file(mp, g, &mg, NULL, &e), e);
    unlink(tp);
    unlink(mp);
    tp_sim_profile p = test_sim_profile("fast-kernels", 4, 0.5, 1e11, 1e-6, 1e10, 1e10); /* kernels done long before the offload */
    tp_backend *be = NULL;
    ASSERT_OK_ERR(tp_backend_sim_new(&p, 0, &be, &e), e);
    uint64_t cap = 1ull << 30;
    tp_session *ss;
    ASSERT_OK_ERR(tp_session_new(be, 1, &cap, 1ull << 30, &ss, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new_in(ss, mg, &ro, &x, &e), e);
    tp_run_summary s;
    ASSERT_OK_ERR(tp_exec_run(x, &s, &e), e);
    /* one stream: A, then B; A's offload starts when A ends and K when it ends, so the stream
     * idles, K waiting on memory alone, from B's end to the offload's: offload - B */
    double off = (double)(1u << 20) / p.d2h_bw, kb = p.launch_s + (double)(1024 + (4u << 20)) / p.mem_bw;
    CHECKF(fabs(s.dev[0].stall_mem - (off - kb)) <= 1e-9 * off, "stall_mem %.9g s, wanted the offload less B, %.9g s",
           s.dev[0].stall_mem, off - kb);
    tp_exec_free(x);
    tp_session_free(ss);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* An executor of mg on a cpu backend (*be; the caller frees both) whose link moves gbps GB/s,
 * every input written as zeros. */
static tp_exec *zero_exec_throttled(const tp_memgraph *mg, double gbps, tp_backend **be)
{
    tp_error e;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.link_gbps = gbps;
    *be = NULL;
    ASSERT_OK_ERR(tp_backend_cpu_new(&co, be, &e), e);
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new(mg, *be, &ro, &x, &e), e);
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) continue;
        void *buf = calloc(1, v.write.bytes + 1);
        ASSERT_OK_ERR(tp_exec_write(x, &v.write, buf, &e), e);
        free(buf);
    }
    return x;
}

/* Nothing runnable for a long time (one throttled 1 MiB reload of ~50 ms before a chain of
 * kernels): the executor and the workers sleep instead of spinning. The process's CPU time
 * over the run (every thread's, CLOCK_PROCESS_CPUTIME_ID) must stay below half the run's wall
 * time; a thread that spun through the wait would use about all of it. All inputs are zero, so
 * the output must be zero. */
TEST(exec_idle_run_burns_no_core)
{
    tp_graph *g = mlp_chain(4, 1, 512); /* 512x512 f32 weights: 1 MiB each */
    tp_memgraph *mg = plan_at(g, 16ull << 20);
    tp_error e;
    tp_backend *be;
    tp_exec *x = zero_exec_throttled(mg, 0.02, &be); /* 1 MiB in 52 ms; 5 reloads (x and 4 weights) on one link */
    tp_run_summary sum;
    struct timespec c0, c1, w0, w1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &w0);
    ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    tp_mvertex ov;
    tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[0], &ov);
    CHECK(ov.write.bytes <= (1u << 20));
    float *got = malloc(ov.write.bytes);
    ASSERT_OK_ERR(tp_exec_read(x, &ov.write, got, &e), e);
    for (uint64_t k = 0; k < ov.write.bytes / 4; k++) CHECKF(got[k] == 0.0f, "output %llu is %g", (unsigned long long)k, got[k]);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
    double wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) * 1e-9;
    CHECKF(wall > 0.2, "the throttled run took %.3f s, less than its copies need", wall);
    CHECKF(cpu < 0.5 * wall, "CPU time %.3f s over a run of %.3f s wall: a thread spins while nothing is runnable", cpu, wall);
    tp_exec_free(x);
    tp_backend_free(be);
    free(got);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* A throttled link is one DMA queue: a copy queued while the one before moves begins when that
 * one ends (cpu.c run_vertex), never earlier. Every reload of this plan is ready at the start
 * and queued two at a time (copy_depth 2), so a copy begun at its queue time instead would
 * overlap the one before: the run could not then take the bytes' time on the link. */

/* An executor of mg on be that has run once under ro: its run record in *rr (valid until the
 * executor is freed; the caller frees it), its makespan in *makespan if asked. */
static tp_exec *run_recorded(const tp_memgraph *mg, tp_backend *be, const tp_run_opts *ro, tp__run_record *rr, double *makespan)
{
    tp_error e;
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new(mg, be, ro, &x, &e), e);
    tp_run_summary sum;
    ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
    CHECK(tp__exec_record(x, rr));
    if (makespan) *makespan = sum.makespan;
    return x;
}

/* Each copy's recorded duration (t1 - t0) in mg's vertex order (copies only, *n of them), run
 * on a cpu backend whose link moves gbps GB/s, with copy jitter `jitter` and run seed `seed`. */
static double *copy_durations(const tp_memgraph *mg, double gbps, double jitter, uint64_t seed, uint32_t *n)
{
    tp_error e;
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.seed = seed;
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.link_gbps = gbps;
    co.jitter = jitter;
    tp_backend *be = NULL;
    ASSERT_OK_ERR(tp_backend_cpu_new(&co, &be, &e), e);
    tp__run_record rr;
    tp_exec *x = run_recorded(mg, be, &ro, &rr, NULL);
    double *d = malloc((rr.n + 1) * sizeof *d);
    *n = 0;
    for (uint32_t i = 0; i < rr.n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_TRANSFER || v.kind == TP_M_OFFLOAD || v.kind == TP_M_RELOAD) d[(*n)++] = rr.v[i].t1 - rr.v[i].t0;
    }
    tp_exec_free(x);
    tp_backend_free(be);
    return d;
}

/* The cpu backend's copy jitter (tp_cpu_opts.jitter) stretches or shrinks each copy of a
 * throttled link by exp(jitter x N(0,1)), seeded by the run's seed and the vertex. A copy of
 * 1 MiB at 0.02 GB/s is modeled at m = 52 ms and, without jitter, never ends sooner (a loaded
 * machine only makes it longer). With jitter 1 and seed 2 some copy must end well under m
 * (seen: 3 of the 5, at 0.34-0.49 m; the factors are a function of the seed and the vertex), the
 * same seed must shrink the same copies, and seed 1 must change some copy's time by more than
 * 1.5x: the random orders of the other tests vary their copies only if this works. */
TEST(exec_cpu_jitter_varies_copies_by_seed)
{
    tp_graph *g = mlp_chain(4, 1, 512); /* 1 MiB each: x and 4 weights reloaded */
    tp_memgraph *mg = plan_at(g, 16ull << 20);
    const double gbps = 0.02, m = (double)(1u << 20) / (gbps * 1e9);
    uint32_t n0, na, nb, nc;
    double *d0 = copy_durations(mg, gbps, 0, 2, &n0), *da = copy_durations(mg, gbps, 1.0, 2, &na);
    double *db = copy_durations(mg, gbps, 1.0, 2, &nb), *dc = copy_durations(mg, gbps, 1.0, 1, &nc);
    ASSERT_EQ(n0, 5);
    ASSERT_EQ(na, n0);
    ASSERT_EQ(nb, n0);
    ASSERT_EQ(nc, n0);
    int shrunk = 0, moved = 0;
    for (uint32_t k = 0; k < n0; k++) {
        CHECKF(d0[k] >= m * 0.999, "copy %u took %.4f s without jitter, modeled %.4f s", k, d0[k], m);
        if (da[k] < 0.7 * m) {
            shrunk++;
            CHECKF(db[k] < 0.9 * m, "copy %u: %.4f s with seed 2, then %.4f s with seed 2 again", k, da[k], db[k]);
        }
        if (da[k] > 1.5 * dc[k] || dc[k] > 1.5 * da[k]) moved++;
    }
    CHECKF(shrunk > 0, "no copy under 0.7 x %.4f s with jitter 1 and seed 2", m);
    CHECKF(moved > 0, "seeds 2 and 1 gave every copy the same time within 1.5x");
    free(d0);
    free(da);
    free(db);
    free(dc);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* Policy `random` draws its choice among the ready vertices from the run's seed: on the sim
 * backend without jitter (times are then a function of the order alone) the same seed gives
 * the same start times, and another seed other ones. Without this, the tests that compare
 * "random orders" could be comparing one order with itself. */
TEST(exec_random_order_follows_seed)
{
    tp_layered_opts lo;
    tp_layered_opts_init(&lo);
    lo.layers = 2;
    tp_graph *g;
    tp_error e;
    ASSERT_OK_ERR(tp_model_layered(&lo, &g, &e), e);
    tp_memgraph *mg = plan_at(g, 1ull << 30);
    double *t0[3], *t1[3];
    for (int r = 0; r < 3; r++) {
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.policy = "random";
        ro.seed = r < 2 ? 1 : 2;
        ASSERT_OK_ERR(sim_run(mg, &ro, &t0[r], &t1[r], &e), e);
    }
    uint32_t n = tp_memgraph_size(mg), same12 = 0, diff13 = 0;
    for (uint32_t i = 0; i < n; i++) {
        same12 += t0[0][i] == t0[1][i];
        diff13 += t0[0][i] != t0[2][i];
    }
    ASSERT_EQ(same12, n);
    CHECKF(diff13 > 0, "seeds 1 and 2 started all %u vertices at the same times", n);
    for (int r = 0; r < 3; r++) {
        free(t0[r]);
        free(t1[r]);
    }
    tp_memgraph_free(mg);
    tp_graph_free(g);
}
TEST(exec_throttled_link_moves_one_copy_at_a_time)
{
    tp_graph *g = mlp_chain(4, 1, 256); /* 256 KiB weights */
    tp_memgraph *mg = plan_at(g, 16ull << 20);
    tp_error e;
    tp_backend *be;
    const double gbps = 0.05; /* 256 KiB in 5.2 ms */
    tp_exec *x = zero_exec_throttled(mg, gbps, &be);
    for (int rep = 0; rep < 2; rep++) { /* a second run: the link's last end is from the first */
        tp_run_summary sum;
        ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
        CHECK(sum.bytes_moved >= 4u << 18);
        double link = (double)sum.bytes_moved / (gbps * 1e9);
        CHECKF(sum.makespan >= 0.999 * link, "run %d: makespan %.4f s, below the %.4f s its %llu bytes take on the link", rep,
               sum.makespan, link, (unsigned long long)sum.bytes_moved);
    }
    tp_exec_free(x);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* ---- the priority policy (critical path first) -------------------------------------------- */

/* Two independent chains on device 0 with one compute stream: short s1 -> s2, and long l1 ->
 * transfer to device 1 -> l2. Every kernel does 1e9 flops (1 ms at 1 TFLOP/s, memory free),
 * the transfer moves 4 MB at 1 GB/s (4 ms). The short chain comes first in the TaskGraph. */
static tp_graph *two_chains(uint32_t *l1, uint32_t *s1)
{
    tp_graph *g = tp_graph_new(2);
    tp_error e;
    uint32_t s2, t, l2;
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "s1", 0, "opaque", 0, NULL, TP_DT_NONE, -1, NULL, 8, NULL, 1e9, s1, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "s2", 0, "opaque", 1, s1, TP_DT_NONE, -1, NULL, 8, NULL, 1e9, &s2, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "l1", 0, "opaque", 0, NULL, TP_DT_NONE, -1, NULL, 4000000, NULL, 1e9, l1, &e), e);
    ASSERT_OK_ERR(tp_graph_add_transfer(g, "t", 1, *l1, &t, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "l2", 1, "opaque", 1, &t, TP_DT_NONE, -1, NULL, 8, NULL, 1e9, &l2, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, s2, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, l2, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    return g;
}

/* the MemGraph vertex of TaskGraph kernel `task` */
static uint32_t kernel_vertex(const tp_memgraph *mg, uint32_t task)
{
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind == TP_M_KERNEL && v.task == task) return i;
    }
    CHECKF(0, "no kernel vertex for task %u", task);
    return 0;
}

/* runs mg once under `policy` with one stream; the makespan, and the start and end of two
 * vertices from the run record */
static double run_two(const tp_memgraph *mg, tp_backend *be, const char *policy, uint32_t a, uint32_t b, double *t0, double *t1)
{
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    ro.policy = policy;
    tp__run_record rr;
    double makespan;
    tp_exec *x = run_recorded(mg, be, &ro, &rr, &makespan);
    t0[0] = rr.v[a].t0 - rr.start, t1[0] = rr.v[a].t1 - rr.start;
    t0[1] = rr.v[b].t0 - rr.start, t1[1] = rr.v[b].t1 - rr.start;
    tp_exec_free(x);
    return makespan;
}

/* On the sim backend (its own cost model) the long chain's l1 starts first, at 0, and s1 when
 * it ends: the makespan is l1 + transfer + l2 = 6 ms exactly, where the plan's order (fixed,
 * and any's first come first served) starts s1 first and ends later. On the cpu backend (no
 * cost model: the executor's generic estimate) l1 also starts first. */
TEST(exec_priority_starts_the_longer_critical_path_first)
{
    uint32_t l1t, s1t;
    tp_graph *g = two_chains(&l1t, &s1t);
    tp_memgraph *mg = plan_at(g, 1 << 30);
    uint32_t l1 = kernel_vertex(mg, l1t), s1 = kernel_vertex(mg, s1t);
    CHECKF(s1 < l1, "the plan puts s1 (%u) after l1 (%u): the test wants the short chain first in plan order", s1, l1);
    tp_sim_profile p = test_sim_profile("two-chains", 2, 1, 1e30, 0, 1e9, 1e9);
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_OK_ERR(tp_backend_sim_new(&p, 0, &be, &e), e);
    double t0[2], t1[2];
    double ms = run_two(mg, be, "priority", l1, s1, t0, t1);
    const double k = 1e9 / p.peak_flops, copy = 4e6 / p.peer_bw;
    CHECKF(t0[0] == 0 && t0[1] == t1[0], "l1 runs [%g, %g], s1 [%g, %g]: l1 should start first", t0[0], t1[0], t0[1], t1[1]);
    CHECKF(fabs(ms - (k + copy + k)) <= 1e-12, "priority makespan %.12g, wanted l1 + transfer + l2 = %.12g", ms, k + copy + k);
    double fixed = run_two(mg, be, "fixed", l1, s1, t0, t1), any = run_two(mg, be, "any", l1, s1, t0, t1);
    printf("makespan: priority %.3f ms, fixed %.3f ms, any %.3f ms\n", ms * 1e3, fixed * 1e3, any * 1e3);
    CHECKF(fixed > ms + 0.5 * k && any > ms + 0.5 * k, "fixed %.9g and any %.9g should start s1 first and end later", fixed, any);
    tp_backend_free(be);
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    run_two(mg, be, "priority", l1, s1, t0, t1);
    CHECKF(t1[0] <= t0[1], "cpu backend: l1 runs [%g, %g], s1 [%g, %g]: l1 should run first", t0[0], t1[0], t0[1], t1[1]);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* the priority policy only reorders: on the cpu backend with copy jitter, at caps that force
 * offloads, every stream count gives outputs bit-identical to the fixed order's */
TEST(exec_priority_same_result_as_fixed)
{
    tp_graph *g = mlp_chain(12, 3, 24);
    tp_error e;
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.jitter = 1.0;
    co.link_latency_us = 30;
    const uint64_t caps[] = {4 * 24 * 24 * 4, 6 * 24 * 24 * 4, 1 << 20};
    for (int c = 0; c < 3; c++) {
        tp_memgraph *mg = plan_at(g, caps[c]);
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.policy = "fixed";
        tp_status st;
        uint8_t *ref = run_once(mg, &ro, &co, &st, &e);
        CHECKF(st == TP_OK, "%s", e.msg);
        for (int streams = 1; streams <= 3; streams++) {
            ro.policy = "priority";
            ro.streams = streams;
            ro.seed = (uint64_t)(c * 3 + streams); /* the copy jitter's */
            uint8_t *o = run_once(mg, &ro, &co, &st, &e);
            CHECKF(st == TP_OK, "%s", e.msg);
            CHECKF(!memcmp(o, ref, out_bytes(mg)), "cap %llu, %d streams: priority's output differs from fixed's",
                   (unsigned long long)caps[c], streams);
            free(o);
        }
        free(ref);
        tp_memgraph_free(mg);
    }
    tp_graph_free(g);
}

/* The random graphs of the property tests (every family; sums lowered into groups), planned at
 * the smallest caps (offloads forced), complete under priority on the sim backend (with and
 * without --deterministic, 1-3 streams, jitter, wake-ups) and on the cpu backend: no deadlock;
 * in the sim's record every vertex starts after each of its deps ended; two sim runs agree,
 * and neither beats the lower bound. */
TEST(exec_priority_never_deadlocks_on_random_graphs)
{
    tp_sim_profile p = test_sim_profile("prio-random", 4, 0.5, 1e11, 3e-6, 1e9, 2e9);
    p.wake_s = 2e-5;
    p.wake_after_s = 1e-5;
    p.copy_latency_s = 5e-6;
    int offloading = 0;
    for (int i = 0; i < 2 * GEN_NFAMILIES * 3; i++) {
        tp_graph *g = gen_graph((uint64_t)i + 700, i % GEN_NFAMILIES);
        tp_error e;
        tp_memgraph *mg;
        ASSERT_OK_ERR(gen_plan_min(g, &mg, &e), e);
        uint32_t n = tp_memgraph_size(mg);
        for (uint32_t v = 0; v < n; v++) {
            tp_mvertex mv;
            tp_memgraph_vertex(mg, v, &mv);
            if (mv.kind == TP_M_OFFLOAD) {
                offloading++;
                break;
            }
        }
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        ro.policy = "priority";
        ro.streams = 1 + i % 3;
        ro.deterministic = (i / GEN_NFAMILIES) % 2;
        ro.seed = (uint64_t)i;
        tp_backend *be = NULL;
        tp_exec *x;
        double makespan[2] = {0, 0};
        for (int rep = 0; rep < 2; rep++) { /* two runs, each on a fresh backend: the same */
            ASSERT_OK_ERR(tp_backend_sim_new(&p, 0.3, &be, &e), e);
            ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
            tp_run_summary a;
            ASSERT_OK_ERR(tp_exec_run(x, &a, &e), e);
            CHECKF(a.makespan >= a.lower_bound * (1 - 1e-9), "graph %d, %d streams: makespan %.17g below the bound %.17g", i,
                   ro.streams, a.makespan, a.lower_bound);
            makespan[rep] = a.makespan;
            tp__run_record rr;
            CHECK(tp__exec_record(x, &rr));
            for (uint32_t v = 0; v < n && !rep; v++) {
                tp_mvertex mv;
                tp_memgraph_vertex(mg, v, &mv);
                for (uint32_t k = 0; k < mv.ndeps; k++)
                    CHECKF(rr.v[v].t0 >= rr.v[mv.deps[k]].t1, "graph %d: vertex %u starts at %g before its dep %u ends at %g", i,
                           v, rr.v[v].t0, mv.deps[k], rr.v[mv.deps[k]].t1);
            }
            tp_exec_free(x);
            tp_backend_free(be);
        }
        CHECKF(makespan[0] == makespan[1], "graph %d: two runs, makespans %.17g and %.17g", i, makespan[0], makespan[1]);
        ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
        ro.streams = 1 + i % 2;
        ASSERT_OK_ERR(tp_exec_new(mg, be, &ro, &x, &e), e);
        tp_run_summary c;
        ASSERT_OK_ERR(tp_exec_run(x, &c, &e), e);
        ASSERT_EQ(c.vertices, (uint64_t)n);
        tp_exec_free(x);
        tp_backend_free(be);
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
    printf("%d of %d plans offload\n", offloading, 2 * GEN_NFAMILIES * 3);
    ASSERT_GE(offloading, GEN_NFAMILIES);
}
