/* memgraph_io.h - what the MemGraph readers share (memgraph_read.c: JSON and the choice of
 * format; memgraph_bin.c: the binary format; memgraph_check.c: the record, the checks and the
 * end of a read, which both readers call). Internal to src/plan. */
#ifndef TP__MEMGRAPH_IO_H
#define TP__MEMGRAPH_IO_H

#include "plan/plan_internal.h"

/* The binary format's first 8 bytes (docs/formats.md "Binary MemGraph"). */
#define TP__MGB_MAGIC "TURNIPMG"
#define TP__MGB_VERSION 1u

/* A new empty MemGraph record (NULL on OOM). */
tp_memgraph *tp__mg_alloc(void);
/* After a reader filled n, v, reads, deps_off/deps, outputs, kept, ndevices, cap, host_bytes
 * with tasks already mapped into mg->g: every range and the rules a run relies on (kinds against
 * their tasks, read counts, regions inside their memory, sizes equal to the task's when
 * `sized`). TP_ERR_INVALID naming the file and vertex. */
tp_status tp__mg_check(const tp_memgraph *mg, const char *name, int sized, tp_error *err);
/* The stand-in TaskGraph of a conversion: names[0..n) as inputs (one byte each, device 0) on
 * ndevices devices, outputs out[0..nout) with keep flags; finalized. */
tp_status tp__mg_names_graph(int ndevices, const char *const *names, size_t n, const uint32_t *out,
                             const uint8_t *keep, size_t nout, tp_graph **g, tp_error *err);
/* After a reader: the outputs (tasks otask, vertices *ofrom (taken), keep flags) against tg's,
 * or (tg NULL) the stand-in graph of names[0..nnames) into *names_out; then tp__mg_check. */
tp_status tp__mg_finish(tp_memgraph *mg, const tp_graph *tg, const char *name, const char *const *names, size_t nnames,
                        const uint32_t *otask, uint32_t **ofrom, const uint8_t *okeep, size_t nout, tp_graph **names_out,
                        tp_error *err);
/* Binary reader (memgraph_bin.c): the file at fd (opened, regular; closed by the caller), size
 * bytes. tg as for tp_memgraph_read_file. */
tp_status tp__mg_read_binary(int fd, uint64_t size, const char *name, const tp_graph *tg, tp_memgraph **out,
                             tp_graph **names, tp_error *err);

#endif
