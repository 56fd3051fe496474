/* turnip/error.h - the one error enum of the library and the detail record that goes with it.
 *
 * Every fallible call returns a tp_status and, when given a tp_error*, fills it with a
 * one-line message that names the file, the vertex and the problem. The caller owns the
 * tp_error (usually on its stack); the library never allocates one. */
#ifndef TURNIP_ERROR_H
#define TURNIP_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The statuses, in one table: X(CONSTANT, name, message). The enum (TP_OK, TP_ERR_NOMEM, ...,
 * numbered in table order from 0), tp_status_name and tp_status_str are all generated from
 * it, so a new status is one line here. Values and messages are stable: tests, messages and
 * the command line's exit codes depend on them. */
#define TP_STATUS_MAP(X)                                                                          \
    X(OK, ok, "ok")                                                                               \
    X(ERR_NOMEM, nomem, "out of memory")             /* out of host memory */                     \
    X(ERR_IO, io, "i/o error")                       /* a file could not be read or written */    \
    X(ERR_PARSE, parse, "malformed input")           /* not JSON, wrong field types */            \
    X(ERR_INVALID, invalid, "invalid input")         /* breaks the contract (cycle, unknown id) */ \
    X(ERR_INFEASIBLE, infeasible, "infeasible")      /* no plan fits the memory given */          \
    X(ERR_CHECK, check, "check failed")              /* a check (the verifier) found a violation */ \
    X(ERR_ARG, arg, "bad argument")                  /* a bad argument to an API call */          \
    X(ERR_DEVICE, device, "device error")            /* a GPU missing, out of memory or failing */

typedef enum tp_status {
#define TP__STATUS_ENUM(c, n, m) TP_##c,
    TP_STATUS_MAP(TP__STATUS_ENUM)
#undef TP__STATUS_ENUM
} tp_status;

/* Number of statuses (one past the last value). */
#define TP__STATUS_COUNT_X(c, n, m) +1
#define TP_STATUS_COUNT (0 TP_STATUS_MAP(TP__STATUS_COUNT_X))

/* The status's message ("out of memory", "infeasible"); a static string, never NULL
 * ("unknown status" for a value outside the table). */
const char *tp_status_str(tp_status s);
/* The constant's short name ("nomem" for TP_ERR_NOMEM); static, never NULL ("?" outside). */
const char *tp_status_name(tp_status s);

#define TP_ERROR_MSG_MAX 1024

typedef struct tp_error {
    tp_status code;
    char msg[TP_ERROR_MSG_MAX]; /* one line, no trailing newline */
} tp_error;

#ifdef __cplusplus
}
#endif
#endif
