/* atomic.c - output files that appear whole or not at all (turnip/io.h, tp_outfile).
 *
 * Design: an output to a regular file (or to a name that does not exist yet) is written to a
 * temporary file in the same directory (".NAME.tmp-PID-N", NAME cut to 200 bytes so a long name
 * still fits NAME_MAX; created with O_EXCL and mode 0666
 * under the umask, or the old file's mode), flushed and fsync'ed, then renamed over NAME:
 * rename(2) within one directory replaces NAME atomically, so a reader sees the old file or
 * the new one, never a truncated one, and a failing or interrupted run leaves the old file
 * untouched. Any failure removes the temporary file. A symlink is resolved first, so the
 * file it names is replaced and the link stays; a symlink to nothing is refused (replacing it
 * would drop the link, following it would create a file where the link points). Outputs that are not regular files
 * (/dev/null, /dev/full, a FIFO, a terminal) cannot be renamed over: they are written in
 * place, and every write error is still reported when the file is committed. The regular file
 * standard output or error is redirected to (`-o /dev/stdout > log`) is written through that
 * stream, not replaced; an existing file the user may not write (mode 0444) is refused.
 *
 * Signals: the names of the temporary files being written sit in a fixed table of slots
 * claimed with atomics, so a signal handler (the turnip command's, on SIGINT/SIGTERM/SIGHUP/SIGPIPE)
 * can remove them with tp_outfile_cleanup_signal, which only reads the table and calls
 * unlink (async-signal-safe). More outputs open at once than slots: still atomic, only not
 * removed on a signal. Scratch files and directories (a sweep's gnuplot directory) take slots
 * too (tp__scratch_claim): the handler removes the files first, then the directories. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "turnip/io.h"
#include "io/util.h"

#define NSLOTS 16
#define PATHMAX 4096

/* state: 0 free, 1 being filled or emptied, 2 holds a temporary file's name */
static atomic_int slot_state[NSLOTS];
static char slot_name[NSLOTS][PATHMAX];
static int slot_dir[NSLOTS]; /* the name is a scratch directory (rmdir), else a file (unlink) */
static atomic_uint counter;

struct tp_outfile {
    FILE *f;
    char *path;  /* what the caller asked for (messages) */
    char *final; /* where the file goes: path, or the file a symlink names */
    char *tmp;   /* NULL: written in place (not a regular file) */
    int slot;    /* -1: none */
};

int tp__scratch_claim(const char *name, int dir)
{
    if (strlen(name) >= PATHMAX) return -1;
    for (int i = 0; i < NSLOTS; i++) {
        int want = 0;
        if (atomic_compare_exchange_strong(&slot_state[i], &want, 1)) {
            memcpy(slot_name[i], name, strlen(name) + 1);
            slot_dir[i] = dir;
            atomic_store(&slot_state[i], 2);
            return i;
        }
    }
    return -1;
}

void tp__scratch_release(int i)
{
    if (i < 0) return;
    int want = 2;
    if (atomic_compare_exchange_strong(&slot_state[i], &want, 1)) atomic_store(&slot_state[i], 0);
}

void tp_outfile_cleanup_signal(void)
{
    for (int pass = 0; pass < 2; pass++) /* files, then the scratch directories they were in */
        for (int i = 0; i < NSLOTS; i++) {
            int want = 2;
            if (slot_dir[i] != pass || !atomic_compare_exchange_strong(&slot_state[i], &want, 1)) continue;
            if (pass) rmdir(slot_name[i]);
            else unlink(slot_name[i]);
        }
}

static void out_free(tp_outfile *o)
{
    free(o->path);
    free(o->final);
    free(o->tmp);
    free(o);
}

tp_status tp_outfile_target(const char *path, int *fd, char **final, tp_error *err)
{
    *fd = -1;
    if (final) *final = NULL;
    if (!path || !*path) return tp__fail(err, TP_ERR_ARG, "no output file name given");
    struct stat st, lst;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) return tp__fail(err, TP_ERR_IO, "%s: cannot write: is a directory", path);
    if (exists && !S_ISREG(st.st_mode)) { /* a device or a FIFO: written in place */
        *fd = 0;
        return TP_OK;
    }
    /* the file standard output or error is redirected to (/dev/stdout, /proc/self/fd/2): written
     * through that stream, where it stands, as "-" is; replacing it would drop what the file holds
     * and what is written to the stream after */
    for (int k = 1; exists && k <= 2; k++) {
        struct stat fs;
        if (!fstat(k, &fs) && fs.st_dev == st.st_dev && fs.st_ino == st.st_ino) {
            *fd = k;
            return TP_OK;
        }
    }
    if (exists && access(path, W_OK) && errno == EACCES) /* a read-only file is not replaced behind its mode */
        return tp__fail(err, TP_ERR_IO, "%s: cannot write: %s (the file is read-only)", path, strerror(EACCES));
    /* a symlink to nothing: neither replaced by the output nor followed to make its target */
    if (!exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
        return tp__fail(err, TP_ERR_IO, "%s: cannot write: a symbolic link to a file that does not exist", path);
    if (!final) return TP_OK;
    /* the file a symlink names is the one replaced */
    *final = exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) ? realpath(path, NULL) : strdup(path);
    return *final ? TP_OK : tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
}

tp_status tp_outfile_open(const char *path, tp_outfile **out, tp_error *err)
{
    *out = NULL;
    int std;
    char *final;
    tp_status s = tp_outfile_target(path, &std, &final, err);
    if (s) return s;
    tp_outfile *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(path))) {
        free(o);
        free(final);
        return tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
    }
    o->slot = -1;
    o->final = final;
    if (std >= 0) { /* in place: the device or FIFO, or a duplicate of the standard stream */
        int d = std ? dup(std) : -1;
        if (std ? d < 0 || !(o->f = fdopen(d, "wb")) : !(o->f = fopen(path, "wb"))) {
            int en = errno;
            if (d >= 0) close(d);
            out_free(o);
            return tp__fail(err, TP_ERR_IO, "%s: cannot write: %s", path, strerror(en));
        }
        *out = o;
        return TP_OK;
    }
    struct stat st;
    int exists = stat(path, &st) == 0;
    const char *slash = strrchr(o->final, '/');
    size_t dirlen = slash ? (size_t)(slash - o->final) + 1 : 0;
    const char *base = slash ? slash + 1 : o->final;
    size_t cap = dirlen + strlen(base) + 64;
    if (!(o->tmp = malloc(cap))) {
        out_free(o);
        return tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd = -1, en = 0;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        /* the name's first 200 bytes at most: with the suffix it stays within NAME_MAX (255) */
        snprintf(o->tmp, cap, "%.*s.%.200s.tmp-%ld-%u", (int)dirlen, o->final, base, (long)getpid(), atomic_fetch_add(&counter, 1));
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        en = errno;
        if (fd < 0 && en != EEXIST) break;
    }
    if (fd < 0) {
        out_free(o);
        return tp__fail(err, TP_ERR_IO, "%s: cannot write: %s", path, strerror(en));
    }
    o->slot = tp__scratch_claim(o->tmp, 0);
    if (exists) (void)fchmod(fd, st.st_mode & 07777); /* the replaced file's mode */
    if (!(o->f = fdopen(fd, "wb"))) {
        close(fd);
        tp_outfile_abort(o);
        return tp__fail(err, TP_ERR_NOMEM, "%s: out of memory", path);
    }
    *out = o;
    return TP_OK;
}

FILE *tp_outfile_stream(tp_outfile *o)
{
    return o->f;
}

void tp_outfile_abort(tp_outfile *o)
{
    if (!o) return;
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    tp__scratch_release(o->slot);
    out_free(o);
}

/* flushes o's stream and syncs its temporary file: 0, or the errno of the first failure */
static int flush_sync(tp_outfile *o)
{
    errno = 0;
    if (fflush(o->f) || ferror(o->f)) return errno ? errno : EIO;
    return o->tmp && fsync(fileno(o->f)) ? errno : 0;
}

tp_status tp_outfile_sync(tp_outfile *o, tp_error *err)
{
    int en = flush_sync(o);
    return en ? tp__fail(err, TP_ERR_IO, "%s: write error: %s", o->path, strerror(en)) : TP_OK;
}

tp_status tp_outfile_commit(tp_outfile *o, tp_error *err)
{
    if (!o) return TP_OK;
    int en = flush_sync(o);
    if (fclose(o->f) && !en) en = errno ? errno : EIO;
    o->f = NULL;
    if (!en && o->tmp && rename(o->tmp, o->final)) en = errno;
    if (en) {
        tp_status s = tp__fail(err, TP_ERR_IO, "%s: write error: %s", o->path, strerror(en));
        tp_outfile_abort(o);
        return s;
    }
    tp__scratch_release(o->slot);
    out_free(o);
    return TP_OK;
}
