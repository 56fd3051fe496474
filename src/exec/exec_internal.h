/* exec_internal.h - what a finished run leaves behind, for the files of the executor layer
 * that report on it (trace.c) and for tests (internal). */
#ifndef TP__EXEC_INTERNAL_H
#define TP__EXEC_INTERNAL_H

#include "exec/backend.h"

/* One MemGraph vertex in the last run. */
typedef struct tp__vrec {
    double t0, t1;   /* start and end on the run's clock (inputs: the run's start) */
    int16_t unit;    /* unit of its engine it ran on */
    int16_t device;  /* device whose engine ran it */
    uint8_t engine;  /* index into the backend's engines, TP__NO_ENGINE for inputs */
} tp__vrec;

typedef struct tp__run_record {
    uint32_t n;               /* MemGraph vertices */
    const tp__vrec *v;        /* n entries */
    double start;             /* the run's first instant */
    int nengines;
    const tp__engine *engines; /* the backend's engine table */
} tp__run_record;

/* The record of x's last tp_exec_run (valid until the next run or tp_exec_free); returns 0
 * when no run has finished yet (then every time is 0). */
int tp__exec_record(const tp_exec *x, tp__run_record *out);

#endif
