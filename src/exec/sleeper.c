/* sleeper.c - spin-then-sleep waiting (see sleeper.h). */
#include "exec/sleeper.h"
#include "io/util.h"

void tp__sleeper_init(tp__sleeper *s)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    atomic_init(&s->sleeping, 0);
    atomic_init(&s->stop, 0);
}

void tp__sleeper_destroy(tp__sleeper *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

int tp__sleeper_wait(tp__sleeper *s, int (*ready)(void *ctx), void *ctx, double spin_us)
{
    if (ready(ctx)) return 1;
    if (spin_us > 0) {
        double until = tp__now() + spin_us * 1e-6;
        for (unsigned k = 1; !ready(ctx) && !atomic_load(&s->stop); k++)
            if (!(k & 63) && tp__now() >= until) break; /* read the clock every 64 polls */
        if (ready(ctx)) return 1;
    }
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->sleeping, 1);
    while (!ready(ctx) && !atomic_load(&s->stop)) pthread_cond_wait(&s->cv, &s->mu);
    atomic_store(&s->sleeping, 0);
    pthread_mutex_unlock(&s->mu);
    return ready(ctx);
}

void tp__sleeper_wake(tp__sleeper *s)
{
    if (atomic_load(&s->sleeping)) {
        pthread_mutex_lock(&s->mu);
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
}

void tp__sleeper_stop(tp__sleeper *s)
{
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->stop, 1);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}
