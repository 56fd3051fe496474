/* entry.c - the cuda backend's registry entry, the same with and without CUDA built in (the
 * constructor says why it cannot be used where it cannot). */
#include <string.h>
#include "backend/common.h"
#include "io/util.h"

static const char *const cuda_keys[] = {"completion", NULL};
static const char *const cuda_helps[] = {
    "how completions reach the executor: poll (a thread polling events, the default: it also reports GPU faults) "
    "or callback (cudaLaunchHostFunc)",
    NULL};

static tp_status cuda_make(const tp_backend_opt *opts, int nopts, tp_backend **out, tp_error *err)
{
    tp_cuda_opts o;
    tp_cuda_opts_init(&o);
    *out = NULL;
    for (int i = 0; i < nopts; i++) { /* the only key: completion */
        if (!strcmp(opts[i].value, "poll")) o.completion = TP_CUDA_POLL;
        else if (!strcmp(opts[i].value, "callback")) o.completion = TP_CUDA_CALLBACK;
        else return tp__fail(err, TP_ERR_ARG, "--completion must be callback or poll");
    }
    return tp_backend_cuda_new(&o, out, err);
}

const tp__backend_entry tp__backend_cuda = {
    {"cuda", "NVIDIA GPUs: exact-cap device memory, compute and copy streams, cuBLAS", cuda_keys, cuda_helps,
     tp_cuda_describe},
    cuda_make,
};
