/* util.h - internal helpers shared by every layer: error reporting, growable arrays,
 * a string->index map and JSON string output. Nothing here is public API. */
#ifndef TP__UTIL_H
#define TP__UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "turnip/error.h"

#if defined(__GNUC__)
#define TP__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TP__PRINTF(a, b)
#endif

/* A macro's value as a string literal: TP__STR(TP_MAX_DIMS) is "8". */
#define TP__STR_(x) #x
#define TP__STR(x) TP__STR_(x)

/* Fills err (if non-NULL) and returns code. */
tp_status tp__fail(tp_error *err, tp_status code, const char *fmt, ...) TP__PRINTF(3, 4);
/* What is left of the address-space limit (ulimit -v) less what the process maps now;
 * UINT64_MAX without a limit (io/sysmem.c). */
uint64_t tp__address_space_left(void);
/* TP_ERR_IO "write error", with the reason errno holds after a stream's write failed ("write
 * error: No space left on device"). */
tp_status tp__fail_write(tp_error *err);

/* Grows *arr (element size `elem`) so it holds at least `need` elements; doubles. 0 on OOM. */
int tp__grow(void **arr, size_t *cap, size_t need, size_t elem);
#define TP__GROW(arr, cap, need) tp__grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

/* Open-addressing map from NUL-terminated string to uint32 value. Keys are not copied: the
 * caller keeps them alive while the map lives. */
typedef struct tp__strmap {
    const char **keys;
    uint32_t *vals;
    size_t cap, n;
} tp__strmap;
int tp__strmap_init(tp__strmap *m, size_t expect);
void tp__strmap_free(tp__strmap *m);
/* 1 if inserted, 0 if the key was present (*old gets its value), -1 on OOM. */
int tp__strmap_put(tp__strmap *m, const char *key, uint32_t val, uint32_t *old);
/* 1 and *val if present, else 0. */
int tp__strmap_get(const tp__strmap *m, const char *key, uint32_t *val);

/* Writes s as a JSON string literal (with quotes). */
void tp__json_str(FILE *f, const char *s);

/* Opens path read-only as a regular file, never blocking: a FIFO, device, socket or directory
 * is TP_ERR_IO "PATH: not a regular file (a FIFO)" without waiting for a writer. *fd (the
 * caller's to close) is a plain blocking descriptor; *size (if non-NULL) the size fstat gave. */
tp_status tp__open_regular(const char *path, int *fd, uint64_t *size, tp_error *err);

/* Reads a whole regular file (opened with tp__open_regular) into a NUL-terminated malloc'd
 * buffer (*text, the caller's); *len (if non-NULL) gets the bytes read. */
tp_status tp__read_file(const char *path, char **text, size_t *len, tp_error *err);

/* A scratch file or (dir) directory that tp_outfile_cleanup_signal removes if a signal ends the
 * process before tp__scratch_release (atomic.c's slots; -1: no slot free, not removed then). */
int tp__scratch_claim(const char *path, int dir);
void tp__scratch_release(int slot);

/* Counter-based randomness (rng.c): a 64-bit mix (splitmix64's finalizer) and a standard
 * normal draw, both pure functions of their key. */
uint64_t tp__mix64(uint64_t z);
double tp__normal(uint64_t key);

/* Monotonic clock in seconds. */
double tp__now(void);

/* The alignment of a region of `size` bytes (docs/formats.md): the largest power of two that
 * divides it, at most TP__MAX_ALIGN (TP__MAX_ALIGN for 0). Resident and host-placed offsets must
 * be multiples of it, and the planner places every tensor so. Packing regions in decreasing
 * alignment wastes no byte, so a set of them whose sizes sum to at most a capacity always fits. */
#define TP__MAX_ALIGN 256
_Static_assert((TP__MAX_ALIGN & (TP__MAX_ALIGN - 1)) == 0, "alignment is a power of two");
static inline uint64_t tp__align_of(uint64_t size)
{
    uint64_t a = size & (~size + 1); /* lowest set bit */
    return (a == 0 || a > TP__MAX_ALIGN) ? TP__MAX_ALIGN : a;
}

/* A region [a, b) of a memory (device; -1: host) that vertex v declares; sorted by memory, then
 * start, then vertex, neighbours that overlap are found in one pass. */
typedef struct tp__span {
    int device;
    uint64_t a, b;
    uint32_t v;
} tp__span;
static inline int tp__span_cmp(const void *x, const void *y)
{
    const tp__span *p = x, *q = y;
    if (p->device != q->device) return p->device < q->device ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->v < q->v ? -1 : p->v > q->v;
}

#endif
