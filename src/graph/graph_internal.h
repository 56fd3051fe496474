/* graph_internal.h - the tp_graph record, shared by the graph layer's files only. */
#ifndef TP__GRAPH_INTERNAL_H
#define TP__GRAPH_INTERNAL_H

#include "turnip/graph.h"
#include "io/util.h"

/* What a vertex declares for sessions; all zero is "nothing declared". */
typedef struct tp__sess {
    uint64_t res_off;   /* resident: offset on the input's device */
    uint8_t resident;   /* 1: the input is on its device when the plan starts */
    uint8_t no_host;    /* 1: resident with "host_copy": false (no valid host copy) */
    uint8_t rflags;     /* resident: TP_RESIDENT_LOAD | TP_RESIDENT_PIN (cache tensors, issue 12) */
    uint8_t keep;       /* 1: in the top-level "keep" list */
    uint8_t host_fixed; /* 1: the input's host copy is the caller's, at host_off (tp_graph_set_host) */
    uint32_t inplace1;  /* in-place argument K + 1; 0 when none */
    uint64_t host_off;  /* host_fixed: offset in the host block, inside the reserved bytes */
} tp__sess;

/* Bump memory for the strings and input lists of vertices (graph.c); freed with the graph. */
typedef struct tp__arena {
    struct tp__ablock *head;
    size_t bytes; /* malloc'd */
} tp__arena;

struct tp_graph {
    int ndevices;
    tp_vertex *v; /* public views; their strings and input arrays live in arena */
    size_t n, cap;
    tp__arena arena;
    tp__strmap ids;      /* id -> vertex (keys in arena) */
    tp__strmap interned; /* op names and attrs texts -> index in istr (keys in arena) */
    const char **istr;
    size_t nistr, capistr;
    uint32_t *outputs;
    size_t nout, capout;
    uint8_t *is_out; /* per vertex: listed as an output (grown with the outputs) */
    size_t cap_is_out;
    int finalized;
    uint32_t *cons_off; /* CSR of distinct consumers, n+1 entries */
    uint32_t *cons;
    /* sessions (issue 11), all optional: per vertex, grown on the first setter call that
     * names it (vertices past cap_sess have nothing set); the keep list in the order given */
    tp__sess *sess;
    size_t cap_sess;
    uint32_t *keeps;
    size_t nkeep, capkeep;
    uint64_t host_reserved; /* host bytes [0, host_reserved) are the caller's (tp_graph_set_host) */
};

/* Adds a vertex without checking that inputs exist yet (the JSON reader resolves names
 * after every vertex is known; finalize checks ranges and cycles). Copies id, op, attrs and
 * inputs (borrowed; may be NULL when ninputs is 0); the copy of inputs may be written until
 * finalize (the reader fills in names it resolves late). */
tp_status tp__graph_add(tp_graph *g, const char *id, tp_vkind kind, int device, const char *op,
                        uint32_t ninputs, const uint32_t *inputs, tp_dtype dtype, int ndim,
                        const int64_t *shape, uint64_t bytes, const char *attrs_json,
                        double flops, uint32_t *out, tp_error *err);

#endif
