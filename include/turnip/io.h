/* turnip/io.h - small shared utilities (io layer, the lowest): sizes with units, a clock.
 * Element types are in turnip/dtype.h, safetensors files in turnip/safetensors.h. */
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

#ifdef __cplusplus
}
#endif
#endif
