/* turnip/exec.h - running a MemGraph: the event-driven executor.
 *
 * The executor (src/exec/) launches any vertex whose dependencies are done and whose
 * engine has a free unit — the engines are the backend's own table (for the cpu, sim and cuda
 * backends per device N compute streams, a host-to-device and a device-to-host copy engine,
 * and a peer engine for transfers into the device) — and reacts to completions that backend
 * threads post to a queue (a lock-free ring; the loop spins briefly before it sleeps). Which
 * ready vertex an engine starts is the dispatch policy's choice. Nothing is allocated on devices or host while it runs:
 * backends make one block per device of exactly its capacity and one host block of
 * host_bytes before the first vertex starts.
 *
 * Use: tp_exec_new (prepares the backend: memory, threads, kernel checks), tp_exec_write for
 * each input, tp_exec_run, tp_exec_read for each output, tp_exec_free.
 *
 * Sessions keep device memory and the host block across executors: tp_session_new takes them
 * once (zeroed), each tp_exec_new_in runs a plan in them without clearing them, so what one
 * plan left on a device is there for the next (a plan's resident inputs, TP_M_RESIDENT). */
#ifndef TURNIP_EXEC_H
#define TURNIP_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "turnip/error.h"
#include "turnip/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of the run options, checked by tp_exec_new. */
#define TP_MAX_STREAMS 64   /* compute streams per device */
#define TP_MAX_COPY_DEPTH 4 /* vertices queued at once on one copy engine */
#define TP_MAX_ENGINES 8    /* engines per device a backend may describe */

/* Dispatch policies, a table (src/exec/policy.c; one file per policy): `any` (the default:
 * whatever is ready, first come first served), `fixed` (each engine runs its vertices in the
 * plan's order: the paper's ablation), `random` (a seeded choice among the ready, for tests),
 * `priority` (the ready vertex with the longest estimated path to the end of the MemGraph
 * first, each vertex weighted by the backend's cost model or a generic estimate; ties to the
 * smaller vertex id).
 *
 * Sum-into groups (TP_M_ACCUMULATE, TP_M_JOIN): a group's members run one at a time: a member
 * whose deps are done starts only when its group's lock is free, else it waits in the group's
 * queue; its completion frees the lock for the next. The lock serves the first waiting member,
 * or with tp_run_opts.deterministic (and always under `fixed`) the members in ascending index.
 * A join runs on no engine: it completes as soon as its deps are done. */
int tp_policy_count(void);
const char *tp_policy_name(int i);  /* NULL past the end */
const char *tp_policy_help(int i);  /* one line */
/* TP_OK if a policy of that name exists, TP_ERR_ARG with "--order must be any, fixed, random or
 * priority" style text in err otherwise (err may be NULL). */
tp_status tp_policy_check(const char *name, tp_error *err);

typedef struct tp_run_opts {
    const char *policy;     /* a tp_policy_name; NULL or "": "any" (borrowed) */
    uint64_t seed;          /* random policy and copy jitter */
    int streams;            /* compute streams per device, 1..TP_MAX_STREAMS */
    int copy_depth;         /* vertices queued at once on each copy engine (like a CUDA stream
                               queue; copies still run one at a time, in order), 1..TP_MAX_COPY_DEPTH */
    int64_t fail_vertex;    /* test hook: this MemGraph vertex fails (-1: none) */
    int deterministic;      /* sum-into: 1 serves each group's lock in member order (ascending
                               MemGraph index): results bit-identical across orders and seeds;
                               0 (default): whichever member is ready first */
    /* called from the executor's thread about 4 times a second while a run goes on */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} tp_run_opts;
void tp_run_opts_init(tp_run_opts *o);

/* What a run did, per device and per engine; engines are the backend's own (for the cpu, sim
 * and cuda backends: "stream", "h2d", "d2h", "peer-in"). */
typedef struct tp_run_summary {
    int ndevices;
    int nengines;
    const char *engine_name[TP_MAX_ENGINES]; /* static strings of the backend */
    const char *engine_tag[TP_MAX_ENGINES];  /* short names for the totals line ("peer") */
    uint8_t engine_moves[TP_MAX_ENGINES];    /* 1: a copy engine (its bytes are counted) */
    uint64_t vertices;
    double makespan;     /* seconds from the first launch to the last completion (virtual seconds
                            on a simulating backend) */
    double lower_bound;  /* the backend's lower bound on the makespan, 0 if it has none: the larger
                            of the two parts below */
    double bound_resources;     /* its part from resources (sim: the busiest device's summed kernel
                                   time over its compute streams, or the busiest link's bytes over
                                   its bandwidth), 0 if none */
    double bound_critical_path; /* its part from dependencies (sim: the longest path through the
                                   MemGraph, data and memory edges, each vertex weighted by its
                                   time in this run without contention), 0 if none */
    double loop_seconds; /* executor's own time handling completions and launching */
    uint64_t bytes_moved; /* by every copy engine of every device in this run (each run of an
                             executor counts its own, as every field here does) */
    struct {
        double compute_busy;     /* summed kernel time on the device's compute engines */
        double stall_mem;        /* compute idle while a kernel waited only on memory deps */
        uint64_t kernels;
        uint64_t count[TP_MAX_ENGINES], bytes[TP_MAX_ENGINES]; /* copy engines: copies, bytes */
        double busy[TP_MAX_ENGINES];                          /* copy engines: summed copy time */
    } dev[TP_MAX_DEVICES];
} tp_run_summary;
/* Index of the engine of that name in s, or -1. */
int tp_run_summary_engine(const tp_run_summary *s, const char *name);
void tp_run_summary_print(const tp_run_summary *s, FILE *f);

/* ---- executor ------------------------------------------------------------------------- */

typedef struct tp_backend tp_backend; /* turnip/backend.h makes them; owned by the caller */
typedef struct tp_exec tp_exec;

/* Prepares mg (whose TaskGraph must outlive the executor) on be: checks every kernel's op and
 * shapes, allocates device memory (zeroed) and host memory, starts the backend's threads. A MemGraph
 * with resident inputs (TP_M_RESIDENT) needs a session: TP_ERR_ARG (see tp_exec_new_in). */
tp_status tp_exec_new(const tp_memgraph *mg, tp_backend *be, const tp_run_opts *o, tp_exec **out, tp_error *err);
/* The MemGraph the executor runs (borrowed). */
const tp_memgraph *tp_exec_memgraph(const tp_exec *x);
/* Copies bytes into / out of a region (host or device memory of the backend). */
tp_status tp_exec_write(tp_exec *x, const tp_region *r, const void *src, tp_error *err);
tp_status tp_exec_read(tp_exec *x, const tp_region *r, void *dst, tp_error *err);
/* Runs the MemGraph once. On a failed vertex the run stops launching, drains what is in
 * flight and returns the failure, naming the vertex. A simulating backend that stops making
 * progress with vertices in flight fails the run naming one of them, never hangs; a backend
 * that breaks the completion contract (a completion nobody launched, an overflowing queue)
 * fails the run, and the executor then refuses runs, reads and writes until tp_exec_free. */
tp_status tp_exec_run(tp_exec *x, tp_run_summary *sum, tp_error *err);
/* Chrome trace-event JSON of the last run (opens in Perfetto): one process per device, one
 * track per compute stream and copy engine, a slice per vertex, a memory-in-use counter.
 * TP_ERR_ARG before any run. */
tp_status tp_exec_trace_write(const tp_exec *x, const char *path, tp_error *err);
void tp_exec_free(tp_exec *x);

/* ---- sessions: memory kept across executors -------------------------------------------- */

typedef struct tp_session tp_session;
/* Opens, on backend be (which the session borrows; it must outlive the session), device arenas
 * of device_cap[d] bytes for devices 0..ndevices-1 (1..TP_MAX_DEVICES) and a host block of
 * host_bytes, zeroed once, kept until tp_session_free. One executor at a time may use a
 * session; while it is open, be makes no executor outside it (tp_exec_new: TP_ERR_ARG).
 * TP_ERR_ARG for bad arguments, a backend with no sessions, or one already in a session or
 * used by an executor; the backend's status (TP_ERR_NOMEM, TP_ERR_DEVICE) when the memory
 * cannot be had. The sim backend keeps sizes only (it holds no data) and checks them against
 * its machine. */
tp_status tp_session_new(tp_backend *be, int ndevices, const uint64_t *device_cap, uint64_t host_bytes,
                         tp_session **out, tp_error *err);
/* Frees the memory. Free the session's executor first; one still live is stopped by this (its
 * backend released) and then refuses runs, reads and writes until tp_exec_free. NULL: nothing. */
void tp_session_free(tp_session *s);
/* Like tp_exec_new, but in session s: mg's device count must equal the session's, each of its
 * device capacities and its host_bytes must be at most the session's (TP_ERR_ARG naming the
 * device or host memory, the plan's size and the session's); the arenas and the host block
 * are used as they are (not cleared), and freeing the executor frees neither. TP_ERR_ARG while
 * another executor made in s is live. Only an executor made here may run a MemGraph with
 * resident inputs (TP_M_RESIDENT: done when a run starts, their bytes already on the device;
 * tp_exec_new refuses them with TP_ERR_ARG). */
tp_status tp_exec_new_in(tp_session *s, const tp_memgraph *mg, const tp_run_opts *o, tp_exec **out, tp_error *err);

/* Copies r->bytes between a caller's buffer and a region of the open session's memory (a device
 * arena or the host block) through the backend's write/read ops, e.g. to keep tensors on a device
 * between plans (turnip/cache.h). TP_ERR_ARG while an executor made in s is live, for a region
 * outside the session's memory, or on a backend that holds no data (sim). */
tp_status tp_session_write(tp_session *s, const tp_region *r, const void *src, tp_error *err);
tp_status tp_session_read(tp_session *s, const tp_region *r, void *dst, tp_error *err);
/* The session's host block, for the caller to read and write directly (zero-copy inputs placed
 * in a TaskGraph's reserved host bytes, turnip/graph.h); *bytes (may be NULL) its size. Asked
 * for while no executor of the session is live (NULL and 0 otherwise, and where the backend's
 * host memory is not addressable: sim holds no data); the pointer stays valid until
 * tp_session_free. Read and write through it only while no run (tp_exec_run) is in progress:
 * between runs, also while an executor is live, bytes a plan will read are read as they are
 * then (`turnip generate` writes the new K/V rows into the cache's host copies so). */
void *tp_session_host(tp_session *s, uint64_t *bytes);
/* The session's device count; each arena's bytes into cap[0..count-1] when cap is not NULL. */
int tp_session_devices(const tp_session *s, uint64_t *cap);

/* Convenience for the command line and tests: loads every TaskGraph input of mg from a
 * safetensors file (names = input ids; dtype and shape must agree with the graph), and
 * writes every output to a safetensors file named by output ids. */
tp_status tp_exec_load_inputs(tp_exec *x, const char *path, tp_error *err);
tp_status tp_exec_save_outputs(tp_exec *x, const char *path, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
