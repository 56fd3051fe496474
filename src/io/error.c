/* error.c - status names and messages (from TP_STATUS_MAP), the tp__fail helper,
 * growable arrays, opening and reading whole files and the clock.
 *
 * Every reader of a file named by a user (TaskGraphs, MemGraphs, config.json, shard indexes,
 * machine profiles, safetensors) opens it with tp__open_regular: without blocking, then
 * regular files only. A FIFO would otherwise block the open forever waiting for a writer, and a
 * device such as /dev/zero would be read until memory runs out. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
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

tp_status tp__fail_write(tp_error *err)
{
    int en = errno;
    return en ? tp__fail(err, TP_ERR_IO, "write error: %s", strerror(en)) : tp__fail(err, TP_ERR_IO, "write error");
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

/* what a path that is not a regular file is, for the error */
static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

tp_status tp__open_regular(const char *path, int *fd, uint64_t *size, tp_error *err)
{
    /* O_NONBLOCK: opening a FIFO with no writer (or a device) must not wait; the flag is
     * cleared again once fstat says the file is regular, where it means nothing anyway */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0) return tp__fail(err, TP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(f, &sb)) {
        int e = errno;
        close(f);
        return tp__fail(err, TP_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return tp__fail(err, TP_ERR_IO, "%s: not a regular file (%s)", path, file_kind(sb.st_mode));
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(f);
        return tp__fail(err, TP_ERR_IO, "%s: cannot open: %s", path, strerror(e));
    }
    *fd = f;
    if (size) *size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    return TP_OK;
}

tp_status tp__read_file(const char *path, char **text, size_t *len, tp_error *err)
{
    int fd;
    uint64_t size = 0;
    tp_status s = tp__open_regular(path, &fd, &size, err);
    if (s) return s;
    /* room for what fstat said, at least 64 KiB; read to the end all the same (/proc files say 0) */
    size_t cap = size < ((size_t)1 << 16) || size >= SIZE_MAX / 2 ? (size_t)1 << 16 : (size_t)size + 2, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                close(fd);
                return tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return tp__fail(err, TP_ERR_IO, "%s: read error: %s", path, strerror(e));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
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

tp_status tp_read_text_file(const char *path, char **text, size_t *len, tp_error *err)
{
    return tp__read_file(path, text, len, err);
}
