/* turnip/io.h - small shared utilities: sizes with units. */
#ifndef TURNIP_IO_H
#define TURNIP_IO_H

#include <stddef.h>
#include <stdint.h>
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

/* Monotonic clock, seconds. */
double tp_now_seconds(void);

/* ---- safetensors -------------------------------------------------------------------------
 * 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}},
 * then the raw little-endian data. Files are mapped read-only. */
#include "turnip/graph.h"

typedef struct tp_st tp_st; /* an open file; owns its mapping and names */

typedef struct tp_st_tensor {
    const char *name;
    tp_dtype dtype;
    int ndim;
    int64_t shape[TP_MAX_DIMS];
    uint64_t bytes;
    const void *data; /* into the mapping (reading) or the caller's buffer (writing) */
} tp_st_tensor;

/* Opens and validates a file: offsets inside the data, sizes equal to dtype x shape.
 * Errors name the file and the tensor. */
tp_status tp_st_open(const char *path, tp_st **out, tp_error *err);
void tp_st_close(tp_st *st);
size_t tp_st_count(const tp_st *st);
const tp_st_tensor *tp_st_get(const tp_st *st, size_t i);
const tp_st_tensor *tp_st_find(const tp_st *st, const char *name); /* NULL if absent */
/* Writes n tensors (data copied from each .data) to path. */
tp_status tp_st_write(const char *path, size_t n, const tp_st_tensor *t, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
