/* none.c - the cuda backend's entry points when turnip is built without CUDA (CMake found no
 * nvcc): the backend is absent, and asking for it is a clear error. */
#include <string.h>
#include "io/util.h"
#include "turnip/backend.h"

void tp_cuda_opts_init(tp_cuda_opts *o)
{
    memset(o, 0, sizeof *o);
}

tp_status tp_backend_cuda_new(const tp_cuda_opts *o, tp_backend **out, tp_error *err)
{
    (void)o;
    *out = NULL;
    return tp__fail(err, TP_ERR_DEVICE, "cuda backend: not built in (CMake found no CUDA compiler; see docs/cuda.md)");
}

int tp_cuda_describe(char *buf, size_t len)
{
    if (len) buf[0] = 0;
    return 0;
}
