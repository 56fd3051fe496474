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

void tp__sleeper_sleep(tp__sleeper *s, int (*ready)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->sleeping, 1);
    while (!ready(ctx) && !atomic_load(&s->stop)) pthread_cond_wait(&s->cv, &s->mu);
    atomic_store(&s->sleeping, 0);
    pthread_mutex_unlock(&s->mu);
}

void tp__sleeper_signal(tp__sleeper *s)
{
    pthread_mutex_lock(&s->mu);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void tp__sleeper_stop(tp__sleeper *s)
{
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->stop, 1);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}
