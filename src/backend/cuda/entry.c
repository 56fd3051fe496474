/* entry.c - the cuda backend's registry entry, the same with and without CUDA built in (the
 * constructor says why it cannot be used where it cannot). */
#include <string.h>
#include "backend/common.h"
#include "io/util.h"

static const char *const cuda_keys[] = {"completion", "matmul", NULL};
static const char *const cuda_helps[] = {
    "how completions reach the executor: poll (a thread polling events, the default: it also reports GPU faults) "
    "or callback (cudaLaunchHostFunc)",
    "matmul arithmetic: fast (the default: tensor cores; an f32 operand beside a 16-bit one is rounded to its type, "
    "f32 x f32 runs as TF32) or exact (f32 throughout)",
    NULL};

static tp_status cuda_make(const tp_backend_opt *opts, int nopts, tp_backend **out, tp_error *err)
{
    tp_cuda_opts o;
    tp_cuda_opts_init(&o);
    *out = NULL;
    for (int i = 0; i < nopts; i++) {
        const char *k = opts[i].key, *v = opts[i].value;
        if (!strcmp(k, "matmul")) {
            if (!strcmp(v, "fast")) o.matmul = TP_CUDA_MATMUL_FAST;
            else if (!strcmp(v, "exact")) o.matmul = TP_CUDA_MATMUL_EXACT;
            else return tp__fail(err, TP_ERR_ARG, "--matmul must be fast or exact");
        } else if (!strcmp(v, "poll")) o.completion = TP_CUDA_POLL; /* the other key: completion */
        else if (!strcmp(v, "callback")) o.completion = TP_CUDA_CALLBACK;
        else return tp__fail(err, TP_ERR_ARG, "--completion must be callback or poll");
    }
    return tp_backend_cuda_new(&o, out, err);
}

const tp__backend_entry tp__backend_cuda = {
    {"cuda", "NVIDIA GPUs: exact-cap device memory, compute and copy streams, cuBLAS", cuda_keys, cuda_helps,
     tp_cuda_describe},
    cuda_make,
};
