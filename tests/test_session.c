/* test_session.c - sessions (issue 11): random graphs of real ops run as sequences of plans in
 * one session, with resident inputs carried from run to run, kept values and in-place kernels,
 * under tight caps and in every dispatch order; every plan verifies and every run's outputs
 * are bit-identical to a fresh, unconstrained run of the same graph. And a value updated in
 * place, evicted and kept is read by the next plan as its new value, never a stale host copy. */
#include <string.h>
#include <unistd.h>
#include "turnip/turnip.h"
#include "harness.h"
#include "plan_check.h"

enum { N = 8 }; /* every value is an N x N f32 matrix (256 B) */

static uint64_t rng(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* A random DAG of matmul/add/mul/silu on 1 or 2 devices (values cross by transfers), with
 * random "keep" declarations on inputs and outputs and "inplace" on elementwise kernels. */
static tp_graph *random_graph(uint64_t seed)
{
    uint64_t s = seed * 7919 + 17;
    int nd = 1 + (int)(rng(&s) % 2), nin = 3 + (int)(rng(&s) % 4), nk = 8 + (int)(rng(&s) % 12);
    tp_graph *g = tp_graph_new(nd);
    tp_error e;
    int64_t shp[2] = {N, N};
    uint32_t val[64], nval = 0, consumers[64] = {0};
    char id[32];
    static const char *ops[] = {"matmul", "add", "mul", "silu"};
    for (int i = 0; i < nin; i++) {
        snprintf(id, sizeof id, "in%d", i);
        CHECK(tp_graph_add_input(g, id, (int)(rng(&s) % (uint64_t)nd), TP_DT_F32, 2, shp, 0, &val[nval++], &e) == TP_OK);
    }
    for (int k = 0; k < nk; k++) {
        int d = (int)(rng(&s) % (uint64_t)nd);
        const char *op = ops[rng(&s) % 4];
        int ar = strcmp(op, "silu") ? 2 : 1;
        uint32_t in[2];
        for (int a = 0; a < ar; a++) {
            uint32_t v = val[rng(&s) % nval];
            if (tp_graph_vertex(g, v)->device != d) { /* bring it over */
                snprintf(id, sizeof id, "x%d_%d", k, a);
                CHECK(tp_graph_add_transfer(g, id, d, v, &v, &e) == TP_OK);
                val[nval++] = v;
            }
            in[a] = v;
            consumers[v]++;
        }
        snprintf(id, sizeof id, "k%d", k);
        uint32_t out;
        CHECK(tp_graph_add_kernel(g, id, d, op, (uint32_t)ar, in, TP_DT_F32, 2, shp, 0, NULL, 0, &out, &e) == TP_OK);
        if (strcmp(op, "matmul") && (ar == 1 || in[0] != in[1]) && rng(&s) % 2)
            CHECK(tp_graph_set_inplace(g, out, 0, &e) == TP_OK);
        val[nval++] = out;
        if (nval > 56) break;
    }
    /* outputs: every kernel nobody reads, and a few more; keep some outputs and inputs */
    for (uint32_t v = 0; v < nval; v++) {
        const tp_vertex *x = tp_graph_vertex(g, val[v]);
        if (x->kind == TP_V_KERNEL && (!consumers[val[v]] || rng(&s) % 5 == 0)) {
            CHECK(tp_graph_add_output(g, val[v], &e) == TP_OK);
            if (rng(&s) % 2) CHECK(tp_graph_set_keep(g, val[v], &e) == TP_OK);
        }
        if (x->kind == TP_V_INPUT && rng(&s) % 3) CHECK(tp_graph_set_keep(g, val[v], &e) == TP_OK);
    }
    CHECKF(tp_graph_finalize(g, &e) == TP_OK, "%s", e.msg);
    return g;
}

/* the input values: a function of the input's id */
static void input_values(const char *id, float *buf, uint64_t n)
{
    uint64_t s = 1469598103934665603ull;
    for (const char *c = id; *c; c++) s = (s ^ (uint8_t)*c) * 1099511628211ull;
    for (uint64_t k = 0; k < n; k++) buf[k] = (float)(rng(&s) % 2001) / 2000.0f - 0.5f;
}

static tp_status write_inputs(tp_exec *x, const tp_memgraph *mg, tp_error *e)
{
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        if (v.kind != TP_M_INPUT) continue;
        float *buf = malloc(v.write.bytes);
        CHECK(buf != NULL);
        input_values(tp_graph_vertex(g, v.task)->id, buf, v.write.bytes / sizeof *buf);
        tp_status s = tp_exec_write(x, &v.write, buf, e);
        free(buf);
        if (s) return s;
    }
    return TP_OK;
}

/* every output's bytes, in output order (caller frees) */
static float *read_outputs(tp_exec *x, const tp_memgraph *mg, tp_error *e)
{
    uint32_t no = tp_graph_num_outputs(tp_memgraph_taskgraph(mg));
    float *o = malloc((size_t)no * N * N * sizeof *o + 1);
    for (uint32_t k = 0; k < no; k++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[k], &v);
        CHECKF(tp_exec_read(x, &v.write, o + (size_t)k * N * N, e) == TP_OK, "%s", e->msg);
    }
    return o;
}

/* One run of mg (default options when ro is NULL) in session ss, or by a plain executor on be
 * when ss is NULL, every input written; its outputs when `outputs` (each N x N; caller frees),
 * else NULL. */
static float *run_plan(tp_session *ss, tp_backend *be, const tp_memgraph *mg, const tp_run_opts *ro, int outputs)
{
    tp_error e;
    tp_run_opts def;
    if (!ro) {
        tp_run_opts_init(&def);
        ro = &def;
    }
    tp_exec *x;
    ASSERT_OK_ERR(ss ? tp_exec_new_in(ss, mg, ro, &x, &e) : tp_exec_new(mg, be, ro, &x, &e), e);
    ASSERT_OK_ERR(write_inputs(x, mg, &e), e);
    tp_run_summary sum;
    ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
    float *o = outputs ? read_outputs(x, mg, &e) : NULL;
    tp_exec_free(x);
    return o;
}

/* The reference for graph g: its outputs from a fresh run on be with room for everything, every
 * input copied in (caller frees). */
static float *fresh_outputs(const tp_graph *g, tp_backend *be)
{
    tp_error e;
    tp_plan_opts po;
    tp_plan_opts_init(&po, tp_graph_devices(g), 1 << 20);
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
    float *ref = run_plan(NULL, be, mg, NULL, 1);
    tp_memgraph_free(mg);
    return ref;
}


/* run r of seed's random-session tests: its dispatch policy and seed, varied over the runs */
static void order_of_run(tp_run_opts *ro, uint64_t seed, int r)
{
    static const char *pol[] = {"fixed", "any", "random", "priority"};
    ro->policy = pol[(seed + (uint64_t)r) % 4];
    ro->seed = seed * 10 + (uint64_t)r;
}

/* the start of one seed of a random-session test: its graph, a cpu backend, and the outputs of
 * a fresh run (the reference, the caller's) */
static float *seed_start(uint64_t seed, tp_graph **g, tp_backend **be)
{
    tp_error e;
    *g = random_graph(seed);
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, be, &e), e);
    return fresh_outputs(*g, *be);
}

/* the end of one seed of a random-session test: its session, backend, reference and graph */
static void seed_done(tp_session *ss, tp_backend *be, float *ref, tp_graph *g)
{
    tp_session_free(ss);
    tp_backend_free(be);
    free(ref);
    tp_graph_free(g);
}

/* got (freed here) holds g's outputs, N x N floats each, exactly as the fresh run's ref */
static void same_as_fresh(float *got, const float *ref, const tp_graph *g, uint64_t seed, int r, const char *policy)
{
    CHECKF(!memcmp(got, ref, (size_t)tp_graph_num_outputs(g) * N * N * sizeof *got),
           "seed %llu run %d (%s order): outputs differ from the fresh run", (unsigned long long)seed, r + 1, policy);
    free(got);
}
/* Tight caps for g into po: each device's smallest feasible cap (or its kept outputs, if more)
 * plus 0..spread-1 values, drawn from s. */
static void tight_caps(const tp_graph *g, tp_plan_opts *po, uint64_t *s, int spread)
{
    tp_error e;
    uint64_t minf[TP_MAX_DEVICES], kept[TP_MAX_DEVICES] = {0};
    ASSERT_OK_ERR(tp_plan_bounds(g, TP_ORDER_DEFAULT, minf, NULL, &e), e);
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++) {
        uint32_t o = tp_graph_outputs(g)[k];
        if (tp_graph_keep(g, o)) kept[tp_graph_vertex(g, o)->device] += N * N * 4;
    }
    for (int d = 0; d < tp_graph_devices(g); d++) /* the kept outputs fit beside the largest need */
        po->device_mem[d] = (minf[d] > kept[d] ? minf[d] : kept[d]) + (rng(s) % (uint64_t)spread) * N * N * 4;
}

TEST(session_random_sequences_match_fresh_runs)
{
    int resident_runs = 0, inplace_plans = 0, evicting = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        tp_graph *g;
        tp_backend *be;
        float *ref = seed_start(seed, &g, &be); /* the reference */
        int nd = tp_graph_devices(g);
        tp_error e;
        /* the session: 2-5 runs at a tight cap */
        uint64_t s = seed;
        tp_plan_opts po;
        tp_plan_opts_init(&po, nd, 1 << 20);
        tight_caps(g, &po, &s, 3);
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        tp_memgraph *mg;
        tp_session *ss;
        ASSERT_OK_ERR(tp_session_new(be, nd, po.device_mem, 1 << 20, &ss, &e), e);
        po.host_mem = 1 << 20;
        int runs = 2 + (int)(rng(&s) % 4);
        for (int r = 0; r < runs; r++) {
            ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
            verify(mg, g);
            resident_runs += count_kind(mg, TP_M_RESIDENT) > 0;
            evicting += count_kind(mg, TP_M_OFFLOAD) > 0;
            for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
                tp_mvertex v;
                tp_memgraph_vertex(mg, i, &v);
                inplace_plans += v.inplace >= 0 && r == 0;
            }
            order_of_run(&ro, seed, r);
            ro.streams = 1 + r % 2;
            float *got = run_plan(ss, NULL, mg, &ro, 1);
            same_as_fresh(got, ref, g, seed, r, ro.policy);
            ASSERT_OK_ERR(tp_plan_carry_inputs(g, mg, NULL, &e), e);
            tp_memgraph_free(mg);
        }
        seed_done(ss, be, ref, g);
    }
    /* the property must have been exercised */
    CHECKF(resident_runs >= 25, "only %d runs started with resident inputs", resident_runs);
    CHECKF(inplace_plans >= 20, "only %d in-place kernels planned", inplace_plans);
    CHECKF(evicting >= 10, "only %d plans offloaded anything", evicting);
}

/* An optimizer-like step: w2 = w + g written over w, then evicted by a kernel that needs the
 * whole device (w2 has no valid host copy: it must be offloaded, not dropped), kept at the end
 * (reloaded). The next plan reads it as a resident input without a host copy. */
TEST(session_inplace_value_evicted_and_kept_is_never_stale)
{
    const char *g1 = "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
                     "{\"id\": \"w\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [8, 8]},"
                     "{\"id\": \"g\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [8, 8]},"
                     "{\"id\": \"big\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [16, 8]},"
                     "{\"id\": \"w2\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"add\", \"inputs\": [\"w\", \"g\"],"
                     " \"dtype\": \"f32\", \"shape\": [8, 8], \"inplace\": 0},"
                     "{\"id\": \"b2\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"silu\", \"inputs\": [\"big\"],"
                     " \"dtype\": \"f32\", \"shape\": [16, 8]}],"
                     " \"outputs\": [\"w2\", \"b2\"], \"keep\": [\"w2\"]}";
    tp_graph *g = load(g1);
    tp_error e;
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, 1024); /* b2 needs all of it: w2 must leave, then come back */
    po.order = TP_ORDER_TOPO;
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
    verify(mg, g);
    ASSERT_EQ(count_kind(mg, TP_M_OFFLOAD), 1); /* w2 offloaded: its only valid copy */
    uint32_t nk;
    const uint32_t *kept = tp_memgraph_kept(mg, &nk);
    ASSERT_EQ(nk, 1u);
    tp_mvertex kv;
    tp_memgraph_vertex(mg, kept[0], &kv);
    ASSERT_EQ(kv.kind, TP_M_RELOAD);
    ASSERT_EQ(kv.write.space, TP_SPACE_DEVICE);
    tp_backend *be;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    tp_session *ss;
    ASSERT_OK_ERR(tp_session_new(be, 1, po.device_mem, 1 << 16, &ss, &e), e);
    run_plan(ss, NULL, mg, NULL, 0);
    /* the next plan: y = w2 * w2, w2 resident where the last plan kept it, no host copy */
    char g2[1024];
    snprintf(g2, sizeof g2,
             "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
             "{\"id\": \"w2\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [8, 8],"
             " \"resident\": {\"offset\": %llu, \"host_copy\": false}},"
             "{\"id\": \"y\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"mul\", \"inputs\": [\"w2\", \"w2\"],"
             " \"dtype\": \"f32\", \"shape\": [8, 8]}], \"outputs\": [\"y\"]}",
             (unsigned long long)kv.write.offset);
    tp_graph *h = load(g2);
    tp_memgraph *mh;
    ASSERT_OK_ERR(tp_plan(h, &po, &mh, &e), e);
    verify(mh, h);
    ASSERT_EQ(count_kind(mh, TP_M_INPUT), 0);
    ASSERT_EQ(count_kind(mh, TP_M_RESIDENT), 1);
    float *y = run_plan(ss, NULL, mh, NULL, 1); /* no inputs to write: w2 is resident */
    float w[N * N], gg[N * N];
    input_values("w", w, N * N);
    input_values("g", gg, N * N);
    for (int k = 0; k < N * N; k++) {
        float w2 = w[k] + gg[k];
        CHECKF(y[k] == w2 * w2, "y[%d] = %g, want (w + g)^2 = %g (w^2 = %g: a stale copy)", k, y[k], w2 * w2, w[k] * w[k]);
    }
    free(y);
    tp_memgraph_free(mh);
    tp_graph_free(h);
    tp_session_free(ss);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* a plain executor for mg on the cpu backend is refused with status want, saying msg */
static void exec_refused(const tp_memgraph *mg, tp_status want, const char *msg)
{
    tp_backend *be;
    tp_error e;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *x = NULL;
    ASSERT_EQ(tp_exec_new(mg, be, &ro, &x, &e), want);
    CHECKF(strstr(e.msg, msg), "message: %s", e.msg);
    tp_backend_free(be);
}

/* A resident input needs a session: a plain executor refuses the plan. */
TEST(session_resident_plan_needs_a_session)
{
    tp_graph *g = load("{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
                       "{\"id\": \"w\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [8, 8],"
                       " \"resident\": {\"offset\": 256}},"
                       "{\"id\": \"y\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"silu\", \"inputs\": [\"w\"],"
                       " \"dtype\": \"f32\", \"shape\": [8, 8]}], \"outputs\": [\"y\"]}");
    tp_error e;
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, 1024);
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
    exec_refused(mg, TP_ERR_ARG, "session");
    /* and a resident region outside the device is refused by the planner */
    tp_memgraph_free(mg);
    tp_plan_opts_init(&po, 1, 300);
    ASSERT_EQ(tp_plan(g, &po, &mg, &e), TP_ERR_INFEASIBLE);
    tp_graph_free(g);
}

/* A KV-cache append across runs: the cache stays on the device (resident, no host copy, kept),
 * and each step writes one row into it in place: the step moves the row's bytes only. */
TEST(session_cache_append_moves_one_row)
{
    enum { ROWS = 16, D = 8 };
    tp_error e;
    tp_backend *be;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    uint64_t cap = 2048;
    tp_session *ss;
    ASSERT_OK_ERR(tp_session_new(be, 1, &cap, 1 << 16, &ss, &e), e);
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, cap);
    float want[ROWS * D];
    memset(want, 0, sizeof want); /* the session's arena starts zeroed: so does the cache */
    uint64_t at = 0;
    for (int t = 0; t < 6; t++) {
        char g[1200];
        snprintf(g, sizeof g,
                 "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
                 "{\"id\": \"cache\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [%d, %d],"
                 " \"resident\": {\"offset\": %llu, \"host_copy\": false}},"
                 "{\"id\": \"row\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [1, %d]},"
                 "{\"id\": \"next\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"write_slice\", \"inputs\": [\"cache\", \"row\"],"
                 " \"dtype\": \"f32\", \"shape\": [%d, %d], \"attrs\": {\"axis\": 0, \"start\": %d}, \"inplace\": 0}],"
                 " \"outputs\": [\"next\"], \"keep\": [\"next\"]}",
                 ROWS, D, (unsigned long long)at, D, ROWS, D, t);
        tp_graph *gr = load(g);
        tp_memgraph *mg;
        ASSERT_OK_ERR(tp_plan(gr, &po, &mg, &e), e);
        verify(mg, gr);
        uint32_t nk;
        const uint32_t *kept = tp_memgraph_kept(mg, &nk);
        ASSERT_EQ(nk, 1u);
        tp_mvertex kv;
        tp_memgraph_vertex(mg, kept[0], &kv);
        ASSERT_EQ(kv.kind, TP_M_KERNEL);
        ASSERT_EQ(kv.inplace, 0);          /* written where the cache was */
        ASSERT_EQ(kv.write.offset, at);
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        tp_exec *x;
        ASSERT_OK_ERR(tp_exec_new_in(ss, mg, &ro, &x, &e), e);
        float row[D];
        for (int k = 0; k < D; k++) row[k] = want[t * D + k] = (float)(t * 100 + k);
        for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
            tp_mvertex v;
            tp_memgraph_vertex(mg, i, &v);
            if (v.kind == TP_M_INPUT) ASSERT_OK_ERR(tp_exec_write(x, &v.write, row, &e), e);
        }
        tp_run_summary sum;
        ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
        ASSERT_EQ(sum.bytes_moved, (uint64_t)D * 4); /* the row, never the cache */
        float got[ROWS * D];
        ASSERT_OK_ERR(tp_exec_read(x, &kv.write, got, &e), e);
        CHECKF(!memcmp(got, want, sizeof got), "step %d: the cache is not the rows written so far", t);
        at = kv.write.offset;
        tp_exec_free(x);
        tp_memgraph_free(mg);
        tp_graph_free(gr);
    }
    tp_session_free(ss);
    tp_backend_free(be);
}

/* plans text at cap (topological order) and verifies it; the caller frees both */
static tp_memgraph *plan_text(const char *text, uint64_t cap, tp_graph **g)
{
    *g = load(text);
    tp_error e;
    tp_plan_opts po;
    tp_plan_opts_init(&po, tp_graph_devices(*g), cap);
    po.order = TP_ORDER_TOPO;
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(*g, &po, &mg, &e), e);
    verify(mg, *g);
    return mg;
}

/* Review findings, kept as regressions. A kept input whose only copy is the device's (no host
 * copy) that had to be offloaded comes back at the end and is listed as kept; kept outputs
 * that fragments would separate are packed; carry refuses to lose such an input. */
TEST(session_kept_values_without_host_copy_and_fragments)
{
    tp_graph *g;
    tp_memgraph *mg = plan_text("{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
                                "{\"id\": \"c\", \"kind\": \"input\", \"device\": 0, \"bytes\": 1024,"
                                " \"resident\": {\"offset\": 0, \"host_copy\": false}},"
                                "{\"id\": \"k0\", \"kind\": \"kernel\", \"device\": 0, \"inputs\": [\"c\"], \"bytes\": 1024},"
                                "{\"id\": \"k1\", \"kind\": \"kernel\", \"device\": 0, \"inputs\": [\"k0\"], \"bytes\": 2048}],"
                                " \"outputs\": [\"k1\"], \"keep\": [\"c\"]}",
                                3072, &g);
    uint32_t nk;
    const uint32_t *kept = tp_memgraph_kept(mg, &nk);
    ASSERT_EQ(nk, 1u);
    tp_mvertex kv;
    tp_memgraph_vertex(mg, kept[0], &kv);
    ASSERT_EQ(kv.kind, TP_M_RELOAD); /* offloaded under pressure, back at the end */
    tp_error e;
    char *text; /* the verifier refuses the plan without its kept list: the value would be lost */
    size_t len;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &text, &len, &e), e);
    char *k = strstr(text, ",\n \"kept\"");
    CHECK(k != NULL);
    strcpy(k, "}\n");
    ASSERT_EQ(tp_verify_json(text, strlen(text), "plan", g, &e), TP_ERR_CHECK);
    CHECKF(strstr(e.msg, "no host copy"), "message: %s", e.msg);
    free(text);
    ASSERT_OK_ERR(tp_plan_carry_inputs(g, mg, NULL, &e), e);
    uint64_t off;
    int hc;
    ASSERT_EQ(tp_graph_resident(g, 0, &off, &hc), 1);
    ASSERT_EQ(off, kv.write.offset);
    ASSERT_EQ(hc, 0);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    mg = plan_text("{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
                   "{\"id\": \"a\", \"kind\": \"input\", \"device\": 0, \"bytes\": 256},"
                   "{\"id\": \"k0\", \"kind\": \"kernel\", \"device\": 0, \"inputs\": [\"a\"], \"bytes\": 2048},"
                   "{\"id\": \"k1\", \"kind\": \"kernel\", \"device\": 0, \"inputs\": [\"a\"], \"bytes\": 2048}],"
                   " \"outputs\": [\"k0\", \"k1\"], \"keep\": [\"k0\", \"k1\"]}",
                   4096, &g);
    tp_memgraph_kept(mg, &nk);
    ASSERT_EQ(nk, 2u);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* In place only element for element: an add over its broadcast f32 input, whose bytes equal
 * the bf16 output's, would let one thread overwrite what another still reads. */
TEST(session_inplace_needs_element_for_element)
{
    tp_graph *g;
    tp_memgraph *mg = plan_text("{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
                                "{\"id\": \"a\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"bf16\", \"shape\": [2, 64]},"
                                "{\"id\": \"b\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [64]},"
                                "{\"id\": \"s\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"scale\", \"inputs\": [\"b\"],"
                                " \"dtype\": \"f32\", \"shape\": [64], \"attrs\": {\"alpha\": 2}},"
                                "{\"id\": \"k\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"add\", \"inputs\": [\"a\", \"s\"],"
                                " \"dtype\": \"bf16\", \"shape\": [2, 64], \"inplace\": 1}], \"outputs\": [\"k\"]}",
                                1 << 20, &g);
    exec_refused(mg, TP_ERR_INVALID, "cannot write its output over its input 1");
    tp_memgraph_free(mg);
    tp_graph_free(g);
}

/* ---- cache tensors (issue 12): resident inputs with "load" and "pin" -------------------- */

/* One step of a decode-like plan over cache tensors on one device: w (pinned; loaded by the
 * plan when `load_w`), kv (pinned, no host copy, appended in place at row t), pf (pinned and
 * loaded, read by nothing: a prefetch), x and big (plain inputs), filler temporaries that
 * press on the memory around the pinned regions. */
static void pin_graph(char *buf, size_t n, int t, int load_w, int pin, int nbig)
{
    snprintf(buf, n,
             "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
             "{\"id\": \"w\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [4, 8],"
             " \"resident\": {\"offset\": 1024, \"load\": %s, \"pin\": %s}},"
             "{\"id\": \"kv\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [16, 8],"
             " \"resident\": {\"offset\": 2048, \"host_copy\": false, \"pin\": %s}},"
             "{\"id\": \"pf\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [64],"
             " \"resident\": {\"offset\": 3072, \"load\": true, \"pin\": %s}},"
             "{\"id\": \"x\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [1, 4]},"
             "{\"id\": \"big\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [%d]},"
             "{\"id\": \"y\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"],"
             " \"dtype\": \"f32\", \"shape\": [1, 8]},"
             "{\"id\": \"b1\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"scale\", \"inputs\": [\"big\"],"
             " \"dtype\": \"f32\", \"shape\": [%d], \"attrs\": {\"alpha\": 2}},"
             "{\"id\": \"b2\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"scale\", \"inputs\": [\"b1\"],"
             " \"dtype\": \"f32\", \"shape\": [%d], \"attrs\": {\"alpha\": 3}},"
             "{\"id\": \"kv2\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"write_slice\", \"inputs\": [\"kv\", \"y\"],"
             " \"dtype\": \"f32\", \"shape\": [16, 8], \"attrs\": {\"axis\": 0, \"start\": %d}, \"inplace\": 0},"
             "{\"id\": \"s\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"slice\", \"inputs\": [\"kv2\"],"
             " \"dtype\": \"f32\", \"shape\": [%d, 8], \"attrs\": {\"axis\": 0, \"start\": 0, \"length\": %d}},"
             "{\"id\": \"b3\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"scale\", \"inputs\": [\"b2\"],"
             " \"dtype\": \"f32\", \"shape\": [%d], \"attrs\": {\"alpha\": 1}}],"
             " \"outputs\": [\"s\", \"b3\"]}",
             load_w ? "true" : "false", pin ? "true" : "false", pin ? "true" : "false", pin ? "true" : "false", nbig, nbig, nbig,
             t, t + 1, t + 1, nbig);
}

/* the MemGraph vertex writing task `id`'s first device copy, and its kind */
static tp_mvertex first_copy(const tp_memgraph *mg, const tp_graph *g, const char *id)
{
    tp_mvertex v, none = {0};
    int64_t t = tp_graph_find(g, id);
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_memgraph_vertex(mg, i, &v);
        if ((int64_t)v.task == t && v.write.space == TP_SPACE_DEVICE) return v;
    }
    return none;
}

TEST(session_pinned_cache_tensors_stay_and_load_in_place)
{
    enum { CAP = 4096 + 1024 };
    tp_error e;
    tp_backend *be;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    uint64_t cap = CAP;
    tp_session *ss;
    ASSERT_OK_ERR(tp_session_new(be, 1, &cap, 1 << 16, &ss, &e), e);
    float w[32], pf[64], big[96], kvwant[16 * 8];
    for (int i = 0; i < 32; i++) w[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 64; i++) pf[i] = (float)i * 0.5f;
    for (int i = 0; i < 96; i++) big[i] = (float)i;
    memset(kvwant, 0, sizeof kvwant);
    for (int t = 0; t < 4; t++) {
        char text[4096];
        pin_graph(text, sizeof text, t, t == 0, 1, 96);
        tp_graph *g;
        tp_memgraph *mg = plan_text(text, cap, &g);
        tp_mvertex vw = first_copy(mg, g, "w"), vpf = first_copy(mg, g, "pf");
        ASSERT_EQ(vw.kind, t == 0 ? TP_M_RELOAD : TP_M_RESIDENT); /* loaded by the first plan, there after */
        ASSERT_EQ(vw.write.offset, 1024u);
        ASSERT_EQ(vpf.kind, TP_M_RELOAD);
        ASSERT_EQ(vpf.write.offset, 3072u);
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        tp_exec *x;
        ASSERT_OK_ERR(tp_exec_new_in(ss, mg, &ro, &x, &e), e);
        float xin[4] = {1.0f + (float)t, -1.0f, 0.5f, 2.0f};
        for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
            tp_mvertex v;
            tp_memgraph_vertex(mg, i, &v);
            if (v.kind != TP_M_INPUT) continue;
            const char *id = tp_graph_vertex(g, v.task)->id;
            const void *src = !strcmp(id, "w") ? (const void *)w : !strcmp(id, "pf") ? (const void *)pf : !strcmp(id, "x") ? (const void *)xin : (const void *)big;
            ASSERT_OK_ERR(tp_exec_write(x, &v.write, src, &e), e);
        }
        tp_run_summary sum;
        ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
        for (int j = 0; j < 8; j++) { /* naive reference of y = x w */
            float acc = 0;
            for (int k = 0; k < 4; k++) acc += xin[k] * w[k * 8 + j];
            kvwant[t * 8 + j] = acc;
        }
        float kv[16 * 8], got_pf[64], got_w[32];
        tp_region r = {TP_SPACE_DEVICE, 0, 2048, sizeof kv};
        ASSERT_OK_ERR(tp_exec_read(x, &r, kv, &e), e);
        CHECKF(!memcmp(kv, kvwant, sizeof kv), "step %d: the pinned cache is not the rows appended so far", t);
        r = (tp_region){TP_SPACE_DEVICE, 0, 3072, sizeof got_pf};
        ASSERT_OK_ERR(tp_exec_read(x, &r, got_pf, &e), e);
        CHECK(!memcmp(got_pf, pf, sizeof pf)); /* the prefetch landed in its region */
        r = (tp_region){TP_SPACE_DEVICE, 0, 1024, sizeof got_w};
        ASSERT_OK_ERR(tp_exec_read(x, &r, got_w, &e), e);
        CHECK(!memcmp(got_w, w, sizeof w));
        tp_exec_free(x);
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
    tp_session_free(ss);
    tp_backend_free(be);
}

TEST(session_pinned_regions_are_checked)
{
    char text[4096];
    tp_error e;
    /* 2 KiB values need a window of 2 KiB, which any place on a 4 KiB device shares with a
     * pinned region: the same plan made without "pin" must overwrite one, and against the
     * pinned declaration the verifier must refuse it */
    pin_graph(text, sizeof text, 2, 1, 0, 256);
    tp_graph *g0 = load(text);
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, 4096);
    po.order = TP_ORDER_TOPO;
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(g0, &po, &mg, &e), e);
    pin_graph(text, sizeof text, 2, 1, 1, 256);
    tp_graph *g1 = load(text);
    char *js;
    size_t len;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &js, &len, &e), e);
    tp_status st = tp_verify_json(js, len, "plan", g1, &e);
    CHECKF(st == TP_ERR_CHECK && strstr(e.msg, "pinned"), "verifier: %s", st ? e.msg : "accepted");
    free(js);
    tp_memgraph_free(mg);
    /* pinned regions leave no 2 KiB window: a clear refusal */
    tp_plan_opts_init(&po, 1, 4096);
    st = tp_plan(g1, &po, &mg, &e);
    CHECKF(st == TP_ERR_INFEASIBLE && strstr(e.msg, "pinned"), "plan: %s", st ? e.msg : "planned");
    tp_graph_free(g1);
    tp_graph_free(g0);
    /* an in-place update of a pinned input that something else reads after it */
    const char *bad = "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"vertices\": ["
                      "{\"id\": \"kv\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [4, 2],"
                      " \"resident\": {\"offset\": 0, \"pin\": true}},"
                      "{\"id\": \"r\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [1, 2]},"
                      "{\"id\": \"kv2\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"write_slice\", \"inputs\": [\"kv\", \"r\"],"
                      " \"dtype\": \"f32\", \"shape\": [4, 2], \"attrs\": {\"axis\": 0, \"start\": 1}, \"inplace\": 0},"
                      "{\"id\": \"c\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"scale\", \"inputs\": [\"kv\"],"
                      " \"dtype\": \"f32\", \"shape\": [4, 2]}], \"outputs\": [\"kv2\", \"c\"]}";
    tp_graph *g2 = load(bad);
    tp_plan_opts_init(&po, 1, 1 << 16);
    po.order = TP_ORDER_TOPO;
    st = tp_plan(g2, &po, &mg, &e);
    CHECKF(st == TP_ERR_INFEASIBLE && strstr(e.msg, "pinned input 'kv' in place") && strstr(e.msg, "read after it"), "plan: %s", st ? e.msg : "planned");
    tp_graph_free(g2);
    /* flags need a resident declaration, and "load" a host copy */
    tp_graph *g3 = tp_graph_new(1);
    int64_t sh[1] = {4};
    uint32_t v;
    ASSERT_OK_ERR(tp_graph_add_input(g3, "a", 0, TP_DT_F32, 1, sh, 0, &v, &e), e);
    CHECK(tp_graph_set_resident_flags(g3, v, TP_RESIDENT_PIN, &e) == TP_ERR_ARG);
    ASSERT_OK_ERR(tp_graph_set_resident(g3, v, 0, 0, &e), e);
    CHECK(tp_graph_set_resident_flags(g3, v, TP_RESIDENT_LOAD, &e) == TP_ERR_ARG);
    CHECK(tp_graph_set_resident_flags(g3, v, 8, &e) == TP_ERR_ARG);
    ASSERT_OK_ERR(tp_graph_set_resident_flags(g3, v, TP_RESIDENT_PIN, &e), e);
    ASSERT_EQ(tp_graph_resident_flags(g3, v), TP_RESIDENT_PIN);
    tp_graph_clear_resident(g3);
    ASSERT_EQ(tp_graph_resident_flags(g3, v), 0u);
    tp_graph_free(g3);
}

/* Host-placed inputs (issue 12's zero-copy loads): random graphs with about two thirds of their
 * inputs placed by the caller in reserved host bytes (random gaps between them) and written
 * straight into the session's host block, under tight caps and every dispatch order: each
 * placed input's input vertex is where it was placed, nothing else lies below the reserve,
 * every plan verifies, the outputs are bit-identical to a fresh run with every input copied in,
 * and the reserved bytes (sentinels in the gaps included) are unchanged after the runs. */
TEST(session_host_placed_inputs_are_read_in_place)
{
    enum { R = 1 << 14, HOST = 1 << 20 };
    int placed = 0, reloaded = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        tp_graph *g;
        tp_backend *be;
        float *ref = seed_start(seed, &g, &be); /* the reference */
        int nd = tp_graph_devices(g);
        tp_error e;
        tp_plan_opts po;
        tp_plan_opts_init(&po, nd, 1 << 20);
        tp_run_opts ro;
        tp_run_opts_init(&ro);
        tp_memgraph *mg;
        tp_exec *x;
        tp_run_summary sum;
        /* placement, after finalize (checked at once; overlaps by the planner) */
        uint64_t s = seed * 31 + 7, at = (rng(&s) % 4) * 256, where[64];
        uint8_t is_placed[64] = {0};
        ASSERT_OK_ERR(tp_graph_set_host_reserved(g, R, &e), e);
        for (uint32_t v = 0; v < tp_graph_size(g) && v < 64; v++)
            if (tp_graph_vertex(g, v)->kind == TP_V_INPUT && rng(&s) % 3) {
                ASSERT_OK_ERR(tp_graph_set_host(g, v, at, &e), e);
                is_placed[v] = 1;
                where[v] = at;
                at += N * N * 4 + (rng(&s) % 3) * 256;
                placed++;
            }
        CHECK(at <= R);
        tight_caps(g, &po, &s, 2);
        po.host_mem = HOST;
        tp_session *ss;
        ASSERT_OK_ERR(tp_session_new(be, nd, po.device_mem, HOST, &ss, &e), e);
        uint64_t hb_bytes = 0;
        uint8_t *hb = tp_session_host(ss, &hb_bytes);
        CHECK(hb != NULL && hb_bytes == HOST);
        memset(hb, 0xA5, R);
        for (uint32_t v = 0; v < tp_graph_size(g) && v < 64; v++)
            if (is_placed[v]) input_values(tp_graph_vertex(g, v)->id, (float *)(hb + where[v]), N * N);
        uint8_t *snap = malloc(R);
        CHECK(snap != NULL);
        memcpy(snap, hb, R);
        for (int r = 0; r < 2; r++) {
            ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
            verify(mg, g);
            reloaded += count_kind(mg, TP_M_RELOAD) > 0;
            int seen = 0, nplaced = 0;
            for (uint32_t v = 0; v < tp_graph_size(g) && v < 64; v++) nplaced += is_placed[v];
            for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
                tp_mvertex v;
                tp_memgraph_vertex(mg, i, &v);
                if (v.write.space != TP_SPACE_HOST) continue;
                if (v.kind == TP_M_INPUT && v.task < 64 && is_placed[v.task]) {
                    seen++;
                    CHECKF(v.write.offset == where[v.task], "seed %llu: placed input at %llu, not %llu", (unsigned long long)seed,
                           (unsigned long long)v.write.offset, (unsigned long long)where[v.task]);
                } else
                    CHECKF(v.write.offset >= R, "seed %llu: vertex %u writes host offset %llu, inside the reserve",
                           (unsigned long long)seed, i, (unsigned long long)v.write.offset);
            }
            CHECKF(seen == nplaced, "seed %llu: %d placed inputs in the plan, %d placed", (unsigned long long)seed, seen, nplaced);
            order_of_run(&ro, seed, r);
            ASSERT_OK_ERR(tp_exec_new_in(ss, mg, &ro, &x, &e), e);
            CHECK(tp_session_host(ss, NULL) == NULL); /* not while an executor is live */
            const tp_graph *tg = tp_memgraph_taskgraph(mg);
            for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) { /* only the inputs not placed */
                tp_mvertex v;
                tp_memgraph_vertex(mg, i, &v);
                if (v.kind != TP_M_INPUT || (v.task < 64 && is_placed[v.task])) continue;
                float buf[N * N];
                input_values(tp_graph_vertex(tg, v.task)->id, buf, N * N);
                ASSERT_OK_ERR(tp_exec_write(x, &v.write, buf, &e), e);
            }
            ASSERT_OK_ERR(tp_exec_run(x, &sum, &e), e);
            float *got = read_outputs(x, mg, &e);
            same_as_fresh(got, ref, g, seed, r, ro.policy);
            tp_exec_free(x);
            CHECK(tp_session_host(ss, NULL) == hb);
            CHECKF(!memcmp(hb, snap, R), "seed %llu run %d: the reserved host bytes changed", (unsigned long long)seed, r + 1);
            tp_memgraph_free(mg);
        }
        free(snap);
        seed_done(ss, be, ref, g);
    }
    CHECKF(placed >= 60, "only %d inputs placed", placed);
    CHECKF(reloaded >= 10, "only %d plans reloaded anything", reloaded);
}

/* Host placement is checked: by the graph (kind, reserve, alignment, overlap, a resident input
 * without a host copy), in JSON both ways, by the planner (overlaps declared after finalize, a
 * reserve beyond host memory) and by the verifier (a plan made without the placement). */
TEST(session_host_placement_is_checked)
{
    static const char *head = "{\"format\": \"turnip.taskgraph/1\", \"devices\": 1, \"host_reserved\": %s, \"vertices\": ["
                              "{\"id\": \"a\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [8, 8]%s},"
                              "{\"id\": \"b\", \"kind\": \"input\", \"device\": 0, \"dtype\": \"f32\", \"shape\": [8, 8]%s},"
                              "{\"id\": \"c\", \"kind\": \"kernel\", \"device\": 0, \"op\": \"add\", \"inputs\": [\"a\", \"b\"],"
                              " \"dtype\": \"f32\", \"shape\": [8, 8]%s}], \"outputs\": [\"c\"]}";
    struct {
        const char *res, *a, *b, *c, *msg;
    } bad[] = {
        {"1024", ", \"host\": 0", ", \"host\": 1024", "", "not inside the reserved host bytes"},
        {"1024", ", \"host\": 128", "", "", "not a multiple of 256"},
        {"1024", ", \"host\": 0", ", \"host\": 0", "", "host region [0, 256) overlaps that of 'a'"},
        {"1024", "", "", ", \"host\": 0", "'host' is only for input vertices"},
        {"1024", ", \"host\": -1", "", "", "field 'host' must be a non-negative integer"},
        {"-5", "", "", "", "'host_reserved' must be a non-negative integer"},
        {"1024", ", \"host\": 0, \"resident\": {\"offset\": 0, \"host_copy\": false}", "", "", "host_copy false"},
    };
    char text[2048];
    tp_error e;
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        snprintf(text, sizeof text, head, bad[k].res, bad[k].a, bad[k].b, bad[k].c);
        tp_graph *g = NULL;
        tp_status st = tp_graph_read_string(text, "g.json", &g, &e);
        CHECKF(st != TP_OK && strstr(e.msg, bad[k].msg), "case %zu: %s", k, st ? e.msg : "accepted");
        tp_graph_free(g);
    }
    /* JSON both ways */
    snprintf(text, sizeof text, head, "1024", ", \"host\": 768", ", \"host\": 256", "");
    tp_graph *g = load(text);
    uint64_t off = 0;
    ASSERT_EQ(tp_graph_host_reserved(g), 1024u);
    CHECK(tp_graph_host(g, 0, &off) && off == 768 && tp_graph_host(g, 1, &off) && off == 256 && !tp_graph_host(g, 2, NULL));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ASSERT_OK_ERR(tp_graph_write(g, f, &e), e);
    fclose(f);
    tp_graph *g2 = load(buf);
    free(buf);
    CHECK(tp_graph_host_reserved(g2) == 1024 && tp_graph_host(g2, 0, &off) && off == 768 && tp_graph_host(g2, 1, &off) && off == 256);
    tp_graph_free(g2);
    /* the plan reads them there; a plan made without the placement fails the verifier */
    tp_memgraph *mg = NULL;
    tp_graph *gp = NULL;
    mg = plan_text(text, 4096, &gp);
    tp_memgraph_free(mg);
    tp_graph_free(gp);
    snprintf(text, sizeof text, head, "0", "", "", "");
    tp_graph *g0 = load(text);
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, 4096);
    ASSERT_OK_ERR(tp_plan(g0, &po, &mg, &e), e);
    char *js;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &js, &len, &e), e);
    tp_status st = tp_verify_json(js, len, "plan", g, &e);
    CHECKF(st == TP_ERR_CHECK && strstr(e.msg, "the TaskGraph places it at"), "verifier: %s", st ? e.msg : "accepted");
    snprintf(text, sizeof text, head, "1024", "", "", "");
    tp_graph *gr = load(text);
    st = tp_verify_json(js, len, "plan", gr, &e);
    CHECKF(st == TP_ERR_CHECK && strstr(e.msg, "the TaskGraph reserves for the caller"), "verifier: %s", st ? e.msg : "accepted");
    /* the same plan read back from a file, without the verifier: refused by the reader against
     * the placements (g) and against the reserve (gr); accepted for the graph it was made for */
    char path[] = "/tmp/tp-hostplan-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, js, len) == (ssize_t)len);
    close(fd);
    const tp_graph *against[3] = {g, gr, g0};
    for (int k = 0; k < 3; k++) {
        tp_memgraph *rd = NULL;
        st = tp_memgraph_read_file(path, against[k], &rd, NULL, &e);
        if (k < 2) CHECKF(st == TP_ERR_INVALID && strstr(e.msg, "is not where task"), "read %d: %s", k, st ? e.msg : "accepted");
        else ASSERT_OK_ERR(st, e);
        tp_memgraph_free(rd);
    }
    unlink(path);
    free(js);
    tp_memgraph_free(mg);
    /* the planner: overlaps declared after finalize, a reserve beyond host memory */
    ASSERT_OK_ERR(tp_graph_set_host(gr, 0, 512, &e), e);
    ASSERT_OK_ERR(tp_graph_set_host(gr, 1, 512, &e), e);
    st = tp_plan(gr, &po, &mg, &e);
    CHECKF(st == TP_ERR_ARG && strstr(e.msg, "overlaps"), "plan: %s", st ? e.msg : "planned");
    CHECK(tp_graph_set_host(gr, 1, 1024, &e) == TP_ERR_ARG); /* checked at once: outside the reserve */
    ASSERT_OK_ERR(tp_graph_set_host(gr, 1, 0, &e), e);
    po.host_mem = 512;
    st = tp_plan(gr, &po, &mg, &e);
    CHECKF(st == TP_ERR_INFEASIBLE && strstr(e.msg, "reserves"), "plan: %s", st ? e.msg : "planned");
    /* the reserve shrunk after a placement: refused by the planner, not left to the verifier */
    po.host_mem = 0;
    ASSERT_OK_ERR(tp_graph_set_host_reserved(gr, 256, &e), e);
    st = tp_plan(gr, &po, &mg, &e);
    CHECKF(st == TP_ERR_ARG && strstr(e.msg, "not inside the reserved host bytes [0, 256)"), "plan: %s", st ? e.msg : "planned");
    /* a placed input cannot become resident without a host copy; offsets the formats cannot carry */
    CHECK(tp_graph_set_resident(gr, 0, 0, 0, &e) == TP_ERR_ARG && strstr(e.msg, "placed"));
    CHECK(tp_graph_set_host(gr, 0, (uint64_t)1 << 63, &e) == TP_ERR_ARG);
    CHECK(tp_graph_set_host_reserved(gr, UINT64_MAX, &e) == TP_ERR_ARG);
    tp_graph_free(gr);
    tp_graph_free(g0);
    tp_graph_free(g);
}
