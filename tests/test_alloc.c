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

/* inside the run it picks, an oldest fit goes where the bytes were freed longest ago, at the
 * run's start or against its end */
TEST(alloc_oldest_within_run)
{
    tp__alloc a;
    tp__alloc_init(&a, 400);
    uint32_t b[4];
    for (int i = 0; i < 4; i++) b[i] = tp__alloc_take(&a, (uint64_t)i * 100, 100, (uint32_t)i, rec, NULL);
    tp__alloc_release(&a, b[2], 1, 10); /* [200, 300) freed first */
    tp__alloc_release(&a, b[1], 2, 20); /* then [100, 200): one run [100, 300) */
    uint64_t addr;
    CHECK(tp__alloc_find(&a, 100, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 200); /* against the end: only bytes freed at 10 */
    CHECK(tp__alloc_find(&a, 196, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 100); /* either end covers both stamps: the start */
    CHECK(tp__alloc_find(&a, 100, TP__FIT_LOWEST, &addr));
    ASSERT_EQ(addr, 100);
    tp__alloc_release(&a, b[3], 3, 30); /* run [100, 400): the end is now the newest */
    CHECK(tp__alloc_find(&a, 100, TP__FIT_OLDEST, &addr));
    ASSERT_EQ(addr, 100);
    CHECK(tp__alloc_find(&a, 150, TP__FIT_OLDEST, &addr)); /* start covers 20 and 10, end 10 and 30 */
    ASSERT_EQ(addr, 100);
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

/* The O(B) first fit the allocator had before its free space was indexed: every free segment's
 * aligned start, extended over the following free segments. The naive reference. */
static int naive_lowest(const tp__alloc *a, uint64_t size, uint64_t *addr)
{
    if (a->cap - a->used < size) return 0;
    uint64_t al = tp__align_of(size);
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        if (a->b[i].owner != TP__NONE) continue;
        uint64_t start = (a->b[i].start + al - 1) & ~(al - 1), end = start + size;
        for (uint32_t j = i; j != TP__NONE && a->b[j].owner == TP__NONE; j = a->b[j].next)
            if (a->b[j].start + a->b[j].size >= end) {
                *addr = start;
                return 1;
            }
    }
    return 0;
}

/* the highest aligned address whose size bytes lie in free blocks: over every maximal run of
 * free blocks, its end less size, aligned down, when that is still inside it */
static int naive_highest(const tp__alloc *a, uint64_t size, uint64_t *addr)
{
    uint64_t al = tp__align_of(size);
    int found = 0;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        if (a->b[i].owner != TP__NONE || (a->b[i].prev != TP__NONE && a->b[a->b[i].prev].owner == TP__NONE)) continue;
        uint64_t start = a->b[i].start, end = start;
        for (uint32_t j = i; j != TP__NONE && a->b[j].owner == TP__NONE; j = a->b[j].next) end = a->b[j].start + a->b[j].size;
        if (end - start < size || ((end - size) & ~(al - 1)) < start) continue;
        if (!found || ((end - size) & ~(al - 1)) > *addr) *addr = (end - size) & ~(al - 1);
        found = 1;
    }
    return found;
}

/* 1 if [addr, addr+size) lies in free blocks, aligned */
static int placement_free(const tp__alloc *a, uint64_t addr, uint64_t size)
{
    if (addr % tp__align_of(size)) return 0;
    uint64_t end = addr + size;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        const tp__block *x = &a->b[i];
        if (x->start + x->size <= addr || x->start >= end) continue;
        if (x->owner != TP__NONE) return 0;
    }
    return end <= a->cap;
}

/* the newest release stamp of the free segments [st, st+size) overlaps (UINT64_MAX over
 * TP__RUN_SEGS of them), by a walk over every block */
static uint64_t naive_covered_age(const tp__alloc *a, uint64_t st, uint64_t size)
{
    uint64_t m = 0;
    int n = 0;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        const tp__block *x = &a->b[i];
        if (x->start + x->size <= st || x->start >= st + size) continue;
        if (++n > TP__RUN_SEGS) return UINT64_MAX;
        if (x->freed_at > m) m = x->freed_at;
    }
    return m;
}

/* an oldest fit at addr lies at the aligned start or against the aligned end of the free run
 * holding it, at the end only when that covers strictly older bytes */
static int oldest_at_run_end(const tp__alloc *a, uint64_t addr, uint64_t size)
{
    uint64_t rs = 0, re = 0, al = tp__align_of(size);
    int in = 0;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        const tp__block *x = &a->b[i];
        if (x->owner != TP__NONE) {
            if (in) break;
            continue;
        }
        if (i == a->head || a->b[x->prev].owner != TP__NONE) rs = x->start;
        re = x->start + x->size;
        if (x->start <= addr && addr < re) in = 1;
    }
    if (!in) return 0;
    uint64_t lo = (rs + al - 1) & ~(al - 1), hi = (re - size) & ~(al - 1);
    if (hi <= lo) return addr == lo;
    return addr == (naive_covered_age(a, hi, size) < naive_covered_age(a, lo, size) ? hi : lo);
}

/* The O(B * window) eviction-window search the allocator had before: every block's aligned start,
 * scanned forward and scored block by block. The naive reference. */
static int naive_window(const tp__alloc *a, uint64_t size, tp__victim_score (*score)(void *ctx, uint32_t owner),
                        void *ctx, uint64_t *addr, uint32_t *victims, uint32_t *nv)
{
    uint64_t al = tp__align_of(size);
    int found = 0;
    uint64_t best_use = 0, best_cost = 0, best_addr = 0;
    uint32_t best_first = TP__NONE;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        uint64_t start = (a->b[i].start + al - 1) & ~(al - 1);
        if (start >= a->b[i].start + a->b[i].size || start + size < start) continue;
        uint64_t end = start + size, use = UINT64_MAX, cost = 0;
        int ok = 0;
        for (uint32_t j = i; j != TP__NONE; j = a->b[j].next) {
            const tp__block *y = &a->b[j];
            if (y->owner != TP__NONE) {
                tp__victim_score s = score(ctx, y->owner);
                if (s.pinned) break;
                if (s.next_use < use) use = s.next_use;
                cost += s.cost;
            }
            if (y->start + y->size >= end) {
                ok = 1;
                break;
            }
        }
        if (!ok || end > a->cap) continue;
        if (!found || use > best_use || (use == best_use && cost < best_cost)) {
            found = 1;
            best_use = use;
            best_cost = cost;
            best_addr = start;
            best_first = i;
        }
    }
    if (!found) return 0;
    *addr = best_addr;
    *nv = 0;
    for (uint32_t j = best_first; j != TP__NONE && a->b[j].start < best_addr + size; j = a->b[j].next)
        if (a->b[j].owner != TP__NONE) victims[(*nv)++] = a->b[j].owner;
    return 1;
}

static tp__victim_score scores[3000];
static tp__victim_score score_tab(void *ctx, uint32_t owner)
{
    (void)ctx;
    return scores[owner];
}

/* the same scores seen through a horizon: next uses at or below it pin (as the planner's do) */
static uint64_t horizon;
static tp__victim_score score_horizon(void *ctx, uint32_t owner)
{
    (void)ctx;
    tp__victim_score s = scores[owner];
    if (s.next_use <= horizon) s.pinned = 1;
    return s;
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static void nop_rel(void *ctx, uint32_t rel)
{
    (void)ctx;
    (void)rel;
}

/* A window search's answer (found, address, victims) equals the naive search's under `score`;
 * the naive address goes to *na for the caller's further checks. */
static int same_as_naive(const tp__alloc *a, uint64_t size, tp__victim_score (*score)(void *ctx, uint32_t owner),
                         int found, uint64_t addr, const uint32_t *victims, uint32_t nv, int *fn, uint64_t *na)
{
    uint32_t vn[1100], nvn = 0;
    *fn = naive_window(a, size, score, NULL, na, vn, &nvn);
    if (found != *fn) return 0;
    if (!found) return 1;
    if (addr != *na || nv != nvn) return 0;
    for (uint32_t q = 0; q < nv; q++)
        if (victims[q] != vn[q]) return 0;
    return 1;
}

/* In-order walk of a treap into keys[] (k1, k2, start, len, aux per node); checks each node's
 * subtree maximum where the treap keeps one. Returns the node count, or -1 on a bad maximum. */
typedef struct {
    uint64_t k1, k2, start, len, aux;
    uint32_t node;
} tnode_view;
static uint64_t walk_max;
static int walk(const tp__treap *T, uint32_t t, tnode_view *out, int n, int cap)
{
    if (t == TP__NONE || n < 0) return n;
    n = walk(T, T->n[t].l, out, n, cap);
    if (n < 0 || n >= cap) return -1;
    out[n++] = (tnode_view){T->n[t].k1, T->n[t].k2, T->n[t].start, T->n[t].len, T->n[t].aux, t};
    n = walk(T, T->n[t].r, out, n, cap);
    if (n < 0 || !T->aug) return n;
    uint64_t m = T->n[t].len;
    if (T->n[t].l != TP__NONE && T->n[T->n[t].l].mx > m) m = T->n[T->n[t].l].mx;
    if (T->n[t].r != TP__NONE && T->n[T->n[t].r].mx > m) m = T->n[T->n[t].r].mx;
    walk_max = m;
    return m == T->n[t].mx ? n : -1;
}

/* The three indexes of the free space against the block list, which shares no code with them:
 * segs holds every free segment (keyed by its start, aux its block, the block's node `sn`),
 * runs every maximal free stretch by address, aged the same runs by (age, start) with the age
 * runs holds; subtree maxima are right. */
static int check_indexes(const tp__alloc *a)
{
    static tnode_view segs[4096], runs[4096], aged[4096];
    int ns = walk(&a->segs, a->segs.root, segs, 0, 4096);
    int nr = walk(&a->runs, a->runs.root, runs, 0, 4096);
    int na = walk(&a->aged, a->aged.root, aged, 0, 4096);
    if (ns < 0 || nr < 0 || na != nr) return 0;
    int k = 0, r = 0;
    uint64_t rs = 0, re = 0;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        const tp__block *x = &a->b[i];
        if (x->owner != TP__NONE) continue;
        if (k >= ns || segs[k].k1 != x->start || segs[k].start != x->start || segs[k].aux != i) return 0;
        if (segs[k].node != x->sn) return 0;
        k++;
        if (i == a->head || a->b[x->prev].owner != TP__NONE) rs = x->start;
        re = x->start + x->size;
        if (x->next == TP__NONE || a->b[x->next].owner != TP__NONE) { /* a run ends here */
            if (r >= nr || runs[r].k1 != rs || runs[r].start != rs || runs[r].len != re - rs) return 0;
            r++;
        }
    }
    if (k != ns || r != nr) return 0;
    for (int q = 0; q < na; q++) {
        if (q && (aged[q - 1].k1 > aged[q].k1 || (aged[q - 1].k1 == aged[q].k1 && aged[q - 1].k2 >= aged[q].k2))) return 0;
        int hit = 0;
        for (int j = 0; j < nr; j++)
            hit |= runs[j].start == aged[q].start && runs[j].len == aged[q].len && runs[j].aux == aged[q].k1 &&
                   aged[q].k2 == aged[q].start;
        if (!hit) return 0;
    }
    return 1;
}

/* the key last set for each block slot, and the call that sets it */
static uint64_t keyof[8192];
static void set_key(tp__alloc *a, uint32_t b, uint64_t key)
{
    keyof[b] = key;
    tp__alloc_set_key(a, b, key);
}

/* After a keyed search: the key index holds every block in live[] exactly once, under the key
 * last set for it (keys[] by block), and nothing else; no key is left pending. */
static int check_bykey(const tp__alloc *a, const uint32_t *live, uint32_t nlive, const uint64_t *keys)
{
    static tnode_view kv[4096];
    int n = walk(&a->bykey, a->bykey.root, kv, 0, 4096);
    if (n != (int)nlive || a->ndirty != 0) return 0;
    for (uint32_t q = 0; q < nlive; q++) {
        const tp__block *x = &a->b[live[q]];
        if (!x->keyed || x->dirty || x->key != keys[live[q]]) return 0;
        int hit = 0;
        for (int j = 0; j < n; j++) hit += kv[j].k1 == UINT64_MAX - x->key && kv[j].k2 == live[q];
        if (hit != 1) return 0;
    }
    return 1;
}

/* random takes and releases: first and last fit equal the naive searches; oldest fit is a
 * free, aligned placement; the used byte count matches the blocks */
TEST(alloc_indexed_matches_naive)
{
    for (int round = 0; round < 20; round++) {
        tp__alloc a;
        uint64_t cap = 4096 + (rnd() % 8) * 1000;
        CHECK(tp__alloc_init(&a, cap));
        uint32_t live[512], nlive = 0;
        for (int op = 0; op < 3000; op++) {
            uint64_t size = 1 + rnd() % (rnd() % 4 ? 300 : 2000);
            if (rnd() % 3 == 0) size = (size + 63) & ~(uint64_t)63;
            uint64_t lo = 0, nlo = 0, old = 0;
            int fl = tp__alloc_find(&a, size, TP__FIT_LOWEST, &lo);
            int fn = naive_lowest(&a, size, &nlo);
            int fo = tp__alloc_find(&a, size, TP__FIT_OLDEST, &old);
            uint64_t hi = 0, nhi = 0;
            int fh = tp__alloc_find(&a, size, TP__FIT_HIGHEST, &hi);
            ASSERT_EQ(fl, fn);
            ASSERT_EQ(fo, fn);
            ASSERT_EQ(fh, naive_highest(&a, size, &nhi));
            ASSERT_EQ(fh, fn);
            if (fl) ASSERT_EQ(lo, nlo);
            if (fh) ASSERT_EQ(hi, nhi);
            if (fo) CHECK(placement_free(&a, old, size));
            if (fo) CHECK(oldest_at_run_end(&a, old, size));
            uint64_t wa = 0, na = 0;
            uint32_t wv[1100], nvw = 0;
            int fnw;
            int fw = tp__alloc_find_window(&a, size, score_tab, NULL, &wa, wv, &nvw);
            CHECK(same_as_naive(&a, size, score_tab, fw, wa, wv, nvw, &fnw, &na));
            /* the keyed search: keys are next uses (0: pinned), victims above a random horizon;
             * every third step, so that key changes pile up between searches */
            horizon = rnd() % 4 ? 0 : rnd() % 30;
            if (rnd() % 3 == 0) {
                int fk = tp__alloc_find_window_keyed(&a, size, horizon, 0, score_horizon, NULL, &wa, wv, &nvw);
                CHECK(same_as_naive(&a, size, score_horizon, fk, wa, wv, nvw, &fnw, &na));
                CHECK(check_bykey(&a, live, nlive, keyof));
                /* with a small budget: the same answer, or the budget's worth of furthest next uses */
                uint32_t budget = 1 + (uint32_t)(rnd() % 4);
                int fb = tp__alloc_find_window_keyed(&a, size, horizon, budget, score_horizon, NULL, &wa, wv, &nvw);
                if (fb == 2) {
                    CHECK(nvw >= budget);
                    /* the first is the furthest next use of all the victims there are (Belady's) */
                    uint64_t far = 0;
                    for (uint32_t q = 0; q < nlive; q++) {
                        tp__victim_score sq = score_horizon(NULL, a.b[live[q]].owner);
                        if (!sq.pinned && sq.next_use > far) far = sq.next_use;
                    }
                    ASSERT_EQ(score_horizon(NULL, wv[0]).next_use, far);
                    for (uint32_t q = 0; q < nvw; q++) {
                        tp__victim_score sq = score_horizon(NULL, wv[q]);
                        CHECK(!sq.pinned);
                        if (q) CHECK(scores[wv[q - 1]].next_use >= sq.next_use); /* largest first */
                    }
                } else {
                    ASSERT_EQ(fb, fnw);
                    if (fb) ASSERT_EQ(wa, na);
                }
            }
            /* a live block's value is read: its next use moves; sometimes twice before a search,
             * the second time back to where it was */
            if (nlive && rnd() % 2) {
                uint32_t b = live[rnd() % nlive], o = a.b[b].owner;
                uint64_t was = scores[o].next_use;
                scores[o].next_use = rnd() % 8 == 0 ? UINT64_MAX : 1 + rnd() % 50;
                set_key(&a, b, scores[o].pinned ? 0 : scores[o].next_use);
                if (rnd() % 3 == 0) {
                    scores[o].next_use = rnd() % 2 ? was : 1 + rnd() % 50;
                    set_key(&a, b, scores[o].pinned ? 0 : scores[o].next_use);
                }
            }
            scores[op].pinned = rnd() % 6 == 0;
            scores[op].next_use = rnd() % 8 == 0 ? UINT64_MAX : 1 + rnd() % 50; /* ties on purpose */
            scores[op].cost = rnd() % 3 ? size : 0;
            int take = fl && nlive < 512 && rnd() % 5 < 3;
            if (take) {
                uint64_t at = rnd() % 2 ? lo : old;
                uint32_t b = tp__alloc_take(&a, at, size, (uint32_t)op, nop_rel, NULL);
                CHECK(b != TP__NONE);
                ASSERT_EQ(a.b[b].start, at);
                set_key(&a, b, scores[op].pinned ? 0 : scores[op].next_use);
                live[nlive++] = b;
            } else if (nlive) {
                uint32_t k = (uint32_t)(rnd() % nlive);
                tp__alloc_release(&a, live[k], (uint32_t)(rnd() % 4), (uint64_t)op + 1);
                live[k] = live[--nlive];
            }
            uint64_t used = 0, covered = 0;
            for (uint32_t i = a.head; i != TP__NONE; i = a.b[i].next) {
                ASSERT_EQ(a.b[i].start, covered);
                covered += a.b[i].size;
                if (a.b[i].owner != TP__NONE) used += a.b[i].size;
            }
            ASSERT_EQ(covered, cap);
            ASSERT_EQ(used, a.used);
            CHECK(check_indexes(&a));
        }
        tp__alloc_free(&a);
    }
}

/* Keys written between searches wait in a list, which is flushed at the next search or when it
 * holds two entries per block slot: many takes, key changes and releases with no search keep
 * it bounded, and the search that follows sees every live block's last key. */
TEST(alloc_keys_between_searches)
{
    tp__alloc a;
    CHECK(tp__alloc_init(&a, 1 << 16));
    uint32_t live[64], nlive = 0;
    for (int op = 0; op < 2999; op++) {
        uint64_t size = 16 + rnd() % 1000, at;
        if (nlive < 64 && tp__alloc_find(&a, size, TP__FIT_LOWEST, &at) && rnd() % 2) {
            uint32_t b = tp__alloc_take(&a, at, size, (uint32_t)op, nop_rel, NULL);
            CHECK(b != TP__NONE);
            scores[op] = (tp__victim_score){0, 1 + rnd() % 50, size};
            set_key(&a, b, scores[op].next_use);
            live[nlive++] = b;
        } else if (nlive) {
            uint32_t k = (uint32_t)(rnd() % nlive);
            if (rnd() % 2) { /* read: the key moves, sometimes twice (back to where it was) */
                uint32_t o = a.b[live[k]].owner;
                uint64_t was = scores[o].next_use;
                scores[o].next_use = 1 + rnd() % 50;
                set_key(&a, live[k], scores[o].next_use);
                if (rnd() % 3 == 0) {
                    scores[o].next_use = rnd() % 2 ? was : 1 + rnd() % 50;
                    set_key(&a, live[k], scores[o].next_use);
                }
            } else {
                tp__alloc_release(&a, live[k], 0, (uint64_t)op + 1);
                live[k] = live[--nlive];
            }
        }
        CHECK(a.ndirty <= 2 * a.capb);
        if (op % 500 == 499) { /* a search now and then: the index then holds exactly the last keys */
            uint64_t wa = 0;
            uint32_t wv[1100], nvw = 0;
            horizon = 0;
            tp__alloc_find_window_keyed(&a, 1 + rnd() % (1 << 16), 0, 0, score_horizon, NULL, &wa, wv, &nvw);
            CHECK(check_bykey(&a, live, nlive, keyof));
        }
    }
    CHECK(nlive > 0);
    horizon = 0;
    for (uint64_t size = 64; size <= (1 << 16); size *= 2) {
        uint64_t wa = 0, na = 0;
        uint32_t wv[1100], nvw = 0;
        int fn;
        int fk = tp__alloc_find_window_keyed(&a, size, 0, 0, score_horizon, NULL, &wa, wv, &nvw);
        CHECK(same_as_naive(&a, size, score_horizon, fk, wa, wv, nvw, &fn, &na));
        CHECK(check_bykey(&a, live, nlive, keyof));
    }
    ASSERT_EQ(a.ndirty, 0);
    tp__alloc_free(&a);
}
