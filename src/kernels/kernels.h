/* kernels.h - op semantics and CPU kernels (internal; docs/ops.md is the specification).
 *
 * Every op computes in f32 over row-major tensors stored as f32, f16 or bf16. A kernel is
 * prepared once per TaskGraph vertex (op code, attributes, shapes checked, scratch needed),
 * so the run itself parses and allocates nothing. */
#ifndef TP__KERNELS_H
#define TP__KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "turnip/graph.h"

typedef enum {
    TP__OP_OPAQUE = 0, TP__OP_MATMUL, TP__OP_ADD, TP__OP_SUB, TP__OP_MUL, TP__OP_SCALE,
    TP__OP_SILU, TP__OP_GELU, TP__OP_EXP, TP__OP_RELU, TP__OP_SOFTMAX, TP__OP_RMSNORM,
    TP__OP_ROPE, TP__OP_EMBEDDING, TP__OP_SUM, TP__OP_SLICE, TP__OP_CONCAT, TP__OP_TRANSPOSE,
    TP__OP_CAST, TP__OP_WRITE_SLICE, TP__OP_RESHAPE,
    /* training (docs/ops.md): gradients, the vocabulary-chunked cross-entropy, AdamW */
    TP__OP_RMSNORM_GRAD, TP__OP_ROPE_GRAD, TP__OP_SOFTMAX_GRAD, TP__OP_SILU_GRAD, TP__OP_LOGSUMEXP, TP__OP_XENT,
    TP__OP_XENT_GRAD, TP__OP_ADAM_MOMENT, TP__OP_ADAMW,
    /* long prompts (docs/ops.md): causal attention without the scores as a tensor; a tensor
     * zero-padded along an axis (a KV cache's first block) */
    TP__OP_ATTENTION, TP__OP_PAD, TP__OP_COUNT
} tp__opcode;

/* The largest magnitude of an offset attribute (row_offset, pos_offset, id_offset): 2^53,
 * the integers every JSON reader keeps exact. */
#define TP__MAX_OFFSET ((int64_t)1 << 53)

typedef struct tp__kplan {
    tp__opcode op;
    int trans_a, trans_b, causal, masked, square;
    float alpha, scale, eps, theta, beta, weight_decay; /* adam_moment: alpha = 1 - beta */
    int64_t row_offset, pos_offset, axis, length; /* attention: length = query rows per tile */
    int64_t start; /* slice, write_slice and pad: start; embedding, xent and xent_grad: id_offset */
    int perm[TP_MAX_DIMS];
    uint64_t scratch_floats; /* f32 scratch this kernel needs at run time */
} tp__kplan;

/* attention (prepared into kp), the tile of query rows r0..r0+rt-1 over N keys: how many key
 * columns it computes, those causality leaves its last row (all N without `causal`; < 1: every
 * row of the tile is masked). Shared by the cpu and cuda kernels. */
static inline int64_t tp__attention_cols(const tp__kplan *kp, int64_t r0, int64_t rt, int64_t N)
{
    int64_t last = r0 + rt + kp->row_offset; /* one past the last row's last unmasked column; offsets are at most 2^53 */
    return kp->causal && last < N ? last : N;
}

/* Elements of v's shape. */
uint64_t tp__numel(const tp_vertex *v);

/* 1 when kernel v (prepared into kp) may write its output over its input k: element for
 * element (same element count and size) and an op that reads each element before it writes
 * it (or, write_slice's base and reshape's input, leaves it where it is). */
int tp__kernel_inplace_ok(const tp_graph *g, uint32_t v, const tp__kplan *kp, uint32_t k);

/* Elements of v's shape before `axis` (*outer) and after it (*inner): slice, concat and
 * write_slice move outer blocks of (extent along the axis x inner) elements. */
void tp__axis_blocks(const tp_vertex *v, int64_t axis, uint64_t *outer, uint64_t *inner);

/* Name of an op code ("matmul"). */
const char *tp__op_name(tp__opcode op);

/* Checks vertex v (a kernel) of g: known op, attribute types, input dtypes and shapes, output
 * shape; fills kp. Errors name the vertex. */
tp_status tp__kernel_prepare(const tp_graph *g, uint32_t v, tp__kplan *kp, tp_error *err);

/* Runs it: in[k] points at input k's bytes, out at the output's; scratch holds at least
 * kp->scratch_floats floats. Data-dependent failures (an embedding id out of range) return
 * TP_ERR_INVALID with the vertex named. */
tp_status tp__kernel_run(const tp_graph *g, uint32_t v, const tp__kplan *kp, const void *const *in, void *out,
                         float *scratch, tp_error *err);

/* OpenBLAS (blas.c), loaded on first use with one thread (OPENBLAS_NUM_THREADS=1, set before
 * main unless the user set it: a process-wide setting of any program linking turnip):
 * tp__blas_threads loads it and raises the count with openblas_set_num_threads (left alone
 * when the user set the variable); row-major sgemm C = alpha op(A) op(B), 0 when OpenBLAS
 * cannot be loaded. */
int tp__blas_threads(int n); /* 0: OpenBLAS cannot be loaded */
int tp__sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
               float *c, int ldc);
/* OpenBLAS's configuration string and thread count (loads it) */
const char *tp__blas_info(int *threads);


/* Sum-into (accumulate.c): out[i] += in[i] for n elements, computed in f32 and rounded to
 * out_dtype (f32, f16 or bf16; in_dtype likewise). */
void tp__accumulate(tp_dtype out_dtype, void *out, tp_dtype in_dtype, const void *in, uint64_t n);

/* The f16/bf16 storage conversions are in io/half.h (tp__f16_to_f32 and friends). */

#endif
