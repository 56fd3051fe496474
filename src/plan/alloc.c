/* alloc.c - simulated allocator: free runs with per-segment release lists (see alloc.h). */
#include <stdlib.h>
#include <string.h>
#include "plan/alloc.h"

uint64_t tp__align_of(uint64_t size)
{
    uint64_t a = size & (~size + 1); /* lowest set bit */
    return (a == 0 || a > TP__MAX_ALIGN) ? TP__MAX_ALIGN : a;
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
    if (a->capb - a->nb >= k) return 1;
    size_t nc = a->capb ? a->capb * 2 : 64;
    while (nc - a->nb < k) nc *= 2;
    tp__block *nbk = realloc(a->b, nc * sizeof *nbk);
    if (!nbk) return 0;
    a->b = nbk;
    a->capb = nc;
    return 1;
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
    x->prev = after;
    x->next = after == TP__NONE ? a->head : a->b[after].next;
    if (x->next != TP__NONE) a->b[x->next].prev = i;
    if (after == TP__NONE) a->head = i;
    else a->b[after].next = i;
    a->nblocks++;
    return i;
}

static void free_push(tp__alloc *a, uint32_t i)
{
    a->b[i].fprev = TP__NONE;
    a->b[i].fnext = a->fhead;
    if (a->fhead != TP__NONE) a->b[a->fhead].fprev = i;
    a->fhead = i;
}

static void free_unlink(tp__alloc *a, uint32_t i)
{
    tp__block *x = &a->b[i];
    if (x->fprev != TP__NONE) a->b[x->fprev].fnext = x->fnext;
    else a->fhead = x->fnext;
    if (x->fnext != TP__NONE) a->b[x->fnext].fprev = x->fprev;
}

int tp__alloc_init(tp__alloc *a, uint64_t cap)
{
    memset(a, 0, sizeof *a);
    a->cap = cap;
    a->head = TP__NONE;
    a->freelist = TP__NONE;
    a->fhead = TP__NONE;
    if (!tp__alloc_reserve(a, 2)) return 0;
    uint32_t i = insert_after(a, TP__NONE);
    a->b[i] = (tp__block){0, cap, TP__NONE, TP__NONE, TP__NONE, TP__NONE, TP__NONE, TP__NONE, 0};
    free_push(a, i);
    return 1;
}

void tp__alloc_free(tp__alloc *a)
{
    free(a->b);
    memset(a, 0, sizeof *a);
}

int tp__alloc_find(const tp__alloc *a, uint64_t size, tp__fit fit, uint64_t *addr)
{
    if (a->cap - a->used < size) return 0;
    uint64_t al = tp__align_of(size);
    int found = 0;
    uint64_t best_age = 0, best_addr = 0;
    for (uint32_t i = a->fhead; i != TP__NONE; i = a->b[i].fnext) {
        const tp__block *x = &a->b[i];
        uint64_t start = align_up(x->start, al);
        if (start + size < start) continue;
        uint64_t end = start + size, age = 0;
        int ok = 0;
        for (uint32_t j = i; j != TP__NONE; j = a->b[j].next) {
            const tp__block *y = &a->b[j];
            if (y->owner != TP__NONE) break;
            if (y->start + y->size > start && y->freed_at > age) age = y->freed_at;
            if (y->start + y->size >= end) {
                ok = 1;
                break;
            }
        }
        if (!ok) continue;
        if (fit == TP__FIT_LOWEST) age = start; /* first fit: the lowest start wins */
        if (!found || age < best_age || (age == best_age && start < best_addr)) {
            found = 1;
            best_age = age;
            best_addr = start;
        }
    }
    if (found) *addr = best_addr;
    return found;
}

uint32_t tp__alloc_take(tp__alloc *a, uint64_t addr, uint64_t size, uint32_t owner,
                        void (*on_rel)(void *ctx, uint32_t rel), void *ctx)
{
    if (!tp__alloc_reserve(a, 2)) return TP__NONE; /* out of memory: the only failure */
    uint64_t end = addr + size;
    /* find the free segment holding addr */
    uint32_t i = a->fhead;
    while (!(a->b[i].start <= addr && addr < a->b[i].start + a->b[i].size)) i = a->b[i].fnext;
    /* split off the part before addr */
    if (a->b[i].start < addr) {
        uint32_t j = insert_after(a, i); /* may move a->b: index, don't hold pointers */
        a->b[j].start = addr;
        a->b[j].size = a->b[i].start + a->b[i].size - addr;
        a->b[j].owner = TP__NONE;
        a->b[j].rel = a->b[i].rel;
        a->b[j].freed_at = a->b[i].freed_at;
        a->b[i].size = addr - a->b[i].start;
        free_push(a, j);
        i = j;
    }
    /* i starts at addr; consume segments until end */
    uint32_t prev_rel = TP__NONE;
    uint32_t first = i;
    uint32_t cur = i;
    for (;;) {
        if (a->b[cur].rel != TP__NONE && a->b[cur].rel != prev_rel) {
            on_rel(ctx, a->b[cur].rel);
            prev_rel = a->b[cur].rel;
        }
        uint64_t yend = a->b[cur].start + a->b[cur].size;
        if (yend > end) { /* keep the tail free */
            uint32_t t = insert_after(a, cur);
            a->b[t].start = end;
            a->b[t].size = yend - end;
            a->b[t].owner = TP__NONE;
            a->b[t].rel = a->b[cur].rel;
            a->b[t].freed_at = a->b[cur].freed_at;
            a->b[cur].size = end - a->b[cur].start;
            free_push(a, t);
            yend = end;
        }
        if (yend == end) break;
        cur = a->b[cur].next;
    }
    /* merge first..cur into `first`, which leaves the free list */
    while (a->b[first].next != TP__NONE && a->b[first].start + a->b[first].size < end) {
        uint32_t nx = a->b[first].next;
        a->b[first].size += a->b[nx].size;
        free_unlink(a, nx);
        drop_block(a, nx);
    }
    free_unlink(a, first);
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
    tp__block *x = &a->b[blk];
    a->used -= x->size;
    x->owner = TP__NONE;
    x->rel = rel;
    x->freed_at = stamp;
    free_push(a, blk);
    /* fold in a free neighbour that carries the same release list */
    if (x->next != TP__NONE) {
        tp__block *y = &a->b[x->next];
        if (y->owner == TP__NONE && y->rel == rel) {
            x->size += y->size;
            if (y->freed_at > x->freed_at) x->freed_at = y->freed_at;
            free_unlink(a, x->next);
            drop_block(a, x->next);
        }
    }
}

int tp__alloc_find_window(const tp__alloc *a, uint64_t size,
                          tp__victim_score (*score)(void *ctx, uint32_t owner), void *ctx,
                          uint64_t *addr, uint32_t *victims, uint32_t *nv)
{
    uint64_t al = tp__align_of(size);
    int found = 0;
    uint64_t best_use = 0, best_cost = 0, best_addr = 0;
    uint32_t best_first = TP__NONE;
    for (uint32_t i = a->head; i != TP__NONE; i = a->b[i].next) {
        uint64_t start = align_up(a->b[i].start, al);
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
    uint64_t end = best_addr + size;
    for (uint32_t j = best_first; j != TP__NONE && a->b[j].start < end; j = a->b[j].next)
        if (a->b[j].owner != TP__NONE) victims[(*nv)++] = a->b[j].owner;
    return 1;
}
