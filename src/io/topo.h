/* topo.h - Kahn's algorithm over a CSR successor list, the one topological sort of the
 * library outside the verifier (io layer, internal; src/io/topo.c).
 *
 * A graph of n vertices 0..n-1 is given by its successors: those of u are
 * succ[off[u] .. off[u+1]-1] (off has n+1 entries; repeats count as separate edges). Used
 * by the graph's validation (cycle check, size derivation order), the serial order topo,
 * and the plan statistics' ranks; meant for the executor's fixed order too:
 *
 *   uint32_t *deg = copy of ndeps[], *order = malloc(n * sizeof *order), reached;
 *   tp_status s = tp__topo_sort(n, succ_off, succ, deg, TP__TOPO_SMALLEST, order, &reached);
 *   for (uint32_t i = 0; i < reached; i++) rank[order[i]] = i;
 *   ... reached < n: a cycle. */
#ifndef TP__TOPO_H
#define TP__TOPO_H

#include <stdint.h>
#include "turnip/error.h"

typedef enum tp__topo_mode {
    TP__TOPO_FIFO = 0,    /* sources in increasing index, then vertices in the order they became
                           * ready (successor list order): a plain queue, no extra memory */
    TP__TOPO_SMALLEST = 1 /* the smallest ready index first (a heap): a file already in
                           * topological order comes out as written */
} tp__topo_mode;

/* Fills indeg[0..n-1] (the caller's) with the in-degrees the successor lists give. */
void tp__topo_indegrees(uint32_t n, const uint32_t *off, const uint32_t *succ, uint32_t *indeg);

/* Sorts: order (the caller's, n entries) gets the vertices reached, in the mode's order;
 * *reached their count, n exactly when the graph is acyclic. indeg: NULL (computed here),
 * or the caller's n in-degrees, consumed: on return indeg[v] != 0 exactly for the vertices
 * not reached (on a cycle or after one). Returns TP_OK, or TP_ERR_NOMEM with nothing
 * reported (the caller words the message); then order and indeg are unspecified. */
tp_status tp__topo_sort(uint32_t n, const uint32_t *off, const uint32_t *succ, uint32_t *indeg, tp__topo_mode mode,
                        uint32_t *order, uint32_t *reached);

/* Bottom levels over a topological order (order[0..reached), as tp__topo_sort gives it):
 * out[v] = w[v] (0 when w is NULL) + the largest out[] of v's successors, for each v of the
 * order; others untouched. Returns the largest, the longest weighted path (0 when empty). */
double tp__bottom_levels(const uint32_t *off, const uint32_t *succ, const uint32_t *order, uint32_t reached,
                         const double *w, double *out);

#endif
