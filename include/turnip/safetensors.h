/* turnip/safetensors.h - reading and writing safetensors files (io layer).
 *
 * 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}},
 * then the raw little-endian data. Files are mapped read-only.
 *
 * Ownership: a tp_st owns its mapping, tensor records and names; the tp_st_tensor views
 * (and their .data) live until tp_st_close. tp_st_write keeps no pointer to its arguments. */
#ifndef TURNIP_SAFETENSORS_H
#define TURNIP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "turnip/dtype.h"
#include "turnip/error.h"

typedef struct tp_outfile tp_outfile; /* turnip/io.h */

#ifdef __cplusplus
extern "C" {
#endif

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
/* tp_st_write without the commit: *of (the caller's to sync, commit or abort) holds the file,
 * for files that are replaced together. */
tp_status tp_st_write_open(const char *path, size_t n, const tp_st_tensor *t, tp_outfile **of, tp_error *err);

#ifdef __cplusplus
}
#endif
#endif
