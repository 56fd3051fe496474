/* offload_bound.h - internal: tp_chain_bound (src/plan/offload_bound.c) with its LP method
 * chosen by the caller and the root relaxation's numbers reported, for the tests
 * (tests/test_offload_bound.c) and for measurements. docs/weight-offload.md, "Lower bound". */
#ifndef TP_PLAN_OFFLOAD_BOUND_H
#define TP_PLAN_OFFLOAD_BOUND_H

#include "turnip/offload.h"

typedef enum tp__lp_method {
    TP__LP_AUTO = 0, /* tp_chain_bound: the simplex (half the time), else the interior point */
    TP__LP_SIMPLEX,  /* the simplex only (relaxation, rounding, branch and bound) */
    TP__LP_INTERIOR, /* the interior point only (relaxation, rounding); no branch and bound */
} tp__lp_method;

/* Filled by the solve; owns nothing. */
typedef struct tp__bound_detail {
    int lp_method;   /* what solved the root relaxation: TP__LP_SIMPLEX, TP__LP_INTERIOR, 0 none */
    double lp_obj;   /* that solver's objective for it, seconds (compute sum + idle); 0 if none */
    double lp_bound; /* the valid bound from its duals, seconds; 0 if none */
    int ipm_stopped; /* 1: the time limit stopped the interior point inside glp_interior */
    int ipm_failed;  /* 1: the interior point ended without an optimum (instability, ...) */
    double ipm_failed_bound; /* then the bound its best point's duals gave, seconds; 0 if none */
} tp__bound_detail;

/* tp_chain_bound with the method given; det (the caller's, may be NULL) receives the
 * relaxation's numbers. Same errors as tp_chain_bound, and TP_ERR_ARG for an unknown method. */
tp_status tp__chain_bound_method(const tp_chain *c, double time_limit_s, tp__lp_method method,
                                 tp_chain_bound_result *out, tp__bound_detail *det, tp_error *err);

#endif
