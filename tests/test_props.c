/* test_props.c - property tests over random TaskGraphs (tests/gen.c).
 *
 * Each graph is planned under every order at the smallest feasible caps (computed here,
 * independently of the planner), at caps in between, and unconstrained; every plan must
 * pass the verifier, and must also survive a dynamic check written only for this test:
 * the MemGraph is executed in several random topological orders over memory whose bytes
 * carry the tag of the value last written there, and every read must find its value.
 * One byte below the smallest feasible cap must be rejected as infeasible. */
#include <string.h>
#include "gen.h"
#include "harness.h"

static void check_order(const tp_graph *g, tp_order o)
{
    uint32_t n = tp_graph_size(g);
    uint32_t *ord = malloc(n * sizeof *ord), *posn = malloc(n * sizeof *posn);
    tp_error e;
    ASSERT_OK_ERR(tp_graph_order(g, o, ord, &e), e);
    for (uint32_t i = 0; i < n; i++) posn[i] = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_LT(ord[i], n);
        ASSERT_EQ(posn[ord[i]], UINT32_MAX);
        posn[ord[i]] = i;
    }
    for (uint32_t v = 0; v < n; v++) {
        const tp_vertex *x = tp_graph_vertex(g, v);
        for (uint32_t k = 0; k < x->ninputs; k++) ASSERT_LT(posn[x->inputs[k]], posn[v]);
    }
    free(ord);
    free(posn);
}

/* per-device smallest feasible capacity: the largest distinct-inputs-plus-output need */
static void min_caps(const tp_graph *g, uint64_t *cap, int *argmax_dev)
{
    int nd = tp_graph_devices(g);
    for (int d = 0; d < nd; d++) cap[d] = 1;
    uint64_t best = 0;
    *argmax_dev = 0;
    for (uint32_t v = 0; v < tp_graph_size(g); v++) {
        const tp_vertex *x = tp_graph_vertex(g, v);
        if (x->kind == TP_V_INPUT) continue;
        uint64_t need[TP_MAX_DEVICES] = {0};
        for (uint32_t k = 0; k < x->ninputs; k++) {
            int dup = 0;
            for (uint32_t j = 0; j < k; j++) dup |= x->inputs[j] == x->inputs[k];
            const tp_vertex *in = tp_graph_vertex(g, x->inputs[k]);
            if (!dup) need[in->device] += in->bytes;
        }
        need[x->device] += x->bytes;
        for (int d = 0; d < nd; d++) {
            if (need[d] > cap[d]) cap[d] = need[d];
            if (need[d] > best) {
                best = need[d];
                *argmax_dev = d;
            }
        }
    }
}

static uint64_t sum_on(const tp_graph *g, int d)
{
    uint64_t s = 1;
    for (uint32_t v = 0; v < tp_graph_size(g); v++)
        if (tp_graph_vertex(g, v)->device == d) s += tp_graph_vertex(g, v)->bytes;
    return s;
}

/* executes mg in a random topological order over tagged memory */
static void dyn_check(const tp_graph *g, const tp_memgraph *mg, rng *r)
{
    int nd = tp_graph_devices(g);
    uint32_t *mem[TP_MAX_DEVICES + 1];
    for (int d = 0; d < nd; d++) mem[d] = calloc(tp_memgraph_device_capacity(mg, d) + 1, sizeof(uint32_t));
    mem[nd] = calloc(tp_memgraph_host_bytes(mg) + 1, sizeof(uint32_t));
    uint32_t n = tp_memgraph_size(mg);
    uint32_t *indeg = calloc(n, sizeof *indeg), *ready = malloc(n * sizeof *ready), nready = 0;
    uint32_t **succ = calloc(n, sizeof *succ), *nsucc = calloc(n, sizeof *nsucc);
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        indeg[i] = v.ndeps;
        for (uint32_t k = 0; k < v.ndeps; k++) {
            uint32_t p = v.deps[k];
            succ[p] = realloc(succ[p], (nsucc[p] + 1) * sizeof **succ);
            succ[p][nsucc[p]++] = i;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!indeg[i]) ready[nready++] = i;
    uint32_t done = 0;
    while (nready) {
        uint32_t j = (uint32_t)rng_below(r, nready), u = ready[j];
        ready[j] = ready[--nready];
        tp_mvertex v;
        tp_memgraph_vertex(mg, u, &v);
        const tp_vertex *t = tp_graph_vertex(g, v.task);
        for (uint32_t k = 0; k < v.nreads; k++) {
            tp_mvertex src;
            tp_memgraph_vertex(mg, v.reads[k], &src);
            uint32_t want = (v.kind == TP_M_KERNEL || v.kind == TP_M_TRANSFER) ? t->inputs[k] : v.task, alt = want;
            if (v.kind == TP_M_ACCUMULATE) { /* read 0: the group's running sum (the init's value at first); 1: a partial */
                int in = 0;
                for (uint32_t q = 0; q < t->ninputs; q++) in |= t->inputs[q] == src.task;
                CHECKF(in, "vertex %u (accumulate %s) reads %s, not an input of the sum", u, t->id, tp_graph_vertex(g, src.task)->id);
                want = src.task;
                alt = k == 0 ? v.task : want;
            }
            uint32_t *m = mem[src.write.space == TP_SPACE_HOST ? nd : src.write.device];
            for (uint64_t b = 0; b < src.write.bytes; b++)
                CHECKF(m[src.write.offset + b] == want + 1 || m[src.write.offset + b] == alt + 1,
                       "vertex %u (%s) reads byte %llu of %s: holds tag %u", u, t->id, (unsigned long long)b,
                       tp_graph_vertex(g, want)->id, m[src.write.offset + b]);
        }
        uint32_t *m = mem[v.write.space == TP_SPACE_HOST ? nd : v.write.device];
        for (uint64_t b = 0; b < v.write.bytes; b++) m[v.write.offset + b] = v.task + 1;
        done++;
        for (uint32_t k = 0; k < nsucc[u]; k++)
            if (--indeg[succ[u][k]] == 0) ready[nready++] = succ[u][k];
    }
    ASSERT_EQ(done, n);
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[k], &v);
        uint32_t *m = mem[v.write.space == TP_SPACE_HOST ? nd : v.write.device];
        ASSERT_EQ(v.task, tp_graph_outputs(g)[k]);
        for (uint64_t b = 0; b < v.write.bytes; b++) ASSERT_EQ(m[v.write.offset + b], v.task + 1);
    }
    for (uint32_t i = 0; i < n; i++) free(succ[i]);
    free(succ);
    free(nsucc);
    free(indeg);
    free(ready);
    for (int d = 0; d <= nd; d++) free(mem[d]);
}

static void verify_plan(const tp_memgraph *mg, const tp_graph *g)
{
    char *text;
    size_t len;
    tp_error e;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &text, &len, &e), e);
    ASSERT_OK_ERR(tp_verify_json(text, len, "plan", g, &e), e);
    free(text);
}


/* Checks mg with the verifier; on a rejection saves the TaskGraph and the MemGraph as
 * failed-taskgraph.json and failed-memgraph.json for a look, and fails naming `what`. */
static void verify_or_save(const tp_graph *g, const tp_memgraph *mg, const char *what)
{
    tp_error e;
    char *text;
    size_t len;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &text, &len, &e), e);
    tp_status s = tp_verify_json(text, len, "plan", g, &e);
    if (s) {
        FILE *f = fopen("failed-taskgraph.json", "w");
        tp_graph_write(g, f, NULL);
        fclose(f);
        f = fopen("failed-memgraph.json", "w");
        fwrite(text, 1, len, f);
        fclose(f);
    }
    free(text);
    CHECKF(s == TP_OK, "verifier rejected %s (saved failed-*.json): %s", what, e.msg);
}
static uint64_t naive_audits, naive_implied_edges; /* devices compared, implied edges seen */

/* The audit's count of implied memory dependencies, found independently: an edge r -> u into
 * u (not one of u's reads; u neither a join nor an offload, which the audit leaves out) is
 * implied when u is reachable from r through another successor of r. Reachability by bitsets,
 * in reverse topological order (Kahn's, here). Counts per device into implied[]; 0 when the
 * plan is too large for the bitsets. */
static int naive_implied(const tp_memgraph *mg, uint64_t *implied)
{
    uint32_t n = tp_memgraph_size(mg);
    if (n > 4096) return 0;
    size_t words = (n + 63) / 64;
    uint64_t *reach = calloc((size_t)n * words, sizeof *reach); /* reach[x]: x and all it reaches */
    uint32_t *succ_off = calloc(n + 2, sizeof *succ_off), *fill = calloc(n + 1, sizeof *fill);
    uint32_t *indeg = calloc(n + 1, sizeof *indeg), *order = malloc((n + 1) * sizeof *order), done = 0;
    tp_mvertex v;
    for (uint32_t u = 0; u < n; u++) {
        tp_memgraph_vertex(mg, u, &v);
        indeg[u] = v.ndeps;
        for (uint32_t k = 0; k < v.ndeps; k++) succ_off[v.deps[k] + 1]++;
    }
    for (uint32_t x = 0; x < n; x++) succ_off[x + 1] += succ_off[x];
    uint32_t *succ = malloc(((size_t)succ_off[n] + 1) * sizeof *succ);
    for (uint32_t u = 0; u < n; u++) {
        tp_memgraph_vertex(mg, u, &v);
        for (uint32_t k = 0; k < v.ndeps; k++) succ[succ_off[v.deps[k]] + fill[v.deps[k]]++] = u;
    }
    for (uint32_t u = 0; u < n; u++)
        if (!indeg[u]) order[done++] = u;
    for (uint32_t i = 0; i < done; i++)
        for (uint32_t k = succ_off[order[i]]; k < succ_off[order[i] + 1]; k++)
            if (!--indeg[succ[k]]) order[done++] = succ[k];
    ASSERT_EQ(done, n); /* a plan is acyclic */
    for (uint32_t i = n; i-- > 0;) {
        uint32_t x = order[i];
        uint64_t *rx = reach + (size_t)x * words;
        rx[x / 64] |= 1ull << (x % 64);
        for (uint32_t k = succ_off[x]; k < succ_off[x + 1]; k++)
            for (size_t w = 0; w < words; w++) rx[w] |= reach[(size_t)succ[k] * words + w];
    }
    for (uint32_t u = 0; u < n; u++) {
        tp_memgraph_vertex(mg, u, &v);
        if (v.kind == TP_M_JOIN || v.kind == TP_M_OFFLOAD) continue;
        for (uint32_t k = 0; k < v.ndeps; k++) {
            uint32_t rr = v.deps[k];
            int read = 0, imp = 0;
            for (uint32_t j = 0; j < v.nreads; j++) read |= v.reads[j] == rr;
            if (read) continue;
            for (uint32_t j = succ_off[rr]; j < succ_off[rr + 1] && !imp; j++)
                imp = succ[j] != u && (reach[(size_t)succ[j] * words + u / 64] >> (u % 64) & 1);
            implied[v.device] += (uint64_t)imp;
        }
    }
    free(reach);
    free(succ_off);
    free(succ);
    free(fill);
    free(indeg);
    free(order);
    return 1;
}

static int plan_check(const tp_graph *g, const tp_plan_opts *o, rng *r, int dyn_runs)
{
    tp_memgraph *mg;
    tp_error e;
    tp_status s = tp_plan(g, o, &mg, &e);
    CHECKF(s == TP_OK, "plan failed at feasible caps: %s", e.msg);
    verify_or_save(g, mg, "a plan");
    for (int i = 0; i < dyn_runs; i++) dyn_check(g, mg, r);
    tp_plan_stats st, au;
    tp_memgraph_stats(mg, &st);
    tp_memgraph_stats_audit(mg, &au); /* the audit changes no count but its own */
    ASSERT_EQ(st.audited, 0);
    ASSERT_EQ(au.audited, 1);
    ASSERT_EQ(st.host_mem_deps, au.host_mem_deps);
    int offloads = 0;
    for (int d = 0; d < o->ndevices; d++) {
        offloads += (int)(st.dev[d].offload_count + st.dev[d].drop_count);
        ASSERT_LE(st.dev[d].peak_bytes, o->device_mem[d]);
        ASSERT_EQ(st.dev[d].mem_deps, au.dev[d].mem_deps);
        ASSERT_EQ(st.dev[d].mem_deps_superfluous, 0);
        ASSERT_LE(au.dev[d].mem_deps_superfluous + au.dev[d].mem_deps_unchecked, au.dev[d].mem_deps);
    }
    uint64_t imp[TP_MAX_DEVICES] = {0};
    if (naive_implied(mg, imp))
        for (int d = 0; d < o->ndevices; d++)
            if (!au.dev[d].mem_deps_unchecked) {
                ASSERT_EQ(au.dev[d].mem_deps_superfluous, imp[d]);
                naive_audits++;
                naive_implied_edges += imp[d];
            }
    tp_memgraph_free(mg);
    return offloads;
}

/* the largest vertex's bytes */
static uint64_t largest(const tp_graph *g)
{
    uint64_t m = 0;
    for (uint32_t v = 0; v < tp_graph_size(g); v++)
        if (tp_graph_vertex(g, v)->bytes > m) m = tp_graph_vertex(g, v)->bytes;
    return m;
}

static void run_family(int family, int count)
{
    int evicting = 0, infeasible_seen = 0;
    naive_audits = naive_implied_edges = 0;
    for (int i = 0; i < count; i++) {
        tp_graph *g = gen_graph((uint64_t)i + 1, family);
        rng r = {(uint64_t)i * 31 + 7};
        if (i % 10 == 0) { /* through JSON and back */
            char *buf;
            size_t len;
            FILE *f = open_memstream(&buf, &len);
            tp_error e;
            ASSERT_OK_ERR(tp_graph_write(g, f, &e), e);
            fclose(f);
            tp_graph *g2;
            ASSERT_OK_ERR(tp_graph_read_string(buf, "rt", &g2, &e), e);
            free(buf);
            tp_graph_free(g);
            g = g2;
        }
        int nd = tp_graph_devices(g), maxdev;
        uint64_t mins[TP_MAX_DEVICES];
        min_caps(g, mins, &maxdev);
        for (int o = 0; o <= TP_ORDER_GREEDY; o++) check_order(g, (tp_order)o);
        tp_plan_opts opts;
        for (int o = 0; o <= TP_ORDER_GREEDY; o++) {
            tp_plan_opts_init(&opts, nd, 0);
            opts.order = (tp_order)o;
            memcpy(opts.device_mem, mins, sizeof(uint64_t) * (size_t)nd);
            evicting += plan_check(g, &opts, &r, o == 0 ? 2 : 1) > 0;
        }
        /* a bounded eviction search (furthest next use first when over budget) at the minimum too */
        tp_plan_opts_init(&opts, nd, 0);
        memcpy(opts.device_mem, mins, sizeof(uint64_t) * (size_t)nd);
        opts.evict_budget = 1 + (uint32_t)rng_below(&r, 3);
        plan_check(g, &opts, &r, 1);
        /* one byte less on the tightest device is infeasible */
        tp_plan_opts_init(&opts, nd, 0);
        memcpy(opts.device_mem, mins, sizeof(uint64_t) * (size_t)nd);
        if (opts.device_mem[maxdev] > 1) {
            opts.device_mem[maxdev]--;
            tp_memgraph *mg;
            tp_error e;
            tp_status s = tp_plan(g, &opts, &mg, &e);
            CHECKF(s == TP_ERR_INFEASIBLE, "one byte below the minimum planned: %s", tp_status_str(s));
            CHECKF(strstr(e.msg, "vertex '"), "%s", e.msg);
            infeasible_seen++;
        }
        /* random caps in between, and unconstrained */
        for (int k = 0; k < 2; k++) {
            tp_plan_opts_init(&opts, nd, 0);
            opts.order = (tp_order)rng_below(&r, 3);
            for (int d = 0; d < nd; d++) opts.device_mem[d] = mins[d] + rng_below(&r, sum_on(g, d) + 1);
            if (k) opts.evict_budget = 1 + (uint32_t)rng_below(&r, 3);
            plan_check(g, &opts, &r, 1);
        }
        /* small values packed at the bottom (docs/planner.md "Packing small values"), at the
         * minimum and at a random cap */
        for (int k = 0; k < 2; k++) {
            tp_plan_opts_init(&opts, nd, 0);
            opts.order = (tp_order)rng_below(&r, 3);
            for (int d = 0; d < nd; d++) opts.device_mem[d] = mins[d] + (k ? rng_below(&r, sum_on(g, d) + 1) : 0);
            opts.pack_below = 1 + rng_below(&r, largest(g));
            plan_check(g, &opts, &r, 1);
        }
        tp_plan_opts_init(&opts, nd, 0);
        for (int d = 0; d < nd; d++) opts.device_mem[d] = sum_on(g, d) + mins[d];
        ASSERT_EQ(plan_check(g, &opts, &r, 1), 0); /* room for everything: nothing evicted */
        tp_graph_free(g);
    }
    printf("%s: %d graphs, %d plans at minimum caps evicted something, %d infeasible caps rejected; the audit's implied "
           "memory dependencies equal a reachability count on %llu devices' plans (%llu implied edges)\n",
           gen_family_name[family], count, evicting, infeasible_seen, (unsigned long long)naive_audits,
           (unsigned long long)naive_implied_edges);
    CHECKF(naive_audits > 0, "no plan's audit compared with the reachability count");
    CHECKF(evicting >= count / 2, "only %d of %d minimum-cap plans evicted anything: the test is too easy", evicting, count);
}

/* ---- sum-into ------------------------------------------------------------------------------ */

static int is_marked_sum(const tp_vertex *x)
{
    return x->kind == TP_V_KERNEL && !strcmp(x->op, "sum") && x->attrs_json && strstr(x->attrs_json, "\"accumulate\":true");
}

/* per-device capacities below which no plan can exist even with every marked sum lowered: a
 * lowered sum needs its region and one partial at a time; everything else as min_caps */
static void min_caps_lowered(const tp_graph *g, uint64_t *cap)
{
    int nd = tp_graph_devices(g);
    for (int d = 0; d < nd; d++) cap[d] = 1;
    for (uint32_t v = 0; v < tp_graph_size(g); v++) {
        const tp_vertex *x = tp_graph_vertex(g, v);
        if (x->kind == TP_V_INPUT) continue;
        uint64_t need[TP_MAX_DEVICES] = {0};
        if (is_marked_sum(x)) {
            need[x->device] = 2 * x->bytes;
        } else {
            for (uint32_t k = 0; k < x->ninputs; k++) {
                int dup = 0;
                for (uint32_t j = 0; j < k; j++) dup |= x->inputs[j] == x->inputs[k];
                const tp_vertex *in = tp_graph_vertex(g, x->inputs[k]);
                if (!dup) need[in->device] += in->bytes;
            }
            need[x->device] += x->bytes;
        }
        for (int d = 0; d < nd; d++)
            if (need[d] > cap[d]) cap[d] = need[d];
    }
}

typedef struct {
    int plans, infeasible, groups, grouped_plans, evicting_grouped, below_min_grouped, fallbacks;
} accum_counts;

/* plans g under o: TP_OK plans are verified and run by the dynamic checker; returns the status */
static tp_status accum_plan(const tp_graph *g, const tp_plan_opts *o, rng *r, int below_min, accum_counts *ac)
{
    tp_memgraph *mg;
    tp_error e;
    tp_status s = tp_plan(g, o, &mg, &e);
    if (s == TP_ERR_INFEASIBLE) {
        ac->infeasible++;
        return s;
    }
    CHECKF(s == TP_OK, "plan failed: %s", e.msg);
    verify_or_save(g, mg, "a sum-into plan");
    dyn_check(g, mg, r);
    tp_plan_stats st;
    tp_memgraph_stats(mg, &st);
    int groups = 0, members = 0, ev = 0;
    for (uint32_t i = 0; i < tp_memgraph_size(mg); i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        groups += v.kind == TP_M_JOIN;
        members += v.kind == TP_M_ACCUMULATE;
        CHECK((v.kind == TP_M_ACCUMULATE || v.kind == TP_M_JOIN) == (v.group >= 0));
    }
    ASSERT_EQ(groups, (int)st.sum_groups);
    ASSERT_EQ(members, (int)st.sum_members);
    CHECK(!o->sum_into ? groups == 0 && !st.sum_into_fallback : 1);
    CHECK(!st.sum_into_fallback || groups == 0);
    for (int d = 0; d < o->ndevices; d++) {
        ev += (int)(st.dev[d].offload_count + st.dev[d].drop_count);
        ASSERT_LE(st.dev[d].peak_bytes, o->device_mem[d]);
    }
    ac->plans++;
    ac->groups += groups;
    ac->grouped_plans += groups > 0;
    ac->evicting_grouped += groups > 0 && ev > 0;
    ac->below_min_grouped += groups > 0 && below_min;
    ac->fallbacks += st.sum_into_fallback;
    tp_memgraph_free(mg);
    return TP_OK;
}

/* Random graphs with sum-into candidates, planned at caps from the smallest any plan could
 * use (every sum lowered) up to unconstrained: each plan verifies and survives the dynamic
 * checker; at or above the smallest caps of the unlowered graph a plan always exists (the
 * planner falls back when lowering does not fit); lowering happens, under evictions too, and
 * below the unlowered minimum. */
TEST(props_sum_into)
{
    accum_counts ac = {0};
    int count = 50;
    for (int i = 0; i < count; i++) {
        tp_graph *g = gen_graph((uint64_t)i + 1, GEN_ACCUM);
        rng r = {(uint64_t)i * 31 + 11};
        int nd = tp_graph_devices(g), maxdev;
        uint64_t mins[TP_MAX_DEVICES], lows[TP_MAX_DEVICES];
        min_caps(g, mins, &maxdev);
        min_caps_lowered(g, lows);
        tp_plan_opts o;
        for (int k = 0; k < 4; k++) { /* from the lowered minimum to the unlowered one */
            tp_plan_opts_init(&o, nd, 0);
            o.order = k < 3 ? TP_ORDER_DFS : (tp_order)rng_below(&r, 3);
            int below = 0;
            for (int d = 0; d < nd; d++) {
                o.device_mem[d] = lows[d] + (mins[d] > lows[d] ? (mins[d] - lows[d]) * (uint64_t)k / 4 : 0);
                below |= o.device_mem[d] < mins[d];
            }
            accum_plan(g, &o, &r, below, &ac);
        }
        for (int ord = 0; ord <= TP_ORDER_GREEDY; ord++) { /* the unlowered minimum: always plans */
            tp_plan_opts_init(&o, nd, 0);
            o.order = (tp_order)ord;
            memcpy(o.device_mem, mins, sizeof(uint64_t) * (size_t)nd);
            ASSERT_OK(accum_plan(g, &o, &r, 0, &ac));
        }
        tp_plan_opts_init(&o, nd, 0);
        memcpy(o.device_mem, mins, sizeof(uint64_t) * (size_t)nd);
        o.sum_into = 0;
        ASSERT_OK(accum_plan(g, &o, &r, 0, &ac));
        for (int k = 0; k < 2; k++) {
            tp_plan_opts_init(&o, nd, 0);
            o.order = (tp_order)rng_below(&r, 3);
            for (int d = 0; d < nd; d++) o.device_mem[d] = mins[d] + rng_below(&r, sum_on(g, d) + 1);
            ASSERT_OK(accum_plan(g, &o, &r, 0, &ac));
        }
        tp_plan_opts_init(&o, nd, 0);
        for (int d = 0; d < nd; d++) o.device_mem[d] = sum_on(g, d) + mins[d];
        ASSERT_OK(accum_plan(g, &o, &r, 0, &ac));
        tp_graph_free(g);
    }
    printf("sum-into: %d graphs, %d plans verified (%d with groups, %d groups in all), %d with groups evicted something, "
           "%d with groups below the unlowered minimum caps, %d fell back to no lowering, %d caps infeasible\n",
           count, ac.plans, ac.grouped_plans, ac.groups, ac.evicting_grouped, ac.below_min_grouped, ac.fallbacks, ac.infeasible);
    CHECKF(ac.grouped_plans >= ac.plans / 2, "only %d of %d plans lowered a sum", ac.grouped_plans, ac.plans);
    CHECKF(ac.evicting_grouped >= count / 2, "only %d plans with groups evicted anything: the caps are too loose", ac.evicting_grouped);
    CHECKF(ac.below_min_grouped >= count / 4, "only %d plans below the unlowered minimum", ac.below_min_grouped);
}

/* The paper's point (Appendix A): many large partials into one sum. Unlowered, the sum holds
 * all k partials and its output at once; lowered, one partial and the region at a time. */
TEST(sum_into_peak)
{
    const uint64_t S = 1 << 20;
    const int k = 8;
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t x, p[8], s;
    ASSERT_OK_ERR(tp_graph_add_input(g, "x", 0, TP_DT_NONE, -1, NULL, 4096, &x, &e), e);
    for (int i = 0; i < k; i++) {
        char id[16];
        snprintf(id, sizeof id, "p%d", i);
        ASSERT_OK_ERR(tp_graph_add_kernel(g, id, 0, "opaque", 1, &x, TP_DT_NONE, -1, NULL, S, NULL, 1e6, &p[i], &e), e);
    }
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "s", 0, "sum", (uint32_t)k, p, TP_DT_NONE, -1, NULL, S, "{\"accumulate\":true}", 1e6, &s, &e),
                  e);
    ASSERT_OK_ERR(tp_graph_add_output(g, s, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_plan_opts o;
    uint64_t peak[2];
    for (int lower = 0; lower < 2; lower++) {
        tp_plan_opts_init(&o, 1, 64 * S);
        o.sum_into = lower;
        tp_memgraph *mg;
        ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
        verify_plan(mg, g);
        tp_plan_stats st;
        tp_memgraph_stats(mg, &st);
        peak[lower] = st.dev[0].peak_bytes;
        ASSERT_EQ(st.sum_groups, (uint32_t)lower);
        tp_memgraph_free(mg);
    }
    printf("peak device bytes: %llu unlowered, %llu lowered (k = %d partials of %llu bytes)\n", (unsigned long long)peak[0],
           (unsigned long long)peak[1], k, (unsigned long long)S);
    ASSERT_GE(peak[0], (uint64_t)(k + 1) * S); /* every partial and the sum at once */
    ASSERT_LE(peak[1], 3 * S + 4096);          /* the region, the partial being added, the next one */
    /* a cap of 3 partials plans lowered without moving a byte; unlowered it is infeasible */
    tp_plan_opts_init(&o, 1, 3 * S + 4096);
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(g, &o, &mg, &e), e);
    verify_plan(mg, g);
    tp_plan_stats st;
    tp_memgraph_stats(mg, &st);
    ASSERT_EQ(st.sum_groups, 1u);
    ASSERT_EQ(st.dev[0].offload_count, 0u);
    tp_memgraph_free(mg);
    o.sum_into = 0;
    ASSERT_STATUS(tp_plan(g, &o, &mg, &e), TP_ERR_INFEASIBLE);
    tp_graph_free(g);
}

/* the training-shaped layered graph: its size as estimated, and plans at 50% and 20% of each
 * device's unconstrained peak verified (and run dynamically) like every family's */
TEST(props_layered_backward)
{
    for (int devs = 1; devs <= 3; devs++) {
        tp_layered_opts lo;
        tp_layered_opts_init(&lo);
        lo.devices = devs;
        lo.layers = 3;
        lo.heads = 3;
        lo.chunks = 2;
        lo.seq = 64;
        lo.head_dim = 8;
        lo.backward = 1;
        tp_graph *g;
        tp_error e;
        ASSERT_OK_ERR(tp_model_layered(&lo, &g, &e), e);
        tp_build_estimate est;
        tp_layered_estimate(&lo, &est);
        tp_graph_counts n;
        tp_count_taskgraph(g, &n);
        ASSERT_EQ((uint64_t)est.vertices, tp_graph_size(g));
        ASSERT_EQ((uint64_t)est.edges, n.edges);
        uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
        ASSERT_OK_ERR(tp_plan_bounds(g, TP_ORDER_TOPO, minf, peak, &e), e);
        const double frac[2] = {0.5, 0.2};
        int ev = 0;
        for (int i = 0; i < 2; i++) {
            tp_plan_opts o;
            tp_plan_opts_init(&o, devs, 0);
            o.order = TP_ORDER_TOPO;
            for (int d = 0; d < devs; d++) {
                uint64_t c = (uint64_t)((double)peak[d] * frac[i]);
                o.device_mem[d] = c > minf[d] ? c : minf[d];
            }
            rng r = {(uint64_t)devs * 13 + (uint64_t)i};
            ev += plan_check(g, &o, &r, 2);
        }
        CHECK(ev > 0); /* the caps made it offload */
        tp_graph_free(g);
    }
}

/* offload + reload bytes of mg over every device */
static uint64_t moved_bytes(const tp_plan_stats *st, int nd)
{
    uint64_t m = 0;
    for (int d = 0; d < nd; d++) m += st->dev[d].offload_bytes + st->dev[d].reload_bytes;
    return m;
}

/* The default eviction search's scan credit (docs/planner.md "The allocator's cost"): a small
 * training-shaped graph (6,000 vertices, whose search scans) gets the exact windows' plan, byte
 * for byte; one of 124,000 vertices at
 * 50% of its peak spends the credit, so some steps evict the furthest next use first, and its
 * plan moves within 1% of the bytes of the exact one (TP_EVICT_EXACT: no such step). Those steps
 * are the budget's (every family above verifies plans with budgets of 1-3 blocks); verifying a
 * plan of 195,000 vertices here would take seconds. */
TEST(props_scan_credit)
{
    const int layers[2] = {8, 168};
    for (int k = 0; k < 2; k++) {
        tp_layered_opts lo;
        tp_layered_opts_init(&lo);
        lo.heads = 16;
        lo.chunks = 8;
        lo.seq = 4096;
        lo.layers = layers[k];
        lo.backward = 1;
        tp_graph *g;
        tp_error e;
        ASSERT_OK_ERR(tp_model_layered(&lo, &g, &e), e);
        int nd = tp_graph_devices(g);
        uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
        ASSERT_OK_ERR(tp_plan_bounds(g, TP_ORDER_TOPO, minf, peak, &e), e);
        tp_memgraph *mg[2];
        tp_plan_stats st[2];
        for (int x = 0; x < 2; x++) {
            tp_plan_opts o;
            tp_plan_opts_init(&o, nd, 0);
            o.order = TP_ORDER_TOPO;
            o.evict_budget = x ? TP_EVICT_EXACT : 0;
            for (int d = 0; d < nd; d++) o.device_mem[d] = peak[d] / 2 > minf[d] ? peak[d] / 2 : minf[d];
            ASSERT_OK_ERR(tp_plan(g, &o, &mg[x], &e), e);
            tp_memgraph_stats(mg[x], &st[x]);
        }
        uint64_t belady[2] = {0, 0}, scans[2] = {0, 0};
        for (int x = 0; x < 2; x++)
            for (int d = 0; d < nd; d++) {
                belady[x] += st[x].dev[d].window_belady;
                scans[x] += st[x].dev[d].window_scans;
            }
        ASSERT_EQ(belady[1], 0);
        if (k == 0) {
            char *t[2];
            size_t len[2];
            for (int x = 0; x < 2; x++) ASSERT_OK_ERR(tp_memgraph_to_string(mg[x], &t[x], &len[x], &e), e);
            ASSERT_EQ(belady[0], 0);
            CHECKF(scans[0] > 0, "no window was scanned: the test is too easy");
            ASSERT_EQ(scans[0], scans[1]);
            printf("scan credit: %u vertices, %llu scans, as with exact windows\n", tp_graph_size(g), (unsigned long long)scans[0]);
            ASSERT_EQ(len[0], len[1]);
            CHECK(!memcmp(t[0], t[1], len[0]));
            free(t[0]);
            free(t[1]);
        } else {
            CHECKF(belady[0] > 0, "the credit was not spent (%llu scans): the test is too easy", (unsigned long long)scans[0]);
            CHECK(scans[1] > scans[0]);
            double r = (double)moved_bytes(&st[0], nd) / (double)moved_bytes(&st[1], nd);
            printf("scan credit: %llu scans and %llu furthest-next-use evictions; exact: %llu scans; bytes moved %.4f x the exact plan's\n",
                   (unsigned long long)scans[0], (unsigned long long)belady[0], (unsigned long long)scans[1], r);
            CHECK(r < 1.01 && r > 0.99);
        }
        tp_memgraph_free(mg[0]);
        tp_memgraph_free(mg[1]);
        tp_graph_free(g);
    }
}

/* A copy of g whose kernels other than sums carry other attributes ({"step": k}), and with
 * mutation m one difference a plan depends on: 1 a vertex's bytes, 2 an id, 3 an extra output,
 * 4 a kept vertex, 5 a resident input, 6 a sum's attributes (GEN_ACCUM graphs), 7 an input's
 * order. Returns NULL when g has nothing for m to change. */
static tp_graph *copy_graph(const tp_graph *g, int m, rng *r)
{
    uint32_t n = tp_graph_size(g), pick = (uint32_t)rng_below(r, n), done = 0;
    tp_graph *c = tp_graph_new(tp_graph_devices(g));
    tp_error e;
    CHECK(c != NULL);
    char attrs[64], id[256];
    for (uint32_t i = 0; i < n; i++) {
        const tp_vertex *v = tp_graph_vertex(g, i);
        uint32_t out, in[64];
        CHECK(v->ninputs <= 64);
        if (v->ninputs) memcpy(in, v->inputs, v->ninputs * sizeof *in);
        snprintf(id, sizeof id, "%s%s", v->id, m == 2 && i == pick ? "'" : "");
        done |= m == 2 && i == pick;
        if (m == 7 && i >= pick && !done && v->ninputs >= 2 && in[0] != in[1]) {
            uint32_t t = in[0];
            in[0] = in[1];
            in[1] = t;
            done = 1;
        }
        /* only a size given as bytes alone (no dtype or shape to differ too); a transfer's is its input's */
        int grow = m == 1 && i >= pick && !done && v->kind != TP_V_TRANSFER && v->ndim < 0;
        done |= grow;
        int sum = v->op && !strcmp(v->op, "sum");
        const char *a = v->attrs_json;
        if (v->kind == TP_V_KERNEL && !sum) {
            snprintf(attrs, sizeof attrs, "{\"step\":%llu}", (unsigned long long)rng_below(r, 1000));
            a = attrs;
        } else if (m == 6 && sum && i >= pick && !done) {
            a = a ? NULL : "{\"accumulate\":true}";
            done = 1;
        }
        if (v->kind == TP_V_INPUT)
            ASSERT_OK_ERR(tp_graph_add_input(c, id, v->device, v->dtype, v->ndim, v->shape, v->bytes * (grow ? 2 : 1), &out, &e), e);
        else if (v->kind == TP_V_KERNEL)
            ASSERT_OK_ERR(tp_graph_add_kernel(c, id, v->device, v->op, v->ninputs, in, v->dtype, v->ndim, v->shape,
                                              v->bytes * (grow ? 2 : 1), a, v->flops, &out, &e), e);
        else
            ASSERT_OK_ERR(tp_graph_add_transfer(c, id, v->device, in[0], &out, &e), e);
        int k = tp_graph_inplace(g, i);
        if (k >= 0) ASSERT_OK_ERR(tp_graph_set_inplace(c, out, k, &e), e);
    }
    for (uint32_t o = 0; o < tp_graph_num_outputs(g); o++) ASSERT_OK_ERR(tp_graph_add_output(c, tp_graph_outputs(g)[o], &e), e);
    for (uint32_t i = 0; i < n && m == 3 && !done; i++) {
        int is_out = 0;
        for (uint32_t o = 0; o < tp_graph_num_outputs(g); o++) is_out |= tp_graph_outputs(g)[o] == i;
        if (!is_out && tp_graph_vertex(g, i)->kind == TP_V_KERNEL) {
            ASSERT_OK_ERR(tp_graph_add_output(c, i, &e), e);
            done = 1;
        }
    }
    if (tp_graph_finalize(c, &e) != TP_OK) { /* a mutation the graph cannot take (an in-place size) */
        tp_graph_free(c);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t off;
        int hc;
        if (tp_graph_resident(g, i, &off, &hc)) ASSERT_OK_ERR(tp_graph_set_resident(c, i, off, hc, &e), e);
        if (tp_graph_keep(g, i)) ASSERT_OK_ERR(tp_graph_set_keep(c, i, &e), e);
    }
    for (uint32_t i = 0; i < n && m == 4 && !done; i++)
        if (tp_graph_vertex(g, i)->kind == TP_V_INPUT && !tp_graph_keep(g, i)) done = tp_graph_set_keep(c, i, &e) == TP_OK;
    for (uint32_t i = 0; i < n && m == 5 && !done; i++)
        if (tp_graph_vertex(g, i)->kind == TP_V_INPUT && !tp_graph_resident(g, i, NULL, NULL))
            done = tp_graph_set_resident(c, i, 0, 1, &e) == TP_OK;
    if (m && !done) {
        tp_graph_free(c);
        return NULL;
    }
    return c;
}

static char *plan_text(const tp_memgraph *mg)
{
    char *t = NULL;
    size_t len;
    tp_error e;
    ASSERT_OK_ERR(tp_memgraph_to_string(mg, &t, &len, &e), e);
    return t;
}

/* Plan reuse (tp_graph_same_plan, tp_memgraph_rebind; generate's plan per step): random graphs of
 * every family and copies of them whose kernels (sums excepted) carry other attributes are the
 * same plan by tp_graph_same_plan, and the planner, at the graph's smallest caps and at twice
 * them, makes the same MemGraph of both, which rebinds to the copy; a copy with one difference
 * of each kind (copy_graph) is refused, and the plan stays bound to its graph. */
TEST(props_plan_reuse)
{
    rng r = {0x5eed};
    unsigned same = 0, refused = 0;
    for (int fam = 0; fam < GEN_NFAMILIES; fam++)
        for (uint64_t seed = 1; seed <= 12; seed++) {
            tp_graph *g = gen_graph(seed * 7919 + (uint64_t)fam, fam);
            CHECK(g != NULL);
            tp_graph *c = copy_graph(g, 0, &r);
            CHECK(c != NULL);
            ASSERT_EQ(tp_graph_same_plan(g, c), 1);
            ASSERT_EQ(tp_graph_same_plan(c, g), 1);
            uint64_t cap[TP_MAX_DEVICES];
            int arg;
            min_caps(g, cap, &arg);
            for (int twice = 0; twice < 2; twice++) {
                tp_plan_opts o;
                tp_plan_opts_init(&o, tp_graph_devices(g), 0);
                for (int d = 0; d < tp_graph_devices(g); d++) o.device_mem[d] = cap[d] * (twice ? 2 : 1) + 4096;
                tp_memgraph *a = NULL, *b = NULL;
                tp_error e;
                if (tp_plan(g, &o, &a, &e) != TP_OK) continue; /* alignment can need more than the sum */
                ASSERT_OK_ERR(tp_plan(c, &o, &b, &e), e);
                char *ta = plan_text(a), *tb = plan_text(b);
                ASSERT_STR_EQ(ta, tb);
                ASSERT_OK_ERR(tp_memgraph_rebind(a, c, &e), e);
                CHECK(tp_memgraph_taskgraph(a) == c);
                char *tr = plan_text(a);
                ASSERT_STR_EQ(tr, tb);
                free(ta);
                free(tb);
                free(tr);
                ASSERT_OK_ERR(tp_memgraph_rebind(a, g, &e), e);
                for (int m = 1; m <= 7; m++) {
                    tp_graph *x = copy_graph(g, m, &r);
                    if (!x) continue;
                    CHECKF(!tp_graph_same_plan(g, x), "mutation %d of %s seed %llu is the same plan", m, gen_family_name[fam],
                           (unsigned long long)seed);
                    ASSERT_STATUS(tp_memgraph_rebind(a, x, &e), TP_ERR_ARG);
                    CHECK(tp_memgraph_taskgraph(a) == g);
                    tp_graph_free(x);
                    refused++;
                }
                same++;
                tp_memgraph_free(a);
                tp_memgraph_free(b);
            }
            tp_graph_free(c);
            tp_graph_free(g);
        }
    CHECKF(same >= 100 && refused >= 400, "only %u plans compared, %u mutations refused", same, refused);
}

TEST(props_chain) { run_family(GEN_CHAIN, 150); }
TEST(props_diamond) { run_family(GEN_DIAMOND, 150); }
TEST(props_fanin) { run_family(GEN_FANIN, 150); }
TEST(props_fanout) { run_family(GEN_FANOUT, 150); }
TEST(props_multidev) { run_family(GEN_MULTIDEV, 150); }
TEST(props_random) { run_family(GEN_RANDOM, 150); }
TEST(props_tiny_sizes) { run_family(GEN_TINY, 150); }
TEST(props_big_sizes) { run_family(GEN_BIG, 60); }

/* `test_props dump DIR N [accum]`: writes N random TaskGraphs for tests/mutations.py (accum:
 * of the sum-into family) */
static int dump(int argc, char **argv)
{
    if (strcmp(argv[1], "dump")) return -1;
    if (argc < 4) return 2;
    int n = atoi(argv[3]), accum = argc > 4 && !strcmp(argv[4], "accum");
    for (int i = 0; i < n; i++) {
        int fam = i % (GEN_BIG + 1) == GEN_BIG ? GEN_RANDOM : i % (GEN_BIG + 1);
        tp_graph *g = accum ? gen_graph(1000 + (uint64_t)i, GEN_ACCUM) : gen_graph(1000 + (uint64_t)i, fam);
        char path[4096];
        snprintf(path, sizeof path, "%s/g%03d.json", argv[2], i);
        FILE *f = fopen(path, "w");
        if (!f) return 2;
        tp_graph_write(g, f, NULL);
        fclose(f);
        tp_graph_free(g);
    }
    return 0;
}

__attribute__((constructor)) static void set_hook(void)
{
    tpt_main_hook = dump;
}
