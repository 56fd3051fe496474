/* alloc.h - the planner's simulated allocator (internal).
 *
 * One allocator manages the address range [0, capacity) of a device or of host memory. It
 * keeps an address-ordered list of blocks: occupied blocks name the value they hold; free
 * blocks ("segments") remember the release list of the vertices that must finish before
 * their bytes may be written again, and when they were freed. Adjacent free segments form
 * one free run for fitting (that is the merge), but each keeps its own release list, so an
 * allocation depends only on the vertices that used the bytes it actually overlaps.
 *
 * Nothing here knows about MemGraphs: release lists are opaque heads into the planner's
 * list pool, handed back through tp__alloc_take's callback. */
#ifndef TP__ALLOC_H
#define TP__ALLOC_H

#include <stdint.h>
#include <stddef.h>
#include "io/util.h"

#define TP__NONE UINT32_MAX

typedef struct tp__block {
    uint64_t start, size;
    uint32_t prev, next;  /* address order; TP__NONE at the ends */
    uint32_t owner;       /* occupied: the value; free: TP__NONE */
    uint32_t rel;         /* free: release-list head (TP__NONE: never used) */
    uint64_t freed_at;    /* free: release stamp (0: never used) */
    uint64_t key;         /* occupied, when keyed: its key in the by-key index */
    uint64_t want;        /* occupied, when dirty: the caller's eviction key (tp__alloc_set_key), not yet indexed */
    uint32_t sn;          /* free: its node in the segment index */
    uint8_t keyed;        /* 1 while the block is in the by-key index */
    uint8_t dirty;        /* 1 while it is in the list of keys to write (`want` differs or is new) */
} tp__block;

/* A treap (randomized balanced search tree) ordered by (k1, k2). The free-run indexes are
 * augmented with the largest span length in each subtree, so "the first span in key order that
 * holds size bytes" costs O(log B); the segment and key indexes are plain ordered sets. Nodes
 * live in one array and keep their index while they are in the tree; slot recycling through .l. */
typedef struct {
    uint64_t k1, k2, len, mx; /* key; span [start, start+len); largest len in the subtree */
    uint64_t start, aux;      /* span start; aux: block index (segments) or age (runs) */
    uint32_t l, r, pri;
} tp__tnode;

typedef struct {
    tp__tnode *n;
    uint32_t root, freel, cnt, cap, seed;
    int aug; /* 1: mx kept (free runs); 0: a plain ordered set (len and mx unused) */
} tp__treap;

/* find_window's per-block scratch, in address order */
typedef struct {
    uint64_t use, cpre; /* next use (UINT64_MAX: free, pinned or never); prefix of costs */
    uint32_t blk, ppre; /* block; prefix count of pinned blocks */
    int occ;
} tp__wscratch;

/* find_window_keyed's per-block scratch: union-find over the blocks taken as victims so far */
typedef struct {
    uint32_t mark, parent, first; /* mark: query stamp; first: a root's lowest element */
    uint64_t cs, ce;              /* a root's component [cs, ce) */
} tp__dsu;

typedef struct tp__alloc {
    uint64_t cap, used, peak;
    tp__treap segs;     /* free segments by start (aux: block index): the segment holding an address */
    tp__treap runs;     /* free runs by start (aux: run age): first fit */
    tp__treap aged;     /* free runs by (age, start): oldest fit */
    tp__block *b;
    size_t nb, capb;
    uint32_t head;      /* lowest block */
    uint32_t freelist;  /* recycled block slots, linked through .next */
    uint32_t nblocks;   /* blocks in the address list */
    tp__treap bykey;    /* keyed occupied blocks by (UINT64_MAX - key, block): largest key first */
    tp__wscratch *w;    /* find_window's scratch (owned) */
    size_t capw;
    tp__dsu *ds;        /* find_window_keyed's scratch (owned), capb entries */
    size_t capds;
    uint32_t dstamp;
    uint32_t *roots;    /* find_window_keyed: the components touched at a level (owned) */
    size_t caproots;
    uint32_t *dirty;    /* blocks whose key changed since the by-key index was last read (owned) */
    size_t ndirty, capdirty;
} tp__alloc;

typedef enum { TP__FIT_OLDEST, TP__FIT_LOWEST, TP__FIT_HIGHEST } tp__fit;

int tp__alloc_init(tp__alloc *a, uint64_t cap);
void tp__alloc_free(tp__alloc *a);

/* The planner's alignments: tp__align_of and TP__MAX_ALIGN (io/util.h). */

/* Finds an address for `size` bytes inside free runs, in O(log B) (B: blocks; OLDEST: plus at
 * most 2 TP__RUN_SEGS segment steps). LOWEST: first fit, the lowest aligned address. HIGHEST:
 * last fit, the highest aligned address (in the free run with the highest start that holds it,
 * against that run's end). OLDEST: the free run with the oldest age that can hold
 * `size` at its aligned start (then the lowest run), placed at that start or against its end,
 * whichever covers older bytes (the newest release stamp of the segments it covers, at most
 * TP__RUN_SEGS of them per end; ties: the start). A run's age is the newest release stamp of
 * the bytes it covers, kept conservatively: a run cut by a take keeps the age of the run it
 * was cut from; merged runs take the newest of their ages (0: never used). 1 if found. */
int tp__alloc_find(const tp__alloc *a, uint64_t size, tp__fit fit, uint64_t *addr);

/* OLDEST compares the ages of at most this many segments at either end of the run it picks. */
#define TP__RUN_SEGS 16

/* Makes room for k more blocks (a take creates at most 2): 0 on OOM. */
int tp__alloc_reserve(tp__alloc *a, size_t k);
/* Marks [addr, addr+size) (which must lie in free segments; size > 0) as holding `owner`;
 * calls on_rel(ctx, rel_head) once for each distinct release list of a segment it overlaps.
 * Returns the new block's index, or TP__NONE when no room for its blocks can be had (OOM) or
 * size is 0 (a block of no bytes would share its start with a neighbour, which the indexes
 * keyed by address cannot hold; the planner never asks: TaskGraph values have bytes). */
uint32_t tp__alloc_take(tp__alloc *a, uint64_t addr, uint64_t size, uint32_t owner,
                        void (*on_rel)(void *ctx, uint32_t rel), void *ctx);

/* Occupied block `blk` now holds `owner`'s value (an in-place update took it over). */
void tp__alloc_reown(tp__alloc *a, uint32_t blk, uint32_t owner);

/* Frees occupied block `blk`; its bytes must wait for release list `rel`. */
void tp__alloc_release(tp__alloc *a, uint32_t blk, uint32_t rel, uint64_t stamp);

/* Eviction scoring for one occupied block's owner: pinned blocks may not be evicted; the
 * window chosen maximizes the smallest next use, then minimizes the bytes to offload. */
typedef struct {
    int pinned;
    uint64_t next_use;   /* UINT64_MAX: never again */
    uint64_t cost;       /* bytes that would have to be offloaded */
} tp__victim_score;

/* Finds the best window for `size` bytes among non-pinned blocks, in O(B) with one score call
 * per occupied block. On success returns 1, the address, and the occupied blocks overlapping
 * [addr, addr+size) in victims[0..*nv-1] (the caller's array of at least a->nblocks + 1 entries,
 * also used as scratch). 0 also when scratch memory cannot be had. */
int tp__alloc_find_window(tp__alloc *a, uint64_t size,
                          tp__victim_score (*score)(void *ctx, uint32_t owner), void *ctx,
                          uint64_t *addr, uint32_t *victims, uint32_t *nv);

/* Sets occupied block `blk`'s eviction key (the caller's next use, 0 for never a victim). The
 * index takes it when it is next read (tp__alloc_find_window_keyed), in O(log B) per block
 * changed since; a keyed block leaves the index when it is released. */
void tp__alloc_set_key(tp__alloc *a, uint32_t blk, uint64_t key);

/* find_window's choice when a block is a victim exactly when it is keyed with key > `above` and
 * its next use is its key: the same window (largest smallest key, then smallest cost, then the
 * lowest address) and the same victims in address order, found from the largest keys down with
 * a union-find over address neighbours. O((k + 1) log B) where k is the number of keyed blocks
 * whose key is at least the chosen window's smallest key; one score call (for its cost) per
 * block of the components that fit. Unkeyed occupied blocks are never victims.
 * With budget > 0, once `budget` blocks (whole key levels) have been taken in and none fits,
 * returns 2 with those blocks' owners, largest keys first, in victims[0..*nv-1]: the planner
 * evicts the first (the furthest next use, as Belady would) and searches again, so every
 * O(budget log B) walk is paid for by one eviction. */
int tp__alloc_find_window_keyed(tp__alloc *a, uint64_t size, uint64_t above, uint32_t budget,
                                tp__victim_score (*score)(void *ctx, uint32_t owner), void *ctx,
                                uint64_t *addr, uint32_t *victims, uint32_t *nv);

#endif
