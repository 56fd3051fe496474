/* test_alloc.c - the simulated allocator: free runs, release lists, ages, eviction windows. */
#include <string.h>
#include "plan/alloc.h"
#include "harness.h"

static uint32_t got[16];
static int ngot;
static void rec(void *ctx, uint32_t rel)
{
    (void)ctx;
    got[ngot++] = rel;
}

TEST(alloc_alignment_rule)
{
    ASSERT_EQ(tp__align_of(1), 1);
    ASSERT_EQ(tp__align_of(12), 4);
    ASSERT_EQ(tp__align_of(768), 256);
    ASSERT_EQ(tp__align_of(1 << 20), 256);
    ASSERT_EQ(tp__align_of(6), 2);
}

TEST(alloc_release_lists_and_ages)
{
    tp__alloc a;
    tp__alloc_init(&a, 1000);
    uint64_t addr;
    ngot = 0;
    CHECK(tp__alloc_find(&a, 100, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 0);
    uint32_t b1 = tp__alloc_take(&a, 0, 100, 1, rec, NULL);
    uint32_t b2 = tp__alloc_take(&a, 100, 200, 2, rec, NULL);
    ASSERT_EQ(ngot, 0);
    ASSERT_EQ(a.used, 300);
    tp__alloc_release(&a, b1, 7, 1);
    /* never-used memory is older than anything freed: [300, ...) wins over [0, 100) */
    CHECK(tp__alloc_find(&a, 50, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 300);
    CHECK(tp__alloc_find(&a, 50, TP__FIT_LOWEST, &addr));
    ASSERT_EQ(addr, 0);
    tp__alloc_take(&a, 300, 700, 3, rec, NULL);
    CHECK(!tp__alloc_find(&a, 101, TP__FIT_OLDEST, &addr));
    CHECK(tp__alloc_find(&a, 100, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 0);
    /* free b2 too: [0,100) rel 7 and [100,300) rel 9 form one run of 300 */
    tp__alloc_release(&a, b2, 9, 2);
    CHECK(tp__alloc_find(&a, 300, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 0);
    ngot = 0;
    tp__alloc_take(&a, 50, 100, 4, rec, NULL); /* overlaps both segments */
    ASSERT_EQ(ngot, 2);
    ASSERT_EQ(got[0], 7);
    ASSERT_EQ(got[1], 9);
    ngot = 0;
    tp__alloc_take(&a, 0, 50, 5, rec, NULL); /* only the first */
    ASSERT_EQ(ngot, 1);
    ASSERT_EQ(got[0], 7);
    ASSERT_EQ(a.used, 1000 - 150);
    ASSERT_EQ(a.peak, 900);
    tp__alloc_free(&a);
}

TEST(alloc_oldest_free_preferred)
{
    tp__alloc a;
    tp__alloc_init(&a, 300);
    uint32_t b[3];
    for (int i = 0; i < 3; i++) b[i] = tp__alloc_take(&a, (uint64_t)i * 100, 100, (uint32_t)i, rec, NULL);
    tp__alloc_release(&a, b[2], 1, 10);
    tp__alloc_release(&a, b[0], 2, 20);
    uint64_t addr;
    CHECK(tp__alloc_find(&a, 100, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 200); /* freed at 10 */
    CHECK(tp__alloc_find(&a, 100, TP__FIT_LOWEST, &addr));
    ASSERT_EQ(addr, 0);
    tp__alloc_free(&a);
}

static tp__victim_score sc(void *ctx, uint32_t owner)
{
    const uint64_t *use = ctx;
    tp__victim_score s = {owner == 0, use[owner], 10};
    return s;
}

TEST(alloc_window_prefers_furthest_next_use)
{
    tp__alloc a;
    tp__alloc_init(&a, 400);
    for (uint32_t i = 0; i < 4; i++) tp__alloc_take(&a, (uint64_t)i * 100, 100, i, rec, NULL);
    uint64_t use[4] = {0, 50, 90, 70}; /* owner 0 pinned */
    uint64_t addr;
    uint32_t v[8], nv;
    CHECK(tp__alloc_find_window(&a, 100, sc, use, &addr, v, &nv));
    ASSERT_EQ(addr, 200);
    ASSERT_EQ(nv, 1);
    ASSERT_EQ(v[0], 2);
    /* 200 bytes: windows {1,2} (min use 50) and {2,3} (min use 70): the latter */
    CHECK(tp__alloc_find_window(&a, 200, sc, use, &addr, v, &nv));
    ASSERT_EQ(addr, 200);
    ASSERT_EQ(nv, 2);
    /* 400 bytes would need the pinned block */
    CHECK(!tp__alloc_find_window(&a, 400, sc, use, &addr, v, &nv));
    tp__alloc_free(&a);
}
