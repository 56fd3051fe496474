/* sim.c - the sim backend: runs a MemGraph in virtual time, with no data (issue 5).
 *
 * The executor drives it exactly as a real backend (same loop, same policies); only the
 * clock differs: when the loop would wait, it calls advance(), which moves virtual time to
 * the next event and posts the completions due then. Events are ordered by (time, sequence
 * number), so equal times resolve in launch order and a run is a function of its seed.
 *
 * Kernels take launch + max(flops / (rate x efficiency), bytes touched / memory bandwidth), the
 * rate being the matmul peak or, for other ops, the profile's vector rate; a sum-into accumulate
 * is costed as an elementwise add of its bytes (a flop per element, its region read and written,
 * its partial read). A join takes no time (the executor completes it). Sleeping threads
 * (the cpu backend's workers and executor loop spin wake_after_s, then sleep): a kernel on a
 * stream idle for more than wake_after_s pays wake_s; a copy on an engine idle that long keeps
 * the engine wake_s longer; and a copy that ends when nothing has completed or launched for
 * that long finds the executor asleep: it and whatever ends meanwhile reach the executor
 * wake_s later. (A kernel's end wakes the executor cheaply: the worker that ran it is awake,
 * measured on the 2-core machines as 1-20 us gaps between chained kernels.)
 * Copies are fluid flows: each active copy moves at the smallest fair share (bandwidth / flows
 * on it) over the links it uses (host-to-device or device-to-host of its device, plus the
 * shared host bus when the machine has one; transfers use the destination's peer-in link),
 * recomputed whenever a flow starts or ends; its latency is added after its bytes. A copy
 * engine moves one copy at a time, in launch order, as a CUDA stream and the cpu backend's
 * copy workers do: copies the executor queues behind it (copy_depth) wait their turn. Jitter
 * stretches kernel times and copy sizes by exp(jitter x N(0,1)).
 *
 * Lower bound of a run, the larger of two parts. Resources: the busiest device's summed kernel
 * time over its compute streams (they overlap kernels without slowing them), or the busiest
 * link's bytes over its bandwidth. The critical path: the longest path through the MemGraph
 * (data and memory edges), each vertex weighted by what this run charged it: a kernel its time
 * (jitter and wake-up included), a copy its bytes at its links' full rate (as if it had them to
 * itself) plus its latency and engine wake-up. A vertex starts after its dependencies complete
 * and takes at least its weight, so no run is shorter; the path is one forward pass over a
 * topological order, the executor's (linear).
 *
 * Cost model for the `priority` policy (sim_cost): the same kernel and copy times without
 * jitter, contention or wake-ups (kernel_time, copy_time: one model for both). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/common.h"
#include "io/heap.h"
#include "io/topo.h"
#include "io/util.h"
#include "turnip/io.h"

typedef struct {
    double t;
    uint64_t seq;
    uint32_t v;
} event;

typedef struct {
    uint32_t v;
    double remaining, bytes; /* bytes */
    int link[2];             /* -1: unused */
    double extra;            /* seconds after its bytes: latency, and wake_s if its engine slept */
} flow;

#define QDEPTH 8 /* copies queued behind a copy engine's active one */
#define MAXSTREAMS 64
_Static_assert(QDEPTH > TP_MAX_COPY_DEPTH, "a copy engine's queue holds everything the executor queues on it");
_Static_assert(MAXSTREAMS >= TP_MAX_STREAMS, "one idle clock per compute stream");

typedef struct sim {
    tp_backend base;
    tp_sim_profile p;
    double jitter;
    tp__plan_ctx pc;
    tp__mem mem; /* sizes only: a session's device capacities and host bytes */
    int nd, nlinks;
    uint8_t *vector_op; /* per TaskGraph vertex: runs at the vector rate (not a matmul) */
    double now;
    uint64_t seq;
    event *heap;
    size_t nheap, capheap;
    flow *flows;
    size_t nflows, capflows;
    int *active;   /* flows per link */
    struct {       /* per copy engine (kind * nd + device): the copies queued behind the active one */
        flow q[QDEPTH];
        int head, n, busy;
        double idle_since;
    } *eng;
    double *bw;    /* per link */
    double *t0;    /* per vertex */
    int16_t *unit_of;
    double idle_since[TP_MAX_DEVICES][MAXSTREAMS]; /* per compute stream: when it last went idle */
    double kern[TP_MAX_DEVICES];
    double *link_bytes;
    /* the critical path: per vertex its weight in this run (0 until launched) and its bottom level
     * (scratch of the pass), over the executor's topological order (pc.pi.order) */
    double *cp_w, *cp_f;
    uint32_t inflight;
    double last_act;  /* when the executor last handled a completion or launched */
    double wake_at;   /* > 0: the executor is waking up; completions are held until then */
    struct held {
        uint32_t v;
        double end; /* when it really ended */
    } *held;
    size_t nheld, capheld;
} sim;

/* link = kind * nd + device, kinds in the copy engines' order; the bus is last */
enum { L_H2D = TP__ENG_H2D - 1, L_D2H = TP__ENG_D2H - 1, L_PEER = TP__ENG_PEER - 1 };

static int ev_less(const event *a, const event *b, const void *ctx)
{
    (void)ctx;
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}
TP__HEAP_DEFINE(evheap, event, ev_less)

/* 0 on OOM */
static int push(sim *s, double t, uint32_t v)
{
    if (!TP__GROW(s->heap, s->capheap, s->nheap + 1)) return 0;
    evheap_push(s->heap, &s->nheap, (event){t, s->seq++, v}, NULL);
    return 1;
}

static event pop(sim *s)
{
    return evheap_pop(s->heap, &s->nheap, NULL);
}

static double rate(const sim *s, const flow *f)
{
    double r = INFINITY;
    for (int k = 0; k < 2; k++)
        if (f->link[k] >= 0) {
            double share = s->bw[f->link[k]] / s->active[f->link[k]];
            if (share < r) r = share;
        }
    return r;
}

/* the kernels that run at the vector rate (everything but matmul and attention, whose flops
 * are its two matmuls': a fused kernel runs them on the matrix units as FlashAttention does) */
static int vector_op(const tp_vertex *tv)
{
    return tv->kind == TP_V_KERNEL && strcmp(tv->op, "matmul") != 0 && strcmp(tv->op, "attention") != 0;
}

/* flops per second of a kernel: the matmul peak or, for `vector` ops, the vector rate (when the
 * profile has one), times the efficiency */
static double kernel_rate(const tp_sim_profile *p, int vector)
{
    return (vector && p->vector_flops > 0 ? p->vector_flops : p->peak_flops) * p->efficiency;
}

/* kernel or accumulate v of mg with no jitter and no wake-up: launch + max(flops / (rate x
 * efficiency), bytes touched / memory bandwidth) of its work (tp_memgraph_work), the rate the
 * matmul peak or, for `vector` ops, the vector rate. Its flops into *flops. */
static double kernel_time(const tp_sim_profile *p, const tp_memgraph *mg, uint32_t v, int vector, double *flops)
{
    double bytes;
    tp_memgraph_work(mg, v, flops, &bytes);
    double compute = *flops / kernel_rate(p, vector), memory = bytes / p->mem_bw;
    return p->launch_s + (compute > memory ? compute : memory);
}

/* bandwidth of a device's link of kind L_* (prepare gives each link its own) */
static double link_bw(const tp_sim_profile *p, int kind)
{
    return kind == L_H2D ? p->h2d_bw : kind == L_D2H ? p->d2h_bw : p->peer_bw;
}

/* whether a copy of kind k crosses the host bus (everything but transfers, on a machine with one) */
static int on_bus(const tp_sim_profile *p, tp_mkind k)
{
    return k != TP_M_TRANSFER && p->host_bus_bw > 0;
}

/* the rate of a copy of kind k with its links to itself: the smaller of its own link's
 * bandwidth and the bus's when it crosses it (its engine follows from its kind: reloads h2d,
 * offloads d2h, transfers peer-in) */
static double alone_rate(const tp_sim_profile *p, tp_mkind k)
{
    double r = link_bw(p, k == TP_M_RELOAD ? L_H2D : k == TP_M_OFFLOAD ? L_D2H : L_PEER);
    return on_bus(p, k) && p->host_bus_bw < r ? p->host_bus_bw : r;
}

void tp_sim_profile_rates(const tp_sim_profile *p, double *flops_per_s, double *copy_bw)
{
    *flops_per_s = kernel_rate(p, 1); /* an opaque kernel is a vector op */
    double r = alone_rate(p, TP_M_RELOAD), o = alone_rate(p, TP_M_OFFLOAD);
    *copy_bw = r < o ? r : o;
}

/* a copy of kind k and `bytes` with its links to itself, no jitter and no wake-up: its bytes at
 * that rate, then its latency */
static double copy_time(const tp_sim_profile *p, tp_mkind k, double bytes)
{
    return bytes / alone_rate(p, k) + p->copy_latency_s;
}

static double jit(const sim *s, uint32_t v)
{
    return s->jitter > 0 ? exp(s->jitter * tp__normal(s->pc.ro.seed * 1000003ull + v)) : 1.0;
}

/* the copy engine (= its own link's index) of copy vertex v */
static int engine_of(const sim *s, uint32_t v)
{
    return (s->pc.pi.engine[v] - 1) * s->nd + s->pc.pi.device[v]; /* the L_ kinds follow the engines */
}

static void post(sim *s, uint32_t v, double end);
static void fail_now(sim *s, uint32_t v, tp_status st, const char *why);

/* f starts moving now on its engine */
static void start_flow(sim *s, flow f)
{
    if (!TP__GROW(s->flows, s->capflows, s->nflows + 1)) {
        fail_now(s, f.v, TP_ERR_NOMEM, "out of memory");
        return;
    }
    s->eng[f.link[0]].busy = 1;
    s->t0[f.v] = s->now;
    f.extra = s->p.copy_latency_s;
    if (s->p.wake_s > 0 && s->now - s->eng[f.link[0]].idle_since > s->p.wake_after_s) f.extra += s->p.wake_s;
    double alone = s->bw[f.link[0]]; /* its rate with its links to itself */
    if (f.link[1] >= 0 && s->bw[f.link[1]] < alone) alone = s->bw[f.link[1]];
    s->cp_w[f.v] = f.bytes / alone + f.extra; /* at least what it takes from now on */
    for (int k = 0; k < 2; k++)
        if (f.link[k] >= 0) s->active[f.link[k]]++;
    s->flows[s->nflows++] = f;
}

static void sim_launch(tp_backend *be, uint32_t v, int unit)
{
    sim *s = (sim *)be;
    tp_mvertex mv;
    tp_memgraph_vertex(s->pc.pi.mg, v, &mv);
    s->t0[v] = s->now;
    s->last_act = s->now;
    s->unit_of[v] = (int16_t)unit;
    s->inflight++;
    if (mv.kind == TP_M_KERNEL || mv.kind == TP_M_ACCUMULATE) {
        double flops = 0;
        double dur = kernel_time(&s->p, s->pc.pi.mg, v, s->vector_op[mv.task], &flops) * jit(s, v);
        if (s->p.wake_s > 0 && unit < MAXSTREAMS && s->now - s->idle_since[mv.device][unit] > s->p.wake_after_s) dur += s->p.wake_s;
        if (!(dur >= 0 && s->now + dur < INFINITY)) { /* NaN or inf would stall the clock: fail, never hang */
            char why[256];
            snprintf(why, sizeof why, "its kernel time is not a finite number (%g s at %g s; flops %g, machine '%s')", dur, s->now,
                     flops, s->p.name);
            fail_now(s, v, TP_ERR_INVALID, why);
            return;
        }
        s->kern[mv.device] += dur;
        s->cp_w[v] = dur;
        if (!push(s, s->now + dur, v)) fail_now(s, v, TP_ERR_NOMEM, "out of memory");
        return;
    }
    double b = (double)mv.write.bytes * jit(s, v);
    flow f = {v, b, b, {engine_of(s, v), -1}, 0};
    if (on_bus(&s->p, mv.kind)) f.link[1] = 3 * s->nd;
    double longest = copy_time(&s->p, mv.kind, b) + s->p.wake_s; /* its time with its links to itself, if its engine slept */
    if (!(longest >= 0 && s->now + longest < INFINITY)) {
        char why[256];
        snprintf(why, sizeof why, "its copy time is not a finite number (%g bytes at %g B/s, at %g s; machine '%s')", b,
                 s->bw[f.link[0]], s->now, s->p.name);
        fail_now(s, v, TP_ERR_INVALID, why);
        return;
    }
    for (int k = 0; k < 2; k++)
        if (f.link[k] >= 0) s->link_bytes[f.link[k]] += f.remaining;
    int e = f.link[0]; /* the engine: its own link's index */
    if (s->eng[e].busy) { /* behind the engine's current copy */
        if (s->eng[e].n == QDEPTH) { /* cannot happen: copy_depth <= TP_MAX_COPY_DEPTH < QDEPTH */
            fail_now(s, v, TP_ERR_INVALID, "copy engine queue full");
            return;
        }
        s->eng[e].q[(s->eng[e].head + s->eng[e].n++) % QDEPTH] = f;
        return;
    }
    start_flow(s, f);
}

/* v ends at `end`: completes, failed if the fault hook says so */
static void post(sim *s, uint32_t v, double end)
{
    tp_error e;
    tp__done d;
    tp__done_set(&d, v, tp__fault(&s->pc, v, &e), s->t0[v], end, &e);
    if (s->pc.pi.engine[v] == TP__ENG_COMPUTE) s->idle_since[s->pc.pi.device[v]][s->unit_of[v] % MAXSTREAMS] = end;
    s->inflight--;
    s->last_act = s->now;
    tp__sink_post(s->pc.pi.sink, &d);
}

/* v cannot be simulated (no memory for its event, a time that is not a finite number): it
 * completes now, failed; the executor names it */
static void fail_now(sim *s, uint32_t v, tp_status st, const char *why)
{
    tp_error e;
    tp__done d;
    tp__fail(&e, st, "sim backend: %s", why);
    tp__done_set(&d, v, st, s->t0[v], s->now, &e);
    s->inflight--;
    tp__sink_post(s->pc.pi.sink, &d);
}

/* a vertex ends now: posted, or held while the executor wakes up; 1 if posted */
static int deliver(sim *s, uint32_t v)
{
    if (s->wake_at > 0) {
        if (TP__GROW(s->held, s->capheld, s->nheld + 1)) {
            s->held[s->nheld++] = (struct held){v, s->now};
            return 0;
        } /* no memory to hold it: it reaches the executor now */
    }
    post(s, v, s->now);
    return 1;
}

/* copy engine e is done with its copy: the next one queued behind it starts now */
static void engine_free(sim *s, int e)
{
    s->eng[e].busy = 0;
    s->eng[e].idle_since = s->now;
    while (s->eng[e].n && !s->eng[e].busy) { /* the next that starts (one that cannot fails at once) */
        flow nf = s->eng[e].q[s->eng[e].head];
        s->eng[e].head = (s->eng[e].head + 1) % QDEPTH;
        s->eng[e].n--;
        start_flow(s, nf);
    }
}

/* moves time to the next event(s); posts at least one completion unless nothing is in flight */
static int sim_advance(tp_backend *be)
{
    sim *s = (sim *)be;
    int posted = 0;
    while (!posted && s->inflight) {
        double tnext = s->nheap ? s->heap[0].t : INFINITY;
        size_t first = SIZE_MAX;
        for (size_t i = 0; i < s->nflows; i++) {
            double t = s->now + s->flows[i].remaining / rate(s, &s->flows[i]);
            if (t < tnext) {
                tnext = t;
                first = i;
            }
        }
        if (!(tnext < INFINITY) && s->wake_at <= 0) break; /* nothing can progress (inf or NaN): the executor fails the run */
        if (s->wake_at > 0 && s->wake_at <= tnext) { /* the executor is awake: it takes what ended meanwhile */
            tnext = s->wake_at;
            first = SIZE_MAX;
        } else if (s->wake_at <= 0 && s->p.wake_s > 0 && tnext - s->last_act > s->p.wake_after_s &&
                   (first != SIZE_MAX ? s->flows[first].extra <= 0 : s->pc.pi.engine[s->heap[0].v] != TP__ENG_COMPUTE)) {
            s->wake_at = tnext + s->p.wake_s; /* asleep: the copy that ends first wakes it */
        }
        double dt = tnext - s->now;
        for (size_t i = 0; i < s->nflows; i++) s->flows[i].remaining -= rate(s, &s->flows[i]) * dt;
        s->now = tnext;
        /* flows that are done: the earliest for sure, others that end with it up to rounding */
        if (first != SIZE_MAX) s->flows[first].remaining = 0;
        for (size_t i = 0; i < s->nflows;) {
            flow *f = &s->flows[i];
            if (f->remaining > 1e-9 * f->bytes + 1e-6) {
                i++;
                continue;
            }
            for (int k = 0; k < 2; k++)
                if (f->link[k] >= 0) s->active[f->link[k]]--;
            uint32_t v = f->v;
            double extra = f->extra;
            s->flows[i] = s->flows[--s->nflows];
            if (extra > 0 && push(s, s->now + extra, v)) { /* the engine stays busy through the latency and wake-up */
            } else {
                engine_free(s, engine_of(s, v));
                posted |= deliver(s, v);
            }
        }
        while (s->nheap && s->heap[0].t <= s->now) {
            event ev = pop(s);
            if (s->pc.pi.engine[ev.v] != TP__ENG_COMPUTE) engine_free(s, engine_of(s, ev.v));
            posted |= deliver(s, ev.v);
        }
        if (s->wake_at > 0 && s->now >= s->wake_at) {
            s->wake_at = 0;
            for (size_t i = 0; i < s->nheld; i++) post(s, s->held[i].v, s->held[i].end);
            posted |= s->nheld > 0;
            s->nheld = 0;
        }
    }
    return posted;
}

static double sim_now(tp_backend *be)
{
    return ((sim *)be)->now;
}

/* the longest path of the last run's weights (cp_f: scratch for the bottom levels) */
static double critical_path(sim *s)
{
    if (!s->pc.pi.order || !s->pc.pi.succ_off) return 0;
    return tp__bottom_levels(s->pc.pi.succ_off, s->pc.pi.succ, s->pc.pi.order, s->pc.pi.nordered, s->cp_w, s->cp_f);
}

static double sim_bound(tp_backend *be, double *resources, double *critical)
{
    sim *s = (sim *)be;
    double b = 0, streams = s->pc.pi.engines ? s->pc.pi.engines[TP__ENG_COMPUTE].units : 1;
    for (int d = 0; d < s->nd; d++) /* its streams run kernels side by side, each at full speed */
        if (s->kern[d] / streams > b) b = s->kern[d] / streams;
    for (int l = 0; l < s->nlinks; l++)
        if (s->link_bytes[l] / s->bw[l] > b) b = s->link_bytes[l] / s->bw[l];
    double cp = critical_path(s);
    *resources = b;
    *critical = cp;
    return cp > b ? cp : b;
}

/* the model of kernel_time and copy_time, for the `priority` policy; before prepare */
static double sim_cost(tp_backend *be, const tp_memgraph *mg, uint32_t v)
{
    const sim *s = (const sim *)be;
    tp_mvertex mv;
    tp_memgraph_vertex(mg, v, &mv);
    if (mv.kind == TP_M_KERNEL || mv.kind == TP_M_ACCUMULATE) {
        const tp_graph *g = tp_memgraph_taskgraph(mg);
        double flops = 0;
        return kernel_time(&s->p, mg, v, vector_op(tp_graph_vertex(g, mv.task)), &flops);
    }
    if (mv.kind == TP_M_TRANSFER || mv.kind == TP_M_OFFLOAD || mv.kind == TP_M_RELOAD)
        return copy_time(&s->p, mv.kind, (double)mv.write.bytes);
    return 0;
}

static void sim_release(tp_backend *be)
{
    sim *s = (sim *)be;
    free(s->heap);
    free(s->flows);
    free(s->active);
    free(s->eng);
    s->eng = NULL;
    free(s->bw);
    free(s->t0);
    free(s->unit_of);
    free(s->held);
    s->held = NULL;
    s->nheld = s->capheld = 0;
    s->wake_at = 0;
    free(s->link_bytes);
    free(s->cp_w);
    free(s->cp_f);
    s->cp_w = s->cp_f = NULL;
    tp__mem_release(&s->mem);
    free(s->vector_op);
    s->vector_op = NULL;
    s->unit_of = NULL;
    s->heap = NULL;
    s->flows = NULL;
    s->active = NULL;
    s->bw = NULL;
    s->t0 = NULL;
    s->link_bytes = NULL;
    s->nheap = s->capheap = s->nflows = s->capflows = 0;
}

/* nd devices of cap[] fit the machine; `what` ("the graph", "the session") and `st` for messages */
static tp_status fits_machine(const sim *s, int nd, const uint64_t *cap, const char *what, const char *gives, tp_status st,
                              tp_error *err)
{
    if (nd > s->p.devices)
        return tp__fail(err, st, "machine '%s' has %d device%s, %s uses %d", s->p.name, s->p.devices, s->p.devices == 1 ? "" : "s", what, nd);
    for (int d = 0; d < nd; d++)
        if (cap[d] > s->p.device_mem) {
            char a[32], b[32];
            return tp__fail(err, st, "%s gives device %d %s, machine '%s' has %s per device", gives, d,
                            tp_format_size(cap[d], a, sizeof a), s->p.name, tp_format_size(s->p.device_mem, b, sizeof b));
        }
    return TP_OK;
}

static tp_status sim_prepare(tp_backend *be, const tp__plan_info *pi, tp_error *err)
{
    sim *s = (sim *)be;
    /* one executor at a time, as the cpu backend: a second prepare must not free the first's state */
    if (s->eng || s->mem.plan) return tp__fail(err, TP_ERR_ARG, "sim backend: already prepared");
    tp__plan_ctx_set(&s->pc, pi);
    s->nd = s->pc.nd;
    uint64_t cap[TP_MAX_DEVICES];
    for (int d = 0; d < s->nd; d++) cap[d] = tp_memgraph_device_capacity(pi->mg, d);
    tp_status st = fits_machine(s, s->nd, cap, "the graph", "the plan", TP_ERR_INVALID, err);
    if (!st) st = tp__mem_prepare(&s->mem, pi->mg, pi->session, err);
    if (st) {
        sim_release(be);
        return st;
    }
    uint32_t nt = tp_graph_size(s->pc.g);
    s->vector_op = malloc(nt + 1);
    if (!s->vector_op) {
        sim_release(be);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (uint32_t t = 0; t < nt; t++) s->vector_op[t] = (uint8_t)vector_op(tp_graph_vertex(s->pc.g, t));
    s->nlinks = 3 * s->nd + 1;
    s->active = calloc((size_t)s->nlinks, sizeof *s->active);
    s->eng = calloc((size_t)s->nlinks, sizeof *s->eng);
    s->bw = calloc((size_t)s->nlinks, sizeof *s->bw);
    s->link_bytes = calloc((size_t)s->nlinks, sizeof *s->link_bytes);
    uint32_t n = tp_memgraph_size(pi->mg);
    s->t0 = calloc(n + 1, sizeof *s->t0);
    s->unit_of = calloc(n + 1, sizeof *s->unit_of);
    s->cp_w = calloc(n + 1, sizeof *s->cp_w);
    s->cp_f = calloc(n + 1, sizeof *s->cp_f);
    if (!s->active || !s->eng || !s->bw || !s->link_bytes || !s->t0 || !s->unit_of || !s->cp_w || !s->cp_f) {
        sim_release(be);
        return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    }
    for (int d = 0; d < s->nd; d++)
        for (int k = L_H2D; k <= L_PEER; k++) s->bw[k * s->nd + d] = link_bw(&s->p, k);
    s->bw[3 * s->nd] = s->p.host_bus_bw > 0 ? s->p.host_bus_bw : 1;
    s->now = 0;
    s->seq = 0;
    s->inflight = 0;
    memset(s->kern, 0, sizeof s->kern);
    memset(s->idle_since, 0, sizeof s->idle_since);
    return TP_OK;
}

static tp_status sim_rw(tp_backend *be, const tp_region *r, void *buf, tp_error *err)
{
    (void)be;
    (void)r;
    (void)buf;
    return tp__fail(err, TP_ERR_ARG, "the sim backend holds no data");
}

static tp_status sim_write(tp_backend *be, const tp_region *r, const void *src, tp_error *err)
{
    return sim_rw(be, r, (void *)src, err);
}

static tp_status sim_fits(tp_backend *be, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    (void)host_bytes;
    return fits_machine((sim *)be, nd, cap, "the graph", "a cap", TP_ERR_INVALID, err);
}

/* a session: sizes only (there is no data), checked against the machine */
static tp_status sim_open(tp_backend *be, int ndevices, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    sim *s = (sim *)be;
    tp_status st = fits_machine(s, ndevices, cap, "the session", "the session", TP_ERR_ARG, err);
    return st ? st : tp__mem_open(&s->mem, ndevices, cap, host_bytes, err);
}

static void sim_close(tp_backend *be)
{
    tp__mem_close(&((sim *)be)->mem);
}

/* a run starts: the lower bound sums only this run's kernels and copies, and weighs only them */
static void sim_begin(tp_backend *be)
{
    sim *s = (sim *)be;
    memset(s->kern, 0, sizeof s->kern);
    if (s->link_bytes) memset(s->link_bytes, 0, (size_t)s->nlinks * sizeof *s->link_bytes);
    if (s->cp_w) memset(s->cp_w, 0, tp_memgraph_size(s->pc.pi.mg) * sizeof *s->cp_w);
}

static void sim_destroy(tp_backend *be)
{
    sim_release(be);
    sim_close(be);
    free(be);
}

static int sim_engines(tp_backend *be, const tp_run_opts *o, tp__engine *out)
{
    (void)be;
    return tp__engines_gpu_like(o, out); /* the link model below follows their order */
}

static const tp__backend_ops sim_ops = {
    .name = "sim",
    .engines = sim_engines,
    .prepare = sim_prepare,
    .launch = sim_launch,
    .write = sim_write,
    .read = sim_rw,
    .release = sim_release,
    .destroy = sim_destroy,
    .now = sim_now,
    .advance = sim_advance,
    .bound = sim_bound,
    .cost = sim_cost,
    .open = sim_open,
    .fits = sim_fits,
    .close = sim_close,
    .begin = sim_begin,
};

tp_status tp_backend_sim_new(const tp_sim_profile *p, double jitter, tp_backend **out, tp_error *err)
{
    *out = NULL;
    if (!(jitter >= 0 && jitter <= TP_SIM_JITTER_MAX))
        return tp__fail(err, TP_ERR_ARG, "sim backend: jitter must be in [0, %g], not %g", TP_SIM_JITTER_MAX, jitter);
    const double nums[] = {p->peak_flops, p->vector_flops, p->efficiency, p->mem_bw,  p->launch_s,  p->wake_s,
                           p->wake_after_s, p->h2d_bw,  p->d2h_bw,     p->host_bus_bw, p->peer_bw, p->copy_latency_s};
    int finite = 1;
    for (size_t k = 0; k < sizeof nums / sizeof *nums; k++) finite &= isfinite(nums[k]) && nums[k] >= 0;
    if (p->devices < 1 || !finite || !(p->peak_flops > 0) || !(p->efficiency > 0) || !(p->mem_bw > 0) || !(p->h2d_bw > 0) ||
        !(p->d2h_bw > 0) || !(p->peer_bw > 0))
        return tp__fail(err, TP_ERR_ARG,
                        "sim backend: profile '%s' needs devices, peak FLOP/s, efficiency and bandwidths > 0, every number "
                        "finite and >= 0",
                        p->name);
    sim *s = calloc(1, sizeof *s);
    if (!s) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    s->base.ops = &sim_ops;
    s->p = *p;
    s->jitter = jitter;
    tp__mem_init(&s->mem, "sim", NULL, s);
    *out = &s->base;
    return TP_OK;
}

static const char *const sim_keys[] = {"machine", "jitter", NULL};
static const char *const sim_helps[] = {"machine profile: NAME (profiles/NAME.json: a100x8, p100x4, h100, cpu-local) or FILE",
                                        "kernel times and copy sizes x exp(F x N(0,1)), seeded per vertex", NULL};

static tp_status sim_make(const tp_backend_opt *opts, int nopts, tp_backend **out, tp_error *err)
{
    const char *machine = NULL;
    double jitter = 0;
    for (int i = 0; i < nopts; i++) {
        if (!strcmp(opts[i].key, "machine")) machine = opts[i].value;
        else if (tp__opt_number("sim", &opts[i], 0, TP_SIM_JITTER_MAX, &jitter, err)) return TP_ERR_ARG;
    }
    *out = NULL;
    if (!machine) return tp__fail(err, TP_ERR_ARG, "sim backend: needs a machine profile (--machine NAME|FILE)");
    tp_sim_profile p;
    tp_status s = tp_sim_profile_read(machine, &p, err);
    return s ? s : tp_backend_sim_new(&p, jitter, out, err);
}

const tp__backend_entry tp__backend_sim = {
    {"sim", "simulated time on a machine profile (no data): the same executor, a cost model", sim_keys, sim_helps, NULL},
    sim_make,
};
