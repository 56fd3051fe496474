/* exec.c - the event loop that runs a MemGraph ("nondeterministic" execution, paper section 5).
 *
 * Every vertex has a counter of unfinished dependencies. A vertex whose counter reaches zero
 * joins the ready queue of its resource: (device, engine) where engine is a compute stream,
 * the host-to-device or device-to-host copy engine, or the peer engine that receives
 * transfers. A queue whose state changed (a vertex became ready, a unit became free) is
 * marked dirty; dispatch looks only at dirty queues, so launching is O(1) per vertex and
 * nothing rescans the ready set. Units are released when their vertex completes.
 *
 * Policies: `any` serves each queue first-come first-served; `random` picks uniformly among
 * the ready with a seeded generator; `fixed` lets each queue start only the next vertex of
 * its own sequence, taken from one global topological order of the MemGraph that follows the
 * planner's simulation (so it cannot deadlock: every wait is on something earlier in it).
 *
 * The loop accounts compute-idle time during which some kernel of the device had its data
 * but still waited on memory dependencies (the stall the paper's design minimizes). */
#include <stdlib.h>
#include <string.h>
#include "exec/backend.h"
#include "exec/sink.h"
#include "io/util.h"
#include "turnip/io.h"

const char *tp_policy_name(tp_policy p)
{
    return p == TP_POLICY_FIXED ? "fixed" : p == TP_POLICY_RANDOM ? "random" : "any";
}

tp_status tp_policy_parse(const char *name, tp_policy *out)
{
    for (int p = 0; p < 3; p++)
        if (!strcmp(name, tp_policy_name((tp_policy)p))) {
            *out = (tp_policy)p;
            return TP_OK;
        }
    return TP_ERR_PARSE;
}

void tp_run_opts_init(tp_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->policy = TP_POLICY_ANY;
    o->streams = 1;
    o->copy_depth = 2;
    o->fail_vertex = -1;
}

typedef struct {
    uint32_t *v;          /* ANY: ring; RANDOM: bag; FIXED: the sequence */
    uint32_t cap, head, tail, count; /* ring / bag state; FIXED: head = cursor */
    int *free_units, nfree;
    uint8_t dirty;
} queue;

struct tp_exec {
    const tp_memgraph *mg;
    const tp_graph *g;
    tp_backend *be;
    tp_run_opts o;
    int nd, nq;
    uint32_t n;
    uint8_t *engine;
    int16_t *device;
    uint32_t *succ_off, *succ;
    uint8_t *succ_data; /* edge is a data edge */
    uint32_t *ndeps, *ndata;
    queue *q;
    uint32_t *dirty;
    int ndirty;
    tp__sink sink;
    int sink_ok, prepared;
    /* per run */
    uint32_t *left, *dleft;
    uint8_t *ready;
    double *t0, *t1;
    int16_t *unit;
    uint64_t rng;
};

static int qidx(const tp_exec *x, uint32_t v)
{
    return x->device[v] * TP_ENG_COUNT + x->engine[v];
}

static uint64_t rnd(tp_exec *x)
{
    uint64_t z = (x->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void tp_exec_free(tp_exec *x)
{
    if (!x) return;
    if (x->prepared) x->be->ops->release(x->be);
    if (x->sink_ok) tp__sink_destroy(&x->sink);
    if (x->q)
        for (int i = 0; i < x->nq; i++) {
            free(x->q[i].v);
            free(x->q[i].free_units);
        }
    free(x->q);
    free(x->dirty);
    free(x->engine);
    free(x->device);
    free(x->succ_off);
    free(x->succ);
    free(x->succ_data);
    free(x->ndeps);
    free(x->ndata);
    free(x->left);
    free(x->dleft);
    free(x->ready);
    free(x->t0);
    free(x->t1);
    free(x->unit);
    free(x);
}

/* global topological order following creation (simulation) order: Kahn by smallest id */
static tp_status fixed_order(tp_exec *x, uint32_t *rank, tp_error *err)
{
    uint32_t n = x->n, *deg = malloc((n + 1) * sizeof *deg), *heap = malloc((n + 1) * sizeof *heap);
    if (!deg || !heap) {
        free(deg);
        free(heap);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    size_t hn = 0;
    for (uint32_t i = 0; i < n; i++) {
        deg[i] = x->ndeps[i];
        if (!deg[i]) heap[hn++] = i; /* increasing ids: already a heap */
    }
    uint32_t r = 0;
    while (hn) {
        uint32_t u = heap[0], last = heap[--hn];
        size_t i = 0;
        for (;;) { /* sift down */
            size_t l = 2 * i + 1, m = i;
            uint32_t best = last;
            if (l < hn && heap[l] < best) {
                m = l;
                best = heap[l];
            }
            if (l + 1 < hn && heap[l + 1] < best) m = l + 1;
            if (m == i) break;
            heap[i] = heap[m];
            i = m;
        }
        if (hn) heap[i] = last;
        rank[u] = r++;
        for (uint32_t k = x->succ_off[u]; k < x->succ_off[u + 1]; k++) {
            uint32_t w = x->succ[k];
            if (--deg[w] == 0) { /* sift up */
                size_t j = hn++;
                while (j && heap[(j - 1) / 2] > w) {
                    heap[j] = heap[(j - 1) / 2];
                    j = (j - 1) / 2;
                }
                heap[j] = w;
            }
        }
    }
    free(deg);
    free(heap);
    return r == n ? TP_OK : tp__fail(err, TP_ERR_INVALID, "MemGraph has a cycle");
}

static uint32_t *rank_for_sort;
static int by_rank(const void *a, const void *b)
{
    uint32_t x = rank_for_sort[*(const uint32_t *)a], y = rank_for_sort[*(const uint32_t *)b];
    return x < y ? -1 : x > y;
}

tp_status tp_exec_new(const tp_memgraph *mg, tp_backend *be, const tp_run_opts *o, tp_exec **out, tp_error *err)
{
    if (o->streams < 1 || o->streams > 64) return tp__fail(err, TP_ERR_ARG, "streams must be 1..64, not %d", o->streams);
    if (o->copy_depth < 1 || o->copy_depth > 4) return tp__fail(err, TP_ERR_ARG, "copy depth must be 1..4, not %d", o->copy_depth);
    tp_exec *x = calloc(1, sizeof *x);
    if (!x) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    x->mg = mg;
    x->g = tp_memgraph_taskgraph(mg);
    x->be = be;
    x->o = *o;
    x->n = tp_memgraph_size(mg);
    x->nd = tp_graph_devices(x->g);
    x->nq = x->nd * TP_ENG_COUNT;
    uint32_t n = x->n;
    x->engine = malloc(n + 1);
    x->device = malloc((n + 1) * sizeof *x->device);
    x->ndeps = calloc(n + 1, sizeof *x->ndeps);
    x->ndata = calloc(n + 1, sizeof *x->ndata);
    x->succ_off = calloc(n + 2, sizeof *x->succ_off);
    x->q = calloc((size_t)x->nq, sizeof *x->q);
    x->dirty = malloc((size_t)x->nq * sizeof *x->dirty);
    x->left = malloc((n + 1) * sizeof *x->left);
    x->dleft = malloc((n + 1) * sizeof *x->dleft);
    x->ready = calloc(n + 1, 1);
    x->t0 = calloc(n + 1, sizeof *x->t0);
    x->t1 = calloc(n + 1, sizeof *x->t1);
    x->unit = calloc(n + 1, sizeof *x->unit);
    tp_status s = TP_OK;
    if (!x->engine || !x->device || !x->ndeps || !x->ndata || !x->succ_off || !x->q || !x->dirty || !x->left ||
        !x->dleft || !x->ready || !x->t0 || !x->t1 || !x->unit) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto fail;
    }
    size_t ne = 0;
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        switch (v.kind) {
        case TP_M_KERNEL: x->engine[i] = TP_ENG_COMPUTE; x->device[i] = (int16_t)v.device; break;
        case TP_M_RELOAD: x->engine[i] = TP_ENG_H2D; x->device[i] = (int16_t)v.device; break;
        case TP_M_OFFLOAD: x->engine[i] = TP_ENG_D2H; x->device[i] = (int16_t)v.device; break;
        case TP_M_TRANSFER: x->engine[i] = TP_ENG_PEER; x->device[i] = (int16_t)v.device; break;
        default: x->engine[i] = TP_ENG_COUNT; x->device[i] = 0; break;
        }
        x->ndeps[i] = v.ndeps;
        for (uint32_t k = 0; k < v.ndeps; k++) x->succ_off[v.deps[k] + 1]++;
        ne += v.ndeps;
    }
    for (uint32_t i = 0; i < n; i++) x->succ_off[i + 1] += x->succ_off[i];
    x->succ = malloc((ne + 1) * sizeof *x->succ);
    x->succ_data = malloc(ne + 1);
    uint32_t *fill = malloc((n + 1) * sizeof *fill);
    if (!x->succ || !x->succ_data || !fill) {
        free(fill);
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto fail;
    }
    memcpy(fill, x->succ_off, n * sizeof *fill);
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(mg, i, &v);
        for (uint32_t k = 0; k < v.ndeps; k++) {
            int data = 0;
            for (uint32_t r = 0; r < v.nreads; r++) data |= v.reads[r] == v.deps[k];
            x->ndata[i] += (uint32_t)data;
            x->succ_data[fill[v.deps[k]]] = (uint8_t)data;
            x->succ[fill[v.deps[k]]++] = i;
        }
    }
    free(fill);
    /* queues: capacity per class, units per engine */
    for (uint32_t i = 0; i < n; i++)
        if (x->engine[i] != TP_ENG_COUNT) x->q[qidx(x, i)].cap++;
    for (int qi = 0; qi < x->nq; qi++) {
        queue *q = &x->q[qi];
        int units = qi % TP_ENG_COUNT == TP_ENG_COMPUTE ? o->streams : o->copy_depth;
        q->v = malloc((q->cap + 1) * sizeof *q->v);
        q->free_units = malloc((size_t)units * sizeof *q->free_units);
        if (!q->v || !q->free_units) {
            s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    if (o->fail_vertex >= 0 && ((uint64_t)o->fail_vertex >= n || x->engine[o->fail_vertex] == TP_ENG_COUNT)) {
        s = tp__fail(err, TP_ERR_ARG, "fault injection: vertex %lld is not a vertex that runs (an input, or out of range)",
                     (long long)o->fail_vertex);
        goto fail;
    }
    if (o->policy == TP_POLICY_FIXED) {
        uint32_t *rank = malloc((n + 1) * sizeof *rank);
        if (!rank) {
            s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if ((s = fixed_order(x, rank, err))) {
            free(rank);
            goto fail;
        }
        for (int qi = 0; qi < x->nq; qi++) x->q[qi].count = 0;
        for (uint32_t i = 0; i < n; i++)
            if (x->engine[i] != TP_ENG_COUNT) {
                queue *q = &x->q[qidx(x, i)];
                q->v[q->count++] = i;
            }
        rank_for_sort = rank;
        for (int qi = 0; qi < x->nq; qi++) qsort(x->q[qi].v, x->q[qi].count, sizeof(uint32_t), by_rank);
        free(rank);
    }
    if (!tp__sink_init(&x->sink, (size_t)x->nd * (size_t)(o->streams + 3 * o->copy_depth) + 1)) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto fail;
    }
    x->sink_ok = 1;
    tp__plan_info pi = {mg, &x->o, &x->sink, x->engine, x->device};
    if ((s = be->ops->prepare(be, &pi, err))) goto fail;
    x->prepared = 1;
    *out = x;
    return TP_OK;
fail:
    tp_exec_free(x);
    return s;
}

tp_status tp_exec_write(tp_exec *x, const tp_region *r, const void *src, tp_error *err)
{
    return x->be->ops->write(x->be, r, src, err);
}

tp_status tp_exec_read(tp_exec *x, const tp_region *r, void *dst, tp_error *err)
{
    return x->be->ops->read(x->be, r, dst, err);
}

static void mark_dirty(tp_exec *x, int qi)
{
    if (!x->q[qi].dirty) {
        x->q[qi].dirty = 1;
        x->dirty[x->ndirty++] = (uint32_t)qi;
    }
}

static void make_ready(tp_exec *x, uint32_t v)
{
    int qi = qidx(x, v);
    queue *q = &x->q[qi];
    x->ready[v] = 1;
    if (x->o.policy != TP_POLICY_FIXED) {
        q->v[q->tail] = v;
        q->tail = q->tail + 1 == q->cap ? 0 : q->tail + 1;
        q->count++;
    }
    mark_dirty(x, qi);
}

/* next vertex the queue may start, removed from it; UINT32_MAX if none */
static uint32_t pop(tp_exec *x, queue *q)
{
    if (x->o.policy == TP_POLICY_FIXED) {
        if (q->head < q->count && x->ready[q->v[q->head]]) return q->v[q->head++];
        return UINT32_MAX;
    }
    if (!q->count) return UINT32_MAX;
    uint32_t at = q->head;
    if (x->o.policy == TP_POLICY_RANDOM) { /* swap a random element to the head */
        uint32_t k = (uint32_t)(rnd(x) % q->count), j = (q->head + k) % q->cap, t = q->v[j];
        q->v[j] = q->v[at];
        q->v[at] = t;
    }
    uint32_t v = q->v[at];
    q->head = q->head + 1 == q->cap ? 0 : q->head + 1;
    q->count--;
    return v;
}

tp_status tp_exec_run(tp_exec *x, tp_run_summary *sum, tp_error *err)
{
    uint32_t n = x->n;
    memset(sum, 0, sizeof *sum);
    sum->ndevices = x->nd;
    sum->vertices = n;
    x->rng = x->o.seed * 0x2545f4914f6cdd1dull + 1;
    for (int qi = 0; qi < x->nq; qi++) {
        queue *q = &x->q[qi];
        int units = qi % TP_ENG_COUNT == TP_ENG_COMPUTE ? x->o.streams : x->o.copy_depth;
        q->nfree = units;
        for (int u = 0; u < units; u++) q->free_units[u] = units - 1 - u;
        q->head = q->tail = 0;
        if (x->o.policy != TP_POLICY_FIXED) q->count = 0;
        q->dirty = 0;
    }
    x->ndirty = 0;
    int running[TP_MAX_DEVICES] = {0}, memblocked[TP_MAX_DEVICES] = {0};
    double last[TP_MAX_DEVICES];
    memset(x->ready, 0, n);
    uint32_t done = 0, inflight = 0;
    int failed = 0;
    tp_status fst = TP_OK;
    /* a simulating backend brings its own (virtual) clock */
    double (*clock)(tp_backend *) = x->be->ops->now;
#define NOW() (clock ? clock(x->be) : tp__now())
    double start = NOW(), loop = 0, last_progress = tp__now();
    for (int d = 0; d < x->nd; d++) last[d] = start;
    /* inputs complete at once; the rest wait for their deps */
    for (uint32_t i = 0; i < n; i++) {
        x->left[i] = x->ndeps[i];
        x->dleft[i] = x->ndata[i];
    }
    for (uint32_t i = 0; i < n; i++) {
        if (x->engine[i] == TP_ENG_COUNT) {
            x->t0[i] = x->t1[i] = start;
            done++;
            for (uint32_t k = x->succ_off[i]; k < x->succ_off[i + 1]; k++) {
                uint32_t w = x->succ[k];
                x->dleft[w] -= x->succ_data[k];
                x->left[w]--;
            }
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (x->engine[i] == TP_ENG_COUNT) continue;
        if (!x->left[i]) make_ready(x, i);
        else if (!x->dleft[i] && x->engine[i] == TP_ENG_COMPUTE) memblocked[x->device[i]]++;
    }
    while (done < n && !(failed && !inflight)) {
        double tl = tp__now();
        /* dispatch from dirty queues */
        if (!failed)
            for (int k = 0; k < x->ndirty; k++) {
                queue *q = &x->q[x->dirty[k]];
                q->dirty = 0;
                while (q->nfree) {
                    uint32_t v = pop(x, q);
                    if (v == UINT32_MAX) break;
                    int u = q->free_units[--q->nfree];
                    x->unit[v] = (int16_t)u;
                    inflight++;
                    if (x->engine[v] == TP_ENG_COMPUTE) running[x->device[v]]++;
                    x->be->ops->launch(x->be, v, u);
                }
            }
        x->ndirty = 0;
        loop += tp__now() - tl;
        if (!inflight) { /* nothing running and nothing launchable: a dependency cycle */
            if (!failed) fst = tp__fail(err, TP_ERR_INVALID, "run stalled with %u of %u vertices done (cyclic MemGraph?)", done, n);
            failed = 1;
            break;
        }
        size_t nc;
        if (x->be->ops->advance) x->be->ops->advance(x->be); /* posts what is due next */
        tp__done *c = tp__sink_take(&x->sink, 20.0, &nc);
        double tv = NOW();
        tl = tp__now();
        for (int d = 0; d < x->nd; d++) { /* stall accounting up to now, with the old state */
            if (!running[d] && memblocked[d]) sum->dev[d].stall_mem += tv - last[d];
            last[d] = tv;
        }
        for (size_t i = 0; i < nc; i++) {
            uint32_t v = c[i].vertex;
            int qi = qidx(x, v);
            queue *q = &x->q[qi];
            q->free_units[q->nfree++] = x->unit[v];
            mark_dirty(x, qi);
            inflight--;
            done++;
            x->t0[v] = c[i].t0;
            x->t1[v] = c[i].t1;
            int d = x->device[v], e = x->engine[v];
            tp_mvertex mv;
            tp_memgraph_vertex(x->mg, v, &mv);
            if (e == TP_ENG_COMPUTE) {
                running[d]--;
                sum->dev[d].kernels++;
                sum->dev[d].compute_busy += c[i].t1 - c[i].t0;
            } else {
                sum->dev[d].copies[e]++;
                sum->dev[d].copy_bytes[e] += mv.write.bytes;
                sum->dev[d].copy_busy[e] += c[i].t1 - c[i].t0;
            }
            if (c[i].status != TP_OK) {
                if (!failed)
                    fst = tp__fail(err, c[i].status, "vertex %u (%s '%s' on device %d) failed: %s", v, tp_mkind_name(mv.kind),
                                   tp_graph_vertex(x->g, mv.task)->id, d, c[i].err ? c[i].err->msg : "error");
                failed = 1;
                continue;
            }
            for (uint32_t k = x->succ_off[v]; k < x->succ_off[v + 1]; k++) {
                uint32_t w = x->succ[k];
                /* a kernel is memory-blocked while its data is there but a memory dep is not */
                int compute = x->engine[w] == TP_ENG_COMPUTE;
                int before = compute && !x->dleft[w] && x->left[w];
                x->dleft[w] -= x->succ_data[k];
                x->left[w]--;
                int after = compute && !x->dleft[w] && x->left[w];
                memblocked[x->device[w]] += after - before;
                if (!x->left[w] && !failed) make_ready(x, w);
            }
        }
        if (x->o.progress && tl - last_progress > 0.25) { /* wall clock, even when simulating */
            last_progress = tl;
            x->o.progress(x->o.progress_ctx, done, n);
        }
        loop += tp__now() - tl;
    }
    double end = NOW();
#undef NOW
    sum->makespan = end - start;
    sum->lower_bound = x->be->ops->bound ? x->be->ops->bound(x->be) : 0;
    sum->loop_seconds = loop;
    if (!fst && x->o.trace_path) {
        extern tp_status tp__trace_write(const tp_exec *x, const char *path, double start, tp_error *err);
        fst = tp__trace_write(x, x->o.trace_path, start, err);
    }
    return fst;
}

/* accessors for trace.c */
const tp_memgraph *tp__exec_mg(const tp_exec *x);
const double *tp__exec_times(const tp_exec *x, int end);
const int16_t *tp__exec_units(const tp_exec *x);
const uint8_t *tp__exec_engines(const tp_exec *x);
const int16_t *tp__exec_devices(const tp_exec *x);
const tp_memgraph *tp__exec_mg(const tp_exec *x) { return x->mg; }
const tp_memgraph *tp_exec_memgraph(const tp_exec *x) { return x->mg; }
const double *tp__exec_times(const tp_exec *x, int end) { return end ? x->t1 : x->t0; }
const int16_t *tp__exec_units(const tp_exec *x) { return x->unit; }
const uint8_t *tp__exec_engines(const tp_exec *x) { return x->engine; }
const int16_t *tp__exec_devices(const tp_exec *x) { return x->device; }

void tp_run_summary_print(const tp_run_summary *s, FILE *f)
{
    char b[TP_ENG_COUNT][32];
    fprintf(f, "run: %llu vertices, makespan %.3f ms (executor loop %.3f ms)", (unsigned long long)s->vertices,
            s->makespan * 1e3, s->loop_seconds * 1e3);
    if (s->lower_bound > 0)
        fprintf(f, "; lower bound %.3f ms, makespan / bound %.3f", s->lower_bound * 1e3, s->makespan / s->lower_bound);
    fputc('\n', f);
    fprintf(f, "%-6s %8s %11s %11s %24s %24s %24s\n", "device", "kernels", "busy ms", "mem-stall", "h2d (n, bytes, ms)",
            "d2h (n, bytes, ms)", "peer-in (n, bytes, ms)");
    for (int d = 0; d < s->ndevices; d++) {
        char cell[TP_ENG_COUNT][48];
        for (int e = 1; e < TP_ENG_COUNT; e++)
            snprintf(cell[e], sizeof cell[e], "%llu, %s, %.2f", (unsigned long long)s->dev[d].copies[e],
                     tp_format_size(s->dev[d].copy_bytes[e], b[e], sizeof b[e]), s->dev[d].copy_busy[e] * 1e3);
        fprintf(f, "%-6d %8llu %11.2f %11.2f %24s %24s %24s\n", d, (unsigned long long)s->dev[d].kernels,
                s->dev[d].compute_busy * 1e3, s->dev[d].stall_mem * 1e3, cell[1], cell[2], cell[3]);
    }
    /* one machine-readable line (bench/llama_cuda.py reads it) */
    uint64_t cb[TP_ENG_COUNT] = {0};
    double busy = 0;
    for (int d = 0; d < s->ndevices; d++) {
        busy += s->dev[d].compute_busy;
        for (int e = 1; e < TP_ENG_COUNT; e++) cb[e] += s->dev[d].copy_bytes[e];
    }
    fprintf(f, "totals: makespan %.6f s, kernel busy %.6f s, h2d %llu B, d2h %llu B, peer %llu B\n", s->makespan, busy,
            (unsigned long long)cb[TP_ENG_H2D], (unsigned long long)cb[TP_ENG_D2H], (unsigned long long)cb[TP_ENG_PEER]);
}

tp_status tp__region_check(const tp_region *r, uint64_t host_bytes, const uint64_t *cap, int nd, tp_error *err)
{
    uint64_t lim = r->space == TP_SPACE_HOST ? host_bytes : (r->device >= 0 && r->device < nd ? cap[r->device] : 0);
    if (r->offset > lim || r->bytes > lim - r->offset) return tp__fail(err, TP_ERR_ARG, "region outside its memory");
    return TP_OK;
}
