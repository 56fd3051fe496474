/* exec.c - the event loop that runs a MemGraph ("nondeterministic" execution, paper section 5).
 *
 * Every vertex has a counter of unfinished dependencies. A vertex whose counter reaches zero
 * is pushed to the ready queue of its resource: (device, engine), the engines being the
 * backend's own table (exec/backend.h). A queue whose state changed (a vertex became ready, a
 * unit became free) is marked dirty; dispatch looks only at dirty queues, so launching is
 * O(1) per vertex and nothing rescans the ready set. Which ready vertex starts is the dispatch
 * policy's choice (exec/policy.h: a table; one file per policy); a policy that ranks vertices by
 * their duration (needs_cost) gets an estimate per vertex, the backend's cost model or the
 * generic one below, computed in tp_exec_new only for it.
 *
 * A run goes in named phases, like libuv's uv_run: start (reset, inputs done, first ready
 * vertices), then per turn dispatch (launch from dirty queues), wait (advance a simulating
 * backend's clock, or take completions from the sink, spinning then sleeping), time (read
 * the clock), account (compute-idle time during which a kernel of the device had its data
 * but still waited on memory dependencies: the stall the paper's design minimizes), complete
 * (free units, count, release successors) and progress; then finish. What the loop needs per
 * vertex (engine, device, queue, bytes) is computed once, in tp_exec_new.
 *
 * Sum-into groups: a member whose deps are done waits for its group's lock (a FIFO of waiting
 * members, or in member order when `ordered`) before it enters its engine's queue; it holds the
 * lock until it completes. A join runs on no engine: it completes when its deps are done. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exec/exec_internal.h"
#include "exec/policy.h"
#include "exec/sink.h"
#include "io/topo.h"
#include "io/util.h"
#include "turnip/io.h"

_Static_assert(TP_MAX_ENGINES < TP__NO_ENGINE, "engine indices fit below the no-engine mark");
_Static_assert(TP_MAX_STREAMS <= INT16_MAX && TP_MAX_COPY_DEPTH <= INT16_MAX, "units fit the run record");

void tp_run_opts_init(tp_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->policy = NULL;
    o->streams = 1;
    o->copy_depth = 2;
    o->fail_vertex = -1;
}

struct tp_exec {
    const tp_memgraph *mg;
    const tp_graph *g;
    tp_backend *be;
    tp_run_opts o;
    const tp__policy *policy;
    void *pstate;
    int nd, ne;
    tp__engine eng[TP_MAX_ENGINES];
    uint32_t n, nq;
    /* per vertex, computed once */
    uint8_t *engine;
    int16_t *device;
    uint32_t *queue;
    uint64_t *bytes;
    uint32_t *succ_off, *succ;
    uint32_t *order, nordered; /* a topological order of the plan (Kahn, FIFO), for the policy and the backend */
    uint8_t *succ_data; /* edge is a data edge */
    uint32_t *ndeps, *ndata;
    /* sum-into groups: per vertex, its group if a member (else -1) and whether it is a join;
     * per group its members in ascending index (CSR); `ordered`: the lock serves them so */
    int32_t *grp;
    uint8_t *join;
    uint32_t ngroups, *gm_off, *gm, *gnext_member;
    int ordered;
    /* per queue */
    uint32_t *qsize;
    int *units, *nfree, *free_off, *free_units;
    uint8_t *dirty_flag;
    uint32_t *dirty;
    uint32_t ndirty;
    tp__sink sink;
    int sink_ok, prepared;
    /* per run */
    uint32_t *left, *dleft;
    uint8_t *busy; /* in flight */
    uint32_t *gholder, *gnext, *ghead, *gcount; /* per group: lock holder, next in order, FIFO */
    uint8_t *gready;  /* per vertex: a member waiting for its lock */
    uint32_t *gring;  /* per group (at gm_off): the FIFO of waiting members */
    tp__vrec *rec;
    double start;
    int ran;    /* a run has finished: the record is there */
    int broken; /* a backend broke the completion contract: vertices may still be running */
    /* in a session (exec/session.c): its slot for its one live executor, cleared on free */
    tp_exec **holder;
    int detached; /* its session was freed first: the backend is released */
};

void tp_exec_free(tp_exec *x)
{
    if (!x) return;
    if (x->holder) *x->holder = NULL;
    if (x->prepared) x->be->ops->release(x->be);
    if (x->sink_ok) tp__sink_destroy(&x->sink);
    if (x->policy && x->pstate) x->policy->free(x->pstate);
    free(x->engine);
    free(x->device);
    free(x->queue);
    free(x->bytes);
    free(x->succ_off);
    free(x->succ);
    free(x->order);
    free(x->succ_data);
    free(x->ndeps);
    free(x->ndata);
    free(x->qsize);
    free(x->units);
    free(x->nfree);
    free(x->free_off);
    free(x->free_units);
    free(x->dirty_flag);
    free(x->dirty);
    free(x->left);
    free(x->dleft);
    free(x->busy);
    free(x->grp);
    free(x->join);
    free(x->gm_off);
    free(x->gm);
    free(x->gnext_member);
    free(x->gholder);
    free(x->gnext);
    free(x->ghead);
    free(x->gcount);
    free(x->gready);
    free(x->gring);
    free(x->rec);
    free(x);
}

static int is_compute(const tp_exec *x, uint32_t v)
{
    return x->engine[v] != TP__NO_ENGINE && !x->eng[x->engine[v]].moves;
}

/* the backend's engines, checked */
static tp_status describe_engines(tp_exec *x, tp_error *err)
{
    x->ne = x->be->ops->engines(x->be, &x->o, x->eng);
    if (x->ne < 1 || x->ne > TP_MAX_ENGINES)
        return tp__fail(err, TP_ERR_INVALID, "backend %s describes %d engines (1..%d)", x->be->ops->name, x->ne, TP_MAX_ENGINES);
    for (int e = 0; e < x->ne; e++)
        if (x->eng[e].units < 1 || !x->eng[e].name || !x->eng[e].tag)
            return tp__fail(err, TP_ERR_INVALID, "backend %s: engine %d has no units or no name", x->be->ops->name, e);
    return TP_OK;
}

/* a resident input: allowed in a session only, its write a region of one of the devices, no
 * reads and no deps */
static tp_status check_resident(const tp_exec *x, uint32_t i, const tp_mvertex *v, tp_error *err)
{
    const char *id = tp_graph_vertex(x->g, v->task)->id;
    if (!x->holder)
        return tp__fail(err, TP_ERR_ARG, "vertex %u (resident '%s'): resident inputs need a session (tp_exec_new_in)", i, id);
    if (v->write.space != TP_SPACE_DEVICE || v->write.device < 0 || v->write.device >= x->nd)
        return tp__fail(err, TP_ERR_INVALID, "vertex %u (resident '%s'): its region is not in the memory of a device", i, id);
    if (v->nreads || v->ndeps)
        return tp__fail(err, TP_ERR_INVALID, "vertex %u (resident '%s'): a resident input reads nothing and waits on nothing", i,
                        id);
    return TP_OK;
}

/* engine, device, queue and bytes of every vertex; successor lists. Inputs and resident
 * inputs (already on their device) run on no engine: they are done when a run starts. */
static tp_status index_vertices(tp_exec *x, tp_error *err)
{
    uint32_t n = x->n;
    size_t ne = 0;
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(x->mg, i, &v);
        x->engine[i] = TP__NO_ENGINE;
        x->device[i] = 0;
        x->queue[i] = TP__NO_QUEUE;
        x->bytes[i] = v.write.bytes;
        x->grp[i] = -1;
        if ((v.kind == TP_M_ACCUMULATE || v.kind == TP_M_JOIN) && (v.group < 0 || (uint32_t)v.group >= n))
            return tp__fail(err, TP_ERR_INVALID, "vertex %u (%s): group %d is not in [0, %u)", i, tp_mkind_name(v.kind),
                            (int)v.group, n);
        if (v.kind == TP_M_ACCUMULATE) {
            x->grp[i] = v.group;
            if ((uint32_t)v.group + 1 > x->ngroups) x->ngroups = (uint32_t)v.group + 1;
        }
        if (v.kind == TP_M_JOIN) { /* no engine: done when its deps are */
            if (v.device < 0 || v.device >= x->nd)
                return tp__fail(err, TP_ERR_INVALID, "vertex %u (join): device %d out of range", i, v.device);
            x->join[i] = 1;
            x->device[i] = (int16_t)v.device;
        } else if (v.kind == TP_M_RESIDENT) {
            tp_status s = check_resident(x, i, &v, err);
            if (s) return s;
            x->device[i] = (int16_t)v.write.device;
        } else if (v.kind != TP_M_INPUT) {
            for (int e = 0; e < x->ne && x->engine[i] == TP__NO_ENGINE; e++)
                if (x->eng[e].kinds & (1u << v.kind)) x->engine[i] = (uint8_t)e;
            if (x->engine[i] == TP__NO_ENGINE)
                return tp__fail(err, TP_ERR_INVALID, "backend %s has no engine for vertex %u (%s)", x->be->ops->name, i,
                                tp_mkind_name(v.kind));
            x->device[i] = (int16_t)v.device;
            x->queue[i] = (uint32_t)v.device * (uint32_t)x->ne + x->engine[i];
            x->qsize[x->queue[i]]++;
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
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    memcpy(fill, x->succ_off, n * sizeof *fill);
    for (uint32_t i = 0; i < n; i++) {
        tp_mvertex v;
        tp_memgraph_vertex(x->mg, i, &v);
        for (uint32_t k = 0; k < v.ndeps; k++) {
            int data = 0;
            for (uint32_t r = 0; r < v.nreads; r++) data |= v.reads[r] == v.deps[k];
            x->ndata[i] += (uint32_t)data;
            x->succ_data[fill[v.deps[k]]] = (uint8_t)data;
            x->succ[fill[v.deps[k]]++] = i;
        }
    }
    free(fill);
    /* groups: members in ascending index, and each one's next */
    uint32_t G = x->ngroups;
    x->gm_off = calloc((size_t)G + 2, sizeof *x->gm_off);
    x->gnext_member = malloc(((size_t)n + 1) * sizeof *x->gnext_member);
    x->gholder = malloc(((size_t)G + 1) * sizeof *x->gholder);
    x->gnext = malloc(((size_t)G + 1) * sizeof *x->gnext);
    x->ghead = malloc(((size_t)G + 1) * sizeof *x->ghead);
    x->gcount = malloc(((size_t)G + 1) * sizeof *x->gcount);
    if (!x->gm_off || !x->gnext_member || !x->gholder || !x->gnext || !x->ghead || !x->gcount)
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    uint32_t nm = 0;
    for (uint32_t i = 0; i < n; i++)
        if (x->grp[i] >= 0) x->gm_off[x->grp[i] + 1]++, nm++;
    for (uint32_t g = 0; g < G; g++) x->gm_off[g + 1] += x->gm_off[g];
    x->gm = malloc(((size_t)nm + 1) * sizeof *x->gm);
    x->gring = malloc(((size_t)nm + 1) * sizeof *x->gring);
    uint32_t *gf = malloc(((size_t)G + 1) * sizeof *gf);
    if (!x->gm || !x->gring || !gf) {
        free(gf);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    memcpy(gf, x->gm_off, (size_t)G * sizeof *gf);
    for (uint32_t i = 0; i < n; i++) {
        x->gnext_member[i] = TP__NONE;
        if (x->grp[i] >= 0) x->gm[gf[x->grp[i]]++] = i;
    }
    free(gf);
    for (uint32_t g = 0; g < G; g++)
        for (uint32_t k = x->gm_off[g]; k + 1 < x->gm_off[g + 1]; k++) x->gnext_member[x->gm[k]] = x->gm[k + 1];
    return TP_OK;
}

/* The generic cost model, for backends without one (cpu, cuda): a device of 1e12 FLOP/s (a
 * TFLOP/s-class accelerator) and 1e11 B/s of memory bandwidth (100 GB/s), the two added rather
 * than overlapped; a link of 1e10 B/s (10 GB/s, PCIe-class) and 1e-5 s (10 us) of fixed cost per
 * copy. Only the ratios matter to a policy that ranks by it: kernels by their work, copies by
 * their bytes. */
#define TP__GENERIC_FLOPS 1e12
#define TP__GENERIC_MEM_BW 1e11
#define TP__GENERIC_LINK_BW 1e10
#define TP__GENERIC_COPY_S 1e-5

/* v's estimated seconds from the MemGraph alone (v runs on an engine): a copy's bytes, else a
 * kernel's work (tp_memgraph_work) */
static double generic_cost(const tp_exec *x, uint32_t v)
{
    if (x->eng[x->engine[v]].moves) {
        tp_mvertex mv;
        tp_memgraph_vertex(x->mg, v, &mv);
        return (double)mv.write.bytes / TP__GENERIC_LINK_BW + TP__GENERIC_COPY_S;
    }
    double flops, bytes;
    tp_memgraph_work(x->mg, v, &flops, &bytes);
    return flops / TP__GENERIC_FLOPS + bytes / TP__GENERIC_MEM_BW;
}

/* every vertex's estimated seconds for the policy's init, into *out (malloc'd; the caller
 * frees it once init has run): the backend's model (tp__backend_ops.cost) or the generic one;
 * 0 for what runs on no engine and for a model's answer that is not a finite number >= 0 */
static tp_status estimate_costs(const tp_exec *x, double **out, tp_error *err)
{
    double *cost = malloc(((size_t)x->n + 1) * sizeof *cost);
    if (!cost) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t v = 0; v < x->n; v++) {
        double c = 0;
        if (x->engine[v] != TP__NO_ENGINE) c = x->be->ops->cost ? x->be->ops->cost(x->be, x->mg, v) : generic_cost(x, v);
        cost[v] = c >= 0 && c < INFINITY ? c : 0;
    }
    *out = cost;
    return TP_OK;
}

tp_status tp__exec_new(const tp_memgraph *mg, tp_backend *be, const tp_run_opts *o, tp_exec **holder, tp_exec **out,
                       tp_error *err)
{
    if (o->streams < 1 || o->streams > TP_MAX_STREAMS)
        return tp__fail(err, TP_ERR_ARG, "streams must be 1..%d, not %d", TP_MAX_STREAMS, o->streams);
    if (o->copy_depth < 1 || o->copy_depth > TP_MAX_COPY_DEPTH)
        return tp__fail(err, TP_ERR_ARG, "copy depth must be 1..%d, not %d", TP_MAX_COPY_DEPTH, o->copy_depth);
    const tp__policy *pol = tp__policy_find(o->policy);
    if (!pol) return tp_policy_check(o->policy, err);
    tp_exec *x = calloc(1, sizeof *x);
    if (!x) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    x->mg = mg;
    x->g = tp_memgraph_taskgraph(mg);
    x->be = be;
    x->o = *o;
    x->policy = pol;
    x->holder = holder;
    x->n = tp_memgraph_size(mg);
    x->nd = tp_graph_devices(x->g);
    tp_status s = describe_engines(x, err);
    if (s) goto fail;
    x->nq = (uint32_t)(x->nd * x->ne);
    uint32_t n = x->n, nq = x->nq;
    x->engine = malloc(n + 1);
    x->device = malloc((n + 1) * sizeof *x->device);
    x->queue = malloc((n + 1) * sizeof *x->queue);
    x->bytes = malloc((n + 1) * sizeof *x->bytes);
    x->ndeps = calloc(n + 1, sizeof *x->ndeps);
    x->ndata = calloc(n + 1, sizeof *x->ndata);
    x->succ_off = calloc(n + 2, sizeof *x->succ_off);
    x->qsize = calloc(nq + 1, sizeof *x->qsize);
    x->units = malloc((nq + 1) * sizeof *x->units);
    x->nfree = malloc((nq + 1) * sizeof *x->nfree);
    x->free_off = malloc((nq + 1) * sizeof *x->free_off);
    x->dirty_flag = calloc(nq + 1, 1);
    x->dirty = malloc((nq + 1) * sizeof *x->dirty);
    x->left = malloc((n + 1) * sizeof *x->left);
    x->dleft = malloc((n + 1) * sizeof *x->dleft);
    x->busy = calloc(n + 1, 1);
    x->grp = malloc((n + 1) * sizeof *x->grp);
    x->join = calloc(n + 1, 1);
    x->gready = calloc(n + 1, 1);
    x->rec = calloc(n + 1, sizeof *x->rec);
    if (!x->engine || !x->device || !x->queue || !x->bytes || !x->ndeps || !x->ndata || !x->succ_off || !x->qsize ||
        !x->units || !x->nfree || !x->free_off || !x->dirty_flag || !x->dirty || !x->left || !x->dleft || !x->busy ||
        !x->grp || !x->join || !x->gready || !x->rec) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((s = index_vertices(x, err))) goto fail;
    /* a topological order, for whom reads it: a policy's costs (priority) and a backend's bound
     * (the sim's critical path); its in-degrees in x->left, which every run resets */
    if (pol->needs_cost || be->ops->bound) {
        x->order = malloc((n + 1) * sizeof *x->order);
        if (x->order) memcpy(x->left, x->ndeps, n * sizeof *x->left);
        if (!x->order || tp__topo_sort(n, x->succ_off, x->succ, x->left, TP__TOPO_FIFO, x->order, &x->nordered)) {
            s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
            goto fail;
        }
    }
    for (uint32_t i = 0; i < n; i++) x->rec[i] = (tp__vrec){0, 0, 0, x->device[i], x->engine[i], 0};
    size_t units = 0;
    for (uint32_t q = 0; q < nq; q++) {
        x->units[q] = x->eng[q % (uint32_t)x->ne].units;
        x->free_off[q] = (int)units;
        units += (size_t)x->units[q];
    }
    x->free_units = malloc((units + 1) * sizeof *x->free_units);
    if (!x->free_units) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if (o->fail_vertex >= 0 && ((uint64_t)o->fail_vertex >= n || x->engine[o->fail_vertex] == TP__NO_ENGINE)) {
        s = tp__fail(err, TP_ERR_ARG, "fault injection: vertex %lld is not a vertex that runs (an input, or out of range)",
                     (long long)o->fail_vertex);
        goto fail;
    }
    x->ordered = o->deterministic || pol->ordered_locks;
    double *cost = NULL; /* only the policy's init reads it */
    if (pol->needs_cost && (s = estimate_costs(x, &cost, err))) goto fail;
    tp__policy_env env = {n, x->succ_off, x->succ, x->order, x->nordered, x->ndeps, x->queue, nq, x->qsize, x->gnext_member, cost};
    s = pol->init(&env, &x->pstate, err);
    free(cost);
    if (s) goto fail;
    /* the sink's contract: one slot per unit that may have a completion outstanding */
    if (!tp__sink_init(&x->sink, units)) {
        s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
        goto fail;
    }
    x->sink_ok = 1;
    tp__plan_info pi = {mg, &x->o, &x->sink, x->ne, x->eng, x->engine, x->device, holder != NULL, x->succ_off, x->succ,
                        x->order, x->nordered};
    if ((s = be->ops->prepare(be, &pi, err))) goto fail;
    x->prepared = 1;
    if (holder) *holder = x;
    *out = x;
    return TP_OK;
fail:
    x->holder = NULL; /* never the session's */
    tp_exec_free(x);
    return s;
}

tp_status tp_exec_new(const tp_memgraph *mg, tp_backend *be, const tp_run_opts *o, tp_exec **out, tp_error *err)
{
    return tp__exec_new(mg, be, o, NULL, out, err);
}

void tp__exec_detach(tp_exec *x)
{
    if (x->prepared) x->be->ops->release(x->be);
    x->prepared = 0;
    x->detached = 1;
    x->holder = NULL;
}

const tp_memgraph *tp_exec_memgraph(const tp_exec *x)
{
    return x->mg;
}

/* an executor that can no longer run, read or write: its backend broke the contract, or its
 * session was freed before it */
static tp_status broken(const tp_exec *x, tp_error *err)
{
    if (x->detached) return tp__fail(err, TP_ERR_ARG, "this executor's session was freed: free the executor");
    return tp__fail(err, TP_ERR_INVALID, "backend %s broke the completion contract in the last run: free this executor",
                    x->be->ops->name);
}

tp_status tp_exec_write(tp_exec *x, const tp_region *r, const void *src, tp_error *err)
{
    return x->broken || x->detached ? broken(x, err) : x->be->ops->write(x->be, r, src, err);
}

tp_status tp_exec_read(tp_exec *x, const tp_region *r, void *dst, tp_error *err)
{
    return x->broken || x->detached ? broken(x, err) : x->be->ops->read(x->be, r, dst, err);
}

int tp__exec_record(const tp_exec *x, tp__run_record *out)
{
    out->n = x->n;
    out->v = x->rec;
    out->start = x->start;
    out->nengines = x->ne;
    out->engines = x->eng;
    return x->ran;
}

/* ---- one run, in phases ------------------------------------------------------------------ */

typedef struct run {
    tp_exec *x;
    tp_run_summary *sum;
    tp_error *err;
    double (*clock)(tp_backend *); /* a simulating backend's own clock, or NULL */
    uint32_t done, inflight;
    int failed;
    tp_status st;
    int running[TP_MAX_DEVICES];    /* kernels in flight */
    int memblocked[TP_MAX_DEVICES]; /* kernels with their data, waiting on memory deps only */
    double last[TP_MAX_DEVICES];    /* stall accounted up to */
    double now, loop, last_progress;
} run;

static double run_clock(const run *r)
{
    return r->clock ? r->clock(r->x->be) : tp__now();
}

static void mark_dirty(tp_exec *x, uint32_t q)
{
    if (!x->dirty_flag[q]) {
        x->dirty_flag[q] = 1;
        x->dirty[x->ndirty++] = q;
    }
}

static void make_ready(tp_exec *x, uint32_t v)
{
    x->policy->push(x->pstate, x->queue[v], v);
    mark_dirty(x, x->queue[v]);
}

/* group g's lock, when free, goes to the next waiting member (FIFO, or the next in member
 * order when it is waiting), which then enters its engine's queue */
static void grant(tp_exec *x, uint32_t g)
{
    if (x->gholder[g] != TP__NONE) return;
    uint32_t v = TP__NONE, off = x->gm_off[g], nm = x->gm_off[g + 1] - off;
    if (x->ordered) {
        if (x->gnext[g] < nm && x->gready[x->gm[off + x->gnext[g]]]) v = x->gm[off + x->gnext[g]++];
    } else if (x->gcount[g]) { /* each member waits once: a ring of the group's size never overflows */
        v = x->gring[off + x->ghead[g]];
        x->ghead[g] = x->ghead[g] + 1 == nm ? 0 : x->ghead[g] + 1;
        x->gcount[g]--;
    }
    if (v == TP__NONE) return;
    x->gready[v] = 0;
    x->gholder[g] = v;
    make_ready(x, v);
}

static void release(run *r, uint32_t v);

/* v's deps are done: a join completes now, a member waits for its group's lock, anything else
 * enters its engine's queue */
static void ready(run *r, uint32_t v)
{
    tp_exec *x = r->x;
    if (x->join[v]) {
        x->rec[v].t0 = x->rec[v].t1 = r->now;
        x->rec[v].ran = 1;
        r->done++;
        release(r, v);
        return;
    }
    if (x->grp[v] >= 0) {
        uint32_t g = (uint32_t)x->grp[v];
        if (!x->ordered) {
            uint32_t off = x->gm_off[g], nm = x->gm_off[g + 1] - off, tail = x->ghead[g] + x->gcount[g];
            x->gring[off + (tail >= nm ? tail - nm : tail)] = v;
            x->gcount[g]++;
        }
        x->gready[v] = 1;
        grant(x, g);
        return;
    }
    make_ready(x, v);
}

/* v is done: its successors lose a dependency */
static void release(run *r, uint32_t v)
{
    tp_exec *x = r->x;
    for (uint32_t k = x->succ_off[v]; k < x->succ_off[v + 1]; k++) {
        uint32_t w = x->succ[k];
        /* a kernel is memory-blocked while its data is there but a memory dep is not */
        int compute = is_compute(x, w);
        int before = compute && !x->dleft[w] && x->left[w];
        x->dleft[w] -= x->succ_data[k];
        x->left[w]--;
        int after = compute && !x->dleft[w] && x->left[w];
        r->memblocked[x->device[w]] += after - before;
        if (!x->left[w] && !r->failed) ready(r, w);
    }
}

/* The first failure wins; later ones only stop launching. */
static void fail_run(run *r, tp_status s)
{
    if (!r->failed) r->st = s;
    r->failed = 1;
}

/* names vertex v for messages: "vertex 7 (kernel 'L0.q' on device 1)" */
static void vertex_words(const tp_exec *x, uint32_t v, char *buf, size_t len)
{
    tp_mvertex mv;
    tp_memgraph_vertex(x->mg, v, &mv);
    snprintf(buf, len, "vertex %u (%s '%s' on device %d)", v, tp_mkind_name(mv.kind), tp_graph_vertex(x->g, mv.task)->id,
             x->device[v]);
}

static void phase_start(run *r)
{
    tp_exec *x = r->x;
    uint32_t n = x->n;
    memset(r->sum, 0, sizeof *r->sum);
    r->sum->ndevices = x->nd;
    r->sum->vertices = n;
    r->sum->nengines = x->ne;
    for (int e = 0; e < x->ne; e++) {
        r->sum->engine_name[e] = x->eng[e].name;
        r->sum->engine_tag[e] = x->eng[e].tag;
        r->sum->engine_moves[e] = (uint8_t)x->eng[e].moves;
    }
    x->policy->reset(x->pstate, x->o.seed);
    for (uint32_t q = 0; q < x->nq; q++) {
        int *fu = x->free_units + x->free_off[q];
        x->nfree[q] = x->units[q];
        for (int u = 0; u < x->units[q]; u++) fu[u] = x->units[q] - 1 - u;
        x->dirty_flag[q] = 0;
    }
    x->ndirty = 0;
    memset(x->busy, 0, n);
    memset(x->gready, 0, n);
    for (uint32_t g = 0; g < x->ngroups; g++) x->gholder[g] = TP__NONE, x->gnext[g] = x->ghead[g] = x->gcount[g] = 0;
    if (x->be->ops->begin) x->be->ops->begin(x->be); /* the backend's counts too are this run's */
    r->clock = x->be->ops->now;
    x->start = r->now = run_clock(r);
    r->last_progress = tp__now();
    for (int d = 0; d < x->nd; d++) r->last[d] = x->start;
    /* inputs (and resident inputs) complete at once; the rest wait for their deps (a join with
     * none, which no plan has, completes at once too) */
    for (uint32_t i = 0; i < n; i++) {
        x->left[i] = x->ndeps[i];
        x->dleft[i] = x->ndata[i];
    }
    for (uint32_t i = 0; i < n; i++) {
        x->rec[i] = (tp__vrec){0, 0, 0, x->device[i], x->engine[i], 0};
        if (x->engine[i] != TP__NO_ENGINE || (x->join[i] && x->ndeps[i])) continue;
        x->rec[i].t0 = x->rec[i].t1 = x->start;
        x->rec[i].ran = 1;
        r->done++;
        for (uint32_t k = x->succ_off[i]; k < x->succ_off[i + 1]; k++) {
            uint32_t w = x->succ[k];
            x->dleft[w] -= x->succ_data[k];
            x->left[w]--;
        }
    }
    /* what something in this run waits for is queued first; ready sinks (a cache tensor's
     * prefetch, which only the next plan reads) after them, so a copy engine never keeps a
     * kernel's input behind a prefetch */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < n; i++) {
            if (x->engine[i] == TP__NO_ENGINE || (x->succ_off[i + 1] == x->succ_off[i]) != pass) continue;
            if (!x->left[i]) ready(r, i);
            else if (!x->dleft[i] && is_compute(x, i)) r->memblocked[x->device[i]]++; /* in either pass */
        }
}

/* launches from dirty queues while their engines have free units */
static void phase_dispatch(run *r)
{
    tp_exec *x = r->x;
    if (!r->failed)
        for (uint32_t k = 0; k < x->ndirty; k++) {
            uint32_t q = x->dirty[k];
            int *fu = x->free_units + x->free_off[q];
            x->dirty_flag[q] = 0;
            while (x->nfree[q]) {
                uint32_t v = x->policy->pop(x->pstate, q);
                if (v == TP__NONE) break;
                int u = fu[--x->nfree[q]];
                x->rec[v].unit = (int16_t)u;
                x->busy[v] = 1;
                r->inflight++;
                if (is_compute(x, v)) r->running[x->device[v]]++;
                x->be->ops->launch(x->be, v, u);
            }
        }
    else
        for (uint32_t k = 0; k < x->ndirty; k++) x->dirty_flag[x->dirty[k]] = 0;
    x->ndirty = 0;
}

/* the next completions: a simulating backend first moves its clock to its next event */
static tp__done *phase_wait(run *r, size_t *nc)
{
    tp_exec *x = r->x;
    tp__done *c;
    if (x->be->ops->advance) {
        int posted = x->be->ops->advance(x->be);
        c = tp__sink_take(&x->sink, 0, 0, nc);
        (void)posted; /* advisory: advance() runs in step with the loop, so an empty sink after it
                         means nothing will ever complete (a dropped event): fail, never hang */
        if (!*nc) {
            uint32_t v = 0;
            while (v < x->n && !x->busy[v]) v++;
            char w[TP_ERROR_MSG_MAX];
            vertex_words(x, v < x->n ? v : 0, w, sizeof w);
            if (!r->failed)
                fail_run(r, tp__fail(r->err, TP_ERR_INVALID,
                                 "backend %s stopped making progress with %u vertices in flight: %s never completed",
                                 x->be->ops->name, r->inflight, w));
        }
    } else {
        /* what has completed first (it may free copy engines or make more ready); else run a
         * launched kernel on this thread rather than wait for a worker to wake for it; else wait */
        c = tp__sink_take(&x->sink, 0, 0, nc);
        if (*nc) {
            if (x->be->ops->help) x->be->ops->help(x->be, 0); /* kernels launched meanwhile: their workers go */
        } else if (!(x->be->ops->help && x->be->ops->help(x->be, 1) && (c = tp__sink_take(&x->sink, 0, 0, nc), *nc))) {
            c = tp__sink_take(&x->sink, 1, TP__SPIN_US, nc);
        }
    }
    if (tp__sink_overflowed(&x->sink)) x->broken = 1;
    if (tp__sink_overflowed(&x->sink) && !r->failed)
        fail_run(r, tp__fail(r->err, TP_ERR_INVALID,
                             "backend %s posted more completions than it has units (the completion queue overflowed)",
                             x->be->ops->name));
    return c;
}

/* compute-idle time with a kernel blocked only on memory deps, up to now, with the old state */
static void phase_account(run *r)
{
    for (int d = 0; d < r->x->nd; d++) {
        if (!r->running[d] && r->memblocked[d]) r->sum->dev[d].stall_mem += r->now - r->last[d];
        r->last[d] = r->now;
    }
}

static void phase_complete(run *r, tp__done *c, size_t nc)
{
    tp_exec *x = r->x;
    tp_run_summary *sum = r->sum;
    for (size_t i = 0; i < nc; i++) {
        uint32_t v = c[i].vertex;
        if (v >= x->n || !x->busy[v]) { /* a completion nobody launched: the backend broke the contract */
            if (!r->failed)
                fail_run(r, tp__fail(r->err, TP_ERR_INVALID, "backend %s completed vertex %u, which was not running",
                                 x->be->ops->name, v));
            free(c[i].err);
            continue;
        }
        x->busy[v] = 0;
        uint32_t q = x->queue[v];
        x->free_units[x->free_off[q] + x->nfree[q]++] = x->rec[v].unit;
        mark_dirty(x, q);
        r->inflight--;
        r->done++;
        x->rec[v].t0 = c[i].t0;
        x->rec[v].t1 = c[i].t1;
        x->rec[v].ran = 1;
        int d = x->device[v], e = x->engine[v];
        if (!x->eng[e].moves) {
            r->running[d]--;
            sum->dev[d].kernels++;
            sum->dev[d].compute_busy += c[i].t1 - c[i].t0;
        } else {
            sum->dev[d].count[e]++;
            sum->dev[d].bytes[e] += x->bytes[v];
            sum->bytes_moved += x->bytes[v];
            sum->dev[d].busy[e] += c[i].t1 - c[i].t0;
        }
        if (c[i].status != TP_OK) {
            if (!r->failed) {
                char w[TP_ERROR_MSG_MAX];
                vertex_words(x, v, w, sizeof w);
                fail_run(r, tp__fail(r->err, c[i].status, "%s failed: %s", w, c[i].err ? c[i].err->msg : "error"));
            }
            free(c[i].err);
            continue;
        }
        if (c[i].err) free(c[i].err); /* a backend may attach one to a success too: ours to free */
        if (x->grp[v] >= 0) { /* its group's lock is free for the next member */
            x->gholder[x->grp[v]] = TP__NONE;
            if (!r->failed) grant(x, (uint32_t)x->grp[v]);
        }
        release(r, v);
    }
}

static void phase_progress(run *r, double tl)
{
    if (r->x->o.progress && tl - r->last_progress > 0.25) { /* wall clock, even when simulating */
        r->last_progress = tl;
        r->x->o.progress(r->x->o.progress_ctx, r->done, r->x->n);
    }
}

tp_status tp_exec_run(tp_exec *x, tp_run_summary *sum, tp_error *err)
{
    if (x->broken || x->detached) return broken(x, err);
    run r;
    memset(&r, 0, sizeof r);
    r.x = x;
    r.sum = sum;
    r.err = err;
    phase_start(&r);
    while (r.done < x->n && !(r.failed && !r.inflight)) {
        double tl = tp__now();
        phase_dispatch(&r);
        r.loop += tp__now() - tl;
        if (!r.inflight) { /* nothing running and nothing launchable: a dependency cycle */
            if (!r.failed)
                fail_run(&r, tp__fail(err, TP_ERR_INVALID, "run stalled with %u of %u vertices done (cyclic MemGraph?)", r.done, x->n));
            break;
        }
        size_t nc;
        tp__done *c = phase_wait(&r, &nc);
        if (r.failed && !nc && (tp__sink_overflowed(&x->sink) || x->be->ops->advance)) break; /* nothing more will come */
        r.now = run_clock(&r);
        tl = tp__now();
        phase_account(&r);
        phase_complete(&r, c, nc);
        phase_progress(&r, tl);
        r.loop += tp__now() - tl;
    }
    sum->makespan = run_clock(&r) - x->start;
    sum->lower_bound = x->be->ops->bound ? x->be->ops->bound(x->be, &sum->bound_resources, &sum->bound_critical_path) : 0;
    sum->loop_seconds = r.loop;
    x->ran = 1;
    if (r.inflight) x->broken = 1; /* left the loop with vertices running (contract broken) */
    return r.failed ? r.st : TP_OK;
}

/* ---- summaries ----------------------------------------------------------------------------- */

int tp_run_summary_engine(const tp_run_summary *s, const char *name)
{
    for (int e = 0; e < s->nengines; e++)
        if (s->engine_name[e] && !strcmp(s->engine_name[e], name)) return e;
    return -1;
}

void tp_run_summary_print(const tp_run_summary *s, FILE *f)
{
    fprintf(f, "run: %llu vertices, makespan %.3f ms (executor loop %.3f ms)", (unsigned long long)s->vertices,
            s->makespan * 1e3, s->loop_seconds * 1e3);
    if (s->lower_bound > 0)
        fprintf(f, "; lower bound %.3f ms (resources %.3f ms, critical path %.3f ms), makespan / bound %.3f", s->lower_bound * 1e3,
                s->bound_resources * 1e3, s->bound_critical_path * 1e3, s->makespan / s->lower_bound);
    fputc('\n', f);
    fprintf(f, "%-6s %8s %11s %11s", "device", "kernels", "busy ms", "mem-stall");
    for (int e = 0; e < s->nengines; e++)
        if (s->engine_moves[e]) {
            char head[48];
            snprintf(head, sizeof head, "%s (n, bytes, ms)", s->engine_name[e]);
            fprintf(f, " %24s", head);
        }
    fputc('\n', f);
    for (int d = 0; d < s->ndevices; d++) {
        fprintf(f, "%-6d %8llu %11.2f %11.2f", d, (unsigned long long)s->dev[d].kernels, s->dev[d].compute_busy * 1e3,
                s->dev[d].stall_mem * 1e3);
        for (int e = 0; e < s->nengines; e++)
            if (s->engine_moves[e]) {
                char b[32], cell[64];
                snprintf(cell, sizeof cell, "%llu, %s, %.2f", (unsigned long long)s->dev[d].count[e],
                         tp_format_size(s->dev[d].bytes[e], b, sizeof b), s->dev[d].busy[e] * 1e3);
                fprintf(f, " %24s", cell);
            }
        fputc('\n', f);
    }
    /* one machine-readable line (bench/llama_cuda.py reads it) */
    double busy = 0;
    for (int d = 0; d < s->ndevices; d++) busy += s->dev[d].compute_busy;
    fprintf(f, "totals: makespan %.6f s, kernel busy %.6f s", s->makespan, busy);
    for (int e = 0; e < s->nengines; e++)
        if (s->engine_moves[e]) {
            uint64_t cb = 0;
            for (int d = 0; d < s->ndevices; d++) cb += s->dev[d].bytes[e];
            fprintf(f, ", %s %llu B", s->engine_tag[e], (unsigned long long)cb);
        }
    fputc('\n', f);
}
