/* cukernels.cu - CUDA kernels for the ops of docs/ops.md other than matmul (cuBLAS does that).
 *
 * Plain, memory-bound kernels: grid-stride loops for elementwise work, one block per row for
 * the row reductions (softmax, rmsnorm, their gradients, logsumexp), f32 arithmetic whatever the storage dtype, and
 * round-to-nearest-even stores (__float2half_rn, __float2bfloat16_rn), the conversions the
 * cpu kernels use. The storage dtype is a run-time argument (uniform across a launch, so the
 * switch costs no divergence). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include "backend/cuda/cukernels.h"
extern "C" {
#include "kernels/kernels.h"
}

enum { DT_F16 = TP_DT_F16, DT_BF16 = TP_DT_BF16 };
enum { OP_ADD = TP__OP_ADD, OP_SUB = TP__OP_SUB, OP_SILU_GRAD = TP__OP_SILU_GRAD,
       OP_SCALE = TP__OP_SCALE, OP_SILU = TP__OP_SILU, OP_GELU = TP__OP_GELU,
       OP_EXP = TP__OP_EXP, OP_RELU = TP__OP_RELU };

__device__ __forceinline__ float ld(const void *p, int dt, uint64_t i)
{
    if (dt == DT_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (dt == DT_F16) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

__device__ __forceinline__ void st(void *p, int dt, uint64_t i, float v)
{
    if (dt == DT_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    else if (dt == DT_F16) ((__half *)p)[i] = __float2half_rn(v);
    else ((float *)p)[i] = v;
}

static unsigned grid_for(uint64_t n, unsigned block)
{
    uint64_t g = (n + block - 1) / block;
    if (g > 65536) g = 65536; /* grid-stride loops cover the rest */
    return g ? (unsigned)g : 1;
}

#define GRID_STRIDE(i, n) \
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

__global__ void k_unary(int op, const void *a, int dta, void *o, int dto, uint64_t n, float alpha)
{
    GRID_STRIDE(i, n)
    {
        float x = ld(a, dta, i), y;
        switch (op) {
        case OP_SCALE: y = x * alpha; break;
        case OP_SILU: y = x / (1.0f + expf(-x)); break;
        case OP_GELU: y = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); break;
        case OP_EXP: y = expf(x); break;
        case OP_RELU: y = x > 0 ? x : 0; break;
        default: y = x; break; /* cast */
        }
        st(o, dto, i, y);
    }
}

__global__ void k_binary(int op, const void *a, int dta, const void *b, int dtb, uint64_t nb, void *o, int dto, uint64_t n)
{
    GRID_STRIDE(i, n)
    {
        float x = ld(a, dta, i), y = ld(b, dtb, nb == n ? i : i % nb);
        if (op == OP_SILU_GRAD) { /* y = dy */
            float sg = 1.0f / (1.0f + expf(-x));
            st(o, dto, i, y * sg * (1.0f + x * (1.0f - sg)));
            continue;
        }
        st(o, dto, i, op == OP_ADD ? x + y : op == OP_SUB ? x - y : x * y);
    }
}

/* block-wide reductions (blockDim.x a multiple of 32, at most 1024) */
__device__ float block_max(float v, float *sh)
{
    for (int k = 16; k; k >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, k));
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (!l) sh[w] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : -INFINITY;
    if (w == 0)
        for (int k = 16; k; k >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, k));
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

__device__ float block_sum(float v, float *sh)
{
    for (int k = 16; k; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
    int w = threadIdx.x / 32, l = threadIdx.x % 32;
    __syncthreads();
    if (!l) sh[w] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : 0.0f;
    if (w == 0)
        for (int k = 16; k; k >>= 1) v += __shfl_xor_sync(0xffffffffu, v, k);
    if (threadIdx.x == 0) sh[0] = v;
    __syncthreads();
    return sh[0];
}

__global__ void k_softmax(const void *a, int dta, void *o, int dto, uint64_t C, uint64_t R, float scale, int causal,
                          int64_t row_offset)
{
    __shared__ float sh[32];
    uint64_t r = blockIdx.x, base = r * C;
    int64_t lim = causal ? (int64_t)(r % R) + row_offset : (int64_t)C - 1; /* last unmasked column */
    if (lim > (int64_t)C - 1) lim = (int64_t)C - 1;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j <= lim; j += blockDim.x) mx = fmaxf(mx, ld(a, dta, base + j) * scale);
    mx = block_max(mx, sh);
    float sum = 0;
    for (int64_t j = threadIdx.x; j <= lim; j += blockDim.x) sum += expf(ld(a, dta, base + j) * scale - mx);
    sum = block_sum(sum, sh);
    float inv = lim >= 0 ? 1.0f / sum : 0.0f;
    for (int64_t j = threadIdx.x; j < (int64_t)C; j += blockDim.x)
        st(o, dto, base + j, j <= lim ? expf(ld(a, dta, base + j) * scale - mx) * inv : 0.0f);
}

__global__ void k_rmsnorm(const void *x, int dtx, const void *w, int dtw, void *o, int dto, uint64_t d, float eps)
{
    __shared__ float sh[32];
    uint64_t base = (uint64_t)blockIdx.x * d;
    float ss = 0;
    for (uint64_t j = threadIdx.x; j < d; j += blockDim.x) {
        float v = ld(x, dtx, base + j);
        ss += v * v;
    }
    ss = block_sum(ss, sh);
    float inv = 1.0f / sqrtf(ss / (float)d + eps);
    for (uint64_t j = threadIdx.x; j < d; j += blockDim.x) st(o, dto, base + j, (ld(x, dtx, base + j) * inv) * ld(w, dtw, j));
}

__global__ void k_rope(const void *x, int dtx, void *o, int dto, int64_t T, int64_t H, int64_t D, float theta, int64_t pos_offset,
                       int grad)
{
    int64_t half = D / 2;
    uint64_t n = (uint64_t)(T * H * half);
    GRID_STRIDE(k, n)
    {
        int64_t i = (int64_t)(k % (uint64_t)half), th = (int64_t)(k / (uint64_t)half), t = th / H;
        float inv_freq = (float)(1.0 / pow((double)theta, (double)(2 * i) / (double)D)); /* as the cpu kernel */
        float ang = (float)(t + pos_offset) * inv_freq, cs = cosf(ang), sn = sinf(ang);
        if (grad) sn = -sn; /* rope_grad: the rotation by minus the angle */
        uint64_t b = (uint64_t)th * (uint64_t)D;
        float x1 = ld(x, dtx, b + i), x2 = ld(x, dtx, b + i + half);
        st(o, dto, b + i, x1 * cs - x2 * sn);
        st(o, dto, b + i + half, x2 * cs + x1 * sn);
    }
}

/* ---- training ops: one block per row (a grid-stride loop over rows) for the reductions ---- */

__global__ void k_rmsnorm_grad(const void *x, int dtx, const void *w, int dtw, const void *dy, int dtdy, void *o, int dto,
                               uint64_t rows, uint64_t d, float eps)
{
    __shared__ float sh[32];
    for (uint64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        uint64_t base = r * d;
        float ss = 0, sd = 0;
        for (uint64_t j = threadIdx.x; j < d; j += blockDim.x) {
            float v = ld(x, dtx, base + j);
            ss += v * v;
            sd += v * ld(w, dtw, j) * ld(dy, dtdy, base + j);
        }
        ss = block_sum(ss, sh);
        sd = block_sum(sd, sh);
        float inv = 1.0f / sqrtf(ss / (float)d + eps), k3 = inv * inv * inv * (sd / (float)d);
        for (uint64_t j = threadIdx.x; j < d; j += blockDim.x)
            st(o, dto, base + j, inv * ld(w, dtw, j) * ld(dy, dtdy, base + j) - ld(x, dtx, base + j) * k3);
    }
}

__global__ void k_softmax_grad(const void *y, int dty, const void *dy, int dtdy, void *o, int dto, uint64_t rows, uint64_t C,
                               float scale)
{
    __shared__ float sh[32];
    for (uint64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        uint64_t base = r * C;
        float dot = 0;
        for (uint64_t j = threadIdx.x; j < C; j += blockDim.x) dot += ld(dy, dtdy, base + j) * ld(y, dty, base + j);
        dot = block_sum(dot, sh);
        for (uint64_t j = threadIdx.x; j < C; j += blockDim.x)
            st(o, dto, base + j, scale * ld(y, dty, base + j) * (ld(dy, dtdy, base + j) - dot));
    }
}

__global__ void k_logsumexp(tp__cu_lse_args a, const float *acc, void *o, int dto, uint64_t rows)
{
    __shared__ float sh[32];
    for (uint64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        float mx = acc ? acc[r] : -INFINITY;
        for (int k = 0; k < a.k; k++)
            for (uint64_t j = threadIdx.x; j < a.C[k]; j += blockDim.x) mx = fmaxf(mx, ld(a.in[k], a.dt[k], r * a.C[k] + j));
        mx = block_max(mx, sh);
        float sum = 0;
        if (!isinf(mx)) { /* else every element is -inf (log 0) or one is +inf: the result is mx */
            if (acc && threadIdx.x == 0) sum = expf(acc[r] - mx);
            for (int k = 0; k < a.k; k++)
                for (uint64_t j = threadIdx.x; j < a.C[k]; j += blockDim.x)
                    sum += expf(ld(a.in[k], a.dt[k], r * a.C[k] + j) - mx);
        }
        sum = block_sum(sum, sh); /* every thread has read acc[r] by now: o may be acc */
        if (threadIdx.x == 0) st(o, dto, r, isinf(mx) ? mx : mx + logf(sum));
    }
}

__global__ void k_xent(const void *logits, int dtl, const float *lse, const int32_t *ids, void *o, int dto, uint64_t T,
                       uint64_t Vc, int64_t id_offset, float scale)
{
    GRID_STRIDE(t, T)
    {
        int64_t col = (int64_t)ids[t] - id_offset;
        int hit = ids[t] >= 0 && col >= 0 && col < (int64_t)Vc;
        st(o, dto, t, hit ? scale * (lse[t] - ld(logits, dtl, t * Vc + (uint64_t)col)) : 0.0f);
    }
}

__global__ void k_xent_grad(const void *logits, int dtl, const float *lse, const int32_t *ids, void *o, int dto, uint64_t T,
                            uint64_t Vc, int64_t id_offset, float scale)
{
    GRID_STRIDE(k, T * Vc)
    {
        uint64_t t = k / Vc, j = k % Vc;
        float g = 0.0f;
        if (ids[t] >= 0) { /* an ignored position (id < 0) is a zero row */
            float e = expf(ld(logits, dtl, k) - lse[t]);
            g = (int64_t)ids[t] - id_offset == (int64_t)j ? scale * (e - 1.0f) : scale * e;
        }
        st(o, dto, k, g);
    }
}

__global__ void k_adam_moment(const void *m, int dtm, const void *g, int dtg, void *o, int dto, uint64_t n, float beta, float gw,
                              int square)
{
    GRID_STRIDE(i, n)
    {
        float gi = ld(g, dtg, i);
        st(o, dto, i, beta * ld(m, dtm, i) + gw * (square ? gi * gi : gi));
    }
}

__global__ void k_adamw(const void *p, int dtp, const void *m, int dtm, const void *v, int dtv, const float *hyper, void *o,
                        int dto, uint64_t n, float eps, float weight_decay)
{
    float decay = 1.0f - hyper[0] * weight_decay, step = hyper[0] / hyper[1], bc2s = sqrtf(hyper[2]);
    GRID_STRIDE(i, n)
    {
        float denom = sqrtf(ld(v, dtv, i)) / bc2s + eps;
        st(o, dto, i, ld(p, dtp, i) * decay - step * (ld(m, dtm, i) / denom));
    }
}

__global__ void k_embedding(const void *table, int dtt, const int32_t *ids, void *o, int dto, int64_t T, int64_t d, int64_t V,
                            int64_t id_offset, int masked, int *bad)
{
    GRID_STRIDE(k, (uint64_t)(T * d))
    {
        int64_t t = (int64_t)(k / (uint64_t)d), j = (int64_t)(k % (uint64_t)d);
        int64_t r = (int64_t)ids[t] - id_offset;
        if (r < 0 || r >= V) {
            if (!masked && j == 0) *(volatile int *)bad = (int)(t + 1); /* any offending position will do */
            st(o, dto, k, 0.0f);
        } else {
            st(o, dto, k, ld(table, dtt, (uint64_t)(r * d + j)));
        }
    }
}

__global__ void k_sum(tp__cu_sum_args a, const float *acc, void *o, int dto, uint64_t n)
{
    GRID_STRIDE(i, n)
    {
        float v = acc ? acc[i] : 0.0f;
        for (int k = 0; k < a.k; k++) v += ld(a.in[k], a.dt[k], i);
        st(o, dto, i, v);
    }
}

__global__ void k_copy_rows(const void *src, int dts, void *dst, int dtd, uint64_t outer, uint64_t len, uint64_t ss, uint64_t ds)
{
    GRID_STRIDE(k, outer * len)
    {
        uint64_t q = k / len, j = k % len;
        st(dst, dtd, q * ds + j, ld(src, dts, q * ss + j));
    }
}

struct tshape {
    int64_t shape[8], stride[8];
};

__global__ void k_transpose(const void *a, int dta, void *o, int dto, int nd, tshape s, uint64_t n)
{
    GRID_STRIDE(i, n)
    {
        uint64_t rem = i, src = 0;
        for (int j = nd - 1; j >= 0; j--) {
            uint64_t e = (uint64_t)s.shape[j];
            src += (rem % e) * (uint64_t)s.stride[j];
            rem /= e;
        }
        st(o, dto, i, ld(a, dta, src));
    }
}

#define BLOCK 256

extern "C" int tp__cu_unary(cudaStream_t s, int op, const void *a, int dta, void *o, int dto, uint64_t n, float alpha)
{
    if (n) k_unary<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(op, a, dta, o, dto, n, alpha);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_binary(cudaStream_t s, int op, const void *a, int dta, const void *b, int dtb, uint64_t nb, void *o,
                             int dto, uint64_t n)
{
    if (n) k_binary<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(op, a, dta, b, dtb, nb, o, dto, n);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_softmax(cudaStream_t s, const void *a, int dta, void *o, int dto, uint64_t rows, uint64_t C, uint64_t R,
                              float scale, int causal, int64_t row_offset)
{
    unsigned b = C >= 1024 ? 512 : C >= 256 ? 256 : 64;
    if (rows) k_softmax<<<(unsigned)rows, b, 0, s>>>(a, dta, o, dto, C, R, scale, causal, row_offset);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_rmsnorm(cudaStream_t s, const void *x, int dtx, const void *w, int dtw, void *o, int dto, uint64_t rows,
                              uint64_t d, float eps)
{
    unsigned b = d >= 1024 ? 512 : d >= 256 ? 256 : 64;
    if (rows) k_rmsnorm<<<(unsigned)rows, b, 0, s>>>(x, dtx, w, dtw, o, dto, d, eps);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_rope(cudaStream_t s, const void *x, int dtx, void *o, int dto, int64_t T, int64_t H, int64_t D, float theta,
                           int64_t pos_offset, int grad)
{
    uint64_t n = (uint64_t)(T * H * (D / 2));
    if (n) k_rope<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(x, dtx, o, dto, T, H, D, theta, pos_offset, grad);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_embedding(cudaStream_t s, const void *table, int dtt, const int32_t *ids, void *o, int dto, int64_t T,
                                int64_t d, int64_t V, int64_t id_offset, int masked, int *bad)
{
    uint64_t n = (uint64_t)(T * d);
    if (n) k_embedding<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(table, dtt, ids, o, dto, T, d, V, id_offset, masked, bad);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_sum(cudaStream_t s, const tp__cu_sum_args *a, const float *acc, void *o, int dto, uint64_t n)
{
    if (n) k_sum<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(*a, acc, o, dto, n);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_copy_rows(cudaStream_t s, const void *src, int dts, void *dst, int dtd, uint64_t outer, uint64_t len,
                                uint64_t src_stride, uint64_t dst_stride)
{
    uint64_t n = outer * len;
    if (n) k_copy_rows<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(src, dts, dst, dtd, outer, len, src_stride, dst_stride);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_transpose(cudaStream_t s, const void *a, int dta, void *o, int dto, int nd, const int64_t *out_shape,
                                const int64_t *in_stride, uint64_t n)
{
    tshape t;
    for (int j = 0; j < 8; j++) {
        t.shape[j] = j < nd ? out_shape[j] : 1;
        t.stride[j] = j < nd ? in_stride[j] : 0;
    }
    if (n) k_transpose<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(a, dta, o, dto, nd, t, n);
    return (int)cudaGetLastError();
}

/* row kernels: a block per row, at most 65535 blocks (each loops over rows) */
static unsigned grid_rows(uint64_t rows)
{
    return rows > 65535 ? 65535u : (unsigned)rows;
}

static unsigned block_for(uint64_t len)
{
    return len >= 1024 ? 512 : len >= 256 ? 256 : 64;
}

extern "C" int tp__cu_rmsnorm_grad(cudaStream_t s, const void *x, int dtx, const void *w, int dtw, const void *dy, int dtdy,
                                   void *o, int dto, uint64_t rows, uint64_t d, float eps)
{
    if (rows) k_rmsnorm_grad<<<grid_rows(rows), block_for(d), 0, s>>>(x, dtx, w, dtw, dy, dtdy, o, dto, rows, d, eps);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_softmax_grad(cudaStream_t s, const void *y, int dty, const void *dy, int dtdy, void *o, int dto,
                                   uint64_t rows, uint64_t C, float scale)
{
    if (rows) k_softmax_grad<<<grid_rows(rows), block_for(C), 0, s>>>(y, dty, dy, dtdy, o, dto, rows, C, scale);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_logsumexp(cudaStream_t s, const tp__cu_lse_args *a, const float *acc, void *o, int dto, uint64_t rows)
{
    uint64_t C = 0;
    for (int k = 0; k < a->k; k++) C += a->C[k];
    if (rows) k_logsumexp<<<grid_rows(rows), block_for(C), 0, s>>>(*a, acc, o, dto, rows);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_xent(cudaStream_t s, const void *logits, int dtl, const float *lse, const int32_t *ids, void *o, int dto,
                           uint64_t T, uint64_t Vc, int64_t id_offset, float scale, int grad)
{
    uint64_t n = grad ? T * Vc : T;
    if (n && grad) k_xent_grad<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(logits, dtl, lse, ids, o, dto, T, Vc, id_offset, scale);
    else if (n) k_xent<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(logits, dtl, lse, ids, o, dto, T, Vc, id_offset, scale);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_adam_moment(cudaStream_t s, const void *m, int dtm, const void *g, int dtg, void *o, int dto, uint64_t n,
                                  float beta, float gw, int square)
{
    if (n) k_adam_moment<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(m, dtm, g, dtg, o, dto, n, beta, gw, square);
    return (int)cudaGetLastError();
}

extern "C" int tp__cu_adamw(cudaStream_t s, const void *p, int dtp, const void *m, int dtm, const void *v, int dtv,
                            const float *hyper, void *o, int dto, uint64_t n, float eps, float weight_decay)
{
    if (n) k_adamw<<<grid_for(n, BLOCK), BLOCK, 0, s>>>(p, dtp, m, dtm, v, dtv, hyper, o, dto, n, eps, weight_decay);
    return (int)cudaGetLastError();
}

__global__ void k_accumulate(void *o, int dto, const void *a, int dta, uint64_t n)
{
    GRID_STRIDE(i, n) st(o, dto, i, ld(o, dto, i) + ld(a, dta, i));
}

extern "C" int tp__cu_accumulate(cudaStream_t s, void *o, int dto, const void *a, int dta, uint64_t n)
{
    if (!n) return 0;
    k_accumulate<<<grid_for(n, 256), 256, 0, s>>>(o, dto, a, dta, n);
    return (int)cudaGetLastError();
}
