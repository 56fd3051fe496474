/* cache_lru.c - the tensor cache's `lru` policy: the tensor gotten least recently goes first
 * (ties, which only tensors never gotten since creation can have, to the earliest loaded). */
#include "exec/cache_internal.h"

static int lru_before(const tp__ctensor *a, const tp__ctensor *b, uint64_t now)
{
    (void)now;
    if (a->last != b->last) return a->last < b->last;
    return a->loadseq != b->loadseq ? a->loadseq < b->loadseq : a->id < b->id;
}

const tp__cache_policy tp__cache_lru = {
    .name = "lru",
    .help = "least recently gotten first",
    .before = lru_before,
};
