/* cache_internal.h - the tensor cache's record of a tensor, its eviction policies as a table
 * and the free runs of one device's range (internal; turnip/cache.h is the API).
 *
 * A policy is an order: before(a, b, now) says whether a goes out before b, among the
 * unpinned tensors resident on one device, at clock `now`. The core (cache.c) keeps those
 * tensors of each device in a binary heap by that order. A policy whose order changes as the
 * clock runs gives a group key such that tensors of one group keep their order (size: equal
 * bytes); the core then keeps one heap per group and device and, at each get that must evict,
 * orders only the groups' first tensors. A new policy is one file cache_NAME.c defining a
 * tp__cache_policy plus one entry in cache.c's table. Policies only read tensor records: they
 * call nothing in the core. */
#ifndef TP__CACHE_INTERNAL_H
#define TP__CACHE_INTERNAL_H

#include <stdint.h>
#include "turnip/cache.h"

#define TP__CNONE UINT32_MAX /* no index */

/* One tensor slot of the cache (its handle is its index + 1). */
typedef struct tp__ctensor {
    uint64_t bytes;    /* its size */
    uint64_t take;     /* what it takes in a range: bytes (at least 1) rounded up to the alignment */
    uint64_t offset;   /* in the device arena, when resident */
    uint64_t next;     /* hinted tick of its next get, TP_CACHE_NO_HINT when none */
    uint64_t last;     /* tick of its last get (0 before any) */
    uint64_t loadseq;  /* the cache's load counter when it was last loaded (fifo) */
    uint8_t *host;     /* the host copy, malloc'd, owned (NULL when the slot is free) */
    uint32_t id;       /* its handle */
    uint32_t pins;     /* pin count */
    uint32_t hpos;     /* index in its device's eviction heap (resident, unpinned), else TP__CNONE */
    uint32_t ppos;     /* index in the prefetch heap (resident nowhere, hinted), else TP__CNONE */
    uint32_t rprev, rnext; /* its device's resident list (indices), TP__CNONE at the ends */
    uint32_t pend;     /* index of its pending load (deferred), else TP__CNONE */
    uint32_t gid;      /* its group (policies with a group key), else 0 */
    int16_t device;    /* where it is resident, -1: nowhere */
    uint8_t dirty;     /* its device copy was written since it was loaded */
    uint8_t unused;    /* prefetched and not gotten since */
    uint8_t live;      /* the slot holds a tensor (0: on the free list, next slot in rnext) */
} tp__ctensor;

typedef struct tp__cache_policy {
    const char *name;  /* as in tp_cache_policy_names (static) */
    const char *help;  /* one line (static) */
    /* nonzero when a is evicted before b, at clock now; a strict total order (ties end on id) */
    int (*before)(const tp__ctensor *a, const tp__ctensor *b, uint64_t now);
    /* NULL: the order of two tensors never changes as the clock runs. Otherwise it may, and this
     * is a key with which it does not: tensors of equal key keep their order at every clock */
    uint64_t (*group)(const tp__ctensor *t);
    int prefetch;      /* 1: tp_cache_prefetch loads by hint (opts.prefetch applies) */
} tp__cache_policy;

/* ---- the free runs of one device's range (cache_range.c) ---------------------------------
 * A treap of the free runs keyed by address, each node holding the largest run of its
 * subtree, so the highest run of at least n bytes, a run's neighbours and the largest run are
 * found in O(log runs). Runs are coalesced on give. Nodes come from the range's own pool:
 * tp__range_reserve before taking makes every later take and give succeed without allocating. */
typedef struct tp__run {
    uint64_t off, len, maxlen; /* the run [off, off+len); maxlen: the longest in its subtree */
    uint32_t prio;             /* heap priority (random) */
    uint32_t l, r;             /* children, TP__CNONE when none; l: free-list link in the pool */
} tp__run;

typedef struct tp__range {
    uint64_t lo, hi;    /* the range [lo, hi) */
    uint64_t free;      /* bytes in runs */
    uint32_t nruns;     /* runs */
    uint32_t root;      /* TP__CNONE when nothing is free */
    tp__run *node;      /* the pool (owned) */
    uint32_t nnode, freelist;
    size_t cap;
    uint64_t seed;      /* priorities */
} tp__range;

/* An empty range [lo, hi) (lo < hi), all free: 1, or 0 on out of memory. */
int tp__range_init(tp__range *r, uint64_t lo, uint64_t hi);
void tp__range_free(tp__range *r);
/* Room for `runs` runs in the pool (runs never exceed the blocks taken + 1): 0 on out of memory. */
int tp__range_reserve(tp__range *r, uint32_t runs);
/* Takes n bytes at the top of the highest free run of at least n: 1 and *off, or 0 (nothing
 * changed) when no run holds n. */
int tp__range_take(tp__range *r, uint64_t n, uint64_t *off);
/* Gives back [off, off+n) (taken before), merging it with free neighbours. */
void tp__range_give(tp__range *r, uint64_t off, uint64_t n);
/* The longest free run (0 when nothing is free). */
uint64_t tp__range_largest(const tp__range *r);

#endif
