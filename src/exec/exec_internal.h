/* exec_internal.h - what a finished run leaves behind, for the files of the executor layer
 * that report on it (trace.c) and for tests, and the executor's constructor for sessions
 * (session.c) (internal). */
#ifndef TP__EXEC_INTERNAL_H
#define TP__EXEC_INTERNAL_H

#include "exec/backend.h"

/* One MemGraph vertex in the last run. */
typedef struct tp__vrec {
    double t0, t1;   /* start and end on the run's clock (inputs: the run's start) */
    int16_t unit;    /* unit of its engine it ran on */
    int16_t device;  /* device whose engine ran it */
    uint8_t engine;  /* index into the backend's engines, TP__NO_ENGINE for inputs */
    uint8_t ran;     /* 1 once it ran (or was done at the start); a failed run leaves some at 0 */
} tp__vrec;

typedef struct tp__run_record {
    uint32_t n;               /* MemGraph vertices */
    const tp__vrec *v;        /* n entries */
    double start;             /* the run's first instant */
    int nengines;
    const tp__engine *engines; /* the backend's engine table */
} tp__run_record;

/* tp_exec_new, and tp_exec_new_in (exec/session.c) with `holder`: the session's slot for its
 * one live executor, set to the new executor and cleared when it is freed; the executor then
 * runs in the session open on be (prepare checks the plan against the session's memory) and
 * may have resident inputs. */
tp_status tp__exec_new(const tp_memgraph *mg, tp_backend *be, const tp_run_opts *o, tp_exec **holder, tp_exec **out,
                       tp_error *err);
/* Its session is being freed under it: releases the backend (stops its threads) and leaves x
 * refusing runs, reads and writes until tp_exec_free. */
void tp__exec_detach(tp_exec *x);

/* The record of x's last tp_exec_run (valid until the next run or tp_exec_free); returns 0
 * when no run has finished yet (then every time is 0). */
int tp__exec_record(const tp_exec *x, tp__run_record *out);

#endif
