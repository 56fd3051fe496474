/* cache_fifo.c - the tensor cache's `fifo` policy: the tensor loaded earliest goes first
 * (Ravenstore's FIFO). Blind to use and size; the baseline the others are measured against. */
#include "exec/cache_internal.h"

static int fifo_before(const tp__ctensor *a, const tp__ctensor *b, uint64_t now)
{
    (void)now;
    return a->loadseq != b->loadseq ? a->loadseq < b->loadseq : a->id < b->id;
}

const tp__cache_policy tp__cache_fifo = {
    .name = "fifo",
    .help = "earliest loaded first",
    .before = fifo_before,
};
