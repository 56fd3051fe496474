/* heap.h - the one binary min-heap of the library, generated per element type (io layer,
 * internal). Used by the serial orders (src/graph/order.c), Kahn's smallest-first order
 * (src/io/topo.c), and meant for the executor's fixed order and the simulator's events.
 *
 * TP__HEAP_DEFINE(name, T, less) defines, in the including file:
 *
 *   static inline void name_push(T *h, size_t *n, T x, const void *ctx);
 *       adds x; h (the caller's array) must have room for *n + 1 elements.
 *   static inline T name_pop(T *h, size_t *n, const void *ctx);
 *       removes and returns the least element; *n must be > 0. The least is h[0].
 *
 * ordered by `static int less(const T *a, const T *b, const void *ctx)` (nonzero when a
 * goes first; a strict weak order). All state is in (h, *n, ctx): reentrant, no globals.
 * The array is a plain heap, so one sorted in increasing order already is one (push the
 * sources of a Kahn order in increasing index, or fill h and set *n directly). When
 * `less` is a total order (ties broken by a unique field), the pop sequence depends only
 * on the pushes, not on the heap's layout. Generated code is type-specialized and the
 * comparator inlined: as fast as a hand-written heap.
 *
 * Example, the simulator's events in (time, sequence) order:
 *
 *   typedef struct { double t; uint64_t seq; uint32_t v; } event;
 *   static int ev_less(const event *a, const event *b, const void *ctx)
 *   {
 *       (void)ctx;
 *       return a->t < b->t || (a->t == b->t && a->seq < b->seq);
 *   }
 *   TP__HEAP_DEFINE(evheap, event, ev_less)
 *   ...
 *   if (!TP__GROW(s->heap, s->capheap, s->nheap + 1)) return 0;
 *   evheap_push(s->heap, &s->nheap, e, NULL);
 *   event next = evheap_pop(s->heap, &s->nheap, NULL);
 *
 * and smallest-id-first over uint32 ids: tp__u32heap_push / tp__u32heap_pop below. */
#ifndef TP__HEAP_H
#define TP__HEAP_H

#include <stddef.h>
#include <stdint.h>

#define TP__HEAP_DEFINE(name, T, less)                                                            \
    static inline void name##_push(T *h, size_t *n, T x, const void *ctx)                       \
    {                                                                                         \
        size_t i = (*n)++;                                                                    \
        while (i) {                                                                           \
            size_t p = (i - 1) / 2;                                                           \
            if (!less(&x, &h[p], ctx)) break;                                                 \
            h[i] = h[p];                                                                      \
            i = p;                                                                            \
        }                                                                                     \
        h[i] = x;                                                                             \
    }                                                                                         \
    static inline T name##_pop(T *h, size_t *n, const void *ctx)                                \
    {                                                                                         \
        T top = h[0], x = h[--(*n)];                                                          \
        size_t i = 0, m = *n;                                                                 \
        for (;;) {                                                                            \
            size_t l = 2 * i + 1, b = i;                                                      \
            const T *best = &x;                                                               \
            if (l < m && less(&h[l], best, ctx)) {                                            \
                b = l;                                                                        \
                best = &h[l];                                                                 \
            }                                                                                 \
            if (l + 1 < m && less(&h[l + 1], best, ctx)) b = l + 1;                           \
            if (b == i) break;                                                                \
            h[i] = h[b];                                                                      \
            i = b;                                                                            \
        }                                                                                     \
        if (m) h[i] = x;                                                                      \
        return top;                                                                           \
    }

static inline int tp__u32_less(const uint32_t *a, const uint32_t *b, const void *ctx)
{
    (void)ctx;
    return *a < *b;
}
/* tp__u32heap_push(h, &n, id, NULL) / tp__u32heap_pop(h, &n, NULL): smallest id first. */
TP__HEAP_DEFINE(tp__u32heap, uint32_t, tp__u32_less)

#endif
