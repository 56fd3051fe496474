/* sink.c - completion queue from backend threads (many producers) to the executor loop (one
 * consumer), after libuv's thread-pool completions: the loop takes everything posted at once
 * and handles it without holding anything.
 *
 * The fast path has no lock: a bounded ring where a producer claims a position with one
 * fetch-add and publishes its slot with a release store of the position's sequence number;
 * the consumer reads slots in order while they are published. Capacity is a checked
 * contract: the ring has one slot per backend unit, and a unit posts again only after the
 * loop has taken its previous completion and launched it anew (exec/backend.h). A post whose
 * position lies a whole ring ahead of the consumer would overwrite an unread slot: it is
 * dropped instead, the overflow flag is raised and the consumer woken, and the run fails.
 * Waiting is spin-then-sleep (sleeper.h). */
#include <stdlib.h>
#include "exec/sink.h"
#include "io/util.h"

int tp__sink_init(tp__sink *s, size_t cap)
{
    s->cap = cap ? cap : 1;
    s->ring = calloc(s->cap, sizeof *s->ring);
    s->batch = calloc(s->cap, sizeof *s->batch);
    if (!s->ring || !s->batch) {
        free(s->ring);
        free(s->batch);
        return 0;
    }
    for (size_t i = 0; i < s->cap; i++) atomic_init(&s->ring[i].seq, 0);
    atomic_init(&s->tail, 0);
    atomic_init(&s->head, 0);
    atomic_init(&s->overflow, 0);
    tp__sleeper_init(&s->sl);
    return 1;
}

void tp__sink_destroy(tp__sink *s)
{
    /* completions nobody took (after a run that ended early: posted by threads the backend's
     * release joined) still own their errors */
    size_t h = atomic_load(&s->head);
    for (size_t i = 0; i < s->cap; i++) {
        size_t q = atomic_load(&s->ring[i].seq);
        if (q && q - 1 >= h) free(s->ring[i].d.err);
    }
    tp__sleeper_destroy(&s->sl);
    free(s->ring);
    free(s->batch);
}

void tp__sink_post(tp__sink *s, const tp__done *d)
{
    size_t pos = atomic_fetch_add(&s->tail, 1);
    if (pos - atomic_load(&s->head) >= s->cap) { /* the slot still holds an unread completion */
        free(d->err);
        atomic_store(&s->overflow, 1);
        tp__sleeper_wake(&s->sl);
        return;
    }
    tp__slot *sl = &s->ring[pos % s->cap];
    sl->d = *d;
    atomic_store(&sl->seq, pos + 1);
    tp__sleeper_wake(&s->sl);
}

static int ready(void *ctx)
{
    tp__sink *s = ctx;
    size_t h = atomic_load(&s->head);
    return atomic_load(&s->ring[h % s->cap].seq) == h + 1 || atomic_load(&s->overflow);
}

tp__done *tp__sink_take(tp__sink *s, int wait, double spin_us, size_t *n)
{
    if (wait) tp__sleeper_wait(&s->sl, ready, s, spin_us);
    size_t k = 0, h = atomic_load(&s->head);
    while (k < s->cap && atomic_load(&s->ring[h % s->cap].seq) == h + 1) {
        s->batch[k++] = s->ring[h % s->cap].d;
        h++;
    }
    atomic_store(&s->head, h); /* the slots are free again only after they were copied */
    *n = k;
    return s->batch;
}

int tp__sink_overflowed(tp__sink *s)
{
    return atomic_load(&s->overflow);
}
