/* test_cache.c - the tensor cache (turnip/cache.h, issue 12).
 *
 * Unit tests of each call and each error; a property test against a reference model written
 * here (its own bookkeeping: residents as plain arrays, free runs found by sorting, victims by a
 * linear scan, 128-bit scores; nothing shared with src/exec/cache*.c) over random
 * create/get/put/destroy/hint/prefetch sequences on real cpu sessions, where every byte read
 * back must be the model's and every counter, placement and status must agree; Belady's MIN
 * computed independently against the latency policy with exact hints; the cyclic pattern that
 * defeats lru and fifo; and deferred mode. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "turnip/turnip.h"
#include "harness.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* a cpu backend with a session of nd arenas of cap[d] bytes */
typedef struct env {
    tp_backend *be;
    tp_session *s;
} env;

static void env_open(env *v, int nd, const uint64_t *cap)
{
    tp_error e;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &v->be, &e), e);
    ASSERT_OK_ERR(tp_session_new(v->be, nd, cap, 4096, &v->s, &e), e);
}

static void env_close(env *v)
{
    tp_session_free(v->s);
    tp_backend_free(v->be);
}

static tp_cache *cache_on(tp_session *s, const char *policy, int nd, const uint64_t *size, int prefetch)
{
    tp_cache_opts o;
    tp_cache_opts_init(&o, nd, size);
    o.policy = policy;
    o.prefetch = prefetch;
    tp_cache *c = NULL;
    tp_error e;
    ASSERT_OK_ERR(tp_cache_new(s, &o, &c, &e), e);
    return c;
}

static tp_cache_id make(tp_cache *c, uint64_t bytes, const void *init)
{
    int64_t shp[1] = {(int64_t)bytes};
    tp_cache_id id = 0;
    tp_error e;
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_U8, 1, shp, init, &id, &e), e);
    CHECK(id != 0);
    return id;
}

static uint64_t get_at(tp_cache *c, tp_cache_id id, int dev)
{
    uint64_t off = UINT64_MAX;
    tp_error e;
    ASSERT_OK_ERR(tp_cache_get(c, id, dev, &off, &e), e);
    return off;
}

static void put(tp_cache *c, tp_cache_id id, int dirty, uint64_t next)
{
    tp_error e;
    ASSERT_OK_ERR(tp_cache_put(c, id, dirty, next, &e), e);
}

static tp_cache_counters counters(const tp_cache *c)
{
    tp_cache_counters k;
    tp_cache_counters_get(c, &k);
    return k;
}

/* ---- unit tests ------------------------------------------------------------------------- */

TEST(cache_opts_and_new_errors)
{
    tp_cache_opts o;
    uint64_t sz[2] = {4096, 8192};
    tp_cache_opts_init(&o, 2, sz);
    ASSERT_STR_EQ(o.policy, "latency");
    ASSERT_EQ(o.prefetch, 1);
    ASSERT_EQ(o.align, 0);
    ASSERT_EQ(o.deferred, 0);
    ASSERT_EQ(o.base[1], 0);
    ASSERT_EQ(o.size[1], 8192);
    int n = 0;
    for (; tp_cache_policy_names[n]; n++) {
        tp_cache_opts p = o;
        p.policy = tp_cache_policy_names[n];
        tp_cache *c = NULL;
        tp_error e;
        ASSERT_OK_ERR(tp_cache_new(NULL, &p, &c, &e), e);
        tp_cache_free(c);
    }
    ASSERT_EQ(n, 4);
    tp_cache *c = (tp_cache *)1;
    tp_error e;
    tp_cache_opts p = o;
    p.policy = "mru";
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    CHECK(c == NULL);
    CHECK(strstr(e.msg, "mru"));
    p = o;
    p.ndevices = 0;
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    p.ndevices = TP_MAX_DEVICES + 1;
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    p = o;
    p.align = 48;
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    p = o;
    p.prefetch = 3;
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    p = o;
    p.deferred = 2;
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    p = o;
    p.size[1] = 0;
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "device 1"));
    p = o;
    p.base[0] = 10;
    p.size[0] = 200; /* [10, 210) holds no 256-aligned run */
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    p = o;
    p.base[0] = UINT64_MAX - 10;
    ASSERT_STATUS(tp_cache_new(NULL, &p, &c, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_new(NULL, NULL, &c, &e), TP_ERR_ARG);
    /* against a session: the range must lie in its arena, the devices must exist */
    env v;
    uint64_t cap[2] = {8192, 4096};
    env_open(&v, 2, cap);
    p = o;
    ASSERT_STATUS(tp_cache_new(v.s, &p, &c, &e), TP_ERR_ARG); /* device 1: 8192 > 4096 */
    CHECK(strstr(e.msg, "arena"));
    p.size[1] = 4096;
    ASSERT_OK_ERR(tp_cache_new(v.s, &p, &c, &e), e);
    tp_cache_free(c);
    p.ndevices = 3;
    p.size[2] = 100;
    ASSERT_STATUS(tp_cache_new(v.s, &p, &c, &e), TP_ERR_ARG);
    env_close(&v);
    tp_cache_free(NULL);
}

TEST(cache_create_errors_and_sizes)
{
    uint64_t sz[2] = {4096, 16384};
    tp_cache *c = cache_on(NULL, "lru", 2, sz, 0);
    tp_error e;
    tp_cache_id id = 77;
    int64_t shp[3] = {2, 3, 4};
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_F32, 3, shp, NULL, &id, &e), e);
    ASSERT_EQ(id, 1);
    ASSERT_EQ(tp_cache_bytes(c, id), 96);
    const uint8_t *h = tp_cache_host(c, id);
    for (int i = 0; i < 96; i++) ASSERT_EQ(h[i], 0);
    ASSERT_EQ(tp_cache_where(c, id, NULL, NULL), 0);
    tp_cache_id sc;
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_BF16, 0, NULL, NULL, &sc, &e), e); /* a scalar */
    ASSERT_EQ(tp_cache_bytes(c, sc), 2);
    int64_t zero[2] = {0, 5};
    tp_cache_id z;
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_F16, 2, zero, NULL, &z, &e), e);
    ASSERT_EQ(tp_cache_bytes(c, z), 0);
    uint64_t off = get_at(c, z, 0); /* 0 bytes take one alignment unit */
    ASSERT_EQ(off, 4096 - 256);
    put(c, z, 0, TP_CACHE_NO_HINT);

    id = 5;
    ASSERT_STATUS(tp_cache_create(c, TP_DT_NONE, 1, shp, NULL, &id, &e), TP_ERR_ARG);
    ASSERT_EQ(id, 0);
    ASSERT_STATUS(tp_cache_create(c, (tp_dtype)99, 1, shp, NULL, &id, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_create(c, TP_DT_F32, -1, shp, NULL, &id, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_create(c, TP_DT_F32, TP_MAX_DIMS + 1, shp, NULL, &id, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_create(c, TP_DT_F32, 2, NULL, NULL, &id, &e), TP_ERR_ARG);
    int64_t neg[2] = {4, -1};
    ASSERT_STATUS(tp_cache_create(c, TP_DT_F32, 2, neg, NULL, &id, &e), TP_ERR_ARG);
    int64_t huge[3] = {INT64_MAX, INT64_MAX, 2};
    ASSERT_STATUS(tp_cache_create(c, TP_DT_F32, 3, huge, NULL, &id, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "overflow"));
    /* larger than every range: it exists (its host copy: a caller may stream it itself), but no
     * get can place it */
    int64_t big[1] = {16384 + 1};
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_U8, 1, big, NULL, &id, &e), e);
    ASSERT_STATUS(tp_cache_get(c, id, 0, NULL, &e), TP_ERR_NOMEM);
    ASSERT_STATUS(tp_cache_get(c, id, 1, NULL, &e), TP_ERR_NOMEM);
    CHECK(strstr(e.msg, "larger than device 1's range"));
    ASSERT_OK_ERR(tp_cache_destroy(c, id, &e), e);
    ASSERT_STATUS(tp_cache_create(c, TP_DT_U8, 1, big, NULL, NULL, &e), TP_ERR_ARG);
    /* larger than device 0's range but not device 1's: created, refused on device 0 only */
    int64_t mid[1] = {8000};
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_U8, 1, mid, NULL, &id, &e), e);
    ASSERT_STATUS(tp_cache_get(c, id, 0, NULL, &e), TP_ERR_NOMEM);
    CHECK(strstr(e.msg, "larger than device 0's range"));
    ASSERT_OK_ERR(tp_cache_get(c, id, 1, NULL, &e), e);
    put(c, id, 0, TP_CACHE_NO_HINT);
    /* bad handles everywhere */
    ASSERT_EQ(tp_cache_bytes(c, 0), 0);
    ASSERT_EQ(tp_cache_bytes(c, 999), 0);
    CHECK(tp_cache_host(c, 0) == NULL);
    ASSERT_STATUS(tp_cache_get(c, 0, 0, NULL, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_get(c, 999, 0, NULL, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_put(c, 999, 0, 0, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_hint(c, 999, 0, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_destroy(c, 999, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_get(c, sc, 2, NULL, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_get(c, sc, -1, NULL, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_prefetch(c, 2, NULL, &e), TP_ERR_ARG);
    ASSERT_EQ(tp_cache_residents(c, 5, NULL, 0), 0);
    tp_cache_free(c);
}

TEST(cache_get_put_destroy)
{
    uint64_t sz[1] = {4096};
    tp_cache *c = cache_on(NULL, "lru", 1, sz, 0);
    tp_error e;
    tp_cache_id a = make(c, 100, NULL), b = make(c, 300, NULL);
    ASSERT_EQ(tp_cache_clock(c), 0);
    ASSERT_EQ(get_at(c, a, 0), 4096 - 256); /* first fit from the top */
    ASSERT_EQ(get_at(c, b, 0), 4096 - 256 - 512);
    ASSERT_EQ(tp_cache_clock(c), 2);
    ASSERT_EQ(get_at(c, a, 0), 4096 - 256); /* a hit: pinned twice */
    tp_cache_counters k = counters(c);
    ASSERT_EQ(k.hits, 1);
    ASSERT_EQ(k.misses, 2);
    ASSERT_EQ(k.loads, 2);
    ASSERT_EQ(k.bytes_loaded, 400);
    ASSERT_EQ(k.pinned_bytes_max, 400);
    ASSERT_STATUS(tp_cache_destroy(c, a, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "pinned"));
    put(c, a, 0, TP_CACHE_NO_HINT);
    ASSERT_STATUS(tp_cache_destroy(c, a, &e), TP_ERR_ARG); /* still pinned once */
    put(c, a, 0, TP_CACHE_NO_HINT);
    ASSERT_STATUS(tp_cache_put(c, a, 0, TP_CACHE_NO_HINT, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "not pinned"));
    int dv = -1;
    uint64_t off = 0;
    ASSERT_EQ(tp_cache_where(c, a, &dv, &off), 1);
    ASSERT_EQ(dv, 0);
    ASSERT_EQ(off, 4096 - 256);
    tp_cache_id r[4];
    ASSERT_EQ(tp_cache_residents(c, 0, r, 4), 2);
    ASSERT_EQ(tp_cache_residents(c, 0, r, 1), 2);
    ASSERT_OK_ERR(tp_cache_destroy(c, a, &e), e);
    ASSERT_STATUS(tp_cache_get(c, a, 0, NULL, &e), TP_ERR_ARG);
    ASSERT_EQ(tp_cache_bytes(c, a), 0);
    ASSERT_EQ(tp_cache_residents(c, 0, r, 4), 1);
    ASSERT_EQ(r[0], b);
    /* the slot is reused, and ranges are freed and coalesced */
    tp_cache_id d = make(c, 256, NULL);
    ASSERT_EQ(d, a);
    ASSERT_EQ(get_at(c, d, 0), 4096 - 256);
    put(c, d, 0, TP_CACHE_NO_HINT);
    put(c, b, 0, TP_CACHE_NO_HINT);
    ASSERT_OK_ERR(tp_cache_destroy(c, d, &e), e);
    tp_cache_id big = make(c, 3584, NULL);
    ASSERT_EQ(get_at(c, big, 0), 512); /* b (lru) evicted: one run of 4096, taken from the top */
    k = counters(c);
    ASSERT_EQ(k.evictions, 1);
    ASSERT_EQ(k.bytes_evicted, 300);
    ASSERT_EQ(k.writebacks, 0);
    ASSERT_EQ(tp_cache_where(c, b, NULL, NULL), 0);
    put(c, big, 1, 7);
    tp_cache_free(c);
}

TEST(cache_data_and_writeback)
{
    env v;
    uint64_t cap[1] = {8192};
    env_open(&v, 1, cap);
    uint64_t sz[1] = {2048};
    tp_cache_opts o;
    tp_cache_opts_init(&o, 1, sz);
    o.base[0] = 1000; /* the range [1000, 3048): its aligned part is [1024, 2816), 7 units */
    o.policy = "fifo";
    tp_cache *c;
    tp_error e;
    ASSERT_OK_ERR(tp_cache_new(v.s, &o, &c, &e), e);
    uint8_t init[700], buf[700];
    for (int i = 0; i < 700; i++) init[i] = (uint8_t)(i * 13 + 5);
    tp_cache_id a = make(c, 700, init), b = make(c, 700, NULL);
    CHECK(!memcmp(tp_cache_host(c, a), init, 700));
    ASSERT_STATUS(tp_cache_read(c, a, 0, buf, 700, &e), TP_ERR_ARG); /* not pinned */
    uint64_t oa = get_at(c, a, 0);
    ASSERT_EQ(oa, 2816 - 768);
    ASSERT_EQ(oa % 256, 0);
    ASSERT_OK_ERR(tp_cache_read(c, a, 0, buf, 700, &e), e);
    CHECK(!memcmp(buf, init, 700));
    ASSERT_STATUS(tp_cache_read(c, a, 600, buf, 101, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_read(c, a, 701, buf, 0, &e), TP_ERR_ARG);
    ASSERT_OK_ERR(tp_cache_read(c, a, 700, buf, 0, &e), e);
    ASSERT_STATUS(tp_cache_write(c, a, 699, buf, 2, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_write(c, a, 0, NULL, 2, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_read(c, a, UINT64_MAX, buf, 2, &e), TP_ERR_ARG);
    ASSERT_STATUS(tp_cache_read(c, 99, 0, buf, 2, &e), TP_ERR_ARG);
    /* the device copy written and put dirty: the host copy is stale until the eviction */
    uint8_t patch[50];
    memset(patch, 0xAB, 50);
    ASSERT_OK_ERR(tp_cache_write(c, a, 100, patch, 50, &e), e);
    put(c, a, 1, TP_CACHE_NO_HINT);
    ASSERT_EQ(((uint8_t *)tp_cache_host(c, a))[100], init[100]);
    /* b fits beside a; a third tensor evicts a (fifo), which is written back */
    get_at(c, b, 0);
    put(c, b, 0, TP_CACHE_NO_HINT);
    tp_cache_id x = make(c, 700, NULL);
    get_at(c, x, 0);
    ASSERT_EQ(tp_cache_where(c, a, NULL, NULL), 0);
    memcpy(init + 100, patch, 50);
    CHECK(!memcmp(tp_cache_host(c, a), init, 700));
    tp_cache_counters k = counters(c);
    ASSERT_EQ(k.writebacks, 1);
    ASSERT_EQ(k.bytes_written_back, 700);
    ASSERT_EQ(k.evictions, 1);
    put(c, x, 0, TP_CACHE_NO_HINT);
    /* the host copy written while a is resident nowhere, then loaded again */
    ((uint8_t *)tp_cache_host(c, a))[0] = 0x5A;
    get_at(c, a, 0);
    ASSERT_OK_ERR(tp_cache_read(c, a, 0, buf, 700, &e), e);
    ASSERT_EQ(buf[0], 0x5A);
    CHECK(!memcmp(buf + 1, init + 1, 699));
    put(c, a, 0, TP_CACHE_NO_HINT);
    tp_cache_free(c);
    /* no session: no data */
    c = cache_on(NULL, "fifo", 1, sz, 0);
    a = make(c, 10, NULL);
    get_at(c, a, 0);
    ASSERT_STATUS(tp_cache_read(c, a, 0, buf, 10, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "session"));
    ASSERT_STATUS(tp_cache_write(c, a, 0, buf, 10, &e), TP_ERR_ARG);
    put(c, a, 1, TP_CACHE_NO_HINT);
    tp_cache_free(c);
    env_close(&v);
}

/* a one-kernel plan, to have an executor live in a session */
static tp_memgraph *tiny_plan(tp_graph **gout)
{
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    int64_t shp[1] = {16};
    uint32_t in, out;
    ASSERT_OK_ERR(tp_graph_add_input(g, "x", 0, TP_DT_F32, 1, shp, 0, &in, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "y", 0, "silu", 1, &in, TP_DT_F32, 1, shp, 0, NULL, 0, &out, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, out, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, 1024);
    tp_memgraph *mg = NULL;
    ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
    *gout = g;
    return mg;
}

TEST(cache_session_read_write)
{
    env v;
    uint64_t cap[2] = {4096, 2048};
    env_open(&v, 2, cap);
    tp_error e;
    uint8_t pat[64], back[64];
    for (int i = 0; i < 64; i++) pat[i] = (uint8_t)(3 * i + 1);
    tp_region r = {TP_SPACE_DEVICE, 1, 2048 - 64, 64};
    ASSERT_OK_ERR(tp_session_write(v.s, &r, pat, &e), e);
    ASSERT_OK_ERR(tp_session_read(v.s, &r, back, &e), e);
    CHECK(!memcmp(pat, back, 64));
    tp_region h = {TP_SPACE_HOST, -1, 4000, 64};
    ASSERT_OK_ERR(tp_session_write(v.s, &h, pat, &e), e);
    r.offset = 2048 - 63;
    ASSERT_STATUS(tp_session_write(v.s, &r, pat, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "device 1"));
    r.device = 2;
    ASSERT_STATUS(tp_session_read(v.s, &r, back, &e), TP_ERR_ARG);
    h.offset = 4033;
    ASSERT_STATUS(tp_session_read(v.s, &h, back, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "host"));
    ASSERT_STATUS(tp_session_read(NULL, &h, back, &e), TP_ERR_ARG);
    uint64_t caps[TP_MAX_DEVICES];
    ASSERT_EQ(tp_session_devices(v.s, caps), 2);
    ASSERT_EQ(caps[1], 2048);
    env_close(&v);
    /* refused while an executor of the session is live, and so is a cache's load */
    uint64_t one[1] = {4096};
    env_open(&v, 1, one);
    uint64_t sz[1] = {2048};
    tp_cache *c = cache_on(v.s, "lru", 1, sz, 0);
    tp_cache_id a = make(c, 64, pat);
    tp_graph *g;
    tp_memgraph *mg = tiny_plan(&g);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *x;
    ASSERT_OK_ERR(tp_exec_new_in(v.s, mg, &ro, &x, &e), e);
    r.device = 0;
    r.offset = 0;
    ASSERT_STATUS(tp_session_read(v.s, &r, back, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "executor"));
    ASSERT_STATUS(tp_cache_get(c, a, 0, NULL, &e), TP_ERR_ARG);
    ASSERT_EQ(tp_cache_where(c, a, NULL, NULL), 0); /* nothing half-done */
    ASSERT_EQ(counters(c).loads, 0);
    ASSERT_EQ(tp_cache_clock(c), 0);
    tp_exec_free(x);
    get_at(c, a, 0);
    ASSERT_OK_ERR(tp_cache_read(c, a, 0, back, 64, &e), e);
    CHECK(!memcmp(pat, back, 64));
    put(c, a, 0, TP_CACHE_NO_HINT);
    tp_cache_free(c);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    env_close(&v);
}

TEST(cache_big_tensors)
{
    /* tensors bigger than half the range: one at a time fits, two pinned never do */
    uint64_t sz[1] = {4096};
    for (int p = 0; tp_cache_policy_names[p]; p++) {
        tp_cache *c = cache_on(NULL, tp_cache_policy_names[p], 1, sz, 2);
        tp_error e;
        tp_cache_id a = make(c, 2300, NULL), b = make(c, 2300, NULL), s = make(c, 100, NULL);
        for (int round = 0; round < 3; round++) {
            get_at(c, a, 0);
            ASSERT_STATUS(tp_cache_get(c, b, 0, NULL, &e), TP_ERR_NOMEM);
            CHECK(strstr(e.msg, "2304") && strstr(e.msg, "4096"));
            put(c, a, 0, 1);
            get_at(c, b, 0);
            ASSERT_EQ(tp_cache_where(c, a, NULL, NULL), 0);
            get_at(c, s, 0);
            put(c, s, 0, TP_CACHE_NO_HINT);
            put(c, b, 1, 0);
        }
        tp_cache_counters k = counters(c);
        ASSERT_EQ(k.hits + k.misses, 9);
        tp_cache_free(c);
    }
}

TEST(cache_pinned_set_too_big)
{
    uint64_t sz[1] = {4096};
    tp_cache *c = cache_on(NULL, "latency", 1, sz, 1);
    tp_error e;
    tp_cache_id t[6];
    for (int i = 0; i < 6; i++) t[i] = make(c, 1000, NULL); /* 1024 aligned: 4 fit */
    for (int i = 0; i < 4; i++) get_at(c, t[i], 0);
    uint64_t evs = counters(c).evictions;
    ASSERT_STATUS(tp_cache_get(c, t[4], 0, NULL, &e), TP_ERR_NOMEM);
    CHECK(strstr(e.msg, "4000 bytes pinned in 4 tensors"));
    CHECK(strstr(e.msg, "1000 bytes"));
    CHECK(strstr(e.msg, "[0, 4096)"));
    ASSERT_EQ(counters(c).evictions, evs); /* refused before evicting anything */
    ASSERT_EQ(tp_cache_clock(c), 4);
    /* and the cache still works once they are put */
    for (int i = 0; i < 4; i++) put(c, t[i], 0, TP_CACHE_NO_HINT);
    for (int i = 0; i < 6; i++) {
        get_at(c, t[i], 0);
        put(c, t[i], 0, TP_CACHE_NO_HINT);
    }
    ASSERT_EQ(tp_cache_clock(c), 10);
    tp_cache_free(c);
}

/* The pinned-set check near 2^64 (a device range of UINT64_MAX, no host copies): 2^63 bytes
 * pinned plus another 2^63 must be refused at once, not wrap around and evict a tensor. */
TEST(cache_pinned_set_no_wrap)
{
    uint64_t sz[1] = {UINT64_MAX};
    tp_cache_opts o;
    tp_cache_opts_init(&o, 1, sz);
    o.no_host = 1;
    o.policy = "lru";
    tp_cache *c = NULL;
    tp_error e;
    ASSERT_OK_ERR(tp_cache_new(NULL, &o, &c, &e), e);
    int64_t half[2] = {2, (int64_t)1 << 62}, small[1] = {16};
    tp_cache_id a = 0, b = 0, d = 0;
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_U8, 2, half, NULL, &a, &e), e);
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_U8, 1, small, NULL, &b, &e), e);
    ASSERT_OK_ERR(tp_cache_create(c, TP_DT_U8, 2, half, NULL, &d, &e), e);
    get_at(c, a, 0); /* pinned */
    get_at(c, b, 0);
    put(c, b, 0, TP_CACHE_NO_HINT);
    ASSERT_STATUS(tp_cache_get(c, d, 0, NULL, &e), TP_ERR_NOMEM);
    CHECK(strstr(e.msg, "pinned"));
    ASSERT_EQ(counters(c).evictions, 0); /* refused before evicting b */
    ASSERT_EQ(tp_cache_where(c, b, NULL, NULL), 1); /* b still resident */
    tp_cache_free(c);
}

TEST(cache_fragmentation)
{
    /* 8 units of 256; pinned tensors at units 7 and 4 (from the top) split the range */
    uint64_t sz[1] = {2048};
    for (int p = 0; tp_cache_policy_names[p]; p++) {
        tp_cache *c = cache_on(NULL, tp_cache_policy_names[p], 1, sz, 0);
        tp_error e;
        tp_cache_id u[8];
        for (int i = 0; i < 8; i++) u[i] = make(c, 256, NULL);
        for (int i = 0; i < 8; i++) ASSERT_EQ(get_at(c, u[i], 0), 2048 - 256 * (uint64_t)(i + 1));
        for (int i = 0; i < 8; i++)
            if (i != 1 && i != 4) put(c, u[i], 0, 100 + (uint64_t)i);
        /* pinned: u1 at [1536, 1792), u4 at [768, 1024); a 4-unit tensor fits nowhere */
        tp_cache_id big = make(c, 1024, NULL);
        ASSERT_STATUS(tp_cache_get(c, big, 0, NULL, &e), TP_ERR_NOMEM);
        CHECKF(strstr(e.msg, "contiguous") && strstr(e.msg, "runs of at most 768"), "%s", e.msg);
        ASSERT_EQ(tp_cache_residents(c, 0, NULL, 0), 2); /* every unpinned one went trying */
        /* a 3-unit tensor fits the bottom run */
        tp_cache_id three = make(c, 768, NULL);
        ASSERT_EQ(get_at(c, three, 0), 0);
        put(c, three, 0, TP_CACHE_NO_HINT);
        put(c, u[4], 0, TP_CACHE_NO_HINT);
        ASSERT_EQ(get_at(c, big, 0), 512); /* the run [0, 1536) once u4 and `three` go */
        put(c, big, 0, TP_CACHE_NO_HINT);
        put(c, u[1], 0, TP_CACHE_NO_HINT);
        tp_cache_free(c);
    }
}

TEST(cache_move_between_devices)
{
    env v;
    uint64_t cap[2] = {4096, 4096};
    env_open(&v, 2, cap);
    uint64_t sz[2] = {4096, 4096};
    tp_cache *c = cache_on(v.s, "lru", 2, sz, 0);
    tp_error e;
    uint8_t init[300], back[300];
    for (int i = 0; i < 300; i++) init[i] = (uint8_t)(i ^ 0x33);
    tp_cache_id a = make(c, 300, init);
    get_at(c, a, 0);
    ASSERT_STATUS(tp_cache_get(c, a, 1, NULL, &e), TP_ERR_ARG);
    CHECK(strstr(e.msg, "pinned on device 0"));
    init[7] = 99;
    ASSERT_OK_ERR(tp_cache_write(c, a, 7, init + 7, 1, &e), e);
    put(c, a, 1, TP_CACHE_NO_HINT);
    get_at(c, a, 1);
    int dv;
    ASSERT_EQ(tp_cache_where(c, a, &dv, NULL), 1);
    ASSERT_EQ(dv, 1);
    ASSERT_EQ(tp_cache_residents(c, 0, NULL, 0), 0);
    ASSERT_OK_ERR(tp_cache_read(c, a, 0, back, 300, &e), e);
    CHECK(!memcmp(back, init, 300));
    tp_cache_counters k = counters(c);
    ASSERT_EQ(k.misses, 2);
    ASSERT_EQ(k.evictions, 1);
    ASSERT_EQ(k.writebacks, 1);
    put(c, a, 0, TP_CACHE_NO_HINT);
    tp_cache_free(c);
    env_close(&v);
}

TEST(cache_policy_orders)
{
    /* fifo and lru: units of 256, a range of 4 */
    uint64_t sz[1] = {1024};
    const char *want_fifo_lru[2] = {"fifo", "lru"};
    for (int p = 0; p < 2; p++) {
        tp_cache *c = cache_on(NULL, want_fifo_lru[p], 1, sz, 0);
        tp_cache_id t[5];
        for (int i = 0; i < 5; i++) t[i] = make(c, 256, NULL);
        for (int i = 0; i < 4; i++) {
            get_at(c, t[i], 0);
            put(c, t[i], 0, TP_CACHE_NO_HINT);
        }
        get_at(c, t[0], 0); /* t0: loaded first, gotten last */
        put(c, t[0], 0, TP_CACHE_NO_HINT);
        get_at(c, t[4], 0);
        put(c, t[4], 0, TP_CACHE_NO_HINT);
        ASSERT_EQ(tp_cache_where(c, t[0], NULL, NULL), p == 1);
        ASSERT_EQ(tp_cache_where(c, t[1], NULL, NULL), p == 0);
        tp_cache_free(c);
    }
    /* size: B (1 unit) at tick 0, A (4 units) at tick 1, C (1 unit) at tick 2; at tick 3, D: A
     * scores 4 x 2 against B's 1 x 3: A goes (lru would evict B) */
    uint64_t six[1] = {1536};
    const char *pols[2] = {"size", "lru"};
    for (int p = 0; p < 2; p++) {
        tp_cache *c = cache_on(NULL, pols[p], 1, six, 0);
        tp_cache_id b = make(c, 256, NULL), a = make(c, 1024, NULL), cc = make(c, 256, NULL), d = make(c, 256, NULL);
        tp_cache_id seq[3] = {b, a, cc};
        for (int i = 0; i < 3; i++) {
            get_at(c, seq[i], 0);
            put(c, seq[i], 0, TP_CACHE_NO_HINT);
        }
        get_at(c, d, 0);
        ASSERT_EQ(tp_cache_where(c, a, NULL, NULL), p == 1);
        ASSERT_EQ(tp_cache_where(c, b, NULL, NULL), p == 0);
        ASSERT_EQ(tp_cache_where(c, cc, NULL, NULL), 1);
        tp_cache_free(c);
    }
    /* latency: furthest hint first, no hint before any hint, ties to the least recently gotten */
    tp_cache *c = cache_on(NULL, "latency", 1, sz, 0);
    tp_cache_id t[6];
    for (int i = 0; i < 6; i++) t[i] = make(c, 256, NULL);
    uint64_t hints[4] = {50, TP_CACHE_NO_HINT, 80, 80};
    for (int i = 0; i < 4; i++) {
        get_at(c, t[i], 0);
        put(c, t[i], 0, hints[i]);
    }
    get_at(c, t[4], 0); /* evicts t1 (no hint) */
    put(c, t[4], 0, 10);
    ASSERT_EQ(tp_cache_where(c, t[1], NULL, NULL), 0);
    get_at(c, t[5], 0); /* t2 and t3 tie at 80: t2 was gotten earlier */
    put(c, t[5], 0, 10);
    ASSERT_EQ(tp_cache_where(c, t[2], NULL, NULL), 0);
    ASSERT_EQ(tp_cache_where(c, t[3], NULL, NULL), 1);
    tp_error e;
    ASSERT_OK_ERR(tp_cache_hint(c, t[0], 1000, &e), e); /* a hint moves t0 to the front */
    get_at(c, t[1], 0);
    put(c, t[1], 0, 10);
    ASSERT_EQ(tp_cache_where(c, t[0], NULL, NULL), 0);
    ASSERT_EQ(tp_cache_where(c, t[3], NULL, NULL), 1);
    tp_cache_free(c);
}

TEST(cache_prefetch_modes)
{
    uint64_t sz[1] = {1024};
    for (int mode = 0; mode <= 2; mode++) {
        tp_cache *c = cache_on(NULL, "latency", 1, sz, mode);
        tp_error e;
        tp_cache_id t[6];
        for (int i = 0; i < 6; i++) t[i] = make(c, 256, NULL);
        /* t0, t1 resident with far hints; t2..t5 hinted nearer, t5 nearest */
        for (int i = 0; i < 2; i++) {
            get_at(c, t[i], 0);
            put(c, t[i], 0, 100 + (uint64_t)i);
        }
        for (int i = 2; i < 6; i++) ASSERT_OK_ERR(tp_cache_hint(c, t[i], 20 - (uint64_t)i, &e), e);
        uint32_t n = 99;
        ASSERT_OK_ERR(tp_cache_prefetch(c, 0, &n, &e), e);
        tp_cache_counters k = counters(c);
        if (mode == 0) {
            ASSERT_EQ(n, 0);
            ASSERT_EQ(k.prefetches, 0);
        } else if (mode == 1) { /* the two nearest into the 2 free units */
            ASSERT_EQ(n, 2);
            ASSERT_EQ(tp_cache_where(c, t[5], NULL, NULL), 1);
            ASSERT_EQ(tp_cache_where(c, t[4], NULL, NULL), 1);
            ASSERT_EQ(tp_cache_where(c, t[0], NULL, NULL), 1);
        } else { /* and then t3, t2 in place of t1, t0 (later hints) */
            ASSERT_EQ(n, 4);
            ASSERT_EQ(tp_cache_where(c, t[0], NULL, NULL), 0);
            ASSERT_EQ(tp_cache_where(c, t[1], NULL, NULL), 0);
            ASSERT_EQ(k.evictions, 2);
        }
        ASSERT_EQ(k.prefetches, n);
        ASSERT_EQ(k.loads, 2 + n);
        if (mode) {
            get_at(c, t[5], 0); /* used */
            put(c, t[5], 0, TP_CACHE_NO_HINT);
            ASSERT_OK_ERR(tp_cache_destroy(c, t[4], &e), e); /* wasted */
            k = counters(c);
            ASSERT_EQ(k.prefetch_used, 1);
            ASSERT_EQ(k.prefetch_wasted, 1);
            ASSERT_EQ(k.hits, 1);
        }
        /* a past hint is not prefetched */
        tp_cache_id late = make(c, 256, NULL);
        ASSERT_OK_ERR(tp_cache_hint(c, late, 0, &e), e);
        ASSERT_OK_ERR(tp_cache_prefetch(c, 0, &n, &e), e);
        ASSERT_EQ(tp_cache_where(c, late, NULL, NULL), 0);
        tp_cache_free(c);
    }
    /* other policies: a no-op */
    tp_cache *c = cache_on(NULL, "lru", 1, sz, 2);
    tp_error e;
    tp_cache_id a = make(c, 256, NULL);
    ASSERT_OK_ERR(tp_cache_hint(c, a, 3, &e), e);
    uint32_t n = 9;
    ASSERT_OK_ERR(tp_cache_prefetch(c, 0, &n, &e), e);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(tp_cache_where(c, a, NULL, NULL), 0);
    tp_cache_free(c);
}

TEST(cache_deferred)
{
    env v;
    uint64_t cap[2] = {4096, 4096};
    env_open(&v, 2, cap);
    uint64_t sz[2] = {768, 1024}; /* device 0: 3 units */
    tp_cache_opts o;
    tp_cache_opts_init(&o, 2, sz);
    o.deferred = 1;
    o.prefetch = 1;
    tp_cache *c;
    tp_error e;
    ASSERT_OK_ERR(tp_cache_new(v.s, &o, &c, &e), e);
    uint8_t init[200];
    memset(init, 0x77, sizeof init);
    tp_cache_id t[6];
    for (int i = 0; i < 6; i++) t[i] = make(c, 200, init);
    const tp_cache_load *l;
    ASSERT_EQ(tp_cache_pending(c, &l), 0);
    uint64_t o0 = get_at(c, t[0], 0), o1 = get_at(c, t[1], 1);
    put(c, t[0], 0, TP_CACHE_NO_HINT);
    put(c, t[1], 0, TP_CACHE_NO_HINT);
    ASSERT_OK_ERR(tp_cache_hint(c, t[2], 5, &e), e);
    ASSERT_OK_ERR(tp_cache_hint(c, t[3], 6, &e), e);
    uint32_t n;
    ASSERT_OK_ERR(tp_cache_prefetch(c, 0, &n, &e), e);
    ASSERT_EQ(n, 2);
    ASSERT_EQ(tp_cache_pending(c, &l), 4);
    uint64_t o2, o3;
    CHECK(tp_cache_where(c, t[2], NULL, &o2) && tp_cache_where(c, t[3], NULL, &o3));
    ASSERT_EQ(l[0].id, t[0]);
    ASSERT_EQ(l[0].device, 0);
    ASSERT_EQ(l[0].offset, o0);
    ASSERT_EQ(l[0].bytes, 200);
    ASSERT_EQ(l[0].prefetch, 0);
    ASSERT_EQ(l[1].id, t[1]);
    ASSERT_EQ(l[1].device, 1);
    ASSERT_EQ(l[1].offset, o1);
    ASSERT_EQ(l[2].id, t[2]);
    ASSERT_EQ(l[2].offset, o2);
    ASSERT_EQ(l[2].prefetch, 1);
    ASSERT_EQ(l[3].id, t[3]);
    ASSERT_EQ(l[3].offset, o3);
    /* no data moved: the arena is still zero where t0 would be */
    uint8_t back[200];
    tp_region r = {TP_SPACE_DEVICE, 0, o0, 200};
    ASSERT_OK_ERR(tp_session_read(v.s, &r, back, &e), e);
    for (int i = 0; i < 200; i++) ASSERT_EQ(back[i], 0);
    /* t4 evicts t0 (no hint, furthest): t0 is unlisted, its bytes still count */
    get_at(c, t[4], 0);
    ASSERT_EQ(tp_cache_where(c, t[0], NULL, NULL), 0);
    ASSERT_EQ(tp_cache_pending(c, &l), 4);
    ASSERT_EQ(l[0].id, t[1]);
    ASSERT_EQ(l[1].id, t[2]);
    ASSERT_EQ(l[2].id, t[3]);
    ASSERT_EQ(l[3].id, t[4]);
    ASSERT_EQ(counters(c).bytes_loaded, 5 * 200);
    tp_cache_commit(c);
    ASSERT_EQ(tp_cache_pending(c, &l), 0);
    put(c, t[4], 0, TP_CACHE_NO_HINT);
    /* after the commit only new loads are listed; hits list nothing */
    get_at(c, t[2], 0);
    put(c, t[2], 0, TP_CACHE_NO_HINT);
    ASSERT_EQ(tp_cache_pending(c, &l), 0);
    get_at(c, t[5], 0);
    ASSERT_EQ(tp_cache_pending(c, &l), 1);
    ASSERT_EQ(l[0].id, t[5]);
    put(c, t[5], 0, TP_CACHE_NO_HINT);
    /* a destroyed pending tensor is unlisted */
    ASSERT_OK_ERR(tp_cache_destroy(c, t[5], &e), e);
    ASSERT_EQ(tp_cache_pending(c, &l), 0);
    tp_cache_free(c);
    env_close(&v);
}

/* ---- the reference model ------------------------------------------------------------------ */

__extension__ typedef unsigned __int128 u128;
enum { MAXID = 512, MAXDEV = 3 };
enum { P_FIFO, P_LRU, P_SIZE, P_LATENCY };

typedef struct mt {
    int live, dev;        /* dev: -1 nowhere */
    uint64_t bytes, take, off;
    uint32_t pins;
    int dirty, unused, wrote;
    uint64_t next, last, seq, pin_off;
    uint8_t *truth;       /* what its bytes must be */
} mt;

typedef struct model {
    int pol, prefetch, nd;
    uint64_t lo[MAXDEV], hi[MAXDEV], align;
    mt t[MAXID + 1];      /* by handle */
    uint64_t clock, seq, gets;
    tp_cache_counters k;
} model;

static int m_first(const model *m, const mt *a, const mt *b, uint32_t ia, uint32_t ib)
{
    /* each policy as the header states it, with its ties */
    if (m->pol == P_SIZE) {
        u128 sa = (u128)a->bytes * (m->clock - a->last), sb = (u128)b->bytes * (m->clock - b->last);
        if (sa != sb) return sa > sb;
    }
    if (m->pol == P_LATENCY && a->next != b->next) return a->next > b->next;
    if (m->pol != P_FIFO && a->last != b->last) return a->last < b->last;
    if (a->seq != b->seq) return a->seq < b->seq;
    return ia < ib;
}

static uint32_t m_victim(const model *m, int d)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i <= MAXID; i++) {
        const mt *x = &m->t[i];
        if (!x->live || x->dev != d || x->pins) continue;
        if (!best || m_first(m, x, &m->t[best], i, best)) best = i;
    }
    return best;
}

typedef struct blk {
    uint64_t lo, hi;
} blk;

static int cmp_blk(const void *a, const void *b)
{
    uint64_t x = ((const blk *)a)->lo, y = ((const blk *)b)->lo;
    return x < y ? -1 : x > y;
}

/* the highest free run holding `take`, from the residents sorted by address: 1 and *off at its top */
static int m_hole(const model *m, int d, uint64_t take, uint64_t *off)
{
    blk b[MAXID];
    int n = 0;
    for (uint32_t i = 1; i <= MAXID; i++)
        if (m->t[i].live && m->t[i].dev == d) b[n++] = (blk){m->t[i].off, m->t[i].off + m->t[i].take};
    qsort(b, (size_t)n, sizeof *b, cmp_blk);
    uint64_t top = m->hi[d];
    for (int j = n - 1; j >= -1; j--) {
        uint64_t bottom = j >= 0 ? b[j].hi : m->lo[d];
        CHECK(bottom <= top); /* the model's own blocks never overlap */
        if (top - bottom >= take) {
            *off = top - take;
            return 1;
        }
        if (j >= 0) top = b[j].lo;
    }
    return 0;
}

static uint64_t m_pin_take(const model *m, int d)
{
    uint64_t s = 0;
    for (uint32_t i = 1; i <= MAXID; i++)
        if (m->t[i].live && m->t[i].dev == d && m->t[i].pins) s += m->t[i].take;
    return s;
}

static void m_evict(model *m, uint32_t i)
{
    mt *x = &m->t[i];
    if (x->dirty) {
        m->k.writebacks++;
        m->k.bytes_written_back += x->bytes;
    }
    m->k.evictions++;
    m->k.bytes_evicted += x->bytes;
    if (x->unused) m->k.prefetch_wasted++;
    x->unused = 0;
    x->dirty = 0;
    x->dev = -1;
}

static void m_load(model *m, uint32_t i, int d, uint64_t off, int prefetch)
{
    mt *x = &m->t[i];
    x->dev = d;
    x->off = off;
    x->dirty = 0;
    x->seq = ++m->seq;
    m->k.loads++;
    m->k.bytes_loaded += x->bytes;
    if (prefetch) {
        m->k.prefetches++;
        x->unused = 1;
    }
}

static tp_status m_get(model *m, uint32_t i, int d)
{
    mt *x = &m->t[i];
    uint64_t usable = m->hi[d] - m->lo[d];
    if (x->dev == d) {
        m->k.hits++;
        if (x->unused) m->k.prefetch_used++;
        x->unused = 0;
    } else {
        if (x->dev >= 0 && x->pins) return TP_ERR_ARG;
        if (x->take > usable || m_pin_take(m, d) + x->take > usable) return TP_ERR_NOMEM;
        uint64_t off;
        while (!m_hole(m, d, x->take, &off)) {
            uint32_t v = m_victim(m, d);
            if (!v) return TP_ERR_NOMEM;
            m_evict(m, v);
        }
        if (x->dev >= 0) m_evict(m, i);
        m_load(m, i, d, off, 0);
        m->k.misses++;
    }
    x->pins++;
    uint64_t pb = 0;
    for (uint32_t j = 1; j <= MAXID; j++)
        if (m->t[j].live && m->t[j].dev == d && m->t[j].pins) pb += m->t[j].bytes;
    if (pb > m->k.pinned_bytes_max) m->k.pinned_bytes_max = pb;
    x->last = m->clock++;
    m->gets++;
    return TP_OK;
}

static uint32_t m_prefetch(model *m, int d)
{
    if (m->pol != P_LATENCY || !m->prefetch) return 0;
    uint32_t n = 0;
    uint64_t usable = m->hi[d] - m->lo[d];
    for (;;) {
        uint32_t c = 0;
        for (uint32_t i = 1; i <= MAXID; i++) {
            const mt *x = &m->t[i];
            if (!x->live || x->dev >= 0 || x->next == TP_CACHE_NO_HINT || x->next < m->clock) continue;
            if (!c || x->next < m->t[c].next) c = i; /* ties: the lower handle (scanned first) */
        }
        if (!c) return n;
        mt *x = &m->t[c];
        if (x->take > usable || m_pin_take(m, d) + x->take > usable) return n;
        uint64_t off;
        while (!m_hole(m, d, x->take, &off)) {
            uint32_t v = m->prefetch == 2 ? m_victim(m, d) : 0;
            if (!v || m->t[v].next <= x->next) return n;
            m_evict(m, v);
        }
        m_load(m, c, d, off, 1);
        n++;
    }
}

/* ---- the property test ------------------------------------------------------------------- */

typedef struct prop {
    long nomem, refused, prefetched; /* statistics of the run */
    uint64_t common[4];              /* sizes many tensors share */
    model m;
    env v;
    tp_cache *c;
    uint64_t rs;
    uint8_t *buf;
    long op;
    const char *what;
} prop;

#define PCHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "op %ld (%s): ", P->op, P->what);                                 \
            CHECKF(cond, __VA_ARGS__);                                                        \
        }                                                                                     \
    } while (0)

static void fill_random(prop *P, uint8_t *p, uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) p[k] = (uint8_t)rnd(&P->rs);
}

/* everything the cache says against the model */
static void check_all(prop *P)
{
    model *m = &P->m;
    tp_cache_counters k = counters(P->c);
#define KEQ(f) PCHECK(k.f == m->k.f, "counter %s: cache %llu, model %llu", #f, (unsigned long long)k.f, \
                      (unsigned long long)m->k.f)
    KEQ(hits);
    KEQ(misses);
    KEQ(loads);
    KEQ(bytes_loaded);
    KEQ(evictions);
    KEQ(bytes_evicted);
    KEQ(writebacks);
    KEQ(bytes_written_back);
    KEQ(prefetches);
    KEQ(prefetch_used);
    KEQ(prefetch_wasted);
    KEQ(pinned_bytes_max);
#undef KEQ
    /* the invariants, as the header states them */
    PCHECK(k.hits + k.misses == m->gets, "hits + misses != gets");
    PCHECK(k.loads == k.misses + k.prefetches, "loads != misses + prefetches");
    PCHECK(k.prefetch_used + k.prefetch_wasted <= k.prefetches, "used + wasted > prefetches");
    PCHECK(k.bytes_written_back <= k.bytes_evicted && k.writebacks <= k.evictions, "write-backs");
    PCHECK(tp_cache_clock(P->c) == m->clock, "clock");
    uint64_t resbytes[MAXDEV] = {0};
    uint32_t nres[MAXDEV] = {0};
    for (uint32_t i = 1; i <= MAXID; i++) {
        const mt *x = &m->t[i];
        if (!x->live) {
            PCHECK(tp_cache_bytes(P->c, i) == 0, "dead handle %u has bytes", i);
            continue;
        }
        int d = -7;
        uint64_t off = 0;
        int in = tp_cache_where(P->c, i, &d, &off);
        PCHECK(in == (x->dev >= 0), "tensor %u resident %d, model %d", i, in, x->dev);
        if (in) {
            PCHECK(d == x->dev && off == x->off, "tensor %u at %d/%llu, model %d/%llu", i, d, (unsigned long long)off,
                   x->dev, (unsigned long long)x->off);
            PCHECK(off % m->align == 0 && off >= m->lo[d] && off + x->bytes <= m->hi[d], "tensor %u outside its range", i);
            resbytes[d] += x->bytes;
            nres[d]++;
        }
        if (x->pins) { /* never moved, bytes intact */
            PCHECK(off == x->pin_off, "pinned tensor %u moved", i);
            tp_error e;
            ASSERT_OK_ERR(tp_cache_read(P->c, i, 0, P->buf, x->bytes, &e), e);
            PCHECK(!memcmp(P->buf, x->truth, x->bytes), "pinned tensor %u: bytes changed", i);
        }
    }
    for (int d = 0; d < m->nd; d++) {
        PCHECK(tp_cache_residents(P->c, d, NULL, 0) == nres[d], "residents of device %d", d);
        PCHECK(resbytes[d] <= m->hi[d] - m->lo[d], "device %d holds more than its range", d);
    }
}

static uint32_t pick(prop *P, int (*ok)(const mt *))
{
    uint32_t cand[MAXID], n = 0;
    for (uint32_t i = 1; i <= MAXID; i++)
        if (P->m.t[i].live && ok(&P->m.t[i])) cand[n++] = i;
    return n ? cand[rnd(&P->rs) % n] : 0;
}
static int any_t(const mt *x)
{
    (void)x;
    return 1;
}
static int pinned_t(const mt *x)
{
    return x->pins > 0;
}
static int unpinned_t(const mt *x)
{
    return x->pins == 0;
}
static int nowhere_t(const mt *x)
{
    return x->dev < 0;
}

static uint64_t random_hint(prop *P)
{
    uint64_t r = rnd(&P->rs) % 100, clk = P->m.clock;
    if (r < 25) return TP_CACHE_NO_HINT;
    if (r < 85) return clk + rnd(&P->rs) % 40;
    return clk > 5 ? clk - 1 - rnd(&P->rs) % 5 : clk; /* past */
}

static void prop_run(int pol, int prefetch, uint64_t seed, long ops)
{
    static prop PP;
    prop *P = &PP;
    memset(P, 0, sizeof *P);
    model *m = &P->m;
    P->rs = seed * 1000003 + (uint64_t)pol * 31 + (uint64_t)prefetch;
    m->pol = pol;
    m->prefetch = pol == P_LATENCY ? prefetch : 0;
    m->nd = 1 + (int)(rnd(&P->rs) % 3);
    static const uint64_t aligns[4] = {0, 1, 16, 64};
    uint64_t al = aligns[rnd(&P->rs) % 4];
    m->align = al ? al : 256;
    tp_cache_opts o;
    tp_cache_opts_init(&o, m->nd, NULL);
    o.policy = tp_cache_policy_names[pol];
    o.prefetch = prefetch;
    o.align = al;
    uint64_t cap[MAXDEV], most = 0;
    for (int d = 0; d < m->nd; d++) {
        o.base[d] = rnd(&P->rs) % 3 ? rnd(&P->rs) % 1000 : 0;
        o.size[d] = 2048 + rnd(&P->rs) % 30000;
        cap[d] = o.base[d] + o.size[d] + rnd(&P->rs) % 500;
        m->lo[d] = (o.base[d] + m->align - 1) / m->align * m->align;
        m->hi[d] = (o.base[d] + o.size[d]) / m->align * m->align;
        if (m->hi[d] - m->lo[d] > most) most = m->hi[d] - m->lo[d];
    }
    env_open(&P->v, m->nd, cap);
    tp_error e;
    ASSERT_OK_ERR(tp_cache_new(P->v.s, &o, &P->c, &e), e);
    for (int j = 0; j < 4; j++) P->common[j] = 1 + rnd(&P->rs) % (most / 3);
    P->buf = malloc(most + 1);
    uint8_t *tmp = malloc(most + 1);
    int maxlive = 8 + (int)(rnd(&P->rs) % 32);
    for (P->op = 0; P->op < ops; P->op++) {
        uint64_t r = rnd(&P->rs) % 100;
        int live = 0, npinned = 0;
        for (uint32_t i = 1; i <= MAXID; i++) {
            live += m->t[i].live;
            npinned += m->t[i].live && m->t[i].pins;
        }
        if (npinned > 4 && r < 50) r = 50; /* keep the pinned set mostly small: put */
        if (r < 10 && live < maxlive) { /* create */
            P->what = "create";
            uint64_t half = most / 2, bits = 1 + rnd(&P->rs) % 63;
            uint64_t bytes = 1 + (bits >= 63 ? rnd(&P->rs) : rnd(&P->rs) % ((uint64_t)1 << bits)) % half;
            if (rnd(&P->rs) % 2) bytes = P->common[rnd(&P->rs) % 4]; /* sizes that repeat (size classes) */
            int zero = rnd(&P->rs) % 4 == 0;
            if (!zero) fill_random(P, tmp, bytes);
            int64_t shp[1] = {(int64_t)bytes};
            tp_cache_id id = 0;
            ASSERT_OK_ERR(tp_cache_create(P->c, TP_DT_U8, 1, shp, zero ? NULL : tmp, &id, &e), e);
            PCHECK(id >= 1 && id <= MAXID && !m->t[id].live, "handle %u", id);
            mt *x = &m->t[id];
            memset(x, 0, sizeof *x);
            x->live = 1;
            x->dev = -1;
            x->bytes = bytes;
            x->take = (bytes + m->align - 1) / m->align * m->align;
            x->next = TP_CACHE_NO_HINT;
            x->truth = malloc(bytes);
            if (zero) memset(x->truth, 0, bytes);
            else memcpy(x->truth, tmp, bytes);
        } else if (r < 45) { /* get */
            P->what = "get";
            uint32_t i = pick(P, any_t);
            if (!i) continue;
            int d = (int)(rnd(&P->rs) % (uint64_t)m->nd);
            int was_pinned = m->t[i].pins > 0;
            tp_status want = m_get(m, i, d);
            uint64_t off = 0;
            tp_status got = tp_cache_get(P->c, i, d, &off, &e);
            PCHECK(got == want, "get %u on %d: %s, model %s (%s)", i, d, tp_status_name(got), tp_status_name(want),
                   got ? e.msg : "");
            if (got) {
                PCHECK(strlen(e.msg) > 10, "an empty message");
                if (got == TP_ERR_NOMEM) P->nomem++;
                else P->refused++;
                check_all(P);
                continue;
            }
            mt *x = &m->t[i];
            PCHECK(off == x->off, "get offset");
            if (!was_pinned) x->pin_off = off;
            ASSERT_OK_ERR(tp_cache_read(P->c, i, 0, P->buf, x->bytes, &e), e);
            PCHECK(!memcmp(P->buf, x->truth, x->bytes), "tensor %u: device bytes differ after get", i);
            if (rnd(&P->rs) % 2) { /* write some of it on the device */
                uint64_t a = rnd(&P->rs) % x->bytes, n = 1 + rnd(&P->rs) % (x->bytes - a);
                fill_random(P, x->truth + a, n);
                ASSERT_OK_ERR(tp_cache_write(P->c, i, a, x->truth + a, n, &e), e);
                x->wrote = 1;
            }
        } else if (r < 70) { /* put */
            P->what = "put";
            uint32_t i = pick(P, pinned_t);
            if (!i) continue;
            mt *x = &m->t[i];
            int dirty = x->wrote || rnd(&P->rs) % 8 == 0;
            uint64_t h = random_hint(P);
            ASSERT_OK_ERR(tp_cache_put(P->c, i, dirty, h, &e), e);
            x->pins--;
            x->dirty |= dirty;
            x->wrote = 0;
            x->next = h;
        } else if (r < 76) { /* destroy */
            P->what = "destroy";
            uint32_t i = pick(P, any_t);
            if (!i) continue;
            mt *x = &m->t[i];
            tp_status got = tp_cache_destroy(P->c, i, &e);
            PCHECK(got == (x->pins ? TP_ERR_ARG : TP_OK), "destroy %u: %s", i, tp_status_name(got));
            if (!got) {
                if (x->unused) m->k.prefetch_wasted++;
                free(x->truth);
                memset(x, 0, sizeof *x);
            }
        } else if (r < 84) { /* hint */
            P->what = "hint";
            uint32_t i = pick(P, any_t);
            if (!i) continue;
            uint64_t h = random_hint(P);
            ASSERT_OK_ERR(tp_cache_hint(P->c, i, h, &e), e);
            m->t[i].next = h;
        } else if (r < 92) { /* prefetch */
            P->what = "prefetch";
            int d = (int)(rnd(&P->rs) % (uint64_t)m->nd);
            uint32_t want = m_prefetch(m, d), n = 0;
            ASSERT_OK_ERR(tp_cache_prefetch(P->c, d, &n, &e), e);
            PCHECK(n == want, "prefetch on %d: %u, model %u", d, n, want);
            P->prefetched += n;
        } else if (r < 97) { /* the host copy written while resident nowhere */
            P->what = "host write";
            uint32_t i = pick(P, nowhere_t);
            if (!i) continue;
            mt *x = &m->t[i];
            PCHECK(!memcmp(tp_cache_host(P->c, i), x->truth, x->bytes), "tensor %u: host copy lost bytes", i);
            uint64_t a = rnd(&P->rs) % x->bytes, n = 1 + rnd(&P->rs) % (x->bytes - a);
            fill_random(P, x->truth + a, n);
            memcpy((uint8_t *)tp_cache_host(P->c, i) + a, x->truth + a, n);
        } else { /* misuse: refused, nothing changes */
            P->what = "misuse";
            uint32_t i = pick(P, unpinned_t);
            if (i) ASSERT_STATUS(tp_cache_put(P->c, i, 0, 0, &e), TP_ERR_ARG);
            if (i) ASSERT_STATUS(tp_cache_read(P->c, i, 0, P->buf, 1, &e), TP_ERR_ARG);
            ASSERT_STATUS(tp_cache_get(P->c, 0, 0, NULL, &e), TP_ERR_ARG);
            ASSERT_STATUS(tp_cache_get(P->c, MAXID + 1, 0, NULL, &e), TP_ERR_ARG);
            ASSERT_STATUS(tp_cache_prefetch(P->c, m->nd, NULL, &e), TP_ERR_ARG);
        }
        check_all(P);
    }
    /* every tensor resident nowhere has its bytes in its host copy; then put and destroy all */
    for (uint32_t i = 1; i <= MAXID; i++) {
        mt *x = &m->t[i];
        if (!x->live) continue;
        while (x->pins) {
            ASSERT_OK_ERR(tp_cache_put(P->c, i, x->wrote, TP_CACHE_NO_HINT, &e), e);
            x->pins--;
            x->wrote = 0;
        }
        if (x->dev < 0) PCHECK(!memcmp(tp_cache_host(P->c, i), x->truth, x->bytes), "tensor %u: host copy at the end", i);
        ASSERT_OK_ERR(tp_cache_destroy(P->c, i, &e), e);
        free(x->truth);
    }
    for (int d = 0; d < m->nd; d++) ASSERT_EQ(tp_cache_residents(P->c, d, NULL, 0), 0);
    printf("%s prefetch %d seed %llu: %d devices, align %llu: %llu gets (%llu hits), %llu evictions, %llu write-backs, "
           "%llu prefetches (%llu used, %llu wasted), %ld NOMEM, %ld refused\n",
           tp_cache_policy_names[pol], prefetch, (unsigned long long)seed, m->nd, (unsigned long long)m->align,
           (unsigned long long)m->gets, (unsigned long long)m->k.hits, (unsigned long long)m->k.evictions,
           (unsigned long long)m->k.writebacks, (unsigned long long)m->k.prefetches, (unsigned long long)m->k.prefetch_used,
           (unsigned long long)m->k.prefetch_wasted, P->nomem, P->refused);
    tp_cache_free(P->c);
    env_close(&P->v);
    free(P->buf);
    free(tmp);
}

static void props(int pol)
{
    for (int prefetch = 0; prefetch <= 2; prefetch++)
        for (uint64_t seed = 1; seed <= 4; seed++) prop_run(pol, prefetch, seed, 4000);
}

TEST(cache_props_fifo)
{
    props(P_FIFO);
}

TEST(cache_props_lru)
{
    props(P_LRU);
}

TEST(cache_props_size)
{
    props(P_SIZE);
}

TEST(cache_props_latency)
{
    props(P_LATENCY);
}

/* ---- Belady ------------------------------------------------------------------------------- */

/* Belady's MIN over seq[0..L-1] with k slots: the number of loads */
static uint64_t belady_min(const uint32_t *seq, const uint64_t *nextpos, long L, int n, int k)
{
    uint64_t *nxt = malloc((size_t)n * sizeof *nxt);
    int *in = calloc((size_t)n, sizeof *in), held = 0;
    uint64_t loads = 0;
    for (long p = 0; p < L; p++) {
        uint32_t x = seq[p];
        if (!in[x]) {
            loads++;
            if (held == k) {
                int far = -1;
                for (int j = 0; j < n; j++)
                    if (in[j] && (far < 0 || nxt[j] > nxt[far])) far = j;
                in[far] = 0;
                held--;
            }
            in[x] = 1;
            held++;
        }
        nxt[x] = nextpos[p];
    }
    free(nxt);
    free(in);
    return loads;
}

TEST(cache_belady)
{
    long over[3] = {0, 0, 0}, runs = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        uint64_t rs = seed * 7777;
        int n = 3 + (int)(rnd(&rs) % 30), k = 1 + (int)(rnd(&rs) % (uint64_t)(n - 1));
        long L = 600 + (long)(rnd(&rs) % 1200);
        uint32_t *seq = malloc((size_t)L * sizeof *seq);
        uint64_t *nextpos = malloc((size_t)L * sizeof *nextpos);
        int hot = 1 + (int)(rnd(&rs) % (uint64_t)n); /* a hot set, with excursions */
        for (long p = 0; p < L; p++)
            seq[p] = (uint32_t)(rnd(&rs) % 4 ? rnd(&rs) % (uint64_t)hot : rnd(&rs) % (uint64_t)n);
        uint64_t *first = malloc((size_t)n * sizeof *first);
        for (int j = 0; j < n; j++) first[j] = TP_CACHE_NO_HINT;
        for (long p = L - 1; p >= 0; p--) {
            nextpos[p] = first[seq[p]];
            first[seq[p]] = (uint64_t)p;
        }
        uint64_t min = belady_min(seq, nextpos, L, n, k), bytes = 200;
        for (int mode = 0; mode <= 2; mode++) {
            uint64_t sz[1] = {256 * (uint64_t)k + 255}; /* k units, and a remainder that holds none */
            tp_cache *c = cache_on(NULL, "latency", 1, sz, mode);
            tp_error e;
            tp_cache_id *id = malloc((size_t)n * sizeof *id);
            for (int j = 0; j < n; j++) {
                id[j] = make(c, bytes, NULL);
                ASSERT_OK_ERR(tp_cache_hint(c, id[j], first[j], &e), e);
            }
            for (long p = 0; p < L; p++) {
                if (mode) ASSERT_OK_ERR(tp_cache_prefetch(c, 0, NULL, &e), e);
                ASSERT_EQ(tp_cache_clock(c), p);
                get_at(c, id[seq[p]], 0);
                put(c, id[seq[p]], 0, nextpos[p]);
            }
            tp_cache_counters kk = counters(c);
            ASSERT_EQ(kk.hits + kk.misses, (uint64_t)L);
            ASSERT_EQ(kk.loads, kk.misses + kk.prefetches);
            CHECK(kk.prefetch_used + kk.prefetch_wasted <= kk.prefetches);
            ASSERT_EQ(kk.bytes_loaded, kk.loads * bytes);
            if (mode < 2) CHECKF(kk.bytes_loaded <= min * bytes, "seed %llu prefetch %d: %llu loads, MIN %llu",
                                 (unsigned long long)seed, mode, (unsigned long long)kk.loads, (unsigned long long)min);
            if (mode == 0) ASSERT_EQ(kk.loads, min);
            if (kk.loads > min) over[mode]++;
            free(id);
            tp_cache_free(c);
        }
        runs++;
        free(seq);
        free(nextpos);
        free(first);
    }
    printf("Belady: %ld sequences; loads above MIN: prefetch 0: %ld, prefetch 1: %ld, prefetch 2: %ld\n", runs, over[0],
           over[1], over[2]);
}

/* ---- the cyclic pattern ------------------------------------------------------------------- */

TEST(cache_cyclic)
{
    static const int nk[][2] = {{5, 3}, {8, 2}, {10, 9}, {16, 5}, {4, 3}};
    for (size_t q = 0; q < sizeof nk / sizeof *nk; q++) {
        int n = nk[q][0], k = nk[q][1], cycles = 12;
        for (int p = 0; tp_cache_policy_names[p]; p++) {
            const char *pol = tp_cache_policy_names[p];
            if (!strcmp(pol, "size")) continue; /* not asserted: equal sizes make it lru */
            uint64_t sz[1] = {256 * (uint64_t)k};
            tp_cache *c = cache_on(NULL, pol, 1, sz, 0);
            tp_cache_id *id = malloc((size_t)n * sizeof *id);
            for (int j = 0; j < n; j++) id[j] = make(c, 256, NULL);
            uint64_t before = 0;
            for (int cy = 0; cy < cycles; cy++) {
                for (int j = 0; j < n; j++) {
                    get_at(c, id[j], 0);
                    put(c, id[j], 0, tp_cache_clock(c) - 1 + (uint64_t)n);
                }
                uint64_t miss = counters(c).misses - before;
                before = counters(c).misses;
                if (cy == 0) {
                    ASSERT_EQ(miss, (uint64_t)n);
                    continue;
                }
                if (!strcmp(pol, "latency"))
                    CHECKF(miss + 1 >= (uint64_t)(n - k) && miss <= (uint64_t)(n - k + 1), "n %d k %d cycle %d: %llu misses", n,
                           k, cy, (unsigned long long)miss);
                else
                    ASSERT_EQ(miss, (uint64_t)n);
            }
            free(id);
            tp_cache_free(c);
        }
    }
}

/* ---- scale ------------------------------------------------------------------------------- */

TEST(cache_many_tensors)
{
    /* 10^4 resident tensors and 10^4 more cycling through: each policy finishes quickly */
    for (int p = 0; tp_cache_policy_names[p]; p++) {
        enum { N = 12000, K = 10000 };
        uint64_t sz[1] = {256 * (uint64_t)K};
        tp_cache *c = cache_on(NULL, tp_cache_policy_names[p], 1, sz, 1);
        tp_cache_id *id = malloc(N * sizeof *id);
        for (int j = 0; j < N; j++) id[j] = make(c, 1 + (uint64_t)(j % 256), NULL);
        uint64_t rs = 5;
        double t0 = now_s();
        for (int j = 0; j < 2 * N; j++) {
            tp_cache_id x = id[rnd(&rs) % N];
            get_at(c, x, 0);
            put(c, x, j % 3 == 0, tp_cache_clock(c) + rnd(&rs) % N);
        }
        double t1 = now_s();
        tp_cache_counters k = counters(c);
        printf("%s: %d gets over %d tensors, %llu misses, %.1f us per get\n", tp_cache_policy_names[p], 2 * N, N,
               (unsigned long long)k.misses, (t1 - t0) * 1e6 / (2 * N));
        ASSERT_EQ(tp_cache_residents(c, 0, NULL, 0) <= K, 1);
        for (int j = 0; j < N; j++) {
            tp_error e;
            ASSERT_OK_ERR(tp_cache_destroy(c, id[j], &e), e);
        }
        free(id);
        tp_cache_free(c);
    }
}

/* Host copies from a caller's arena (a session's host block in `turnip generate`): each copy
 * lies inside the arena at a multiple of the alignment, no two overlap, init bytes or zeros are
 * there, a destroyed tensor's bytes are taken again, and an arena that holds no more is a clear
 * TP_ERR_NOMEM; bad arena options are refused. Checked against a byte map of the arena. */
TEST(cache_host_arena)
{
    enum { AB = 16384 };
    static uint8_t arena[AB + 1];
    uint64_t sz[1] = {1 << 20};
    tp_cache_opts o;
    tp_cache *c;
    tp_error e;
    tp_cache_opts_init(&o, 1, sz);
    o.host_arena = arena;
    o.host_arena_bytes = 100; /* less than one alignment unit */
    CHECK(tp_cache_new(NULL, &o, &c, &e) == TP_ERR_ARG);
    o.host_arena_bytes = AB;
    o.no_host = 1;
    CHECK(tp_cache_new(NULL, &o, &c, &e) == TP_ERR_ARG);
    o.no_host = 0;
    ASSERT_OK_ERR(tp_cache_new(NULL, &o, &c, &e), e);
    memset(arena, 0xEE, sizeof arena);
    uint64_t s = 12345;
    tp_cache_id ids[64];
    uint8_t owner[AB / 256]; /* 256-byte units: which live tensor (index + 1) holds each */
    memset(owner, 0, sizeof owner);
    uint32_t n = 0, made = 0, full = 0;
    for (int step = 0; step < 400; step++) {
        if (n && rnd(&s) % 3 == 0) { /* destroy one */
            uint32_t k = (uint32_t)(rnd(&s) % n);
            const uint8_t *h = tp_cache_host(c, ids[k]);
            uint64_t at = (uint64_t)(h - arena), b = tp_cache_bytes(c, ids[k]);
            for (uint64_t u = at / 256; u < (at + b + 255) / 256; u++) owner[u] = 0;
            ASSERT_OK_ERR(tp_cache_destroy(c, ids[k], &e), e);
            ids[k] = ids[--n];
            continue;
        }
        int64_t shape[1] = {1 + (int64_t)(rnd(&s) % 700)}; /* f32: 4 .. 2800 bytes */
        float init[700];
        for (int i = 0; i < shape[0]; i++) init[i] = (float)(step * 1000 + i);
        int zero = rnd(&s) % 2;
        tp_cache_id id;
        tp_status st = tp_cache_create(c, TP_DT_F32, 1, shape, zero ? NULL : init, &id, &e);
        uint64_t b = (uint64_t)shape[0] * 4, units = (b + 255) / 256, run = 0, best = 0;
        for (uint32_t u = 0; u < AB / 256; u++) {
            run = owner[u] ? 0 : run + 1;
            if (run > best) best = run;
        }
        if (st) {
            CHECKF(st == TP_ERR_NOMEM && strstr(e.msg, "host arena") && best < units, "step %d: %s (largest free run %llu units)",
                   step, e.msg, (unsigned long long)best);
            full++;
            continue;
        }
        CHECK(n < 64);
        const uint8_t *h = tp_cache_host(c, id);
        uint64_t at = (uint64_t)(h - arena);
        CHECKF(h >= arena && at % 256 == 0 && at + b <= AB, "step %d: host copy at %lld", step, (long long)(h - arena));
        for (uint64_t u = at / 256; u < at / 256 + units; u++) {
            CHECKF(!owner[u], "step %d: host copy overlaps a live one", step);
            owner[u] = 1;
        }
        for (int i = 0; i < shape[0]; i++) {
            float f;
            memcpy(&f, h + 4 * i, 4);
            CHECK(f == (zero ? 0.0f : init[i]));
        }
        ids[n++] = id;
        made++;
        if (n == 64) { /* keep room for the handle list */
            ASSERT_OK_ERR(tp_cache_destroy(c, ids[--n], &e), e);
            for (uint64_t u = 0; u < AB / 256; u++) owner[u] = 0;
            for (uint32_t k = 0; k < n; k++) {
                const uint8_t *hk = tp_cache_host(c, ids[k]);
                uint64_t a2 = (uint64_t)(hk - arena), b2 = tp_cache_bytes(c, ids[k]);
                for (uint64_t u = a2 / 256; u < (a2 + b2 + 255) / 256; u++) owner[u] = 1;
            }
        }
    }
    CHECK(arena[AB] == 0xEE); /* nothing past the arena */
    CHECKF(made >= 100 && full >= 5, "made %u, refused %u", made, full);
    tp_cache_free(c);
}
