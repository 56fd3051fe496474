/* topo.c - Kahn's algorithm over CSR successor lists (see topo.h): FIFO with the output
 * array as the queue, or smallest index first with the shared heap (io/heap.h), which is
 * the identity, found without the heap, when every edge runs to a larger index. */
#include <stdlib.h>
#include <string.h>
#include "io/heap.h"
#include "io/topo.h"

void tp__topo_indegrees(uint32_t n, const uint32_t *off, const uint32_t *succ, uint32_t *indeg)
{
    memset(indeg, 0, (size_t)n * sizeof *indeg);
    for (uint32_t u = 0; u < n; u++)
        for (uint32_t k = off[u]; k < off[u + 1]; k++) indeg[succ[k]]++;
}

tp_status tp__topo_sort(uint32_t n, const uint32_t *off, const uint32_t *succ, uint32_t *indeg, tp__topo_mode mode,
                        uint32_t *order, uint32_t *reached)
{
    uint32_t *own = NULL, *heap = NULL;
    if (!indeg) {
        indeg = own = malloc(((size_t)n + 1) * sizeof *own);
        if (!own) return TP_ERR_NOMEM;
        tp__topo_indegrees(n, off, succ, indeg);
    }
    uint32_t k = 0;
    if (mode == TP__TOPO_FIFO) {
        uint32_t qt = 0;
        for (uint32_t i = 0; i < n; i++)
            if (!indeg[i]) order[qt++] = i;
        for (; k < qt; k++) {
            uint32_t u = order[k];
            for (uint32_t j = off[u]; j < off[u + 1]; j++)
                if (--indeg[succ[j]] == 0) order[qt++] = succ[j];
        }
    } else {
        /* every edge from a smaller index to a larger one (a builder's order): the smallest
         * index first is the identity, found in O(V + E) without the heap */
        int forward = 1;
        for (uint32_t u = 0; u < n && forward; u++)
            for (uint32_t j = off[u]; j < off[u + 1]; j++)
                if (succ[j] <= u) {
                    forward = 0;
                    break;
                }
        if (forward) {
            for (; k < n; k++) order[k] = k;
            memset(indeg, 0, (size_t)n * sizeof *indeg); /* consumed, as Kahn's leaves them */
            free(own);
            *reached = k;
            return TP_OK;
        }
        heap = malloc(((size_t)n + 1) * sizeof *heap);
        if (!heap) {
            free(own);
            return TP_ERR_NOMEM;
        }
        size_t hn = 0;
        for (uint32_t i = 0; i < n; i++)
            if (!indeg[i]) heap[hn++] = i; /* increasing: already a heap */
        while (hn) {
            uint32_t u = tp__u32heap_pop(heap, &hn, NULL);
            order[k++] = u;
            for (uint32_t j = off[u]; j < off[u + 1]; j++)
                if (--indeg[succ[j]] == 0) tp__u32heap_push(heap, &hn, succ[j], NULL);
        }
    }
    free(heap);
    free(own);
    *reached = k;
    return TP_OK;
}

double tp__bottom_levels(const uint32_t *off, const uint32_t *succ, const uint32_t *order, uint32_t reached,
                         const double *w, double *out)
{
    double longest = 0;
    for (uint32_t i = reached; i-- > 0;) {
        uint32_t v = order[i];
        double best = 0;
        for (uint32_t k = off[v]; k < off[v + 1]; k++)
            if (out[succ[k]] > best) best = out[succ[k]];
        out[v] = (w ? w[v] : 0) + best;
        if (out[v] > longest) longest = out[v];
    }
    return longest;
}
