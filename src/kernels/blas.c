/* blas.c - OpenBLAS, loaded on first use with the thread count chosen first.
 *
 * OpenBLAS starts its pool of helper threads when it is loaded, sized by OPENBLAS_NUM_THREADS
 * (default: every core), and the helpers spin between calls. On a small machine they take the
 * cores the executor and the cpu backend's workers need: a chain of 500 tiny kernels ran in
 * 22.6 ms with the library linked normally on 2 cores, 1.3 ms with one BLAS thread; the tiny
 * LLaMA prefill in 37 ms instead of 20. openblas_set_num_threads cannot undo that (the pool it
 * made at load keeps spinning), so the library is not linked: tp__blas_threads sets
 * OPENBLAS_NUM_THREADS (unless the user did) and loads it (the cpu backend calls it when it
 * prepares a run); tp__sgemm loads it if nothing did. */
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
static int user_env = -1; /* OPENBLAS_NUM_THREADS given by the user: leave the count alone */

static void load(void)
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
        if (!f) {
            fprintf(stderr, "turnip: cannot load OpenBLAS (libopenblas.so.0): %s\n", dlerror());
            abort(); /* built against it: a broken installation */
        }
        *(void **)&set_threads = dlsym(lib, "openblas_set_num_threads");
        sgemm_fn fn;
        *(void **)&fn = f;
        atomic_store(&sgemm, fn);
    }
    pthread_mutex_unlock(&mu);
}

void tp__blas_threads(int n)
{
    pthread_mutex_lock(&mu);
    if (user_env < 0) user_env = getenv("OPENBLAS_NUM_THREADS") != NULL;
    char b[16];
    snprintf(b, sizeof b, "%d", n < 1 ? 1 : n);
    int loaded = lib != NULL;
    if (!user_env && !loaded) setenv("OPENBLAS_NUM_THREADS", b, 1);
    else if (!user_env && set_threads) set_threads(n < 1 ? 1 : n);
    pthread_mutex_unlock(&mu);
    if (!loaded) load(); /* now, not inside the first matmul of a run */
}

void tp__sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
               float *c, int ldc)
{
    sgemm_fn f = atomic_load(&sgemm);
    if (!f) {
        load();
        f = atomic_load(&sgemm);
    }
    f(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
          ldb, 0.0f, c, ldc);
}

const char *tp__blas_info(int *threads)
{
    if (!atomic_load(&sgemm)) load();
    char *(*cfg)(void);
    int (*get)(void);
    *(void **)&cfg = dlsym(lib, "openblas_get_config");
    *(void **)&get = dlsym(lib, "openblas_get_num_threads");
    *threads = get ? get() : 0;
    return cfg ? cfg() : "?";
}
