/* fuzz.h - what the libFuzzer targets share: the input as a NUL-terminated string, or as a
 * file (a memfd, named /proc/self/fd/N) for readers that take a path. */
#ifndef TP_FUZZ_H
#define TP_FUZZ_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "turnip/turnip.h"

/* a malloc'd NUL-terminated copy of data (the caller frees) */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) abort();
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* Calls check(path) with data as a file (a memfd named /proc/self/fd/N), for the readers that
 * take a path; does nothing when no memfd can be made. */
static inline void fuzz_as_file(const uint8_t *data, size_t size, void (*check)(const char *path))
{
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) return;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return;
        }
        off += (size_t)w;
    }
    char path[32];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    check(path);
    close(fd);
}

/* a finding the fuzzer must report: prints and aborts */
#define FUZZ_BUG(...)                                                                          \
    do {                                                                                       \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fputc('\n', stderr);                                                                   \
        abort();                                                                               \
    } while (0)

#endif
