/* cukernels.h - the cuda backend's own kernels (cukernels.cu), behind extern "C" launchers.
 *
 * Each launcher enqueues one kernel on a stream and returns cudaGetLastError() as an int
 * (0 = cudaSuccess). Tensors are row-major, stored as f32, f16 or bf16 (`dt*` arguments take
 * tp_dtype values); every kernel computes in f32 and rounds its result to nearest even, the
 * semantics of docs/ops.md (the cpu backend's kernels are the reference in tests). Matmul is
 * not here: the backend calls cuBLAS directly. */
#ifndef TP__CUKERNELS_H
#define TP__CUKERNELS_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* op: a tp__opcode among SCALE, SILU, GELU, EXP, RELU, CAST (CAST also converts storage) */
int tp__cu_unary(cudaStream_t s, int op, const void *a, int dta, void *o, int dto, uint64_t n, float alpha);
/* op: ADD, SUB, MUL; b has nb elements, broadcast over a (o[i] = a[i] op b[i % nb]); SILU_GRAD (a, b = dy,
 * nb = n): dy s (1 + a (1 - s)), s = sigmoid(a) */
int tp__cu_binary(cudaStream_t s, int op, const void *a, int dta, const void *b, int dtb, uint64_t nb, void *o, int dto,
                  uint64_t n);
/* rows of C elements; row r's index along the second-to-last axis is r % R */
int tp__cu_softmax(cudaStream_t s, const void *a, int dta, void *o, int dto, uint64_t rows, uint64_t C, uint64_t R,
                   float scale, int causal, int64_t row_offset);
int tp__cu_rmsnorm(cudaStream_t s, const void *x, int dtx, const void *w, int dtw, void *o, int dto, uint64_t rows,
                   uint64_t d, float eps);
/* grad: rope_grad (the rotation by minus the angle) */
int tp__cu_rope(cudaStream_t s, const void *x, int dtx, void *o, int dto, int64_t T, int64_t H, int64_t D, float theta,
                int64_t pos_offset, int grad);
/* ids i32 [T]; an id outside [id_offset, id_offset + V) gives a zero row and, unless masked,
 * sets *bad (device-visible, e.g. mapped host memory) to the position + 1 of one such id */
int tp__cu_embedding(cudaStream_t s, const void *table, int dtt, const int32_t *ids, void *o, int dto, int64_t T,
                     int64_t d, int64_t V, int64_t id_offset, int masked, int *bad);

/* training ops (docs/ops.md); rows of d (C) elements each */
int tp__cu_rmsnorm_grad(cudaStream_t s, const void *x, int dtx, const void *w, int dtw, const void *dy, int dtdy, void *o,
                        int dto, uint64_t rows, uint64_t d, float eps);
int tp__cu_softmax_grad(cudaStream_t s, const void *y, int dty, const void *dy, int dtdy, void *o, int dto, uint64_t rows,
                        uint64_t C, float scale);
/* xent ([T, 1]) or, with grad, xent_grad ([T, Vc]); lse f32 [T], ids i32 [T] */
int tp__cu_xent(cudaStream_t s, const void *logits, int dtl, const float *lse, const int32_t *ids, void *o, int dto, uint64_t T,
                uint64_t Vc, int64_t id_offset, float scale, int grad);
/* o = beta m + gw g (or gw g g with square); gw: 1 - beta, rounded from the attribute's double */
int tp__cu_adam_moment(cudaStream_t s, const void *m, int dtm, const void *g, int dtg, void *o, int dto, uint64_t n, float beta,
                       float gw, int square);
/* hyper: f32 [3] on the device (lr, 1 - beta1^t, 1 - beta2^t) */
int tp__cu_adamw(cudaStream_t s, const void *p, int dtp, const void *m, int dtm, const void *v, int dtv, const float *hyper,
                 void *o, int dto, uint64_t n, float eps, float weight_decay);

#define TP__CU_SUM_MAX 16
typedef struct tp__cu_sum_args {
    const void *in[TP__CU_SUM_MAX];
    int dt[TP__CU_SUM_MAX];
    int k;
} tp__cu_sum_args;
/* o = (acc ? acc : 0) + sum of the k inputs, each of n elements */
int tp__cu_sum(cudaStream_t s, const tp__cu_sum_args *a, const float *acc, void *o, int dto, uint64_t n);
typedef struct tp__cu_lse_args {
    const void *in[TP__CU_SUM_MAX];
    int dt[TP__CU_SUM_MAX];
    uint64_t C[TP__CU_SUM_MAX]; /* input k's last extent */
    int k;
} tp__cu_lse_args;
/* o[r] = logsumexp of row r of the k inputs and, when acc is given, of acc[r] (a partial
 * logsumexp of earlier inputs; o may be acc) */
int tp__cu_logsumexp(cudaStream_t s, const tp__cu_lse_args *a, const float *acc, void *o, int dto, uint64_t rows);
/* for q < outer: dst[q * dst_stride + j] = src[q * src_stride + j], j < len (elements) */
int tp__cu_copy_rows(cudaStream_t s, const void *src, int dts, void *dst, int dtd, uint64_t outer, uint64_t len,
                     uint64_t src_stride, uint64_t dst_stride);
/* out element with index (i0..i{nd-1}) over out_shape = a[sum_j ij * in_stride[j]] */
int tp__cu_transpose(cudaStream_t s, const void *a, int dta, void *o, int dto, int nd, const int64_t *out_shape,
                     const int64_t *in_stride, uint64_t n);

/* sum-into: o[i] = o[i] + a[i] for n elements, f32 arithmetic, rounded to dto */
int tp__cu_accumulate(cudaStream_t s, void *o, int dto, const void *a, int dta, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
