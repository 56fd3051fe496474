/* blas.c - OpenBLAS, loaded on first use with the thread count chosen first.
 *
 * OpenBLAS starts its pool of helper threads when it is loaded, sized by OPENBLAS_NUM_THREADS
 * (default: every core), and the helpers spin between calls. On a small machine they take the
 * cores the executor and the cpu backend's workers need: a chain of 500 tiny kernels ran in
 * 22.6 ms with the library linked normally on 2 cores, 1.3 ms with one BLAS thread; the tiny
 * LLaMA prefill in 37 ms instead of 20. openblas_set_num_threads cannot undo that (the pool it
 * made at load keeps spinning), so the library is not linked, and it is loaded with one
 * thread: OPENBLAS_NUM_THREADS=1 is set (unless the user set it) by a constructor that runs
 * before main, while no thread of the process can be reading the environment (setenv is not
 * thread-safe, so the library never calls it later). tp__blas_threads loads it (the cpu
 * backend calls it when it prepares a run) and raises the count with
 * openblas_set_num_threads, which grows the pool from one; tp__sgemm loads it if nothing
 * did. A missing library is an error of the run (never an abort). */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include "kernels/kernels.h"

typedef void (*sgemm_fn)(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE, const enum CBLAS_TRANSPOSE, const blasint,
                         const blasint, const blasint, const float, const float *, const blasint, const float *,
                         const blasint, const float, float *, const blasint);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *lib;
static _Atomic(sgemm_fn) sgemm;
static void (*set_threads)(int);
static int user_env; /* OPENBLAS_NUM_THREADS given by the user: leave the count alone */

__attribute__((constructor)) static void blas_env(void)
{
    user_env = getenv("OPENBLAS_NUM_THREADS") != NULL;
    if (!user_env) setenv("OPENBLAS_NUM_THREADS", "1", 1);
}

/* 1 if OpenBLAS is loaded */
static int load(void)
{
    pthread_mutex_lock(&mu);
    if (!lib) {
        const char *names[] = {
#ifdef TP_OPENBLAS_PATH
            TP_OPENBLAS_PATH,
#endif
            "libopenblas.so.0", "libopenblas.so"};
        for (size_t i = 0; i < sizeof names / sizeof *names && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        void *f = lib ? dlsym(lib, "cblas_sgemm") : NULL;
        if (f) {
            *(void **)&set_threads = dlsym(lib, "openblas_set_num_threads");
            sgemm_fn fn;
            *(void **)&fn = f;
            atomic_store(&sgemm, fn);
        } else if (lib) {
            dlclose(lib);
            lib = NULL;
        }
    }
    int ok = atomic_load(&sgemm) != NULL;
    pthread_mutex_unlock(&mu);
    return ok;
}

int tp__blas_threads(int n)
{
    if (!load()) return 0; /* now, not inside the first matmul of a run */
    pthread_mutex_lock(&mu);
    if (!user_env && set_threads) set_threads(n < 1 ? 1 : n);
    pthread_mutex_unlock(&mu);
    return 1;
}

int tp__sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
              float *c, int ldc)
{
    sgemm_fn f = atomic_load(&sgemm);
    if (!f) {
        if (!load()) return 0;
        f = atomic_load(&sgemm);
    }
    f(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
      ldb, 0.0f, c, ldc);
    return 1;
}

const char *tp__blas_info(int *threads)
{
    *threads = 0;
    if (!load()) return "OpenBLAS not loadable (libopenblas.so.0)";
    char *(*cfg)(void);
    int (*get)(void);
    *(void **)&cfg = dlsym(lib, "openblas_get_config");
    *(void **)&get = dlsym(lib, "openblas_get_num_threads");
    *threads = get ? get() : 0;
    return cfg ? cfg() : "?";
}
