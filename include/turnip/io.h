/* turnip/io.h - small shared utilities (io layer, the lowest): sizes with units, a clock.
 * Element types are in turnip/dtype.h, safetensors files in turnip/safetensors.h. */
#ifndef TURNIP_IO_H
#define TURNIP_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "turnip/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses "1048576", "64MiB", "1.5 GiB", "2GB", "512k". Binary suffixes (KiB/MiB/GiB/TiB, and
 * K/M/G/T alone) are powers of 1024; KB/MB/GB/TB are powers of 1000. Returns TP_ERR_PARSE on
 * anything else, on a negative value or on overflow of 64 bits. */
tp_status tp_parse_size(const char *text, uint64_t *out);

/* Parses a comma-separated list of sizes into out[0..max-1]; *n gets the count. */
tp_status tp_parse_size_list(const char *text, uint64_t *out, int max, int *n);

/* Writes a human size ("3.0 MiB", "512 B") into buf (the caller's, at least 32 bytes);
 * returns buf. */
char *tp_format_size(uint64_t bytes, char *buf, size_t len);

/* Reads a whole regular file (opened without blocking: a FIFO, device or directory is an error
 * naming it) into a new NUL-terminated malloc'd buffer (*text, the caller's to free). */
tp_status tp_read_text_file(const char *path, char **text, size_t *len, tp_error *err);
/* Host memory this process can still use, bytes: MemAvailable of /proc/meminfo (else the
 * physical memory), lowered to what is left of the address-space limit (ulimit -v) when one
 * is set (the limit less the address space the process maps now). */
uint64_t tp_host_mem_limit(void);
/* Monotonic clock, seconds. */
double tp_now_seconds(void);

/* An output file that appears whole or not at all (atomic.c): written to a temporary file in
 * the same directory and renamed over PATH by tp_outfile_commit, so a failed or interrupted
 * run leaves an existing PATH untouched and no partial file. A PATH that is not a regular
 * file (/dev/stdout, /dev/full, a FIFO) is written in place. */
typedef struct tp_outfile tp_outfile;
/* Creates the temporary file; *out is the caller's to commit or abort. TP_ERR_IO naming PATH
 * (a directory, no permission), TP_ERR_NOMEM. */
tp_status tp_outfile_open(const char *path, tp_outfile **out, tp_error *err);
/* How tp_outfile_open would write PATH, decided before anything is made (the checks it makes
 * first): *fd 0 written in place (a device, a FIFO), 1 or 2 written through that standard
 * stream (PATH is the file it is redirected to), -1 replaced by a temporary file renamed over
 * it; then *final (may be NULL; the caller's to free) is the file replaced: PATH, or the file
 * its symlink names, whose directory receives the temporary file. TP_ERR_IO naming PATH for a
 * directory, a read-only file or a symlink to nothing; TP_ERR_ARG for an empty name. */
tp_status tp_outfile_target(const char *path, int *fd, char **final, tp_error *err);
/* Where to write (valid until commit or abort). */
FILE *tp_outfile_stream(tp_outfile *o);
/* Flushes, syncs and renames into place; frees o. On any write error (a full disk) removes the
 * temporary file and returns TP_ERR_IO naming PATH. NULL: TP_OK. */
tp_status tp_outfile_commit(tp_outfile *o, tp_error *err);
/* Flushes and syncs what was written, without renaming: a write error (a full disk) shows now,
 * so outputs that belong together can all be synced before any is committed (the renames, which
 * need no space, then follow one another). TP_ERR_IO naming PATH; o stays the caller's to
 * commit or abort. */
tp_status tp_outfile_sync(tp_outfile *o, tp_error *err);
/* Closes and removes the temporary file, leaving PATH as it was; frees o. NULL: nothing. */
void tp_outfile_abort(tp_outfile *o);
/* Removes every temporary file being written now; async-signal-safe, for a signal handler
 * that then ends the process. */
void tp_outfile_cleanup_signal(void);

#ifdef __cplusplus
}
#endif
#endif
