/* accumulate.c - the sum-into kernel (docs/ops.md "sum", docs/planner.md "Sum-into"): one
 * partial added into the accumulation region, element by element in f32, the result rounded
 * to the region's dtype. Repeated over a group's members this is `sum` computed one input at a
 * time, so an f32 sum is bit-identical to the kernel's when the members go in argument order;
 * a 16-bit one rounds after each addition instead of once. */
#include "io/half.h"
#include "kernels/kernels.h"

static float load(const void *p, tp_dtype t, uint64_t i)
{
    if (t == TP_DT_F16) return tp__f16_to_f32(((const uint16_t *)p)[i]);
    if (t == TP_DT_BF16) return tp__bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

void tp__accumulate(tp_dtype out_dtype, void *out, tp_dtype in_dtype, const void *in, uint64_t n)
{
    if (out_dtype == TP_DT_F32 && in_dtype == TP_DT_F32) {
        float *o = out;
        const float *a = in;
        for (uint64_t i = 0; i < n; i++) o[i] += a[i];
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        float y = load(out, out_dtype, i) + load(in, in_dtype, i);
        if (out_dtype == TP_DT_F16) ((uint16_t *)out)[i] = tp__f32_to_f16(y);
        else if (out_dtype == TP_DT_BF16) ((uint16_t *)out)[i] = tp__f32_to_bf16(y);
        else ((float *)out)[i] = y;
    }
}
