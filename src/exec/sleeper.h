/* sleeper.h - spin, then sleep: how every thread of the runtime waits (internal).
 *
 * A cross-thread wake-up through a condition variable costs 15-20 us on the 2-core machines,
 * a poll well under 1 us, so a waiting thread (the executor loop for completions, a backend
 * worker for its next job, a polling thread for work in flight) first spins up to
 * TP__SPIN_US, then announces that it sleeps and waits on the condition variable. A producer
 * that makes the condition true calls tp__sleeper_wake, which signals under the mutex only
 * when the announcement is up; both sides use sequentially consistent atomics for the flag
 * and for the condition's own state, so no wake-up is lost. */
#ifndef TP__SLEEPER_H
#define TP__SLEEPER_H

#include <pthread.h>
#include <stdatomic.h>
#include "io/util.h"

#define TP__SPIN_US 20.0 /* spin before sleeping, microseconds */

typedef struct tp__sleeper {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int sleeping, stop;
} tp__sleeper;

void tp__sleeper_init(tp__sleeper *s);
void tp__sleeper_destroy(tp__sleeper *s);
/* The sleeping half of tp__sleeper_wait. */
void tp__sleeper_sleep(tp__sleeper *s, int (*ready)(void *ctx), void *ctx);

/* Waits until ready(ctx) is true (returns 1) or tp__sleeper_stop was called and ready is
 * still false (returns 0). Spins spin_us first (0: sleeps at once). Inline so that the spin
 * loop polls `ready` without a call (it is on the path of every completion). */
static inline int tp__sleeper_wait(tp__sleeper *s, int (*ready)(void *ctx), void *ctx, double spin_us)
{
    if (ready(ctx)) return 1;
    if (spin_us > 0) {
        double until = tp__now() + spin_us * 1e-6;
        for (unsigned k = 1; !ready(ctx) && !atomic_load(&s->stop); k++)
            if (!(k & 63) && tp__now() >= until) break; /* read the clock every 64 polls */
        if (ready(ctx)) return 1;
    }
    tp__sleeper_sleep(s, ready, ctx);
    return ready(ctx);
}
/* After making ready() true: wakes the waiter if it sleeps (the signal, out of line). */
void tp__sleeper_signal(tp__sleeper *s);
static inline void tp__sleeper_wake(tp__sleeper *s)
{
    if (atomic_load(&s->sleeping)) tp__sleeper_signal(s);
}
/* Makes every wait return (0 unless ready). */
void tp__sleeper_stop(tp__sleeper *s);

#endif
