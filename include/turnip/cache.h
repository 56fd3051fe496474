/* turnip/cache.h - a tensor cache over device memory (issue 12), in the manner of Ravenstore
 * (shared/papers/gpu-memory-harvesting-ravenstore.txt): create / get / put / destroy.
 *
 * Every tensor has a host copy owned by the cache. tp_cache_get pins it on a device: if it is not
 * resident there, the cache makes room in its range of that device's arena by evicting unpinned
 * tensors in its policy's order (writing a dirty one back to its host copy first), places it
 * first-fit from the top of the range (the caller's own planner fills from the bottom) and loads
 * its host copy; tp_cache_put unpins it, saying whether its device copy was written and when it
 * will be gotten next. Pinned tensors never move; an unpinned one may be evicted by any later
 * get or prefetch. Policies (a table; tp_cache_policy_names lists them):
 *   fifo     earliest loaded first
 *   lru      least recently gotten first
 *   size     the largest bytes x (clock - last get) first: large and cold (the report's
 *            size-aware rule)
 *   latency  furthest hinted next access first (no hint: infinitely far; ties: least recently
 *            gotten); with opts.prefetch it also loads tensors ahead of their hinted gets
 *            (tp_cache_prefetch)
 *
 * Time is the clock: the number of successful gets so far. A get made when tp_cache_clock()
 * returns t is the get of tick t (the first get is tick 0), and leaves the clock at t + 1; hints
 * (put's next_access, tp_cache_hint) name the tick of the tensor's next get in these units.
 * A hint is kept as given: a hint for a tick already past still ranks the tensor as needed soon
 * for eviction until it is put or hinted again, but is never prefetched.
 *
 * Data moves through a session (tp_session_write/tp_session_read, turnip/exec.h) while no
 * executor of it is live; with no session (NULL) the cache keeps sizes and counters only (a
 * simulated device). In deferred mode no load is done: each is listed (tp_cache_pending) for the
 * caller's next plan to do, and cleared by tp_cache_commit. Write-backs of dirty tensors are done
 * at eviction through the session in both modes (in deferred mode the caller must have run the
 * plans that wrote them); with no session they are counted only.
 *
 * Errors: TP_ERR_ARG for a bad handle, device or state (named in the message); TP_ERR_NOMEM when
 * a pinned set cannot fit a device's range (the message names the pinned bytes, the request and
 * the range, or a tensor larger than the range) or host memory runs out.
 * A failed call leaves the cache consistent and usable (evictions it already made stay made).
 *
 * Costs: create, destroy, put, hint and a hit are O(log n) (n: tensors), a miss O(log n) per
 * eviction; under `size`, whose order moves with the clock except among tensors of equal bytes,
 * a get that must evict also orders the device's size classes afresh (O(classes)). Measured in
 * docs/generation.md ("Cache overheads", bench/bench_cache.c). Not thread-safe: one caller at a
 * time. */
#ifndef TURNIP_CACHE_H
#define TURNIP_CACHE_H

#include <stdint.h>
#include "turnip/dtype.h"
#include "turnip/error.h"
#include "turnip/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_cache tp_cache;
typedef uint32_t tp_cache_id;       /* handles start at 1; 0 is never a handle; a destroyed
                                       tensor's handle may be given again by a later create */
#define TP_CACHE_NO_HINT UINT64_MAX /* no next access known */
#define TP_CACHE_ALIGN_DEFAULT 256  /* opts.align 0 means this */

typedef struct tp_cache_opts {
    const char *policy;  /* a tp_cache_policy_names entry (borrowed; NULL: "latency") */
    int ndevices;        /* 1..TP_MAX_DEVICES */
    /* the cache's range [base, base+size) of each device's arena (with a session: inside its
       arena); only its aligned part is used */
    uint64_t base[TP_MAX_DEVICES], size[TP_MAX_DEVICES];
    uint64_t align;      /* offsets and sizes taken are multiples of this (a power of two; 0: 256) */
    int prefetch;        /* latency policy only (others ignore it): 0 off, 1 into free memory only
                            (the default), 2 also evicting unpinned tensors whose hinted next access
                            is later than the prefetched one's */
    int deferred;        /* 1: loads are not done but listed (tp_cache_pending) for the caller's next
                            plan to do */
    int no_host;         /* 1: no host copies at all (tp_cache_host gives NULL): sizes and counters
                            only, for a backend that holds no data (sim) at any model size; only
                            without a session */
    void *host_arena;    /* non-NULL: host copies are taken from [host_arena, + host_arena_bytes)
                            (borrowed), at offsets that are multiples of `align`, first fit from
                            its top, instead of
                            malloc: a session's host block (tp_session_host), so a plan can load
                            a tensor straight from its host copy (turnip/graph.h, host-placed
                            inputs); create fails with TP_ERR_NOMEM when no free run holds one */
    uint64_t host_arena_bytes;
} tp_cache_opts;
/* ndevices devices with ranges [0, size[d]) (size may be NULL: zeros), policy "latency",
 * prefetch 1, align 0 (256), not deferred. */
void tp_cache_opts_init(tp_cache_opts *o, int ndevices, const uint64_t *size);
/* The policies' names, NULL-terminated (static). */
extern const char *const tp_cache_policy_names[];

/* s: the session whose device arenas hold the cache's ranges (borrowed: it must outlive the
 * cache), or NULL: no data (sizes and counters only: a simulated device, or deferred mode where
 * the caller's plans move data). TP_ERR_ARG for bad options (named), a range outside the
 * session's arena or a device the session lacks. *out is the caller's (tp_cache_free). */
tp_status tp_cache_new(tp_session *s, const tp_cache_opts *o, tp_cache **out, tp_error *err);
/* Frees every host copy and the cache (not the session; device memory is the session's).
 * NULL: nothing. */
void tp_cache_free(tp_cache *c);

/* A tensor of dtype dt (not TP_DT_NONE) and shape[0..ndim-1] (0..TP_MAX_DIMS dims, each >= 0;
 * ndim 0 is a scalar); its host copy (malloc'd, or from opts.host_arena; the cache's) is init's bytes (borrowed,
 * copied), or zeros when init is NULL. Not resident anywhere yet, no hint. TP_ERR_ARG for a bad
 * dtype or shape or a size overflow; TP_ERR_NOMEM when host memory runs out. A tensor bigger
 * than every device's range may be made (a caller can stream it from its host copy itself); a
 * get of it is TP_ERR_NOMEM. A tensor of 0 bytes takes one alignment unit. */
tp_status tp_cache_create(tp_cache *c, tp_dtype dt, int ndim, const int64_t *shape, const void *init,
                          tp_cache_id *out, tp_error *err);
/* Forgets the tensor (the API's "free"): its device range is freed (no write-back) and its host
 * copy too; a load of it still pending is unlisted. TP_ERR_ARG while it is pinned. */
tp_status tp_cache_destroy(tp_cache *c, tp_cache_id id, tp_error *err);

/* Pins id on device (a pin count: get twice = put twice) and sets *offset (may be NULL) to its
 * offset in the device's arena. A hit when it is resident there. Otherwise: TP_ERR_NOMEM at once
 * (nothing evicted) when the device's pinned tensors and this one exceed the range; else unpinned
 * tensors of the device are evicted in the policy's order (a dirty one written back first) until
 * a contiguous free run holds it, TP_ERR_NOMEM when none is left; it is placed at the top of the
 * highest such run and loaded from its host copy (deferred: the load is listed). A tensor
 * resident unpinned on another device is moved: placed here first, then evicted there (written
 * back if dirty). TP_ERR_ARG when it is pinned on another device. Advances the clock by 1 when it
 * succeeds. */
tp_status tp_cache_get(tp_cache *c, tp_cache_id id, int device, uint64_t *offset, tp_error *err);
/* Unpins once (TP_ERR_ARG when not pinned); dirty: the device copy was written (the host copy is
 * stale until written back at eviction; it stays dirty until then); next_access: the tick of its
 * next get, or TP_CACHE_NO_HINT (replaces any earlier hint). */
tp_status tp_cache_put(tp_cache *c, tp_cache_id id, int dirty, uint64_t next_access, tp_error *err);
/* Sets the tick of id's next get (for tensors not gotten yet, or to correct a hint). */
tp_status tp_cache_hint(tp_cache *c, tp_cache_id id, uint64_t next_access, tp_error *err);
/* The latency policy's prefetch on device (a no-op for other policies or prefetch 0): repeatedly,
 * the tensor resident nowhere whose hinted next access is nearest (and not past: at least the
 * clock; ties to the lowest handle) is loaded (deferred: listed) if a free run of the device's
 * range holds it (prefetch 2: also after evicting unpinned tensors of the device whose hinted next
 * access is later than its own, furthest first), stopping at the first that does not fit (with
 * prefetch 2 the tensors evicted for it stay evicted). *n (may be NULL): how many were loaded.
 * Does not advance the clock. */
tp_status tp_cache_prefetch(tp_cache *c, int device, uint32_t *n, tp_error *err);

/* ---- data ---- */

/* The host copy (owned by the cache; valid until destroy), NULL for a bad handle. Current when
 * the tensor is not dirty on a device; the caller may write it while the tensor is resident
 * nowhere, or while it is pinned if it writes the device copy the same way. */
void *tp_cache_host(tp_cache *c, tp_cache_id id);
/* Bytes [off, off+n) of a pinned tensor's device copy, to or from a caller's buffer, through
 * the session. TP_ERR_ARG when it is not pinned, the bytes are out of range, there is no session,
 * or the session refuses (an executor of it is live). */
tp_status tp_cache_read(tp_cache *c, tp_cache_id id, uint64_t off, void *dst, uint64_t n, tp_error *err);
tp_status tp_cache_write(tp_cache *c, tp_cache_id id, uint64_t off, const void *src, uint64_t n, tp_error *err);

/* ---- state ---- */

/* 1 and *device, *offset (each may be NULL) when resident (loaded, or its load pending in
 * deferred mode), else 0 (also for a bad handle). */
int tp_cache_where(const tp_cache *c, tp_cache_id id, int *device, uint64_t *offset);
/* The tensor's bytes; 0 for a bad handle. */
uint64_t tp_cache_bytes(const tp_cache *c, tp_cache_id id);
/* The tensors resident on device (loaded or pending), in no particular order, into
 * out[0..max-1] (out may be NULL when max is 0); returns how many there are (may exceed max). */
uint32_t tp_cache_residents(const tp_cache *c, int device, tp_cache_id *out, uint32_t max);
/* The number of successful gets so far: the tick of the next get. */
uint64_t tp_cache_clock(const tp_cache *c);

typedef struct tp_cache_counters {
    uint64_t hits, misses;             /* gets that found it resident on that device / did not */
    uint64_t loads, bytes_loaded;      /* misses + prefetches: every load */
    uint64_t evictions, bytes_evicted; /* every tensor taken off a device to make room or to move it
                                          (dropped or written back; not destroys) */
    uint64_t writebacks, bytes_written_back; /* the dirty evictions */
    uint64_t prefetches, prefetch_used, prefetch_wasted; /* used: gotten on that device before evicted;
                                                            wasted: evicted or destroyed unused */
    uint64_t pinned_bytes_max;         /* the most tensor bytes pinned at once on one device */
} tp_cache_counters;
void tp_cache_counters_get(const tp_cache *c, tp_cache_counters *out);

/* ---- deferred mode ---- */

/* The loads decided since the last commit, in order (a tensor loaded and then evicted or destroyed
 * again before the commit is not listed; its bytes still count). The caller's next plan must load
 * each (host copy -> device offset) before use. *loads (owned by the cache) is valid until the
 * next call that changes the cache; returns the count. */
typedef struct tp_cache_load {
    tp_cache_id id;
    int device;
    uint64_t offset, bytes;
    int prefetch; /* 1: a prefetch, 0: a get's */
} tp_cache_load;
uint32_t tp_cache_pending(const tp_cache *c, const tp_cache_load **loads);
/* The caller has made plans for every listed load: clears the list. */
void tp_cache_commit(tp_cache *c);

#ifdef __cplusplus
}
#endif
#endif
