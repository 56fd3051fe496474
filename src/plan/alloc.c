/* alloc.c - simulated allocator: free runs with per-segment release lists (see alloc.h).
 *
 * Three treaps index the free space so that fitting and taking cost O(log B): free segments
 * by address (which segment holds an address), free runs by address (first fit) and free runs
 * by (age, address) (oldest fit). The run indexes are augmented with the largest span in a
 * subtree, and a fit is the first node in key order whose span holds the aligned request.
 * Where a take or release keeps a node's place in the key order (a run cut at one end, a run
 * grown by a released block, a segment handing its node to its tail or to the block freed
 * before it), the node is rewritten in place instead of erased and inserted again. A fourth
 * treap orders occupied blocks by eviction key; key changes are written to it only when it is
 * read. */
#include <stdlib.h>
#include <string.h>
#include "io/util.h"
#include "plan/alloc.h"

/* ---- treap ----
 * runs and aged keep the largest span in each subtree (aug 1); segs and bykey are plain
 * ordered sets (aug 0: len and mx stay 0 and are never mended). */

static int key_lt(const tp__tnode *x, uint64_t k1, uint64_t k2)
{
    return x->k1 < k1 || (x->k1 == k1 && x->k2 < k2);
}

static void t_upd(tp__tnode *n, uint32_t t)
{
    uint64_t m = n[t].len;
    if (n[t].l != TP__NONE && n[n[t].l].mx > m) m = n[n[t].l].mx;
    if (n[t].r != TP__NONE && n[n[t].r].mx > m) m = n[n[t].r].mx;
    n[t].mx = m;
}

/* l: keys < (k1, k2); r: the rest */
static void t_split(tp__tnode *n, int aug, uint32_t t, uint64_t k1, uint64_t k2, uint32_t *l, uint32_t *r)
{
    if (t == TP__NONE) {
        *l = *r = TP__NONE;
        return;
    }
    if (key_lt(&n[t], k1, k2)) {
        t_split(n, aug, n[t].r, k1, k2, &n[t].r, r);
        *l = t;
    } else {
        t_split(n, aug, n[t].l, k1, k2, l, &n[t].l);
        *r = t;
    }
    if (aug) t_upd(n, t);
}

static uint32_t t_merge(tp__tnode *n, int aug, uint32_t a, uint32_t b)
{
    if (a == TP__NONE) return b;
    if (b == TP__NONE) return a;
    if (n[a].pri > n[b].pri) {
        n[a].r = t_merge(n, aug, n[a].r, b);
        if (aug) t_upd(n, a);
        return a;
    }
    n[b].l = t_merge(n, aug, a, n[b].l);
    if (aug) t_upd(n, b);
    return b;
}

static int t_reserve(tp__treap *T, size_t need)
{
    if (T->cap >= need) return 1;
    if (need > UINT32_MAX - 1) return 0;
    tp__tnode *nn = realloc(T->n, need * sizeof *nn);
    if (!nn) return 0;
    T->n = nn;
    T->cap = (uint32_t)need;
    return 1;
}

/* x into the subtree t: down the keys until x's priority wins, then t splits under it */
static uint32_t t_ins(tp__tnode *n, int aug, uint32_t t, uint32_t x)
{
    if (t == TP__NONE) return x;
    if (n[x].pri > n[t].pri) {
        t_split(n, aug, t, n[x].k1, n[x].k2, &n[x].l, &n[x].r);
        if (aug) t_upd(n, x);
        return x;
    }
    if (key_lt(&n[t], n[x].k1, n[x].k2)) n[t].r = t_ins(n, aug, n[t].r, x);
    else n[t].l = t_ins(n, aug, n[t].l, x);
    if (aug) t_upd(n, t);
    return t;
}

/* room was made by tp__alloc_reserve: a treap never holds more nodes than there are blocks.
 * Returns the node, whose index stays its own until it is erased. */
static uint32_t t_insert(tp__treap *T, uint64_t k1, uint64_t k2, uint64_t start, uint64_t len, uint64_t aux)
{
    uint32_t x;
    if (T->freel != TP__NONE) {
        x = T->freel;
        T->freel = T->n[x].l;
    } else {
        x = T->cnt++;
    }
    T->seed ^= T->seed << 13;
    T->seed ^= T->seed >> 17;
    T->seed ^= T->seed << 5;
    T->n[x] = (tp__tnode){k1, k2, len, len, start, aux, TP__NONE, TP__NONE, T->seed};
    T->root = t_ins(T->n, T->aug, T->root, x);
    return x;
}

/* the subtree t without key (k1, k2): its node is replaced by the merge of its children */
static uint32_t t_del(tp__treap *T, uint32_t t, uint64_t k1, uint64_t k2)
{
    tp__tnode *n = T->n;
    if (t == TP__NONE) return t;
    if (n[t].k1 == k1 && n[t].k2 == k2) {
        uint32_t m = t_merge(n, T->aug, n[t].l, n[t].r);
        n[t].l = T->freel;
        T->freel = t;
        return m;
    }
    if (key_lt(&n[t], k1, k2)) n[t].r = t_del(T, n[t].r, k1, k2);
    else n[t].l = t_del(T, n[t].l, k1, k2);
    if (T->aug) t_upd(n, t);
    return t;
}

/* In an augmented treap, the node keyed (k1, k2) below t takes key (n1, n2), start, len and
 * aux in place; the caller keeps the order (no other key lies between the old key and the new
 * one). The subtree maxima are mended on the way back up as long as they change. Returns
 * whether t's maximum changed. */
static int t_set(tp__tnode *n, uint32_t t, uint64_t k1, uint64_t k2, uint64_t n1, uint64_t n2, uint64_t start,
                 uint64_t len, uint64_t aux)
{
    if (t == TP__NONE) return 0;
    if (n[t].k1 == k1 && n[t].k2 == k2) {
        n[t].k1 = n1;
        n[t].k2 = n2;
        n[t].start = start;
        n[t].len = len;
        n[t].aux = aux;
    } else if (!t_set(n, key_lt(&n[t], k1, k2) ? n[t].r : n[t].l, k1, k2, n1, n2, start, len, aux)) {
        return 0;
    }
    uint64_t old = n[t].mx;
    t_upd(n, t);
    return n[t].mx != old;
}

static void t_erase(tp__treap *T, uint64_t k1, uint64_t k2)
{
    T->root = t_del(T, T->root, k1, k2);
}

/* the node with the largest key (k1, 0) <= (k1, 0) */
static uint32_t t_pred(const tp__treap *T, uint64_t k1)
{
    uint32_t t = T->root, best = TP__NONE;
    while (t != TP__NONE) {
        if (T->n[t].k1 <= k1) {
            best = t;
            t = T->n[t].r;
        } else {
            t = T->n[t].l;
        }
    }
    return best;
}

static uint64_t align_up(uint64_t x, uint64_t a);

/* the first node in key order whose span holds `size` bytes at its start aligned to al */
static uint32_t t_first_fit(const tp__tnode *n, uint32_t t, uint64_t size, uint64_t al)
{
    if (t == TP__NONE || n[t].mx < size) return TP__NONE;
    uint32_t r = t_first_fit(n, n[t].l, size, al);
    if (r != TP__NONE) return r;
    if (n[t].len >= size) {
        uint64_t st = align_up(n[t].start, al);
        if (st >= n[t].start && st - n[t].start <= n[t].len - size) return t;
    }
    return t_first_fit(n, n[t].r, size, al);
}

/* The free run with the highest start in t's subtree that holds size bytes at an address
 * aligned to al (its end, rounded down). */
static uint32_t t_last_fit(const tp__tnode *n, uint32_t t, uint64_t size, uint64_t al)
{
    if (t == TP__NONE || n[t].mx < size) return TP__NONE;
    uint32_t r = t_last_fit(n, n[t].r, size, al);
    if (r != TP__NONE) return r;
    if (n[t].len >= size && ((n[t].start + n[t].len - size) & ~(al - 1)) >= n[t].start) return t;
    return t_last_fit(n, n[t].l, size, al);
}

/* ---- runs ---- */

static void run_add(tp__alloc *a, uint64_t start, uint64_t len, uint64_t age)
{
    t_insert(&a->runs, start, 0, start, len, age);
    t_insert(&a->aged, age, start, start, len, 0);
}

static void run_del(tp__alloc *a, uint32_t node)
{
    tp__tnode x = a->runs.n[node];
    t_erase(&a->runs, x.k1, 0);
    t_erase(&a->aged, x.aux, x.start);
}

/* Run `node` (of runs) becomes [start, start + len) of the same age, in place in both indexes:
 * the caller keeps the address order (no other run starts between its old start and the new). */
static void run_set(tp__alloc *a, uint32_t node, uint64_t start, uint64_t len)
{
    tp__tnode x = a->runs.n[node];
    t_set(a->runs.n, a->runs.root, x.k1, 0, start, 0, start, len, x.aux);
    t_set(a->aged.n, a->aged.root, x.aux, x.start, x.aux, start, start, len, 0);
}

/* Run `node` becomes [start, start + len) of age `age`: in place by address (the caller keeps
 * the order), moved in the index by age. */
static void run_regrow(tp__alloc *a, uint32_t node, uint64_t start, uint64_t len, uint64_t age)
{
    tp__tnode x = a->runs.n[node];
    t_set(a->runs.n, a->runs.root, x.k1, 0, start, 0, start, len, age);
    t_erase(&a->aged, x.aux, x.start);
    t_insert(&a->aged, age, start, start, len, 0);
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) & ~(a - 1);
}

static uint32_t new_block(tp__alloc *a)
{
    if (a->freelist != TP__NONE) {
        uint32_t i = a->freelist;
        a->freelist = a->b[i].next;
        return i;
    }
    return (uint32_t)a->nb++; /* room made by tp__alloc_reserve */
}

int tp__alloc_reserve(tp__alloc *a, size_t k)
{
    if (a->capb - a->nb >= k && a->segs.cap >= a->capb && a->runs.cap >= a->capb && a->aged.cap >= a->capb &&
        a->bykey.cap >= a->capb)
        return 1;
    size_t nc = a->capb ? a->capb : 64;
    while (nc - a->nb < k) nc *= 2;
    if (nc > UINT32_MAX - 1) return 0;
    if (nc != a->capb) {
        tp__block *nbk = realloc(a->b, nc * sizeof *nbk);
        if (!nbk) return 0;
        a->b = nbk;
        a->capb = nc;
    }
    return t_reserve(&a->segs, nc) && t_reserve(&a->runs, nc) && t_reserve(&a->aged, nc) && t_reserve(&a->bykey, nc);
}

static void drop_block(tp__alloc *a, uint32_t i)
{
    tp__block *x = &a->b[i];
    if (x->prev != TP__NONE) a->b[x->prev].next = x->next;
    else a->head = x->next;
    if (x->next != TP__NONE) a->b[x->next].prev = x->prev;
    x->next = a->freelist;
    a->freelist = i;
    a->nblocks--;
}

/* inserts a new block after `after` (TP__NONE: at the head) */
static uint32_t insert_after(tp__alloc *a, uint32_t after)
{
    uint32_t i = new_block(a);
    tp__block *x = &a->b[i];
    x->keyed = 0;
    x->dirty = 0;
    x->prev = after;
    x->next = after == TP__NONE ? a->head : a->b[after].next;
    if (x->next != TP__NONE) a->b[x->next].prev = i;
    if (after == TP__NONE) a->head = i;
    else a->b[after].next = i;
    a->nblocks++;
    return i;
}

/* the segment index: call with the block's start set */
static void free_push(tp__alloc *a, uint32_t i)
{
    a->b[i].sn = t_insert(&a->segs, a->b[i].start, 0, a->b[i].start, 0, i);
}

/* free segment `from` leaves the segment index and `to` takes its node, in place: the caller
 * keeps the order (no free segment starts between their starts) */
static void free_handover(tp__alloc *a, uint32_t from, uint32_t to)
{
    uint32_t x = a->b[from].sn;
    a->segs.n[x].k1 = a->segs.n[x].start = a->b[to].start;
    a->segs.n[x].aux = to;
    a->b[to].sn = x;
}

static void free_unlink(tp__alloc *a, uint32_t i)
{
    t_erase(&a->segs, a->b[i].start, 0);
}

int tp__alloc_init(tp__alloc *a, uint64_t cap)
{
    memset(a, 0, sizeof *a);
    a->cap = cap;
    a->head = TP__NONE;
    a->freelist = TP__NONE;
    tp__treap *ts[4] = {&a->segs, &a->runs, &a->aged, &a->bykey};
    for (int k = 0; k < 4; k++) {
        ts[k]->root = ts[k]->freel = TP__NONE;
        ts[k]->seed = 0x9e3779b9u + (uint32_t)k;
        ts[k]->aug = ts[k] == &a->runs || ts[k] == &a->aged;
    }
    if (!tp__alloc_reserve(a, 2)) {
        tp__alloc_free(a);
        return 0;
    }
    uint32_t i = insert_after(a, TP__NONE);
    a->b[i] = (tp__block){.start = 0, .size = cap, .prev = TP__NONE, .next = TP__NONE, .owner = TP__NONE, .rel = TP__NONE, .sn = TP__NONE};
    free_push(a, i);
    if (cap) run_add(a, 0, cap, 0);
    return 1;
}

void tp__alloc_free(tp__alloc *a)
{
    free(a->b);
    free(a->segs.n);
    free(a->runs.n);
    free(a->aged.n);
    free(a->bykey.n);
    free(a->w);
    free(a->ds);
    free(a->roots);
    free(a->dirty);
    memset(a, 0, sizeof *a);
}

/* The newest release stamp among the free segments that [st, en) covers, walking from the
 * segment holding st forward, or (back) from the one holding en's last byte backward;
 * UINT64_MAX past TP__RUN_SEGS segments. */
static uint64_t newest_covered(const tp__alloc *a, int back, uint64_t st, uint64_t en)
{
    uint64_t m = 0;
    uint32_t i = (uint32_t)a->segs.n[t_pred(&a->segs, back ? en - 1 : st)].aux;
    for (int n = 0; i != TP__NONE && a->b[i].start < en && a->b[i].start + a->b[i].size > st; n++) {
        if (n == TP__RUN_SEGS) return UINT64_MAX;
        if (a->b[i].freed_at > m) m = a->b[i].freed_at;
        i = back ? a->b[i].prev : a->b[i].next;
    }
    return m;
}

/* Where in free run [rs, re) (which holds `size` at its aligned start) an oldest fit goes: at its
 * start or against its end, whichever covers older bytes (the newest release stamp it covers;
 * ties: the start). Either leaves the rest of the run in one piece, but for less than one
 * alignment unit at its end when the end is unaligned. A run of age 0 (never used)
 * has nothing older than its start, nor does a start over bytes never used. */
static uint64_t oldest_in_run(const tp__alloc *a, uint64_t rs, uint64_t re, uint64_t age, uint64_t size, uint64_t al)
{
    uint64_t lo = align_up(rs, al), hi = (re - size) & ~(al - 1);
    if (hi <= lo || age == 0) return lo;
    uint64_t alo = newest_covered(a, 0, lo, lo + size);
    if (alo == 0) return lo;
    return newest_covered(a, 1, hi, hi + size) < alo ? hi : lo;
}

int tp__alloc_find(const tp__alloc *a, uint64_t size, tp__fit fit, uint64_t *addr)
{
    if (a->cap - a->used < size) return 0;
    uint64_t al = tp__align_of(size);
    if (fit == TP__FIT_HIGHEST) {
        uint32_t h = t_last_fit(a->runs.n, a->runs.root, size, al);
        if (h == TP__NONE) return 0;
        *addr = (a->runs.n[h].start + a->runs.n[h].len - size) & ~(al - 1);
        return 1;
    }
    const tp__treap *T = fit == TP__FIT_LOWEST ? &a->runs : &a->aged;
    uint32_t t = t_first_fit(T->n, T->root, size, al);
    if (t == TP__NONE) return 0;
    *addr = fit == TP__FIT_LOWEST ? align_up(T->n[t].start, al)
                                  : oldest_in_run(a, T->n[t].start, T->n[t].start + T->n[t].len, T->n[t].k1, size, al);
    return 1;
}

uint32_t tp__alloc_take(tp__alloc *a, uint64_t addr, uint64_t size, uint32_t owner,
                        void (*on_rel)(void *ctx, uint32_t rel), void *ctx)
{
    if (!size || !tp__alloc_reserve(a, 2)) return TP__NONE; /* no bytes (alloc.h), or out of memory */
    uint64_t end = addr + size;
    /* the run holding [addr, end) loses those bytes; its pieces keep its age and, in place,
     * its nodes where they stay in order */
    uint32_t rn = t_pred(&a->runs, addr);
    uint64_t rs = a->runs.n[rn].start, re = rs + a->runs.n[rn].len, rage = a->runs.n[rn].aux;
    if (rs < addr) {
        run_set(a, rn, rs, addr - rs);
        if (end < re) run_add(a, end, re - end, rage);
    } else if (end < re) {
        run_set(a, rn, end, re - end);
    } else {
        run_del(a, rn);
    }
    /* the free segment holding addr */
    uint32_t i = (uint32_t)a->segs.n[t_pred(&a->segs, addr)].aux;
    int indexed = 1; /* `first` has a node in segs (not a piece split off below) */
    /* split off the part before addr (which keeps its node) */
    if (a->b[i].start < addr) {
        uint32_t j = insert_after(a, i); /* may move a->b: index, don't hold pointers */
        a->b[j].start = addr;
        a->b[j].size = a->b[i].start + a->b[i].size - addr;
        a->b[j].owner = TP__NONE;
        a->b[j].rel = a->b[i].rel;
        a->b[j].freed_at = a->b[i].freed_at;
        a->b[i].size = addr - a->b[i].start;
        i = j;
        indexed = 0;
    }
    /* i starts at addr; consume segments until end */
    uint32_t prev_rel = TP__NONE;
    uint32_t first = i;
    uint32_t cur = i;
    uint32_t tail = TP__NONE;
    for (;;) {
        if (a->b[cur].rel != TP__NONE && a->b[cur].rel != prev_rel) {
            on_rel(ctx, a->b[cur].rel);
            prev_rel = a->b[cur].rel;
        }
        uint64_t yend = a->b[cur].start + a->b[cur].size;
        if (yend > end) { /* keep the tail free */
            tail = insert_after(a, cur);
            a->b[tail].start = end;
            a->b[tail].size = yend - end;
            a->b[tail].owner = TP__NONE;
            a->b[tail].rel = a->b[cur].rel;
            a->b[tail].freed_at = a->b[cur].freed_at;
            a->b[cur].size = end - a->b[cur].start;
            yend = end;
        }
        if (yend == end) break;
        cur = a->b[cur].next;
    }
    /* merge first..cur into `first`, which leaves the free list; the tail takes the node of
     * the last consumed segment (cur), whose start is the last one below end */
    while (a->b[first].next != TP__NONE && a->b[first].start + a->b[first].size < end) {
        uint32_t nx = a->b[first].next;
        a->b[first].size += a->b[nx].size;
        if (nx == cur && tail != TP__NONE) free_handover(a, nx, tail);
        else free_unlink(a, nx);
        drop_block(a, nx);
    }
    if (first == cur && tail != TP__NONE) {
        if (indexed) free_handover(a, first, tail);
        else free_push(a, tail);
    } else if (indexed) {
        free_unlink(a, first);
    }
    tp__block *f = &a->b[first];
    f->owner = owner;
    f->rel = TP__NONE;
    f->freed_at = 0;
    a->used += size;
    if (a->used > a->peak) a->peak = a->used;
    return first;
}

void tp__alloc_reown(tp__alloc *a, uint32_t blk, uint32_t owner)
{
    a->b[blk].owner = owner;
}

void tp__alloc_release(tp__alloc *a, uint32_t blk, uint32_t rel, uint64_t stamp)
{
    if (a->b[blk].keyed) {
        t_erase(&a->bykey, UINT64_MAX - a->b[blk].key, blk);
        a->b[blk].keyed = 0;
    }
    a->b[blk].dirty = 0;
    tp__block *x = &a->b[blk];
    /* the run: this block plus the free runs it touches, kept in the node of the run before it
     * (or else after it) by address; by age it moves */
    uint64_t rs = x->start, re = x->start + x->size, age = stamp;
    uint32_t pn = TP__NONE, nn = TP__NONE;
    if (x->prev != TP__NONE && a->b[x->prev].owner == TP__NONE) {
        pn = t_pred(&a->runs, x->start - 1);
        rs = a->runs.n[pn].start;
        if (a->runs.n[pn].aux > age) age = a->runs.n[pn].aux;
    }
    if (x->next != TP__NONE && a->b[x->next].owner == TP__NONE) {
        nn = t_pred(&a->runs, re);
        re = a->runs.n[nn].start + a->runs.n[nn].len;
        if (a->runs.n[nn].aux > age) age = a->runs.n[nn].aux;
    }
    if (pn != TP__NONE) {
        if (nn != TP__NONE) run_del(a, nn);
        run_regrow(a, pn, rs, re - rs, age);
    } else if (nn != TP__NONE) {
        run_regrow(a, nn, rs, re - rs, age);
    } else if (re > rs) {
        run_add(a, rs, re - rs, age);
    }
    a->used -= x->size;
    x->owner = TP__NONE;
    x->rel = rel;
    x->freed_at = stamp;
    /* fold in a free neighbour that carries the same release list (its node becomes this
     * block's); else this block enters the segment index */
    if (x->next != TP__NONE && a->b[x->next].owner == TP__NONE && a->b[x->next].rel == rel) {
        uint32_t y = x->next;
        x->size += a->b[y].size;
        if (a->b[y].freed_at > x->freed_at) x->freed_at = a->b[y].freed_at;
        free_handover(a, y, blk);
        drop_block(a, y);
    } else {
        free_push(a, blk);
    }
}

/* One pass over the blocks in address order with two pointers: candidate i (a block's aligned
 * start) covers blocks [i, j], j never moves back; the smallest next use over the window comes
 * from a monotone deque, the cost and the pinned count from prefix sums. Each owner is scored
 * once. The same candidates and tie-breaks as a scan per candidate, in O(B). */
int tp__alloc_find_window(tp__alloc *a, uint64_t size,
                          tp__victim_score (*score)(void *ctx, uint32_t owner), void *ctx,
                          uint64_t *addr, uint32_t *victims, uint32_t *nv)
{
    size_t n = a->nblocks;
    if (!TP__GROW(a->w, a->capw, n + 1)) return 0; /* the caller sees "no window"; only under memory exhaustion */
    tp__wscratch *w = a->w;
    uint32_t *dq = victims; /* the caller's array of nblocks entries serves as the deque */
    size_t k = 0;
    uint64_t csum = 0;
    uint32_t psum = 0;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next, k++) {
        w[k].blk = i;
        w[k].use = UINT64_MAX;
        w[k].occ = a->b[i].owner != TP__NONE;
        w[k].cpre = csum;
        w[k].ppre = psum;
        if (w[k].occ) {
            tp__victim_score sc = score(ctx, a->b[i].owner);
            if (sc.pinned) psum++;
            else {
                w[k].use = sc.next_use;
                csum += sc.cost;
            }
        }
    }
    w[n].cpre = csum;
    w[n].ppre = psum;
    uint64_t al = tp__align_of(size);
    int found = 0;
    uint64_t best_use = 0, best_cost = 0, best_addr = 0;
    size_t best_first = 0;
    size_t j = 0, pushed = 0, qh = 0, qt = 0;
    for (size_t i = 0; i < n; i++) {
        const tp__block *x = &a->b[w[i].blk];
        uint64_t start = align_up(x->start, al);
        if (start < x->start || start >= x->start + x->size || start + size < start) continue;
        uint64_t end = start + size;
        if (end > a->cap) continue;
        /* the window [i, j]: j is the first block from i whose end reaches `end` */
        if (j < i) j = i;
        while (j < n && a->b[w[j].blk].start + a->b[w[j].blk].size < end) j++;
        if (j == n) break; /* cannot happen: the blocks cover [0, cap) */
        if (pushed < i) pushed = i;
        for (; pushed <= j; pushed++) {
            if (!w[pushed].occ || w[pushed].use == UINT64_MAX) continue; /* no bound on the minimum */
            while (qt > qh && w[dq[qt - 1]].use >= w[pushed].use) qt--;
            dq[qt++] = (uint32_t)pushed;
        }
        while (qh < qt && dq[qh] < i) qh++;
        if (w[j + 1].ppre != w[i].ppre) continue; /* a pinned block in the window */
        uint64_t use = qh < qt ? w[dq[qh]].use : UINT64_MAX, cost = w[j + 1].cpre - w[i].cpre;
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
    uint64_t end = best_addr + size;
    for (uint32_t q = w[best_first].blk; q != TP__NONE && a->b[q].start < end; q = a->b[q].next)
        if (a->b[q].owner != TP__NONE) victims[(*nv)++] = a->b[q].owner;
    return 1;
}

/* the block's key as the index holds it becomes the one it wants */
static void key_apply(tp__alloc *a, uint32_t blk)
{
    tp__block *x = &a->b[blk];
    x->dirty = 0;
    if (x->keyed) {
        if (x->key == x->want) return;
        t_erase(&a->bykey, UINT64_MAX - x->key, blk);
    }
    x->key = x->want;
    x->keyed = 1;
    t_insert(&a->bykey, UINT64_MAX - x->key, blk, 0, 0, blk); /* room: one node per block, reserved */
}

/* Keys are written to the index only when it is read (find_window_keyed): a value read many
 * times between two searches moves once, and one freed before the next search never. */
static void key_flush(tp__alloc *a)
{
    for (size_t k = 0; k < a->ndirty; k++)
        if (a->b[a->dirty[k]].dirty) key_apply(a, a->dirty[k]);
    a->ndirty = 0;
}

void tp__alloc_set_key(tp__alloc *a, uint32_t blk, uint64_t key)
{
    tp__block *x = &a->b[blk];
    x->want = key;
    if (x->dirty || (x->keyed && x->key == key)) return;
    /* the list holds at most two entries per block slot (stale ones of released slots are
     * skipped) before it is flushed; without memory for it the key is written at once */
    if (a->ndirty >= 2 * a->capb) key_flush(a);
    if (!TP__GROW(a->dirty, a->capdirty, a->ndirty + 1)) {
        key_apply(a, blk);
        return;
    }
    x->dirty = 1;
    a->dirty[a->ndirty++] = blk;
}

/* the node with the smallest key > (k1, k2), TP__NONE when none */
static uint32_t t_succ(const tp__treap *T, uint64_t k1, uint64_t k2)
{
    uint32_t t = T->root, best = TP__NONE;
    while (t != TP__NONE) {
        if (key_lt(&T->n[t], k1, k2) || (T->n[t].k1 == k1 && T->n[t].k2 == k2)) {
            t = T->n[t].r;
        } else {
            best = t;
            t = T->n[t].l;
        }
    }
    return best;
}

static uint32_t t_min(const tp__treap *T)
{
    uint32_t t = T->root;
    if (t == TP__NONE) return t;
    while (T->n[t].l != TP__NONE) t = T->n[t].l;
    return t;
}

static uint32_t ds_find(tp__dsu *ds, uint32_t x)
{
    while (ds[x].parent != x) {
        ds[x].parent = ds[ds[x].parent].parent;
        x = ds[x].parent;
    }
    return x;
}

static int ds_in(const tp__alloc *a, uint32_t x)
{
    return x != TP__NONE && a->b[x].owner != TP__NONE && a->ds[x].mark == a->dstamp;
}

/* the free run holding free block f: [*rs, *re), its first segment and the block after it */
static void run_of(const tp__alloc *a, uint32_t f, uint64_t *rs, uint64_t *re, uint32_t *first, uint32_t *after)
{
    uint32_t rn = t_pred(&a->runs, a->b[f].start);
    *rs = a->runs.n[rn].start;
    *re = *rs + a->runs.n[rn].len;
    *first = (uint32_t)a->segs.n[t_pred(&a->segs, *rs)].aux;
    *after = a->b[(uint32_t)a->segs.n[t_pred(&a->segs, *re - 1)].aux].next;
}

/* x joins the victims: its component takes in free runs and victims on either side */
static uint32_t ds_add(tp__alloc *a, uint32_t x)
{
    tp__dsu *ds = a->ds;
    ds[x] = (tp__dsu){a->dstamp, x, x, a->b[x].start, a->b[x].start + a->b[x].size};
    uint64_t rs, re;
    uint32_t first, after, p = a->b[x].prev, n = a->b[x].next;
    if (p != TP__NONE && a->b[p].owner == TP__NONE) {
        run_of(a, p, &rs, &re, &first, &after);
        ds[x].cs = rs;
        ds[x].first = first;
        p = a->b[first].prev;
    }
    if (ds_in(a, p)) {
        uint32_t r = ds_find(ds, p);
        ds[r].ce = ds[x].ce;
        ds[x].parent = r;
        x = r;
    }
    if (n != TP__NONE && a->b[n].owner == TP__NONE) {
        run_of(a, n, &rs, &re, &first, &after);
        ds[x].ce = re;
        n = after;
    }
    if (ds_in(a, n)) {
        uint32_t r = ds_find(ds, n);
        ds[x].ce = ds[r].ce;
        ds[r].parent = x;
    }
    return x;
}

/* Best window inside component [cs, ce) from element `e` (its lowest block): candidates at each
 * victim's and each free run's aligned start, cost by two pointers over the elements. */
static void scan_component(tp__alloc *a, uint32_t e, uint64_t ce, uint64_t size, uint64_t al,
                           tp__victim_score (*score)(void *ctx, uint32_t owner), void *ctx, int *found,
                           uint64_t *best_cost, uint64_t *best_addr, uint32_t *best_first)
{
    tp__wscratch *w = a->w; /* elements: blk; cpre: cost prefix; use: element end */
    size_t m = 0;
    uint64_t csum = 0, lim = ce < a->cap ? ce : a->cap;
    while (e != TP__NONE && a->b[e].start < ce) {
        w[m].blk = e;
        w[m].cpre = csum;
        if (a->b[e].owner != TP__NONE) {
            csum += score(ctx, a->b[e].owner).cost;
            w[m].use = a->b[e].start + a->b[e].size;
            e = a->b[e].next;
        } else {
            uint64_t rs, re;
            uint32_t first, after;
            run_of(a, e, &rs, &re, &first, &after);
            w[m].use = re;
            e = after;
        }
        m++;
    }
    w[m].cpre = csum;
    size_t j = 0;
    for (size_t i = 0; i < m; i++) {
        uint64_t s0 = a->b[w[i].blk].start, st = align_up(s0, al);
        if (st < s0 || st >= w[i].use) continue;
        if (st + size < st || st + size > lim) break; /* later candidates start higher */
        uint64_t end = st + size;
        if (j < i) j = i;
        while (w[j].use < end) j++;
        uint64_t cost = w[j + 1].cpre - w[i].cpre;
        if (!*found || cost < *best_cost || (cost == *best_cost && st < *best_addr)) {
            *found = 1;
            *best_cost = cost;
            *best_addr = st;
            *best_first = w[i].blk;
        }
    }
}

int tp__alloc_find_window_keyed(tp__alloc *a, uint64_t size, uint64_t above, uint32_t budget,
                                tp__victim_score (*score)(void *ctx, uint32_t owner), void *ctx,
                                uint64_t *addr, uint32_t *victims, uint32_t *nv)
{
    uint32_t taken = 0;
    if (a->capds < a->capb) {
        tp__dsu *ds = realloc(a->ds, a->capb * sizeof *ds);
        if (!ds) return 0;
        memset(ds + a->capds, 0, (a->capb - a->capds) * sizeof *ds);
        a->ds = ds;
        a->capds = a->capb;
    }
    if (!TP__GROW(a->w, a->capw, (size_t)a->nblocks + 1)) return 0;
    if (++a->dstamp == 0) { /* stamps wrapped: clear the marks once */
        for (size_t i = 0; i < a->capds; i++) a->ds[i].mark = 0;
        a->dstamp = 1;
    }
    key_flush(a);
    uint64_t al = tp__align_of(size);
    int found = 0;
    uint64_t best_cost = 0, best_addr = 0;
    uint32_t best_first = TP__NONE;
    /* a free run alone: the windows whose smallest key is unbounded, with cost 0 */
    uint32_t ff = t_first_fit(a->runs.n, a->runs.root, size, al);
    if (ff != TP__NONE && align_up(a->runs.n[ff].start, al) + size <= a->cap) {
        found = 1;
        best_addr = align_up(a->runs.n[ff].start, al);
        best_first = (uint32_t)a->segs.n[t_pred(&a->segs, a->runs.n[ff].start)].aux;
    }
    uint32_t t = t_min(&a->bykey);
    while (t != TP__NONE) {
        uint64_t key = UINT64_MAX - a->bykey.n[t].k1;
        if (key <= above || (found && key != UINT64_MAX)) break;
        /* one level: every block with this key joins, then the components it touched are tried */
        size_t nr = 0;
        while (t != TP__NONE && UINT64_MAX - a->bykey.n[t].k1 == key) {
            uint32_t x = (uint32_t)a->bykey.n[t].aux;
            if (!TP__GROW(a->roots, a->caproots, nr + 1)) return 0;
            a->roots[nr++] = ds_add(a, x);
            victims[taken++] = a->b[x].owner; /* in key order, for a search over budget */
            t = t_succ(&a->bykey, a->bykey.n[t].k1, a->bykey.n[t].k2);
        }
        for (size_t i = 0; i < nr; i++) {
            uint32_t r = ds_find(a->ds, a->roots[i]);
            if (a->ds[r].mark != a->dstamp) continue;
            a->ds[r].mark = a->dstamp + 1; /* tried at this level (restored below) */
            uint64_t st = align_up(a->ds[r].cs, al), lim = a->ds[r].ce < a->cap ? a->ds[r].ce : a->cap;
            if (st < a->ds[r].cs || st + size < st || st + size > lim) continue;
            scan_component(a, a->ds[r].first, a->ds[r].ce, size, al, score, ctx, &found, &best_cost, &best_addr,
                           &best_first);
        }
        for (size_t i = 0; i < nr; i++) a->ds[ds_find(a->ds, a->roots[i])].mark = a->dstamp;
        if (found) break;
        if (budget && taken >= budget && t != TP__NONE && UINT64_MAX - a->bykey.n[t].k1 > above) {
            *nv = taken; /* over budget: the caller evicts these and asks again */
            return 2;
        }
    }
    if (!found) return 0;
    *addr = best_addr;
    *nv = 0;
    uint64_t end = best_addr + size;
    for (uint32_t q = best_first; q != TP__NONE && a->b[q].start < end; q = a->b[q].next)
        if (a->b[q].owner != TP__NONE) victims[(*nv)++] = a->b[q].owner;
    return 1;
}
