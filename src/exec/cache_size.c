/* cache_size.c - the tensor cache's `size` policy: large and cold first.
 *
 * The Ravenstore report (1.1.3) faults LRU for ignoring size: it may evict a KB tensor where
 * evicting one MB tensor would have made the room, or throw out a GB tensor for a few bytes. It
 * names the goal (prefer large, cold tensors) but no formula. We score a tensor by
 * bytes x (clock - tick of its last get) and evict the highest score first: the bytes-time it
 * has held memory since it was last useful, the quantity the "size x age" family of web-cache
 * policies (LRU-SIZE, GreedyDual-Size's ancestors) weighs. A pure largest-first rule would evict
 * a large tensor gotten a tick ago; a pure LRU one the small tensor; the product lets a tensor
 * k times smaller stay until it is k times colder, and frees the most bytes per eviction among
 * equally cold ones. Ties (equal scores) go to the least recently gotten, then the earliest
 * loaded. The score grows with the clock at a rate set by the size, so two tensors' order can
 * change as time passes; between tensors of equal bytes it cannot (it is then lru's), so the
 * group key is the bytes: the core keeps each size class in its own heap and, at each get that
 * must evict, compares only the classes' first tensors (O(classes), not O(tensors)). The
 * comparison is exact (a 128-bit product). */
#include "exec/cache_internal.h"

/* a1 * a2 compared with b1 * b2, exactly: -1, 0, 1 */
static int cmp_product(uint64_t a1, uint64_t a2, uint64_t b1, uint64_t b2)
{
    uint64_t ah, al, bh, bl;
    /* 64 x 64 -> 128 by 32-bit halves */
#define MUL128(x, y, hi, lo)                                                                   \
    do {                                                                                      \
        uint64_t x0 = (x) & 0xffffffffu, x1 = (x) >> 32, y0 = (y) & 0xffffffffu, y1 = (y) >> 32; \
        uint64_t p00 = x0 * y0, p01 = x0 * y1, p10 = x1 * y0, p11 = x1 * y1;                   \
        uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);              \
        (lo) = (mid << 32) | (p00 & 0xffffffffu);                                             \
        (hi) = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);                                 \
    } while (0)
    MUL128(a1, a2, ah, al);
    MUL128(b1, b2, bh, bl);
#undef MUL128
    if (ah != bh) return ah < bh ? -1 : 1;
    return al < bl ? -1 : al > bl;
}

static int size_before(const tp__ctensor *a, const tp__ctensor *b, uint64_t now)
{
    uint64_t age_a = now > a->last ? now - a->last : 0, age_b = now > b->last ? now - b->last : 0;
    int c = cmp_product(a->bytes, age_a, b->bytes, age_b);
    if (c) return c > 0;
    if (a->last != b->last) return a->last < b->last;
    return a->loadseq != b->loadseq ? a->loadseq < b->loadseq : a->id < b->id;
}

static uint64_t size_group(const tp__ctensor *t)
{
    return t->bytes;
}

const tp__cache_policy tp__cache_size = {
    .name = "size",
    .help = "largest bytes x (clock - last get) first: large and cold",
    .before = size_before,
    .group = size_group,
};
