/* error.c - status names, exit codes and the tp__fail helper. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include "io/util.h"

const char *tp_status_str(tp_status s)
{
    switch (s) {
    case TP_OK: return "ok";
    case TP_ERR_NOMEM: return "out of memory";
    case TP_ERR_IO: return "i/o error";
    case TP_ERR_PARSE: return "malformed input";
    case TP_ERR_INVALID: return "invalid input";
    case TP_ERR_INFEASIBLE: return "infeasible";
    case TP_ERR_CHECK: return "check failed";
    case TP_ERR_ARG: return "bad argument";
    case TP_ERR_DEVICE: return "device error";
    }
    return "unknown status";
}

int tp_status_exit_code(tp_status s)
{
    switch (s) {
    case TP_OK: return 0;
    case TP_ERR_CHECK: return 1;
    case TP_ERR_PARSE:
    case TP_ERR_INVALID:
    case TP_ERR_INFEASIBLE:
    case TP_ERR_ARG:
    case TP_ERR_DEVICE:
    case TP_ERR_IO: return 2;
    case TP_ERR_NOMEM: return 3;
    }
    return 3;
}

tp_status tp__fail(tp_error *err, tp_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int tp__grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 8;
    while (nc < need) nc *= 2;
    void *p = realloc(*arr, nc * elem);
    if (!p) return 0;
    *arr = p;
    *cap = nc;
    return 1;
}

tp_status tp__read_file(const char *path, char **text, size_t *len, tp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return tp__fail(err, TP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return tp__fail(err, TP_ERR_IO, "%s: read error", path);
    }
    buf[n] = 0;
    *text = buf;
    if (len) *len = n;
    return TP_OK;
}

double tp__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double tp_now_seconds(void)
{
    return tp__now();
}
