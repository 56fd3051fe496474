/* turnip/exec.h - running a MemGraph: the event-driven executor and the backend interface.
 *
 * The executor (src/exec/) launches any vertex whose dependencies are done and whose
 * resource is free — per device N compute streams, a host-to-device and a device-to-host copy
 * engine, and a peer engine for transfers into the device — and reacts to completions that
 * backend threads post to a queue (taken whole under one lock, handled without it; the loop
 * spins briefly before it sleeps). Nothing is allocated on devices or host while it runs:
 * backends make one block per device of exactly its capacity and one host block of
 * host_bytes before the first vertex starts.
 *
 * Use: tp_exec_new (prepares the backend: memory, threads, kernel checks), tp_exec_write for
 * each input, tp_exec_run, tp_exec_read for each output, tp_exec_free. */
#ifndef TURNIP_EXEC_H
#define TURNIP_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include "turnip/error.h"
#include "turnip/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tp_policy {
    TP_POLICY_ANY = 0, /* whatever is ready, first come first served (the default) */
    TP_POLICY_FIXED,   /* each engine runs its vertices in the plan's order (the paper's ablation) */
    TP_POLICY_RANDOM   /* a seeded random choice among the ready (for tests) */
} tp_policy;
const char *tp_policy_name(tp_policy p);
tp_status tp_policy_parse(const char *name, tp_policy *out);

typedef enum tp_engine { TP_ENG_COMPUTE = 0, TP_ENG_H2D, TP_ENG_D2H, TP_ENG_PEER, TP_ENG_COUNT } tp_engine;

typedef struct tp_run_opts {
    tp_policy policy;
    uint64_t seed;          /* random policy and copy jitter */
    int streams;            /* compute streams per device, >= 1 */
    int copy_depth;         /* vertices queued at once on each copy engine (like a CUDA stream
                               queue; copies still run one at a time, in order), >= 1 */
    const char *trace_path; /* Chrome trace-event JSON, or NULL */
    int64_t fail_vertex;    /* test hook: this MemGraph vertex fails (-1: none) */
    /* called from the executor's thread about 4 times a second while a run goes on */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} tp_run_opts;
void tp_run_opts_init(tp_run_opts *o);

typedef struct tp_run_summary {
    int ndevices;
    uint64_t vertices;
    double makespan;     /* seconds from the first launch to the last completion (virtual seconds
                            on a simulating backend) */
    double lower_bound;  /* the backend's lower bound on the makespan, 0 if it has none */
    double loop_seconds; /* executor's own time handling completions and launching */
    struct {
        double compute_busy;     /* summed kernel time on the device's streams */
        double stall_mem;        /* compute idle while a kernel waited only on memory deps */
        uint64_t kernels;
        uint64_t copies[TP_ENG_COUNT], copy_bytes[TP_ENG_COUNT];
        double copy_busy[TP_ENG_COUNT];
    } dev[TP_MAX_DEVICES];
} tp_run_summary;
void tp_run_summary_print(const tp_run_summary *s, FILE *f);

/* ---- backends ------------------------------------------------------------------------- */

typedef struct tp_backend tp_backend; /* owned by the caller; tp_backend_free */

typedef struct tp_cpu_opts {
    double link_gbps;     /* host-device and peer bandwidth cap in GB/s (1e9 bytes/s); 0 = none */
    double link_latency_us;
    double jitter;        /* copy time x exp(jitter * N(0,1)), seeded per vertex */
} tp_cpu_opts;
void tp_cpu_opts_init(tp_cpu_opts *o);
/* The cpu backend: emulated GPUs (memory arenas, worker threads for streams and copy engines). */
tp_backend *tp_backend_cpu_new(const tp_cpu_opts *o);
void tp_backend_free(tp_backend *be);
const char *tp_backend_name(const tp_backend *be);

/* The sim backend: time instead of data. A machine profile gives each device's peak FLOP/s,
 * efficiency, memory bandwidth and kernel launch latency, and the links: host-to-device and
 * device-to-host per device, an optional host bus all host copies share, peer-in per device. */
typedef struct tp_sim_profile {
    char name[64];
    int devices;
    uint64_t device_mem;  /* bytes per device */
    double peak_flops;    /* per device, FLOP/s of matmul */
    double vector_flops;  /* FLOP/s of the other kernels (elementwise, softmax, norms); 0: peak_flops */
    double efficiency;    /* fraction of peak a kernel reaches */
    double mem_bw;        /* device memory, bytes/s */
    double launch_s;      /* per kernel */
    double wake_s;        /* more for a kernel whose stream sat idle past wake_after_s: threads had
                             gone to sleep (the cpu backend's spin-then-sleep); 0 on GPUs */
    double wake_after_s;
    double h2d_bw, d2h_bw; /* per device and direction, bytes/s */
    double host_bus_bw;   /* shared by every host-device copy at once; 0: none */
    double peer_bw;       /* into each device, bytes/s */
    double copy_latency_s;
} tp_sim_profile;

/* Reads a profile: a JSON file (a path, or NAME for profiles/NAME.json in the source tree).
 * Every number is {"value": V, "comment": "its source"} or a plain number. */
tp_status tp_sim_profile_read(const char *name_or_path, tp_sim_profile *p, tp_error *err);
/* A simulating backend: kernel time = launch + max(flops / (peak x efficiency), bytes /
 * memory bandwidth); a copy's bytes flow at the fair share of every link it uses; kernel
 * times and copy sizes x exp(jitter x N(0,1)), seeded by the run's seed and the vertex. */
tp_backend *tp_backend_sim_new(const tp_sim_profile *p, double jitter);

/* The cuda backend (built when CMake finds nvcc): one cudaMalloc per device of exactly its
 * capacity, one pinned host block (cudaHostAlloc) of host_bytes, per device non-blocking
 * compute streams (each with its own cuBLAS handle and workspace) and dedicated
 * host-to-device, device-to-host and peer-in copy streams. MemGraph device d runs on GPU
 * d mod (GPUs visible), so a multi-device plan also runs on one GPU (its peer copies become
 * device-to-device copies). Completions reach the executor from cudaLaunchHostFunc callbacks
 * or from a thread polling CUDA events (docs/cuda.md). */
typedef enum tp_cuda_completion {
    TP_CUDA_DEFAULT = 0,  /* polling: it also reports device faults (CUDA runs no host function
                             after one, so callbacks would leave the executor waiting) */
    TP_CUDA_CALLBACK,     /* cudaLaunchHostFunc after each vertex */
    TP_CUDA_POLL          /* events after each vertex, polled by a backend thread */
} tp_cuda_completion;
typedef struct tp_cuda_opts {
    tp_cuda_completion completion;
} tp_cuda_opts;
void tp_cuda_opts_init(tp_cuda_opts *o);
/* A cuda backend, or NULL with err filled (TP_ERR_DEVICE) when turnip was built without CUDA
 * or no GPU can be used. */
tp_backend *tp_backend_cuda_new(const tp_cuda_opts *o, tp_error *err);
/* One line for `turnip --version`: "cuda (1 GPU: NVIDIA H100 80GB HBM3, ...)" or "cuda (no
 * usable GPU: ...)". Returns 0 (and writes "") when turnip was built without CUDA. */
int tp_cuda_describe(char *buf, size_t len);

/* ---- executor ------------------------------------------------------------------------- */

typedef struct tp_exec tp_exec;

/* Prepares mg (whose TaskGraph must outlive the executor) on be: checks every kernel's op and
 * shapes, allocates device and host memory, starts the backend's threads. */
tp_status tp_exec_new(const tp_memgraph *mg, tp_backend *be, const tp_run_opts *o, tp_exec **out, tp_error *err);
/* The MemGraph the executor runs (borrowed). */
const tp_memgraph *tp_exec_memgraph(const tp_exec *x);
/* Copies bytes into / out of a region (host or device memory of the backend). */
tp_status tp_exec_write(tp_exec *x, const tp_region *r, const void *src, tp_error *err);
tp_status tp_exec_read(tp_exec *x, const tp_region *r, void *dst, tp_error *err);
/* Runs the MemGraph once. On a failed vertex the run stops launching, drains what is in
 * flight and returns the failure, naming the vertex. */
tp_status tp_exec_run(tp_exec *x, tp_run_summary *sum, tp_error *err);
void tp_exec_free(tp_exec *x);

/* Convenience for the command line and tests: loads every TaskGraph input of mg from a
 * safetensors file (names = input ids; dtype and shape must agree with the graph), and
 * writes every output to a safetensors file named by output ids. */
tp_status tp_exec_load_inputs(tp_exec *x, const char *path, tp_error *err);
tp_status tp_exec_save_outputs(tp_exec *x, const char *path, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
