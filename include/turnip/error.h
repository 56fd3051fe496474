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

typedef enum tp_status {
    TP_OK = 0,
    TP_ERR_NOMEM,      /* out of host memory */
    TP_ERR_IO,         /* a file could not be read or written */
    TP_ERR_PARSE,      /* malformed input: not JSON, wrong field types */
    TP_ERR_INVALID,    /* well-formed input that breaks the contract (cycle, unknown id, ...) */
    TP_ERR_INFEASIBLE, /* no plan fits the memory given */
    TP_ERR_CHECK,      /* a check (the verifier) found a violation */
    TP_ERR_ARG,        /* a bad argument to an API call */
    TP_ERR_DEVICE      /* a device (GPU) is missing, out of memory, or a call to its runtime failed */
} tp_status;

/* Short constant name of a status ("infeasible"); never NULL. */
const char *tp_status_str(tp_status s);

#define TP_ERROR_MSG_MAX 1024

typedef struct tp_error {
    tp_status code;
    char msg[TP_ERROR_MSG_MAX]; /* one line, no trailing newline */
} tp_error;

/* Exit code the command line uses for a status: 0 ok, 1 failed check, 2 unusable input or
 * infeasible plan or unusable device, 3 internal failure (out of memory, I/O on output). */
int tp_status_exit_code(tp_status s);

#ifdef __cplusplus
}
#endif
#endif
