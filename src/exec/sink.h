/* sink.h - the completion queue between backend threads and the executor loop (internal). */
#ifndef TP__SINK_H
#define TP__SINK_H

#include <pthread.h>
#include <stdatomic.h>
#include "exec/backend.h"

struct tp__sink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    tp__done *q, *spare; /* producers fill q; the consumer swaps it with spare */
    size_t n, cap;
    atomic_size_t pending;
    atomic_int sleeping;
};

int tp__sink_init(tp__sink *s, size_t cap);
void tp__sink_destroy(tp__sink *s);
/* Takes every posted completion (waiting for at least one: spins `spin_us`, then sleeps).
 * Returns the array (valid until the next call) and its length in *n. */
tp__done *tp__sink_take(tp__sink *s, double spin_us, size_t *n);

#endif
