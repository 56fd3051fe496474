/* cache_range.c - the free runs of one device's range for the tensor cache (cache_internal.h).
 *
 * Design. The cache places tensors first-fit from the top: in the highest free run that holds
 * them, at its top end. A sorted list of runs would make that, and the merge of a freed block
 * with its neighbours, a walk over every run; with 10^4 tensors on a device that walk dominates.
 * So the runs are a treap keyed by address (random priorities: expected depth O(log runs)),
 * each node also holding the longest run of its subtree: "the highest run of at least n" is one
 * descent that goes right whenever the right subtree has such a run. Insert and erase are
 * split and merge. Nodes live in the range's own pool (indices, not pointers), reserved ahead
 * by the caller so that giving a block back never allocates and so never fails. */
#include <stdlib.h>
#include <string.h>
#include "exec/cache_internal.h"
#include "io/util.h"

static uint64_t maxlen(const tp__range *r, uint32_t t)
{
    return t == TP__CNONE ? 0 : r->node[t].maxlen;
}

static void update(tp__range *r, uint32_t t)
{
    tp__run *x = &r->node[t];
    uint64_t m = x->len, a = maxlen(r, x->l), b = maxlen(r, x->r);
    x->maxlen = m > a ? (m > b ? m : b) : (a > b ? a : b);
}

/* splits t into keys < key (*a) and keys >= key (*b) */
static void run_split(tp__range *r, uint32_t t, uint64_t key, uint32_t *a, uint32_t *b)
{
    if (t == TP__CNONE) {
        *a = *b = TP__CNONE;
        return;
    }
    if (r->node[t].off < key) {
        run_split(r, r->node[t].r, key, &r->node[t].r, b);
        *a = t;
    } else {
        run_split(r, r->node[t].l, key, a, &r->node[t].l);
        *b = t;
    }
    update(r, t);
}

/* every key of a below every key of b */
static uint32_t run_merge(tp__range *r, uint32_t a, uint32_t b)
{
    if (a == TP__CNONE) return b;
    if (b == TP__CNONE) return a;
    if (r->node[a].prio > r->node[b].prio) {
        r->node[a].r = run_merge(r, r->node[a].r, b);
        update(r, a);
        return a;
    }
    r->node[b].l = run_merge(r, a, r->node[b].l);
    update(r, b);
    return b;
}

static uint32_t node_new(tp__range *r, uint64_t off, uint64_t len)
{
    uint32_t i = r->freelist;
    if (i != TP__CNONE) r->freelist = r->node[i].l;
    else i = r->nnode++; /* room made by tp__range_reserve */
    r->seed += 0x9E3779B97F4A7C15ull;
    tp__run *x = &r->node[i];
    x->off = off;
    x->len = x->maxlen = len;
    x->prio = (uint32_t)(tp__mix64(r->seed) >> 32);
    x->l = x->r = TP__CNONE;
    return i;
}

static void node_drop(tp__range *r, uint32_t i)
{
    r->node[i].l = r->freelist;
    r->freelist = i;
}

static void insert(tp__range *r, uint64_t off, uint64_t len)
{
    uint32_t a, b;
    run_split(r, r->root, off, &a, &b);
    r->root = run_merge(r, run_merge(r, a, node_new(r, off, len)), b);
    r->nruns++;
    r->free += len;
}

/* removes the run that starts at off (it exists) */
static void erase(tp__range *r, uint64_t off)
{
    uint32_t a, b, m, c;
    run_split(r, r->root, off, &a, &b);
    run_split(r, b, off + 1, &m, &c);
    r->free -= r->node[m].len;
    node_drop(r, m);
    r->root = run_merge(r, a, c);
    r->nruns--;
}

int tp__range_init(tp__range *r, uint64_t lo, uint64_t hi)
{
    memset(r, 0, sizeof *r);
    r->lo = lo;
    r->hi = hi;
    r->root = r->freelist = TP__CNONE;
    r->seed = lo ^ (hi << 17);
    if (!tp__range_reserve(r, 4)) return 0;
    insert(r, lo, hi - lo);
    return 1;
}

void tp__range_free(tp__range *r)
{
    free(r->node);
    memset(r, 0, sizeof *r);
}

int tp__range_reserve(tp__range *r, uint32_t runs)
{
    /* live nodes never exceed the runs, so a pool of `runs` slots (free list or past nnode) does */
    return TP__GROW(r->node, r->cap, runs);
}

int tp__range_take(tp__range *r, uint64_t n, uint64_t *off)
{
    uint32_t t = r->root;
    if (maxlen(r, t) < n || n == 0) return 0;
    for (;;) { /* maxlen(t) >= n holds */
        const tp__run *x = &r->node[t];
        if (maxlen(r, x->r) >= n) t = x->r;
        else if (x->len >= n) break;
        else t = x->l;
    }
    uint64_t o = r->node[t].off, len = r->node[t].len;
    erase(r, o);
    if (len > n) insert(r, o, len - n);
    *off = o + len - n;
    return 1;
}

/* the run with the greatest start below key / the least start above key, TP__CNONE if none */
static uint32_t below(const tp__range *r, uint64_t key)
{
    uint32_t t = r->root, best = TP__CNONE;
    while (t != TP__CNONE)
        if (r->node[t].off < key) {
            best = t;
            t = r->node[t].r;
        } else {
            t = r->node[t].l;
        }
    return best;
}

static uint32_t run_above(const tp__range *r, uint64_t key)
{
    uint32_t t = r->root, best = TP__CNONE;
    while (t != TP__CNONE)
        if (r->node[t].off > key) {
            best = t;
            t = r->node[t].l;
        } else {
            t = r->node[t].r;
        }
    return best;
}

void tp__range_give(tp__range *r, uint64_t off, uint64_t n)
{
    uint64_t lo = off, hi = off + n;
    uint32_t p = below(r, off);
    if (p != TP__CNONE && r->node[p].off + r->node[p].len == off) {
        lo = r->node[p].off;
        erase(r, lo);
    }
    uint32_t s = run_above(r, off);
    if (s != TP__CNONE && r->node[s].off == hi) {
        hi += r->node[s].len;
        erase(r, r->node[s].off);
    }
    insert(r, lo, hi - lo);
}

uint64_t tp__range_largest(const tp__range *r)
{
    return maxlen(r, r->root);
}
