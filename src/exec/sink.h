/* sink.h - the completion queue between backend threads and the executor loop (internal). */
#ifndef TP__SINK_H
#define TP__SINK_H

#include <pthread.h>
#include <stdatomic.h>
#include "exec/backend.h"

typedef struct {
    atomic_size_t seq; /* position + 1 once the slot holds the completion for `position` */
    tp__done d;
} tp__slot;

struct tp__sink {
    tp__slot *ring;
    size_t cap;
    atomic_size_t tail; /* next position producers claim */
    size_t head;        /* next position the consumer reads (consumer only) */
    tp__done *batch;    /* what the last take returned */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int sleeping;
};

int tp__sink_init(tp__sink *s, size_t cap);
void tp__sink_destroy(tp__sink *s);
/* Takes every posted completion, waiting for at least one (spins `spin_us`, then sleeps).
 * Returns an array valid until the next call and its length in *n. */
tp__done *tp__sink_take(tp__sink *s, double spin_us, size_t *n);

#endif
