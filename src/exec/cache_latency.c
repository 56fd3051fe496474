/* cache_latency.c - the tensor cache's `latency` policy (Ravenstore's latency-aware cache):
 * the tensor whose hinted next get is furthest goes first (no hint: infinitely far, so first
 * of all), ties to the least recently gotten, then the earliest loaded. With exact hints this
 * is Belady's MIN. It is also the policy that prefetches (the core's tp_cache_prefetch: the
 * nearest hinted tensor first, as the report's prefetcher), so this order is also the order in
 * which prefetch 2 evicts for a prefetch. */
#include "exec/cache_internal.h"

static int latency_before(const tp__ctensor *a, const tp__ctensor *b, uint64_t now)
{
    (void)now;
    if (a->next != b->next) return a->next > b->next;
    if (a->last != b->last) return a->last < b->last;
    return a->loadseq != b->loadseq ? a->loadseq < b->loadseq : a->id < b->id;
}

const tp__cache_policy tp__cache_latency = {
    .name = "latency",
    .help = "furthest hinted next access first (no hint: infinitely far); prefetches by hint",
    .before = latency_before,
    .prefetch = 1,
};
