/* sink.h - the completion queue between backend threads and the executor loop (internal). */
#ifndef TP__SINK_H
#define TP__SINK_H

#include <stdatomic.h>
#include "exec/backend.h"
#include "exec/sleeper.h"

typedef struct {
    atomic_size_t seq; /* position + 1 once the slot holds the completion for `position` */
    tp__done d;
} tp__slot;

struct tp__sink {
    tp__slot *ring;
    size_t cap;          /* slots: one per unit that may have a completion outstanding */
    char pad0[64];
    atomic_size_t tail; /* next position producers claim */
    char pad1[64];      /* head on a cache line of its own: producers read it on every post */
    atomic_size_t head; /* next position the consumer reads (written by the consumer only,
                           once per batch) */
    char pad2[64];
    atomic_int overflow; /* a post found the ring full: the backend broke the contract */
    tp__done *batch;     /* what the last take returned */
    tp__sleeper sl;
};

/* A ring of exactly `cap` slots (cap >= 1). 0 on OOM. */
int tp__sink_init(tp__sink *s, size_t cap);
void tp__sink_destroy(tp__sink *s);
/* Takes every posted completion, waiting for at least one (spins `spin_us`, then sleeps)
 * unless `wait` is 0. Returns an array valid until the next call and its length in *n. When a
 * post overflowed the ring, tp__sink_overflowed() is set and the wait returns, with whatever
 * batch was there (possibly empty). */
tp__done *tp__sink_take(tp__sink *s, int wait, double spin_us, size_t *n);
/* 1 once a post found the ring full (that completion is lost: the run must fail). */
int tp__sink_overflowed(tp__sink *s);

#endif
