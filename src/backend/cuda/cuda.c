/* cuda.c - the cuda backend: MemGraphs on NVIDIA GPUs, copies overlapping kernels.
 *
 * Memory is taken once, before the run: per MemGraph device one cudaMalloc of exactly its
 * capacity, one pinned host block (cudaHostAlloc) of the plan's host_bytes (in a session:
 * both once, of the session's sizes, at open, and kept across plans; tp__mem), per compute
 * stream a cuBLAS workspace and the f32 scratch that mixed-dtype matmuls and very wide sums
 * need; nothing is allocated while the plan runs. Each executor unit is a CUDA stream:
 * per device `streams` non-blocking compute streams (each with its own cuBLAS handle) and one
 * stream each for host-to-device, device-to-host and peer-in copies (the executor queues up
 * to copy_depth copies on a copy stream, which runs them in order, as the cpu backend does).
 *
 * launch() runs on the executor's thread: it enqueues the vertex on its stream and then
 * either a host function (cudaLaunchHostFunc; CUDA calls it on its own thread when the
 * stream gets there, and it posts the completion to the executor's sink) or a timing event
 * that a backend thread polls (cudaEventQuery), posting completions in stream order. Polling
 * is the default: it also reports device faults, after which CUDA runs no host functions
 * (docs/cuda.md; which is faster is still to be measured on a GPU).
 *
 * MemGraph device d runs on GPU d mod (visible GPUs): a multi-device plan also runs on one
 * GPU, its transfers then being device-to-device copies. Matmul is cuBLAS
 * (cublasGemmStridedBatchedEx, f32 compute); the other ops are cukernels.cu.
 *
 * cuBLAS is loaded with dlopen when a cuda backend is made: linked normally, its 700 MB of
 * libraries cost every `turnip` process 330 ms at start, GPU or not. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "backend/common.h"
#include "backend/cuda/cukernels.h"
#include "exec/sleeper.h"
#include "io/util.h"
#include "kernels/kernels.h"
#include "turnip/io.h"

#define RING 8                  /* in-flight vertices per stream */
_Static_assert(RING >= TP_MAX_COPY_DEPTH, "a copy stream holds every vertex the executor queues on its engine");
#define WORKSPACE (32u << 20)   /* cuBLAS workspace per compute stream (NVIDIA's advice for Hopper) */

struct cu;

/* the cuBLAS entry points used, from the library loaded at run time */
static struct {
    void *lib;
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*set_workspace)(cublasHandle_t, void *, size_t);
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *, const void *,
                           cudaDataType, int, long long, const void *, cudaDataType, int, long long, const void *, void *,
                           cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);
} blas;
static pthread_mutex_t blas_mu = PTHREAD_MUTEX_INITIALIZER;

#define STR_(x) #x
#define STR(x) STR_(x)

static tp_status load_cublas(tp_error *err)
{
    pthread_mutex_lock(&blas_mu);
    if (!blas.lib) {
        const char *names[] = {"libcublas.so." STR(CUBLAS_VER_MAJOR),
#ifdef TP_CUBLAS_DIR
                               TP_CUBLAS_DIR "/libcublas.so." STR(CUBLAS_VER_MAJOR),
#endif
                               "libcublas.so"};
        void *lib = NULL;
        for (size_t i = 0; i < sizeof names / sizeof *names && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            *(void **)&blas.create = dlsym(lib, "cublasCreate_v2");
            *(void **)&blas.destroy = dlsym(lib, "cublasDestroy_v2");
            *(void **)&blas.set_stream = dlsym(lib, "cublasSetStream_v2");
            *(void **)&blas.set_workspace = dlsym(lib, "cublasSetWorkspace_v2");
            *(void **)&blas.gemm = dlsym(lib, "cublasGemmStridedBatchedEx");
            if (blas.create && blas.destroy && blas.set_stream && blas.set_workspace && blas.gemm) blas.lib = lib;
            else dlclose(lib);
        }
    }
    int ok = blas.lib != NULL;
    pthread_mutex_unlock(&blas_mu);
    return ok ? TP_OK
              : tp__fail(err, TP_ERR_DEVICE, "cuda backend: cannot load cuBLAS (libcublas.so.%d): %s", CUBLAS_VER_MAJOR,
                         dlerror() ? dlerror() : "symbols missing");
}

typedef struct slot {
    struct cu *c;
    struct cunit *u;
    uint32_t v;
    double t_launch;
} slot;

typedef struct cunit {
    int device, engine;
    cudaStream_t st;
    cublasHandle_t blas;
    void *ws;
    float *scratch;
    int *bad, *dbad; /* mapped host int: an embedding id out of range (host and device views) */
    slot ring[RING];
    cudaEvent_t ev0[RING], ev1[RING];
    atomic_uint wpos, rpos;
    double last_end;
    tp_error err; /* errors found while launching (the executor thread only) */
} cunit;

typedef struct cu {
    tp_backend base;
    tp_cuda_opts o;
    int mode; /* TP_CUDA_CALLBACK or TP_CUDA_POLL */
    tp__plan_ctx pc;
    tp__mem mem;
    int ngpu;
    int phys[TP_MAX_DEVICES];
    tp__kplan *kp;
    cunit *u;
    int nu, cur_gpu;
    cudaEvent_t ref[TP_MAX_DEVICES]; /* poll mode: event times are read relative to these */
    double ref_host[TP_MAX_DEVICES];
    pthread_t poller;
    int poller_started;
    atomic_int inflight;
    tp__sleeper sl; /* the poller's: sleeps while nothing is in flight */
} cu;

static tp_status cuda_fail(tp_error *err, cudaError_t e, const char *what)
{
    return tp__fail(err, TP_ERR_DEVICE, "cuda backend: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static const char *blas_str(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "error";
    }
}

static void set_gpu(cu *c, int gpu)
{
    if (c->cur_gpu != gpu) {
        cudaSetDevice(gpu);
        c->cur_gpu = gpu;
    }
}

static cudaDataType cuda_type(tp_dtype t)
{
    return t == TP_DT_F16 ? CUDA_R_16F : t == TP_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* cuBLAS takes A and B of one type and C of that type or f32; anything else goes through f32
 * (exact) or, fast, through the 16-bit type of the one 16-bit operand (docs/cuda.md) */
static int matmul_direct(tp_dtype a, tp_dtype b, tp_dtype o)
{
    return a == b && (o == a || o == TP_DT_F32);
}

static int is16(tp_dtype t)
{
    return t == TP_DT_BF16 || t == TP_DT_F16;
}

/* fast: A f32 and B 16-bit or the reverse, output f32: the f32 one is rounded to the other's type */
static int matmul_round16(tp_dtype a, tp_dtype b, tp_dtype o)
{
    return o == TP_DT_F32 && ((a == TP_DT_F32 && is16(b)) || (b == TP_DT_F32 && is16(a)));
}

/* f32 scratch (floats) matmul v needs with f32 arithmetic (exact mode; fast mode's fallback) */
static uint64_t scratch_f32(const tp_graph *g, const tp_vertex *v)
{
    const tp_vertex *a = tp_graph_vertex(g, v->inputs[0]), *b = tp_graph_vertex(g, v->inputs[1]);
    if (matmul_direct(a->dtype, b->dtype, v->dtype)) return 0;
    return (a->dtype != TP_DT_F32 ? tp__numel(a) : 0) + (b->dtype != TP_DT_F32 ? tp__numel(b) : 0) +
           (v->dtype != TP_DT_F32 ? tp__numel(v) : 0);
}

/* f32 scratch (floats) kernel v needs on this backend, exact mode */
static uint64_t scratch_need_exact(const tp_graph *g, uint32_t vi, const tp__kplan *kp)
{
    const tp_vertex *v = tp_graph_vertex(g, vi);
    if (kp->op == TP__OP_MATMUL) return scratch_f32(g, v);
    if ((kp->op == TP__OP_SUM || kp->op == TP__OP_LOGSUMEXP) && v->ninputs > TP__CU_SUM_MAX) return tp__numel(v);
    if (kp->op == TP__OP_ATTENTION) return kp->scratch_floats; /* the cpu kernel's layout: 16-bit operands in f32, a tile's scores */
    return 0;
}

/* the same, fast mode: a rounded f32 operand takes half a float per element */
static uint64_t scratch_need_fast(const tp_graph *g, uint32_t vi, const tp__kplan *kp)
{
    const tp_vertex *v = tp_graph_vertex(g, vi);
    if (kp->op == TP__OP_MATMUL) {
        const tp_vertex *a = tp_graph_vertex(g, v->inputs[0]), *b = tp_graph_vertex(g, v->inputs[1]);
        if (matmul_round16(a->dtype, b->dtype, v->dtype)) return (tp__numel(a->dtype == TP_DT_F32 ? a : b) + 1) / 2;
    }
    return scratch_need_exact(g, vi, kp);
}

static tp_status kerr(cunit *u, int e, const char *what)
{
    return e ? cuda_fail(&u->err, (cudaError_t)e, what) : TP_OK;
}

static tp_status run_matmul(cu *c, cunit *u, const tp_vertex *v, const tp__kplan *kp, const void *const *in, void *out)
{
    const tp_vertex *A = tp_graph_vertex(c->pc.g, v->inputs[0]), *B = tp_graph_vertex(c->pc.g, v->inputs[1]);
    int nd = A->ndim;
    int64_t m = v->shape[nd - 2], n = v->shape[nd - 1], k = A->shape[nd - (kp->trans_a ? 2 : 1)];
    int64_t batch = 1;
    for (int i = 0; i < nd - 2; i++) batch *= A->shape[i];
    const void *a = in[0], *b = in[1];
    void *o = out;
    tp_dtype ta = A->dtype, tb = B->dtype, to = v->dtype;
    float *sc = u->scratch;
    tp_status s = TP_OK;
    int fast = c->o.matmul != TP_CUDA_MATMUL_EXACT;
    cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
    if (fast && matmul_round16(ta, tb, to)) { /* the f32 operand rounded to the 16-bit type */
        int ra = ta == TP_DT_F32;
        tp_dtype t16 = ra ? tb : ta;
        const tp_vertex *R = ra ? A : B;
        if ((s = kerr(u, tp__cu_unary(u->st, TP__OP_CAST, ra ? a : b, TP_DT_F32, sc, t16, tp__numel(R), 1.0f), "cast")))
            return s;
        if (ra) a = sc;
        else b = sc;
        ta = tb = t16;
    } else if (!matmul_direct(ta, tb, to)) { /* through f32 */
        if (ta != TP_DT_F32) {
            if ((s = kerr(u, tp__cu_unary(u->st, TP__OP_CAST, a, ta, sc, TP_DT_F32, tp__numel(A), 1.0f), "cast"))) return s;
            a = sc;
            sc += tp__numel(A);
        }
        if (tb != TP_DT_F32) {
            if ((s = kerr(u, tp__cu_unary(u->st, TP__OP_CAST, b, tb, sc, TP_DT_F32, tp__numel(B), 1.0f), "cast"))) return s;
            b = sc;
            sc += tp__numel(B);
        }
        if (to != TP_DT_F32) o = sc;
        ta = tb = TP_DT_F32;
    }
    if (fast && ta == TP_DT_F32) ct = CUBLAS_COMPUTE_32F_FAST_TF32;
    tp_dtype tc = o == out ? to : TP_DT_F32;
    float alpha = kp->alpha, beta = 0.0f;
    /* row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T */
    cublasStatus_t bs = blas.gemm(
        u->blas, kp->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, kp->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
        &alpha, b, cuda_type(tb), kp->trans_b ? (int)k : (int)n, B->ndim == 2 ? 0 : (long long)(k * n), a, cuda_type(ta),
        kp->trans_a ? (int)m : (int)k, (long long)(m * k), &beta, o, cuda_type(tc), (int)n, (long long)(m * n), (int)batch,
        ct, CUBLAS_GEMM_DEFAULT);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return tp__fail(&u->err, TP_ERR_DEVICE, "cuda backend: cublasGemmStridedBatchedEx: %s", blas_str(bs));
    if (o != out) s = kerr(u, tp__cu_unary(u->st, TP__OP_CAST, o, TP_DT_F32, out, to, tp__numel(v), 1.0f), "cast");
    return s;
}

/* row-major f32 C [m, n] = alpha A [m, k] op(B) on u's stream: column-major C^T = op(B)^T A^T;
 * TF32 tensor cores unless exact (as run_matmul's f32 matmuls) */
static tp_status gemm_f32(cu *c, cunit *u, int trans_b, int m, int n, int k, float alpha, const float *A, const float *B, int ldb,
                          float *C)
{
    float beta = 0.0f;
    cublasComputeType_t ct = c->o.matmul != TP_CUDA_MATMUL_EXACT ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasStatus_t bs = blas.gemm(u->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, CUDA_R_32F, ldb, 0, A,
                                  CUDA_R_32F, k, 0, &beta, C, CUDA_R_32F, n, 0, 1, ct, CUBLAS_GEMM_DEFAULT);
    if (bs != CUBLAS_STATUS_SUCCESS)
        return tp__fail(&u->err, TP_ERR_DEVICE, "cuda backend: cublasGemmStridedBatchedEx: %s", blas_str(bs));
    return TP_OK;
}

/* attention as the cpu kernel computes it (kernels.c): per tile of kp->length query rows, the
 * scores of the columns causality leaves (cuBLAS, f32 or TF32), the causal softmax in place,
 * times v. Three launches per tile and the tile's scores through device memory: a composition,
 * not a FlashAttention kernel (the sim backend costs attention as one; docs/ops.md). */
static tp_status run_attention(cu *c, cunit *u, const tp_vertex *v, const tp__kplan *kp, const void *const *in, void *out)
{
    const tp_vertex *X[3];
    const float *f[3];
    float *sc = u->scratch;
    tp_status s = TP_OK;
    for (int k = 0; k < 3; k++) { /* 16-bit operands to f32 at the start of scratch */
        X[k] = tp_graph_vertex(c->pc.g, v->inputs[k]);
        f[k] = in[k];
        if (X[k]->dtype == TP_DT_F32) continue;
        if ((s = kerr(u, tp__cu_unary(u->st, TP__OP_CAST, in[k], X[k]->dtype, sc, TP_DT_F32, tp__numel(X[k]), 1.0f), "cast"))) return s;
        f[k] = sc;
        sc += tp__numel(X[k]);
    }
    float *o = v->dtype == TP_DT_F32 ? out : sc, *S = o == out ? sc : sc + tp__numel(v);
    int64_t R = v->shape[0], d = X[0]->shape[1], dv = v->shape[1], N = X[1]->shape[0], tile = kp->length;
    for (int64_t r0 = 0; r0 < R && !s; r0 += tile) {
        int64_t rt = R - r0 < tile ? R - r0 : tile, cols = tp__attention_cols(kp, r0, rt, N);
        if (cols < 1) { /* every row masked */
            s = kerr(u, cudaMemsetAsync(o + r0 * dv, 0, (size_t)(rt * dv) * 4, u->st), "cudaMemsetAsync");
            continue;
        }
        if ((s = gemm_f32(c, u, 1, (int)rt, (int)cols, (int)d, kp->scale, f[0] + r0 * d, f[1], (int)d, S))) break;
        if ((s = kerr(u, tp__cu_softmax(u->st, S, TP_DT_F32, S, TP_DT_F32, (uint64_t)rt, (uint64_t)cols, (uint64_t)rt, 1.0f, kp->causal,
                                        r0 + kp->row_offset), "softmax")))
            break;
        s = gemm_f32(c, u, 0, (int)rt, (int)dv, (int)cols, 1.0f, S, f[2], (int)dv, o + r0 * dv);
    }
    if (!s && o != out) s = kerr(u, tp__cu_unary(u->st, TP__OP_CAST, o, TP_DT_F32, out, v->dtype, tp__numel(v), 1.0f), "cast");
    return s;
}

/* enqueues kernel vertex v's work on u's stream */
static tp_status run_kernel(cu *c, cunit *u, const tp_mvertex *mv)
{
    const tp_vertex *v = tp_graph_vertex(c->pc.g, mv->task);
    const tp__kplan *kp = &c->kp[mv->task];
    if (kp->op == TP__OP_OPAQUE) return TP_OK;
    const void *inb[16], **in = mv->nreads <= 16 ? inb : malloc(mv->nreads * sizeof *in);
    if (!in) return tp__fail(&u->err, TP_ERR_NOMEM, "out of memory");
    for (uint32_t k = 0; k < mv->nreads; k++) {
        tp_mvertex src;
        tp_memgraph_vertex(c->pc.pi.mg, mv->reads[k], &src);
        in[k] = tp__mem_ptr(&c->mem, &src.write);
    }
    void *out = tp__mem_ptr(&c->mem, &mv->write);
    const tp_vertex *x0 = tp_graph_vertex(c->pc.g, v->inputs[0]);
    int dto = v->dtype, dt0 = x0->dtype, e = 0;
    uint64_t n = tp__numel(v);
    tp_status s = TP_OK;
    cudaStream_t st = u->st;
    switch (kp->op) {
    case TP__OP_MATMUL: s = run_matmul(c, u, v, kp, in, out); break;
    case TP__OP_ATTENTION: s = run_attention(c, u, v, kp, in, out); break;
    case TP__OP_ADD: case TP__OP_SUB: case TP__OP_MUL: case TP__OP_SILU_GRAD: {
        const tp_vertex *B = tp_graph_vertex(c->pc.g, v->inputs[1]);
        e = tp__cu_binary(st, kp->op, in[0], dt0, in[1], B->dtype, tp__numel(B), out, dto, n);
        break;
    }
    case TP__OP_SCALE: case TP__OP_SILU: case TP__OP_GELU: case TP__OP_EXP: case TP__OP_RELU: case TP__OP_CAST:
        e = tp__cu_unary(st, kp->op, in[0], dt0, out, dto, n, kp->alpha);
        break;
    case TP__OP_SOFTMAX: {
        uint64_t C = (uint64_t)v->shape[v->ndim - 1], R = v->ndim >= 2 ? (uint64_t)v->shape[v->ndim - 2] : 1;
        e = tp__cu_softmax(st, in[0], dt0, out, dto, n / C, C, R, kp->scale, kp->causal, kp->row_offset);
        break;
    }
    case TP__OP_RMSNORM: {
        const tp_vertex *W = tp_graph_vertex(c->pc.g, v->inputs[1]);
        uint64_t d = (uint64_t)W->shape[0];
        e = tp__cu_rmsnorm(st, in[0], dt0, in[1], W->dtype, out, dto, n / d, d, kp->eps);
        break;
    }
    case TP__OP_ROPE: case TP__OP_ROPE_GRAD:
        e = tp__cu_rope(st, in[0], dt0, out, dto, v->shape[0], v->ndim == 3 ? v->shape[1] : 1, v->shape[v->ndim - 1], kp->theta,
                        kp->pos_offset, kp->op == TP__OP_ROPE_GRAD);
        break;
    case TP__OP_RMSNORM_GRAD: {
        const tp_vertex *W = tp_graph_vertex(c->pc.g, v->inputs[1]), *DY = tp_graph_vertex(c->pc.g, v->inputs[2]);
        uint64_t d = (uint64_t)W->shape[0];
        e = tp__cu_rmsnorm_grad(st, in[0], dt0, in[1], W->dtype, in[2], DY->dtype, out, dto, n / d, d, kp->eps);
        break;
    }
    case TP__OP_SOFTMAX_GRAD: {
        const tp_vertex *DY = tp_graph_vertex(c->pc.g, v->inputs[1]);
        uint64_t C = (uint64_t)v->shape[v->ndim - 1];
        if (C) e = tp__cu_softmax_grad(st, in[0], dt0, in[1], DY->dtype, out, dto, n / C, C, kp->scale);
        break;
    }
    case TP__OP_LOGSUMEXP: { /* groups of TP__CU_SUM_MAX inputs, each adding to the partial result in scratch */
        float *acc = NULL;
        for (uint32_t k0 = 0; k0 < v->ninputs && !e; k0 += TP__CU_SUM_MAX) {
            tp__cu_lse_args a;
            a.k = (int)(v->ninputs - k0 < TP__CU_SUM_MAX ? v->ninputs - k0 : TP__CU_SUM_MAX);
            for (int k = 0; k < a.k; k++) {
                const tp_vertex *x = tp_graph_vertex(c->pc.g, v->inputs[k0 + (uint32_t)k]);
                a.in[k] = in[k0 + (uint32_t)k];
                a.dt[k] = x->dtype;
                a.C[k] = (uint64_t)x->shape[x->ndim - 1];
            }
            int last = k0 + (uint32_t)a.k >= v->ninputs;
            e = tp__cu_logsumexp(st, &a, acc, last ? out : u->scratch, last ? dto : TP_DT_F32, n);
            acc = u->scratch;
        }
        break;
    }
    case TP__OP_XENT: case TP__OP_XENT_GRAD:
        e = tp__cu_xent(st, in[0], dt0, in[1], in[2], out, dto, (uint64_t)x0->shape[0], (uint64_t)x0->shape[1], kp->start, kp->scale,
                        kp->op == TP__OP_XENT_GRAD);
        break;
    case TP__OP_ADAM_MOMENT: {
        const tp_vertex *G = tp_graph_vertex(c->pc.g, v->inputs[1]);
        e = tp__cu_adam_moment(st, in[0], dt0, in[1], G->dtype, out, dto, n, kp->beta, kp->alpha, kp->square);
        break;
    }
    case TP__OP_ADAMW: {
        const tp_vertex *M = tp_graph_vertex(c->pc.g, v->inputs[1]), *Vv = tp_graph_vertex(c->pc.g, v->inputs[2]);
        e = tp__cu_adamw(st, in[0], dt0, in[1], M->dtype, in[2], Vv->dtype, in[3], out, dto, n, kp->eps, kp->weight_decay);
        break;
    }
    case TP__OP_EMBEDDING:
        *u->bad = 0;
        e = tp__cu_embedding(st, in[0], dt0, in[1], out, dto, v->shape[0], x0->shape[1], x0->shape[0], kp->start, kp->masked,
                             u->dbad);
        break;
    case TP__OP_SUM: {
        float *acc = NULL;
        for (uint32_t k0 = 0; k0 < v->ninputs && !e; k0 += TP__CU_SUM_MAX) {
            tp__cu_sum_args a;
            a.k = (int)(v->ninputs - k0 < TP__CU_SUM_MAX ? v->ninputs - k0 : TP__CU_SUM_MAX);
            for (int k = 0; k < a.k; k++) {
                a.in[k] = in[k0 + (uint32_t)k];
                a.dt[k] = tp_graph_vertex(c->pc.g, v->inputs[k0 + (uint32_t)k])->dtype;
            }
            int last = k0 + (uint32_t)a.k >= v->ninputs;
            e = tp__cu_sum(st, &a, acc, last ? out : u->scratch, last ? dto : TP_DT_F32, n);
            acc = u->scratch;
        }
        break;
    }
    case TP__OP_WRITE_SLICE: case TP__OP_PAD: {
        /* around the part: write_slice's base (in place, out == the base: nothing to copy), pad's
         * zeros (all-zero bytes in every dtype); then the part's rows at start */
        int pad = kp->op == TP__OP_PAD;
        const tp_vertex *P = tp_graph_vertex(c->pc.g, v->inputs[pad ? 0 : 1]);
        uint64_t outer, inner, es = tp_dtype_size(v->dtype), len = (uint64_t)kp->length;
        tp__axis_blocks(v, kp->axis, &outer, &inner);
        if (pad) e = (int)cudaMemsetAsync(out, 0, tp__numel(v) * es, st);
        else if (out != in[0]) e = (int)cudaMemcpyAsync(out, in[0], tp__numel(v) * es, cudaMemcpyDeviceToDevice, st);
        if (!e)
            e = tp__cu_copy_rows(st, in[pad ? 0 : 1], P->dtype, (uint8_t *)out + (uint64_t)kp->start * inner * es, dto, outer,
                                 len * inner, len * inner, (uint64_t)v->shape[kp->axis] * inner);
        break;
    }
    case TP__OP_RESHAPE: /* the same bytes: a copy, or nothing in place */
        if (out != in[0]) e = (int)cudaMemcpyAsync(out, in[0], n * tp_dtype_size(v->dtype), cudaMemcpyDeviceToDevice, st);
        break;
    case TP__OP_SLICE: case TP__OP_CONCAT: {
        uint64_t outer, inner;
        tp__axis_blocks(v, kp->axis, &outer, &inner);
        if (kp->op == TP__OP_SLICE) {
            uint64_t ext = (uint64_t)x0->shape[kp->axis], len = (uint64_t)kp->length;
            const uint8_t *src = (const uint8_t *)in[0] + (uint64_t)kp->start * inner * tp_dtype_size(x0->dtype);
            e = tp__cu_copy_rows(st, src, dt0, out, dto, outer, len * inner, ext * inner, len * inner);
            break;
        }
        uint64_t oext = (uint64_t)v->shape[kp->axis], at = 0;
        for (uint32_t k = 0; k < v->ninputs && !e; k++) {
            const tp_vertex *x = tp_graph_vertex(c->pc.g, v->inputs[k]);
            uint64_t ext = (uint64_t)x->shape[kp->axis];
            e = tp__cu_copy_rows(st, in[k], x->dtype, (uint8_t *)out + at * inner * tp_dtype_size(v->dtype), dto, outer,
                                 ext * inner, ext * inner, oext * inner);
            at += ext;
        }
        break;
    }
    case TP__OP_TRANSPOSE: {
        int nd = v->ndim;
        int64_t istr[TP_MAX_DIMS], pstr[TP_MAX_DIMS];
        istr[nd - 1] = 1;
        for (int i = nd - 2; i >= 0; i--) istr[i] = istr[i + 1] * x0->shape[i + 1];
        for (int j = 0; j < nd; j++) pstr[j] = istr[kp->perm[j]];
        e = tp__cu_transpose(st, in[0], dt0, out, dto, nd, v->shape, pstr, n);
        break;
    }
    default:
        s = tp__fail(&u->err, TP_ERR_INVALID, "cuda backend: op %s has no CUDA kernel", tp__op_name(kp->op));
        break;
    }
    if (in != inb) free(in);
    if (!s && e) s = kerr(u, e, tp__op_name(kp->op));
    return s;
}

/* sum-into: enqueues R += a_i (reads[1]) on u's stream */
static tp_status run_accumulate(cu *c, cunit *u, const tp_mvertex *mv)
{
    tp_mvertex src;
    tp_memgraph_vertex(c->pc.pi.mg, mv->reads[1], &src);
    const tp_vertex *t = tp_graph_vertex(c->pc.g, mv->task), *a = tp_graph_vertex(c->pc.g, src.task);
    int e = tp__cu_accumulate(u->st, tp__mem_ptr(&c->mem, &mv->write), t->dtype, tp__mem_ptr(&c->mem, &src.write), a->dtype,
                              tp__numel(t));
    return e ? kerr(u, e, "accumulate") : TP_OK;
}

static tp_status run_copy(cu *c, cunit *u, const tp_mvertex *mv)
{
    tp_mvertex src;
    tp_memgraph_vertex(c->pc.pi.mg, mv->reads[0], &src);
    void *dst = tp__mem_ptr(&c->mem, &mv->write);
    const void *sp = tp__mem_ptr(&c->mem, &src.write);
    cudaError_t e;
    if (mv->kind == TP_M_TRANSFER && c->phys[src.device] != c->phys[mv->device])
        e = cudaMemcpyPeerAsync(dst, c->phys[mv->device], sp, c->phys[src.device], mv->write.bytes, u->st);
    else
        e = cudaMemcpyAsync(dst, sp, mv->write.bytes, cudaMemcpyDefault, u->st);
    return e ? cuda_fail(&u->err, e, "copy") : TP_OK;
}

/* a completion (from the poll thread or a CUDA callback thread), checked for what a kernel
 * could only report through memory; e: the error of a failed s (the caller's storage, never the
 * unit's: the executor thread may be writing that for the next vertex on the stream) */
static void post(cu *c, cunit *u, uint32_t v, tp_status s, double t0, double t1, const tp_error *e)
{
    tp_status st = s;
    tp_error be;
    if (!s && u->engine == TP__ENG_COMPUTE && *(volatile int *)u->bad) {
        tp_mvertex mv;
        tp_memgraph_vertex(c->pc.pi.mg, v, &mv);
        const tp_vertex *tv = tp_graph_vertex(c->pc.g, mv.task);
        const tp_vertex *tab = tp_graph_vertex(c->pc.g, tv->inputs[0]);
        st = tp__fail(&be, TP_ERR_INVALID, "vertex '%s' (embedding): the id at position %d is outside [%lld, %lld)",
                            tv->id, *(volatile int *)u->bad - 1, (long long)c->kp[mv.task].start,
                            (long long)(c->kp[mv.task].start + tab->shape[0]));
        *(volatile int *)u->bad = 0;
        e = &be;
    }
    tp__done d;
    tp__done_set(&d, v, st, t0, t1, e);
    tp__sink_post(c->pc.pi.sink, &d);
}

static void CUDART_CB host_done(void *arg)
{
    slot *sl = arg;
    cunit *u = sl->u;
    double t1 = tp__now(), t0 = sl->t_launch > u->last_end ? sl->t_launch : u->last_end;
    u->last_end = t1;
    atomic_fetch_add(&u->rpos, 1);
    post(sl->c, u, sl->v, TP_OK, t0, t1, NULL);
}

static int any_inflight(void *ctx)
{
    return atomic_load(&((cu *)ctx)->inflight) > 0;
}

/* poll mode: completes, in stream order, every vertex whose end event has happened */
static void *poll_main(void *arg)
{
    cu *c = arg;
    cudaSetDevice(c->phys[0]);
    int gpu = c->phys[0];
    unsigned idle = 0;
    while (!atomic_load(&c->sl.stop)) {
        int progressed = 0;
        for (int i = 0; i < c->nu; i++) {
            cunit *u = &c->u[i];
            for (;;) {
                unsigned r = atomic_load(&u->rpos);
                if (r == atomic_load(&u->wpos)) break;
                slot *sl = &u->ring[r % RING];
                int g = c->phys[u->device];
                if (g != gpu) cudaSetDevice(gpu = g);
                cudaError_t e = cudaEventQuery(u->ev1[r % RING]);
                if (e == cudaErrorNotReady) break;
                float ms0 = 0, ms1 = 0;
                tp_status s = TP_OK;
                tp_error pe;
                if (e) s = cuda_fail(&pe, e, "stream");
                else if (cudaEventElapsedTime(&ms0, c->ref[u->device], u->ev0[r % RING]) ||
                         cudaEventElapsedTime(&ms1, c->ref[u->device], u->ev1[r % RING]))
                    ms0 = ms1 = (float)((tp__now() - c->ref_host[u->device]) * 1e3);
                atomic_store(&u->rpos, r + 1);
                atomic_fetch_sub(&c->inflight, 1);
                post(c, u, sl->v, s, c->ref_host[u->device] + ms0 * 1e-3, c->ref_host[u->device] + ms1 * 1e-3, &pe);
                progressed = 1;
            }
        }
        if (progressed) {
            idle = 0;
        } else if (!any_inflight(c)) { /* nothing to wait for: sleep until a launch */
            tp__sleeper_wait(&c->sl, any_inflight, c, 0);
        } else if (++idle > 64) {
            sched_yield();
        }
    }
    return NULL;
}

static void cu_launch(tp_backend *be, uint32_t v, int unit)
{
    cu *c = (cu *)be;
    int d = c->pc.pi.device[v];
    cunit *u = &c->u[tp__lane(&c->pc, v, unit)];
    tp_mvertex mv;
    tp_memgraph_vertex(c->pc.pi.mg, v, &mv);
    set_gpu(c, c->phys[d]);
    unsigned w = atomic_load(&u->wpos);
    slot *sl = &u->ring[w % RING];
    sl->v = v;
    sl->t_launch = tp__now();
    tp_status s = TP_OK;
    s = tp__fault(&c->pc, v, &u->err);
    cudaError_t e = cudaSuccess;
    if (!s && c->mode == TP_CUDA_POLL && (e = cudaEventRecord(u->ev0[w % RING], u->st))) s = cuda_fail(&u->err, e, "event");
    if (!s) s = mv.kind == TP_M_KERNEL ? run_kernel(c, u, &mv) : mv.kind == TP_M_ACCUMULATE ? run_accumulate(c, u, &mv) : run_copy(c, u, &mv);
    if (!s) {
        if (c->mode == TP_CUDA_POLL) {
            if ((e = cudaEventRecord(u->ev1[w % RING], u->st))) s = cuda_fail(&u->err, e, "event");
        } else if ((e = cudaLaunchHostFunc(u->st, host_done, sl))) {
            s = cuda_fail(&u->err, e, "cudaLaunchHostFunc");
        }
    }
    if (s) { /* nothing will complete it on the device: complete it here, failed */
        double t = tp__now();
        tp__done dn;
        tp__done_set(&dn, v, s, t, t, &u->err);
        tp__sink_post(c->pc.pi.sink, &dn);
        return;
    }
    atomic_store(&u->wpos, w + 1);
    if (c->mode == TP_CUDA_POLL) {
        atomic_fetch_add(&c->inflight, 1);
        tp__sleeper_wake(&c->sl);
    }
}

static void cu_release(tp_backend *be)
{
    cu *c = (cu *)be;
    if (c->poller_started) {
        tp__sleeper_stop(&c->sl);
        pthread_join(c->poller, NULL);
        c->poller_started = 0;
    }
    for (int i = 0; i < c->nu; i++) {
        cunit *u = &c->u[i];
        set_gpu(c, c->phys[u->device]);
        if (u->st) cudaStreamSynchronize(u->st);
        if (u->blas) blas.destroy(u->blas);
        if (u->st) cudaStreamDestroy(u->st);
        for (int k = 0; k < RING; k++) {
            if (u->ev0[k]) cudaEventDestroy(u->ev0[k]);
            if (u->ev1[k]) cudaEventDestroy(u->ev1[k]);
        }
        cudaFree(u->ws);
        cudaFree(u->scratch);
        if (u->bad) cudaFreeHost(u->bad);
    }
    free(c->u);
    c->u = NULL;
    c->nu = 0;
    for (int d = 0; d < c->pc.nd; d++) {
        set_gpu(c, c->phys[d]);
        if (c->ref[d]) cudaEventDestroy(c->ref[d]);
        c->ref[d] = NULL;
    }
    tp__mem_release(&c->mem);
    free(c->kp);
    c->kp = NULL;
}

/* ---- memory: an exact-size cudaMalloc per device, a pinned host block (tp__mem) ---- */

static tp_status cu_dev_alloc(void *ctx, int d, uint64_t bytes, uint8_t **out, tp_error *err)
{
    cu *c = ctx;
    cudaError_t e;
    set_gpu(c, c->phys[d]);
    if ((e = cudaMalloc((void **)out, bytes ? bytes : 1))) {
        *out = NULL;
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        char b1[32], b2[32];
        return tp__fail(err, TP_ERR_DEVICE, "cuda backend: cannot allocate device %d's %s on GPU %d (%s free): %s", d,
                        tp_format_size(bytes, b1, sizeof b1), c->phys[d], tp_format_size(fr, b2, sizeof b2),
                        cudaGetErrorString(e));
    }
    if ((e = cudaMemset(*out, 0, bytes))) return cuda_fail(err, e, "cudaMemset");
    return TP_OK;
}

/* pinned memory the machine cannot back is refused before anything is allocated */
static tp_status cu_fits(void *ctx, int nd, const uint64_t *cap, uint64_t host_bytes, const char *what, tp_error *err)
{
    (void)ctx, (void)nd, (void)cap;
    uint64_t avail = tp_host_mem_limit();
    if (host_bytes <= avail) return TP_OK;
    char b1[32], b2[32];
    return tp__fail(err, TP_ERR_DEVICE, "cuda backend: %s needs %s of pinned host memory, the machine has %s available", what,
                    tp_format_size(host_bytes, b1, sizeof b1), tp_format_size(avail, b2, sizeof b2));
}

static tp_status cu_host_alloc(void *ctx, uint64_t bytes, int zero, uint8_t **out, tp_error *err)
{
    (void)ctx;
    cudaError_t e;
    if ((e = cudaHostAlloc((void **)out, bytes ? bytes : 1, cudaHostAllocPortable))) {
        *out = NULL;
        char b[32];
        cudaGetLastError();
        return tp__fail(err, TP_ERR_DEVICE, "cuda backend: cannot pin %s of host memory: %s", tp_format_size(bytes, b, sizeof b),
                        cudaGetErrorString(e));
    }
    if (zero) memset(*out, 0, bytes);
    return TP_OK;
}

static void cu_dev_free(void *ctx, int d, uint8_t *p)
{
    cu *c = ctx;
    set_gpu(c, c->phys[d]);
    cudaFree(p);
}

static void cu_host_free(void *ctx, uint8_t *p)
{
    (void)ctx;
    cudaFreeHost(p);
}

/* the backend's fits op: the pinned host memory only (device memory shows when it is
 * allocated: cudaMalloc of the exact cap) */
static tp_status cu_fits_op(tp_backend *be, int nd, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    return cu_fits(be, nd, cap, host_bytes, "the plan", err);
}

/* the pinned host block is not cleared for a plan of its own (it was not before sessions) */
static const tp__mem_alloc cu_alloc = {cu_fits, cu_dev_alloc, cu_host_alloc, cu_dev_free, cu_host_free, 0};

static tp_status unit_init(cu *c, cunit *u, uint64_t scratch_floats, tp_error *err)
{
    cudaError_t e;
    set_gpu(c, c->phys[u->device]);
    atomic_init(&u->wpos, 0);
    atomic_init(&u->rpos, 0);
    for (int k = 0; k < RING; k++) {
        u->ring[k].c = c;
        u->ring[k].u = u;
    }
    if ((e = cudaStreamCreateWithFlags(&u->st, cudaStreamNonBlocking))) return cuda_fail(err, e, "cudaStreamCreate");
    if ((e = cudaHostAlloc((void **)&u->bad, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable)))
        return cuda_fail(err, e, "cudaHostAlloc (flag)");
    *u->bad = 0;
    if ((e = cudaHostGetDevicePointer((void **)&u->dbad, u->bad, 0))) return cuda_fail(err, e, "cudaHostGetDevicePointer");
    if (c->mode == TP_CUDA_POLL)
        for (int k = 0; k < RING; k++)
            if ((e = cudaEventCreate(&u->ev0[k])) || (e = cudaEventCreate(&u->ev1[k]))) return cuda_fail(err, e, "cudaEventCreate");
    if (u->engine != TP__ENG_COMPUTE) return TP_OK;
    cublasStatus_t bs = blas.create(&u->blas);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = blas.set_stream(u->blas, u->st);
    if (bs != CUBLAS_STATUS_SUCCESS) return tp__fail(err, TP_ERR_DEVICE, "cuda backend: cuBLAS handle: %s", blas_str(bs));
    if ((e = cudaMalloc(&u->ws, WORKSPACE))) return cuda_fail(err, e, "cudaMalloc (cuBLAS workspace)");
    if ((bs = blas.set_workspace(u->blas, u->ws, WORKSPACE)) != CUBLAS_STATUS_SUCCESS)
        return tp__fail(err, TP_ERR_DEVICE, "cuda backend: cublasSetWorkspace: %s", blas_str(bs));
    if (scratch_floats && (e = cudaMalloc((void **)&u->scratch, scratch_floats * sizeof(float))))
        return cuda_fail(err, e, "cudaMalloc (f32 scratch)");
    return TP_OK;
}

static tp_status cu_prepare_inner(cu *c, const tp__plan_info *pi, tp_error *err)
{
    tp__plan_ctx_set(&c->pc, pi);
    for (int e = 0; e < pi->nengines; e++) /* a lane's stream holds every unit of its engine in flight */
        if ((pi->engines[e].lanes ? pi->engines[e].units : 1) > RING)
            return tp__fail(err, TP_ERR_ARG, "cuda backend: engine %s queues %d vertices, a stream holds %d", pi->engines[e].name,
                            pi->engines[e].units, RING);
    const tp_memgraph *mg = pi->mg;
    c->cur_gpu = -1;
    if (!c->mem.session) /* a session fixed the mapping when it opened */
        for (int d = 0; d < c->pc.nd; d++) c->phys[d] = d % c->ngpu;
    uint64_t scratch[TP_MAX_DEVICES];
    tp_status ks = tp__kernels_prepare(mg, &c->kp, scratch,
                                        c->o.matmul == TP_CUDA_MATMUL_EXACT ? scratch_need_exact : scratch_need_fast, err);
    if (ks) return ks;
    /* device memory and the pinned host block of exactly the plan's sizes, or the session's */
    if ((ks = tp__mem_prepare(&c->mem, mg, pi->session, err))) return ks;
    cudaError_t e;
    for (int d = 0; d < c->pc.nd; d++) {
        set_gpu(c, c->phys[d]);
        if ((e = cudaEventCreate(&c->ref[d]))) return cuda_fail(err, e, "cudaEventCreate");
    }
    for (int a = 0; a < c->ngpu && a < c->pc.nd; a++) /* peer access where the GPUs allow it */
        for (int b = 0; b < c->ngpu && b < c->pc.nd; b++) {
            int ok = 0;
            if (a == b || cudaDeviceCanAccessPeer(&ok, a, b) || !ok) continue;
            set_gpu(c, a);
            if (cudaDeviceEnablePeerAccess(b, 0)) cudaGetLastError(); /* already enabled */
        }
    c->nu = c->pc.nd * c->pc.lanes; /* one stream per lane */
    c->u = calloc((size_t)c->nu, sizeof *c->u);
    if (!c->u) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    for (int i = 0; i < c->nu; i++) {
        cunit *u = &c->u[i];
        u->device = i / c->pc.lanes;
        u->engine = tp__lane_engine(&c->pc, i % c->pc.lanes);
    }
    for (int i = 0; i < c->nu; i++) {
        tp_status s = unit_init(c, &c->u[i], c->u[i].engine == TP__ENG_COMPUTE ? scratch[c->u[i].device] : 0, err);
        if (s) return s;
    }
    for (int d = 0; d < c->pc.nd; d++) { /* the clock reference of each device, now */
        set_gpu(c, c->phys[d]);
        cudaStream_t st = c->u[d * c->pc.lanes].st;
        if ((e = cudaEventRecord(c->ref[d], st)) || (e = cudaEventSynchronize(c->ref[d]))) return cuda_fail(err, e, "reference event");
        c->ref_host[d] = tp__now();
    }
    if ((e = cudaDeviceSynchronize())) return cuda_fail(err, e, "cudaDeviceSynchronize");
    atomic_init(&c->inflight, 0);
    atomic_store(&c->sl.stop, 0);
    if (c->mode == TP_CUDA_POLL) {
        if (pthread_create(&c->poller, NULL, poll_main, c)) return tp__fail(err, TP_ERR_NOMEM, "cuda backend: cannot start a thread");
        c->poller_started = 1;
    }
    return TP_OK;
}

static tp_status cu_prepare(tp_backend *be, const tp__plan_info *pi, tp_error *err)
{
    cu *c = (cu *)be;
    if (c->u || c->kp) return tp__fail(err, TP_ERR_ARG, "cuda backend: already prepared");
    tp_status s = cu_prepare_inner(c, pi, err);
    if (s) cu_release(be);
    return s;
}

static tp_status cu_write(tp_backend *be, const tp_region *r, const void *src, tp_error *err)
{
    cu *c = (cu *)be;
    tp_status s = tp__mem_check(&c->mem, r, err);
    if (s) return s;
    if (r->space == TP_SPACE_HOST) {
        memcpy(tp__mem_ptr(&c->mem, r), src, r->bytes);
        return TP_OK;
    }
    set_gpu(c, c->phys[r->device]);
    cudaError_t e = cudaMemcpy(tp__mem_ptr(&c->mem, r), src, r->bytes, cudaMemcpyHostToDevice);
    return e ? cuda_fail(err, e, "cudaMemcpy") : TP_OK;
}

static tp_status cu_read(tp_backend *be, const tp_region *r, void *dst, tp_error *err)
{
    cu *c = (cu *)be;
    tp_status s = tp__mem_check(&c->mem, r, err);
    if (s) return s;
    if (r->space == TP_SPACE_HOST) {
        memcpy(dst, tp__mem_ptr(&c->mem, r), r->bytes);
        return TP_OK;
    }
    set_gpu(c, c->phys[r->device]);
    cudaError_t e = cudaMemcpy(dst, tp__mem_ptr(&c->mem, r), r->bytes, cudaMemcpyDeviceToHost);
    return e ? cuda_fail(err, e, "cudaMemcpy") : TP_OK;
}

/* a session: device memory and the pinned host block once, zeroed; GPU d mod (GPUs) for device d */
static tp_status cu_open(tp_backend *be, int ndevices, const uint64_t *cap, uint64_t host_bytes, tp_error *err)
{
    cu *c = (cu *)be;
    /* in use (a session open, a plan prepared): refused, saying why, before the mapping changes */
    if (c->mem.session || c->mem.plan) return tp__mem_open(&c->mem, ndevices, cap, host_bytes, err);
    c->cur_gpu = -1;
    for (int d = 0; d < ndevices; d++) c->phys[d] = d % c->ngpu;
    tp_status s = tp__mem_open(&c->mem, ndevices, cap, host_bytes, err);
    /* the clears (on each GPU's default stream) end before a plan's non-blocking streams start */
    for (int d = 0; d < ndevices && d < c->ngpu && !s; d++) {
        cudaError_t e;
        set_gpu(c, c->phys[d]);
        if ((e = cudaDeviceSynchronize())) {
            tp__mem_close(&c->mem);
            s = cuda_fail(err, e, "cudaDeviceSynchronize");
        }
    }
    return s;
}

static void cu_close(tp_backend *be)
{
    tp__mem_close(&((cu *)be)->mem);
}

static void *cu_host_block(tp_backend *be)
{
    return tp__mem_session_host(&((cu *)be)->mem);
}

static void cu_destroy(tp_backend *be)
{
    cu_release(be);
    cu_close(be);
    tp__sleeper_destroy(&((cu *)be)->sl);
    free(be);
}

static int cu_engines(tp_backend *be, const tp_run_opts *o, tp__engine *out)
{
    (void)be;
    return tp__engines_gpu_like(o, out);
}

static const tp__backend_ops cuda_ops = {
    .name = "cuda",
    .engines = cu_engines,
    .prepare = cu_prepare,
    .launch = cu_launch,
    .write = cu_write,
    .read = cu_read,
    .release = cu_release,
    .destroy = cu_destroy,
    .open = cu_open,
    .fits = cu_fits_op,
    .close = cu_close,
    .host_block = cu_host_block,
};

void tp_cuda_opts_init(tp_cuda_opts *o)
{
    memset(o, 0, sizeof *o);
}

/* GPUs the CUDA runtime sees; 0 with why (one phrase, "no usable GPU: ...") in err */
static int gpu_count(tp_error *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e) {
        cudaGetLastError();
        tp__fail(err, TP_ERR_DEVICE, "no usable GPU: %s", cudaGetErrorString(e));
        return 0;
    }
    if (!n) tp__fail(err, TP_ERR_DEVICE, "no usable GPU: the CUDA runtime sees none");
    return n;
}

tp_status tp_backend_cuda_new(const tp_cuda_opts *o, tp_backend **out, tp_error *err)
{
    *out = NULL;
    tp_error why;
    int n = gpu_count(&why);
    if (!n) return tp__fail(err, TP_ERR_DEVICE, "cuda backend: %s (is there an NVIDIA GPU and driver?)", why.msg);
    tp_status ls = load_cublas(err);
    if (ls) return ls;
    cu *c = calloc(1, sizeof *c);
    if (!c) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    c->base.ops = &cuda_ops;
    if (o) c->o = *o;
    /* polling by default: CUDA skips host functions queued after a device fault, so in callback
     * mode a faulting kernel would leave the executor waiting; an event reports the fault */
    c->mode = c->o.completion == TP_CUDA_DEFAULT ? TP_CUDA_POLL : (int)c->o.completion;
    c->ngpu = n;
    tp__mem_init(&c->mem, "cuda", &cu_alloc, c);
    tp__sleeper_init(&c->sl);
    *out = &c->base;
    return TP_OK;
}

int tp_cuda_describe(char *buf, size_t len)
{
    tp_error e;
    int n = gpu_count(&e);
    if (!n) {
        snprintf(buf, len, "cuda (%s)", e.msg);
        return 1;
    }
    struct cudaDeviceProp p;
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    if (cudaGetDeviceProperties(&p, 0)) snprintf(p.name, sizeof p.name, "?");
    snprintf(buf, len, "cuda (%d GPU%s: %s, compute capability %d.%d; driver CUDA %d.%d, runtime %d.%d)", n, n > 1 ? "s" : "",
             p.name, p.major, p.minor, drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    return 1;
}
