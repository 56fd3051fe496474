/* turnip/backend.h - the backends that run MemGraphs, and the registry that names them.
 *
 * A backend gives the executor (turnip/exec.h) its memory, its engines and its clock:
 * `cpu` (emulated GPUs on the host), `sim` (virtual time on a machine profile, no data) and
 * `cuda` (NVIDIA GPUs; built when CMake finds nvcc). Each is one file under src/backend/ plus
 * one entry in the registry (src/backend/registry.c), which makes a backend from its name and
 * text options, so a command line needs to know no backend by name: tp_backend_new("cpu",
 * {{"link-bandwidth", "12"}}, ...). The typed constructors below do the same from C structs.
 *
 * Ownership: the caller owns a backend (tp_backend_free) and must keep it alive while an
 * executor or a session (turnip/exec.h, tp_session_new) made on it lives. Every constructor
 * says why it failed in err. */
#ifndef TURNIP_BACKEND_H
#define TURNIP_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "turnip/error.h"
#include "turnip/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the registry --------------------------------------------------------------------- */

/* One text option: key without dashes ("link-bandwidth"), value as typed. Borrowed. */
typedef struct tp_backend_opt {
    const char *key, *value;
} tp_backend_opt;

typedef struct tp_backend_info {
    const char *name;          /* "cpu" */
    const char *summary;       /* one line for --help */
    const char *const *keys;   /* the option keys it accepts, NULL-terminated */
    const char *const *helps;  /* one line per key, same order */
    /* a line for `turnip --version` ("cuda (1 GPU: ...)"); returns 0 when the backend is not
     * built in (then it is not listed); NULL: the name alone */
    int (*describe)(char *buf, size_t len);
} tp_backend_info;

int tp_backend_count(void);
const tp_backend_info *tp_backend_info_at(int i); /* NULL past the end */
const tp_backend_info *tp_backend_find(const char *name); /* NULL if unknown */
/* Makes the backend `name` with options (each key must be one it accepts; values are
 * range-checked). TP_ERR_ARG names an unknown backend or key or a bad value; TP_ERR_DEVICE
 * says why a device backend cannot be used here. */
tp_status tp_backend_new(const char *name, const tp_backend_opt *opts, int nopts, tp_backend **out, tp_error *err);
void tp_backend_free(tp_backend *be);
const char *tp_backend_name(const tp_backend *be);
/* Before planning: whether be could hold nd devices (1..TP_MAX_DEVICES) of cap[] bytes and a
 * host block of host_bytes: the cpu backend checks the machine's memory, sim its profile (device
 * count and memory), cuda its pinned host memory. TP_OK, or the backend's refusal (the
 * status its prepare or session would give). */
tp_status tp_backend_fits(tp_backend *be, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err);

/* ---- cpu: emulated GPUs (memory arenas, worker threads for streams and copy engines) ---- */

typedef struct tp_cpu_opts {
    double link_gbps;     /* host-device and peer bandwidth cap in GB/s (1e9 bytes/s); 0 = none */
    double link_latency_us;
    double jitter;        /* copy time x exp(jitter * N(0,1)), seeded per vertex */
    double opaque_rate;   /* flops per second of `opaque` kernels: one of F flops sleeps F / rate
                             seconds from its start (on its stream's worker, never on the executor's
                             thread); 0 = none (opaque kernels do nothing, at once) */
} tp_cpu_opts;
/* The ranges of the options (finite, so every emulated copy ends): link_gbps 0 or in
 * [MIN, MAX] GB/s, link_latency_us in [0, MAX], jitter in [0, MAX], opaque_rate 0 or in
 * [MIN, MAX] flops/s; an opaque kernel may wait at most TP_CPU_OPAQUE_WAIT_MAX seconds. */
#define TP_CPU_LINK_GBPS_MIN 1e-3
#define TP_CPU_LINK_GBPS_MAX 1e6
#define TP_CPU_LATENCY_US_MAX 1e6
#define TP_CPU_JITTER_MAX 4.0
#define TP_CPU_OPAQUE_RATE_MIN 1.0
#define TP_CPU_OPAQUE_RATE_MAX 1e18
#define TP_CPU_OPAQUE_WAIT_MAX 1e6
void tp_cpu_opts_init(tp_cpu_opts *o);
/* TP_ERR_ARG for an option out of range. prepare() fails with TP_ERR_DEVICE when the arenas
 * and host memory of the plan exceed the memory the machine has available (MemAvailable), and
 * with TP_ERR_ARG, naming the vertex, when an opaque kernel's flops / opaque_rate exceeds
 * TP_CPU_OPAQUE_WAIT_MAX seconds. */
tp_status tp_backend_cpu_new(const tp_cpu_opts *o, tp_backend **out, tp_error *err);

/* ---- sim: time instead of data ---------------------------------------------------------
 * A machine profile gives each device's peak FLOP/s, efficiency, memory bandwidth and kernel
 * launch latency, and the links: host-to-device and device-to-host per device, an optional
 * host bus all host copies share, peer-in per device. */
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
/* The sim's rates on p for work that is neither memory-bound nor latency-bound: *flops_per_s of
 * a non-matmul kernel (opaque ones included) and *copy_bw, the slower of a reload and an offload
 * alone (each the smaller of its link and the host bus). Kernel launch, memory bandwidth and
 * copy latency are left out. */
void tp_sim_profile_rates(const tp_sim_profile *p, double *flops_per_s, double *copy_bw);
/* A simulating backend: kernel time = launch + max(flops / (peak x efficiency), bytes /
 * memory bandwidth); a copy's bytes flow at the fair share of every link it uses; kernel
 * times and copy sizes x exp(jitter x N(0,1)), seeded by the run's seed and the vertex. */
tp_status tp_backend_sim_new(const tp_sim_profile *p, double jitter, tp_backend **out, tp_error *err);
#define TP_SIM_JITTER_MAX 10.0 /* jitter in [0, MAX] */

/* ---- cuda: NVIDIA GPUs -----------------------------------------------------------------
 * One cudaMalloc per device of exactly its capacity, one pinned host block (cudaHostAlloc) of
 * host_bytes (in a session: of the session's sizes, once, when it opens), per device
 * non-blocking compute streams (each with its own cuBLAS handle and workspace) and dedicated
 * host-to-device, device-to-host and peer-in copy streams. MemGraph device d runs on GPU d
 * mod (GPUs visible), so a multi-device plan also runs on one GPU (its peer copies become
 * device-to-device copies). Completions reach the executor from cudaLaunchHostFunc callbacks
 * or from a thread polling CUDA events (docs/cuda.md). */
typedef enum tp_cuda_completion {
    TP_CUDA_DEFAULT = 0,  /* polling: it also reports device faults (CUDA runs no host function
                             after one, so callbacks would leave the executor waiting) */
    TP_CUDA_CALLBACK,     /* cudaLaunchHostFunc after each vertex */
    TP_CUDA_POLL          /* events after each vertex, polled by a backend thread */
} tp_cuda_completion;
/* How matmuls compute (docs/cuda.md, "Matmul precision"). */
typedef enum tp_cuda_matmul {
    TP_CUDA_MATMUL_DEFAULT = 0, /* fast */
    TP_CUDA_MATMUL_FAST,        /* tensor cores: an f32 operand beside a 16-bit one is rounded to
                                   that type, f32 x f32 runs as TF32; f32 accumulation and output */
    TP_CUDA_MATMUL_EXACT        /* f32 arithmetic throughout (16-bit operands widened to f32) */
} tp_cuda_matmul;
typedef struct tp_cuda_opts {
    tp_cuda_completion completion;
    tp_cuda_matmul matmul;
} tp_cuda_opts;
void tp_cuda_opts_init(tp_cuda_opts *o);
/* TP_ERR_DEVICE when turnip was built without CUDA or no GPU can be used. */
tp_status tp_backend_cuda_new(const tp_cuda_opts *o, tp_backend **out, tp_error *err);
/* One line for `turnip --version`: "cuda (1 GPU: NVIDIA H100 80GB HBM3, ...)" or "cuda (no
 * usable GPU: ...)". Returns 0 (and writes "") when turnip was built without CUDA. */
int tp_cuda_describe(char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
