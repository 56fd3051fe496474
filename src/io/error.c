/* error.c - status names and messages (from TP_STATUS_MAP), the tp__fail helper,
 * growable arrays, whole-file reading and the clock. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include "io/util.h"

#define STATUS_NAME(c, n, m) #n,
#define STATUS_MSG(c, n, m) m,
static const char *const status_names[] = {TP_STATUS_MAP(STATUS_NAME)};
static const char *const status_msgs[] = {TP_STATUS_MAP(STATUS_MSG)};
_Static_assert(sizeof status_names / sizeof *status_names == TP_STATUS_COUNT, "one name per status");
_Static_assert(sizeof status_msgs / sizeof *status_msgs == TP_STATUS_COUNT, "one message per status");

const char *tp_status_str(tp_status s)
{
    return (unsigned)s < TP_STATUS_COUNT ? status_msgs[s] : "unknown status";
}

const char *tp_status_name(tp_status s)
{
    return (unsigned)s < TP_STATUS_COUNT ? status_names[s] : "?";
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
