/* bench_cache - the tensor cache's overheads (turnip/cache.h), as the Ravenstore report's tables
 * (shared/papers/gpu-memory-harvesting-ravenstore.txt, 5.1 and 5.2):
 *
 * 1. create + get + put + destroy of N small tensors (10 .. 10^4, 256 B) through a cache on a
 *    cpu session, beside a baseline that moves the same bytes with no cache: per tensor
 *    malloc + memcpy (the host copy) + memcpy into a device-sized slab (the load) + free; and the
 *    same cache with no session (bookkeeping alone).
 * 2. the cost of one eviction (+ reload) of 16 MiB and 32 MiB tensors on the cpu backend: a get
 *    into free room (a load), a get that evicts a clean tensor (drop + load) and one that evicts a
 *    dirty tensor (write-back + load).
 * 3. choosing victims at scale: gets that each evict, with 10^4 tensors resident, per policy (no
 *    data): the size policy re-orders its candidates at each such get.
 *
 * Every figure is min / median / max over REPEATS runs. usage: bench_cache [REPEATS] (default 7) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "turnip/turnip.h"
#include "bench_common.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static _Noreturn void die(const char *what, const tp_error *e)
{
    fprintf(stderr, "bench_cache: %s: %s\n", what, e ? e->msg : "failed");
    exit(1);
}

static void machine(void)
{
    char line[256], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = 0;
        }
    if (f) fclose(f);
    printf("machine: %s, nproc %ld\n", model, sysconf(_SC_NPROCESSORS_ONLN));
}

/* "min / median / max" of v[0..n-1] times scale, sorted in place */
static const char *mmm(double *v, int n, double scale, char *buf, size_t sz)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    snprintf(buf, sz, "%8.3f / %8.3f / %8.3f", v[0] * scale, med * scale, v[n - 1] * scale);
    if (v[n - 1] * scale >= 1e4) snprintf(buf, sz, "%8.0f / %8.0f / %8.0f", v[0] * scale, med * scale, v[n - 1] * scale);
    return buf;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- 1. small tensors ---- */

enum { SMALL = 256, MAXREP = 64 };

/* seconds for create + get + put + destroy of n tensors (each phase over all n, as the report's
 * allocate and free loops) */
static double cache_round(tp_session *s, uint32_t n, const uint8_t *init, tp_cache_id *id)
{
    uint64_t size[1] = {(uint64_t)n * SMALL};
    tp_cache_opts o;
    tp_cache_opts_init(&o, 1, size);
    o.policy = "lru";
    tp_cache *c;
    tp_error e;
    if (tp_cache_new(s, &o, &c, &e)) die("cache", &e);
    int64_t shp[1] = {SMALL};
    double t0 = now();
    for (uint32_t i = 0; i < n; i++)
        if (tp_cache_create(c, TP_DT_U8, 1, shp, init + (i % 64), &id[i], &e)) die("create", &e);
    for (uint32_t i = 0; i < n; i++)
        if (tp_cache_get(c, id[i], 0, NULL, &e)) die("get", &e);
    for (uint32_t i = 0; i < n; i++)
        if (tp_cache_put(c, id[i], 0, TP_CACHE_NO_HINT, &e)) die("put", &e);
    for (uint32_t i = 0; i < n; i++)
        if (tp_cache_destroy(c, id[i], &e)) die("destroy", &e);
    double t = now() - t0;
    tp_cache_free(c);
    return t;
}

/* volatile sink so the baseline's copies are not optimized away */
static volatile uint8_t sink;

static double baseline_round(uint32_t n, const uint8_t *init, uint8_t **host, uint8_t *slab)
{
    double t0 = now();
    for (uint32_t i = 0; i < n; i++) {
        host[i] = malloc(SMALL);
        if (!host[i]) die("malloc", NULL);
        memcpy(host[i], init + (i % 64), SMALL);
    }
    for (uint32_t i = 0; i < n; i++) memcpy(slab + (size_t)i * SMALL, host[i], SMALL);
    for (uint32_t i = 0; i < n; i++) free(host[i]);
    double t = now() - t0;
    sink = slab[(size_t)(n - 1) * SMALL];
    return t;
}

static void small_tensors(int reps)
{
    printf("\n1. create + get + put + destroy of N tensors of %d B (us, min / median / max of %d runs)\n", SMALL, reps);
    printf("   cache: lru, on a cpu session (get = a load into the session's arena) | no data: the same with no session\n");
    printf("   baseline: per tensor malloc + memcpy (host copy) + memcpy into a device-sized slab + free; no cache\n");
    printf("%7s | %-30s | %-30s | %-30s | %s\n", "N", "cache (us)", "cache, no data (us)", "baseline (us)",
           "cache/baseline (median), us per tensor");
    uint8_t init[SMALL + 64];
    for (int i = 0; i < (int)sizeof init; i++) init[i] = (uint8_t)(i * 31 + 7);
    static const uint32_t ns[4] = {10, 100, 1000, 10000};
    for (int k = 0; k < 4; k++) {
        uint32_t n = ns[k];
        tp_backend *be;
        tp_session *s;
        tp_error e;
        uint64_t cap[1] = {(uint64_t)n * SMALL};
        if (tp_backend_cpu_new(NULL, &be, &e) || tp_session_new(be, 1, cap, 64, &s, &e)) die("session", &e);
        tp_cache_id *id = malloc(n * sizeof *id);
        uint8_t **host = malloc(n * sizeof *host), *slab = calloc(n, SMALL);
        double tc[MAXREP], tn[MAXREP], tb[MAXREP], mc, mb;
        cache_round(s, n, init, id); /* warm-up */
        baseline_round(n, init, host, slab);
        for (int r = 0; r < reps; r++) {
            tc[r] = cache_round(s, n, init, id);
            tn[r] = cache_round(NULL, n, init, id);
            tb[r] = baseline_round(n, init, host, slab);
        }
        char b1[64], b2[64], b3[64];
        mmm(tc, reps, 1e6, b1, sizeof b1);
        mmm(tn, reps, 1e6, b2, sizeof b2);
        mmm(tb, reps, 1e6, b3, sizeof b3);
        mc = median(tc, reps);
        mb = median(tb, reps);
        printf("%7u | %s | %s | %s | %.2fx, %.3f vs %.3f\n", n, b1, b2, b3, mc / mb, mc * 1e6 / n, mb * 1e6 / n);
        free(id);
        free(host);
        free(slab);
        tp_session_free(s);
        tp_backend_free(be);
    }
}

/* ---- 2. eviction of large tensors ---- */

static void large_tensors(int reps)
{
    printf("\n2. one get of a tensor of S MiB on the cpu backend, range of 2 x S (ms, min / median / max of %d runs)\n", reps);
    printf("   load: into free room | evict clean: drop one + load | evict dirty: write one back + load\n");
    printf("%6s | %-28s | %-28s | %-28s | %s\n", "S", "load (ms)", "evict clean + load (ms)", "evict dirty + load (ms)",
           "eviction overhead, median (clean, dirty)");
    static const uint64_t mib[2] = {16, 32};
    for (int k = 0; k < 2; k++) {
        uint64_t S = mib[k] << 20;
        tp_backend *be;
        tp_session *s;
        tp_error e;
        uint64_t cap[1] = {2 * S};
        if (tp_backend_cpu_new(NULL, &be, &e) || tp_session_new(be, 1, cap, 64, &s, &e)) die("session", &e);
        uint8_t *init = malloc(S);
        for (uint64_t i = 0; i < S; i++) init[i] = (uint8_t)(i * 2654435761u >> 13);
        double tl[MAXREP], tc[MAXREP], td[MAXREP];
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
            tp_cache_opts o;
            tp_cache_opts_init(&o, 1, cap);
            o.policy = "lru";
            tp_cache *c;
            if (tp_cache_new(s, &o, &c, &e)) die("cache", &e);
            int64_t shp[1] = {(int64_t)S};
            tp_cache_id a, b, x;
            if (tp_cache_create(c, TP_DT_U8, 1, shp, init, &a, &e) || tp_cache_create(c, TP_DT_U8, 1, shp, init, &b, &e) ||
                tp_cache_create(c, TP_DT_U8, 1, shp, init, &x, &e))
                die("create", &e);
            double t0 = now();
            if (tp_cache_get(c, a, 0, NULL, &e)) die("get", &e); /* a load into free room */
            double t1 = now();
            if (tp_cache_put(c, a, 1, TP_CACHE_NO_HINT, &e)) die("put", &e); /* a written: dirty */
            if (tp_cache_get(c, b, 0, NULL, &e) || tp_cache_put(c, b, 0, TP_CACHE_NO_HINT, &e)) die("get b", &e);
            double t2 = now();
            if (tp_cache_get(c, x, 0, NULL, &e)) die("get x", &e); /* evicts a (lru), dirty: written back */
            double t3 = now();
            if (tp_cache_put(c, x, 0, TP_CACHE_NO_HINT, &e)) die("put x", &e);
            double t4 = now();
            if (tp_cache_get(c, a, 0, NULL, &e)) die("get a", &e); /* evicts b, clean: dropped */
            double t5 = now();
            tp_cache_counters kk;
            tp_cache_counters_get(c, &kk);
            if (kk.evictions != 2 || kk.writebacks != 1) die("unexpected evictions", NULL);
            tp_cache_put(c, a, 0, TP_CACHE_NO_HINT, &e);
            tp_cache_free(c);
            if (r < 0) continue;
            tl[r] = t1 - t0;
            td[r] = t3 - t2;
            tc[r] = t5 - t4;
        }
        char b1[64], b2[64], b3[64];
        mmm(tl, reps, 1e3, b1, sizeof b1);
        mmm(tc, reps, 1e3, b2, sizeof b2);
        mmm(td, reps, 1e3, b3, sizeof b3);
        double ml = median(tl, reps), mc = median(tc, reps), md = median(td, reps);
        printf("%3llu MiB | %s | %s | %s | %+.3f ms, %+.3f ms\n", (unsigned long long)mib[k], b1, b2, b3, (mc - ml) * 1e3,
               (md - ml) * 1e3);
        free(init);
        tp_session_free(s);
        tp_backend_free(be);
    }
}

/* ---- 3. victims at scale ---- */

/* us per get of `gets` cyclic gets over n tensors (bytes of tensor j: size(j)), the range holding
 * about k; *missed: how many missed */
static double victims_run(const char *policy, int n, int k, uint64_t (*size)(int), uint64_t align, int gets,
                          uint64_t *missed)
{
    uint64_t range[1] = {0};
    for (int j = 0; j < k; j++) range[0] += (size(j) + align - 1) / align * align;
    tp_cache_opts o;
    tp_cache_opts_init(&o, 1, range);
    o.policy = policy;
    o.prefetch = 0;
    o.align = align;
    tp_cache *c;
    tp_error e;
    if (tp_cache_new(NULL, &o, &c, &e)) die("cache", &e);
    tp_cache_id *id = malloc((size_t)n * sizeof *id);
    for (int j = 0; j < n; j++) {
        int64_t shp[1] = {(int64_t)size(j)};
        if (tp_cache_create(c, TP_DT_U8, 1, shp, NULL, &id[j], &e)) die("create", &e);
    }
    for (int j = 0; j < k; j++) /* fill the range */
        if (tp_cache_get(c, id[j], 0, NULL, &e) || tp_cache_put(c, id[j], 0, (uint64_t)(j + n), &e)) die("fill", &e);
    tp_cache_counters k0, k1;
    tp_cache_counters_get(c, &k0);
    double t0 = now();
    for (int j = 0; j < gets; j++) { /* cyclic over n > k: fifo and lru miss every get */
        int x = (k + j) % n;
        if (tp_cache_get(c, id[x], 0, NULL, &e)) die("get", &e);
        if (tp_cache_put(c, id[x], 0, tp_cache_clock(c) - 1 + (uint64_t)n, &e)) die("put", &e);
    }
    double t = (now() - t0) / gets;
    tp_cache_counters_get(c, &k1);
    *missed = k1.misses - k0.misses;
    free(id);
    tp_cache_free(c);
    return t;
}

static uint64_t size_equal(int j)
{
    (void)j;
    return 256;
}
static uint64_t size_256(int j)
{
    return 1 + (uint64_t)(j % 256);
}
static uint64_t size_distinct(int j)
{
    return 1 + (uint64_t)j;
}

static void victims(int reps)
{
    enum { K = 10000, N = 20000, GETS = 20000 };
    printf("\n3. cyclic gets over %d tensors with about %d resident, no data: each miss evicts (us per get, min / median "
           "/ max of %d runs of %d gets)\n",
           N, K, reps, GETS);
    struct {
        const char *what;
        uint64_t (*size)(int);
        uint64_t align;
    } kinds[3] = {{"256 B each", size_equal, 256}, {"1..256 B (256 sizes)", size_256, 256},
                  {"1..20000 B (all distinct), align 1", size_distinct, 1}};
    for (int q = 0; q < 3; q++) {
        printf("   tensors of %s\n", kinds[q].what);
        for (int p = 0; tp_cache_policy_names[p]; p++) {
            double t[MAXREP];
            uint64_t missed = 0;
            for (int r = 0; r < reps; r++)
                t[r] = victims_run(tp_cache_policy_names[p], N, K, kinds[q].size, kinds[q].align, GETS, &missed);
            char b[64];
            printf("%10s | %s | %llu of %d gets missed\n", tp_cache_policy_names[p], mmm(t, reps, 1e6, b, sizeof b),
                   (unsigned long long)missed, GETS);
        }
    }
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 7;
    if (reps < 3 || reps > MAXREP) {
        fprintf(stderr, "usage: bench_cache [REPEATS] (3..%d)\n", MAXREP);
        return 2;
    }
    machine();
    small_tensors(reps);
    large_tensors(reps);
    victims(reps < 5 ? reps : 5);
    return 0;
}
