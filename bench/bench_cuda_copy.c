/* bench_cuda_copy - host<->device copy bandwidth from a pinned block, the way the cuda backend
 * copies (cudaMemcpyAsync on dedicated streams): host-to-device alone, device-to-host alone,
 * and both at once, against the link's nominal rate (given on the command line: PCIe gen5 x16
 * is 63.0 GB/s per direction after encoding). Times with CUDA events; median of the reps.
 * usage: bench_cuda_copy [MiB per copy (256)] [copies per rep (8)] [reps (5)] [nominal GB/s] */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_) {                                                                          \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* GB/s of `copies` copies of `bytes` in each chosen direction, both streams started together */
static double measure(int h2d, int d2h, char *host, char *dev, size_t bytes, int copies, cudaStream_t s[2])
{
    cudaEvent_t e0, e1, e2;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreate(&e2));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0, s[0]));
    CK(cudaStreamWaitEvent(s[1], e0, 0));
    for (int i = 0; i < copies; i++) {
        if (h2d) CK(cudaMemcpyAsync(dev + (size_t)(i % 2) * bytes, host + (size_t)(i % 2) * bytes, bytes, cudaMemcpyHostToDevice, s[0]));
        if (d2h)
            CK(cudaMemcpyAsync(host + (size_t)(2 + i % 2) * bytes, dev + (size_t)(2 + i % 2) * bytes, bytes, cudaMemcpyDeviceToHost, s[1]));
    }
    CK(cudaEventRecord(e1, s[0]));
    CK(cudaEventRecord(e2, s[1]));
    CK(cudaDeviceSynchronize());
    float a = 0, b = 0;
    CK(cudaEventElapsedTime(&a, e0, e1));
    CK(cudaEventElapsedTime(&b, e0, e2));
    double ms = a > b ? a : b;
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaEventDestroy(e2);
    return (double)bytes * copies * (h2d + d2h) / (ms * 1e-3) / 1e9;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 256;
    int copies = argc > 2 ? atoi(argv[2]) : 8, reps = argc > 3 ? atoi(argv[3]) : 5;
    double nominal = argc > 4 ? atof(argv[4]) : 0;
    size_t bytes = mib << 20;
    char *host, *dev;
    CK(cudaHostAlloc((void **)&host, 4 * bytes, cudaHostAllocPortable));
    CK(cudaMalloc((void **)&dev, 4 * bytes));
    for (size_t i = 0; i < 4 * bytes; i += 4096) host[i] = (char)i;
    CK(cudaMemset(dev, 1, 4 * bytes));
    cudaStream_t s[2];
    CK(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
    struct cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("GPU: %s; pinned block, %zu MiB per copy, %d copies per rep, median of %d reps\n", p.name, mib, copies, reps);
    const char *names[3] = {"host-to-device alone", "device-to-host alone", "both at once (sum)"};
    measure(1, 1, host, dev, bytes, 2, s); /* warm-up */
    for (int k = 0; k < 3; k++) {
        double *v = malloc(sizeof *v * (size_t)reps);
        for (int r = 0; r < reps; r++) v[r] = measure(k != 1, k != 0, host, dev, bytes, copies, s);
        qsort(v, (size_t)reps, sizeof *v, cmp);
        double med = v[reps / 2];
        printf("%-22s %7.2f GB/s (min %.2f, max %.2f)", names[k], med, v[0], v[reps - 1]);
        if (nominal > 0) printf("  = %.0f%% of nominal %.1f GB/s%s", 100 * med / (k == 2 ? 2 * nominal : nominal),
                                k == 2 ? 2 * nominal : nominal, k == 2 ? " (both directions)" : "");
        printf("\n");
        free(v);
    }
    cudaFreeHost(host);
    cudaFree(dev);
    return 0;
}
