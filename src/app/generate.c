/* generate.c - LLaMA text generation with a growing KV cache on a tensor cache (issue 12).
 *
 * Design: TURNIP inside a plan, Ravenstore across plans. The prompt is prefilled by the
 * ordinary prefill plan (tp_llama_build with a batch and the K/V of every layer as outputs),
 * run in a session. Then every decode step (one new token per sequence) runs in the same
 * session, in one of two shapes (tp_gen_opts.per_token):
 *
 * - a plan per step (the default of `turnip generate`): the whole step, every layer and the
 *   head, is one TaskGraph (tp_llama_decode_token) planned by BUILDMEMGRAPH. Its cache
 *   tensors are pinned, the small ones first, where they fit their device's range; the large
 *   ones that do not all fit are kept spread evenly along the step (spread_pins), the rest
 *   streamed: plain inputs read from their host copies, a layer's 2-D weights in row chunks
 *   (GEN_SPLIT_DIV), which the planner loads just before their use into the plan's own memory
 *   (below the range: the activations of the largest layer plan and room for one of the
 *   largest tensors, for two chunks where a device's tensors do not all stay: one in use, the
 *   next loading), so the loads of later layers run beside the compute of earlier ones and
 *   the link never waits for a run of kept layers to compute. Bytes per step: what is
 *   streamed, that is everything but the range (the bound's excess is the plan's room). The
 *   pinned set is the same every step, whatever the policy; prefetch and lookahead do not
 *   apply. The attention covers positions in runs (attend_of, the rest masked), so the steps
 *   of a run build the same graph but for kernel attributes, and a step takes the last step's
 *   plan where that holds (tp_graph_same_plan, tp_memgraph_rebind) instead of planning again.
 * - a plan per layer (and one for the head): each is a small TaskGraph
 *   (tp_llama_decode_layer/head). What stays on the devices between those plans is the
 *   policy's decision: before a layer's plan, the driver gets (pins) every tensor the layer
 *   reads (weights, K and V) and asks the policy to prefetch; a tensor that was not resident
 *   becomes a resident input with "load" (the plan copies it from the host into the region
 *   the cache chose, on the copy engine). After the plan the tensors are put back with their
 *   exact next access (the pattern repeats every step), which the latency-aware policy uses;
 *   LRU and FIFO evict just what the next layers need.
 *
 * In both, every tensor the cache holds on the plan's devices (and, with lookahead, a load
 * pending on another) is a pinned resident input, so a plan's temporaries go around them;
 * loads read the host copies in place (the cache keeps them at the bottom of the session's
 * host block). The K/V append is a write_slice in place on the cache tensor (one row
 * per head moves); the new rows are also outputs, written into the cache's host copies
 * (write-through), so an evicted or streamed K/V tensor is never dirty.
 *
 * The embedding lookup of the new tokens is done on the host from the table (one row per
 * sequence), so the table never needs device memory unless it is also the lm_head.
 * Devices: the L layers and the head are spread over the D <= L + 1 devices in contiguous
 * groups (layer i on device i*D/(L+1), tp_llama_decode_device); the residual stream (B x
 * hidden floats) moves through the host between the plans of layers, by a transfer inside
 * a plan per step. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/app.h"
#include "turnip/cache.h"
#include "turnip/io.h"
#include "io/half.h"
#include "io/util.h"

/* A plan per step streams only tensors of at least 1/GEN_SMALL_DIV of the largest where it can:
 * a small one streamed costs a copy's launch for few bytes, and with the activations it breaks
 * up the plan's room, which then holds one large tensor at a time instead of two, so the load
 * of each waits for the kernel of the one before (docs/generation.md "Where a step's link
 * idles"). */
#define GEN_SMALL_DIV 16

/* A plan per step streams the 2-D weights of a layer in row chunks of at most 1/GEN_SPLIT_DIV of
 * the largest tensor (tp_llama_decode_opts.split_bytes), so its room holds two chunks, not two
 * whole weights: the room is memory the cache's range does not have, and every byte of it is
 * streamed again each step (docs/generation.md "Streaming in row chunks"). */
#define GEN_SPLIT_DIV 4

/* Decode steps attend to positions in runs of at least this many (attend_of). */
#define GEN_ATTEND_MIN 16

typedef struct step_t {
    int dev;
    uint32_t n;           /* cache tensors it reads */
    tp_cache_id *ids;     /* [n] */
    char **names;         /* [n] graph input names (owned) */
    uint64_t *tick;       /* [n] the clock at each one's get (TP_CACHE_NO_HINT: streamed) */
    uint8_t *streamed;    /* [n] read without the cache this time */
    uint8_t *spill;       /* [n] a plan per step streams it by choice (spread_pins), unless the
                             cache already holds it */
    int armed;            /* its tensors are pinned (pin_step ran, unpin_step not yet) */
    tp_graph *g;          /* its graph at position 0, from its build_step in tp_llama_generate until make_step took it */
} step_t;

typedef struct gen {
    const tp_gen_opts *o;
    const tp_llama_config *c;
    tp_error *err;
    tp_session *sess;
    tp_cache *cache;
    int D;
    int64_t L, B, H, hd, KVH, V, maxlen;
    int VC;
    step_t *steps;        /* L layer steps, then the head */
    uint32_t nsteps;
    tp__strmap byname;    /* step tensor name -> its cache handle (keys: the steps' names) */
    uint32_t nids;        /* cache handles are 1..nids */
    uint32_t *id_step, *id_j; /* [nids + 1]: the step that reads handle id, and its index there */
    uint8_t *id_load;     /* [nids + 1] scratch of declare_inputs: listed for loading, zero between calls */
    float *kvrow;         /* [B x kv_heads x head_dim] scratch: one layer's new K or V rows */
    uint64_t gets_per_token; /* cache gets per decode step */
    uint64_t range[TP_MAX_DEVICES]; /* bytes of the cache's range on each device */
    uint8_t *harena;      /* the session's host block, whose first `hres` bytes hold the cache's host
                             copies and the embedding table (NULL: no data); plans load from them
                             in place (no copy) */
    uint64_t hres;
    uint64_t pinned[TP_MAX_DEVICES]; /* bytes the driver holds pinned per device */
    uint64_t small;       /* a plan per step: tensors of fewer bytes are pinned before the others,
                             and the decode plans pack allocations of fewer bytes at the bottom of
                             the plan's room and stack the rest down from its top
                             (tp_plan_opts.pack_below): the largest step tensor / GEN_SMALL_DIV */
    uint64_t split;       /* a plan per step: its streamed 2-D weights in row chunks of at most
                             this many bytes (tp_gen_need.split_bytes) */
    tp_graph *pre;        /* the prefill's graph, built once by prefill_fits for prefill (owned) */
    tp_order pre_order;   /* its plan order: the caller's, or for TP_ORDER_DEFAULT the builder's choice */
    tp_graph *rg;         /* a plan per step: the last step's graph and plan, kept for the next */
    tp_memgraph *rmg;     /*   step, which reuses the plan where its graph is the same (plan_exec) */
    int check_reuse;      /* TURNIP_CHECK_PLAN_REUSE=1: plan every reused step anyway and compare;
                             and the prefill's plan must use exactly the host memory prefill_host
                             counted (without it: at most that) */
    uint64_t pre_host;    /* prefill_host's count: the prefill's host memory past hres */
    float *x;             /* [B, H] residual stream */
    float *logits;        /* [B, V] */
    void *embed;          /* the embedding table, host (its dtype): at embed_at in the session's host
                             block (after the cache's host copies) with data, else NULL */
    uint64_t embed_at, eb; /* its offset there and its bytes */
    tp_gen_result *r;
} gen;

static tp_status oom(gen *G)
{
    return tp__fail(G->err, TP_ERR_NOMEM, "out of memory");
}

/* the device of step i (layers 0..L-1, then the head L): contiguous groups of steps */
static int layer_dev(const gen *G, int64_t l)
{
    return tp_llama_decode_device(G->c, G->D, l);
}

/* ---- sizes ------------------------------------------------------------------------------- */

/* Positions a decode step at pos attends to (tp_llama_decode_opts.attend): pos + 1 rounded up to
 * a multiple of q, at most max_len, where q is GEN_ATTEND_MIN or, past GEN_ATTEND_MIN^2
 * positions, the largest power of two times it that is at most (pos + 1) / GEN_ATTEND_MIN (the
 * masked positions stay under a sixteenth of the attended ones). The steps of one such run of
 * positions have graphs of the same sizes, so a plan per step is made once per run and reused
 * (run_plan). */
static int64_t attend_of(const gen *G, int64_t pos)
{
    int64_t p = pos + 1, q = GEN_ATTEND_MIN;
    while (q <= p / GEN_ATTEND_MIN / 2) q *= 2;
    int64_t a = p / q * q + (p % q ? q : 0);
    return a < G->maxlen ? a : G->maxlen;
}

/* Step si's graph (layer si < L, else the head) at position pos attending to `attend` positions
 * (0: pos + 1), the layer's weights in row chunks of at most `split` bytes (0: whole;
 * tp_llama_decode_opts.split_bytes), finalized when `fin` (else the caller adds to it and
 * finalizes). */
static tp_status build_step(const gen *G, uint32_t si, int64_t pos, int64_t attend, uint64_t split, int fin, tp_graph **g)
{
    tp_llama_decode_opts d = {.devices = G->D, .device = layer_dev(G, si), .layer = si, .batch = G->B, .pos = pos, .max_len = G->maxlen,
                              .attend = attend, .vocab_chunks = G->VC, .split_bytes = split};
    tp_status s = si < G->L ? tp_llama_decode_layer(G->c, &d, g, G->err) : tp_llama_decode_head(G->c, &d, g, G->err);
    if (!s && fin && (s = tp_graph_finalize(*g, G->err))) {
        tp_graph_free(*g);
        *g = NULL;
    }
    return s;
}

/* bytes of a graph's inputs other than "x" (cache tensors), the largest of them, and of
 * everything else (work) */
static void graph_bytes(tp_graph *g, uint64_t *cache_b, uint64_t *big, uint64_t *work_b, uint64_t *vneed)
{
    *cache_b = *work_b = *big = *vneed = 0;
    for (uint32_t i = 0; i < tp_graph_size(g); i++) {
        const tp_vertex *v = tp_graph_vertex(g, i);
        if (v->kind == TP_V_KERNEL) { /* what one kernel needs at once: distinct inputs and output */
            uint64_t n = tp_graph_inplace(g, i) < 0 ? v->bytes + 256 : 0;
            for (uint32_t k = 0; k < v->ninputs; k++) {
                uint32_t j;
                for (j = 0; j < k && v->inputs[j] != v->inputs[k]; j++) {}
                if (j == k) n += tp_graph_vertex(g, v->inputs[k])->bytes + 256;
            }
            if (n > *vneed) *vneed = n;
        }
        if (v->kind == TP_V_INPUT && strcmp(v->id, "x")) {
            *cache_b += v->bytes + 256;
            if (v->bytes + 256 > *big) *big = v->bytes + 256;
        } else if (tp_graph_inplace(g, i) < 0) {
            *work_b += v->bytes;
        }
    }
}

int tp_llama_generate_vocab_chunks(const tp_llama_config *c, uint64_t cap, uint64_t split_bytes)
{
    double row = (double)c->hidden * (double)tp_dtype_size(c->dtype);
    double most = split_bytes && (double)split_bytes < (double)cap / 8 ? (double)split_bytes : (double)cap / 8;
    int64_t vc = 1;
    while (vc < c->vocab && vc < (1 << 20) && row * (double)((c->vocab + vc - 1) / vc) > most) vc *= 2;
    return (int)(vc < c->vocab ? vc : c->vocab);
}

tp_status tp_llama_generate_need(const tp_llama_config *c, int devices, int64_t batch, int64_t max_len, int vocab_chunks,
                                 tp_gen_need *out, tp_error *err)
{
    memset(out, 0, sizeof *out);
    if (devices < 1 || devices > TP_MAX_DEVICES || devices > c->layers + 1)
        return tp__fail(err, TP_ERR_ARG, "generate: devices must be 1..%lld (the layers and the head)", (long long)c->layers + 1);
    tp_gen_opts o = {0};
    o.config = c;
    gen G0 = {0}, *G = &G0;
    G->o = &o;
    G->c = c;
    G->err = err;
    G->D = devices;
    G->L = c->layers;
    G->B = batch;
    G->maxlen = max_len;
    G->VC = vocab_chunks > 0 ? vocab_chunks : 1;
    uint64_t dev_cache[TP_MAX_DEVICES] = {0};
    int64_t lastpos = max_len > 1 ? max_len - 2 : 0; /* the largest step: at max_len - 1 the builder reads the cache without a copy */
    tp_graph *g = NULL;
    uint64_t cb, wb, big, vn;
    for (int pass = 0; pass < 2; pass++) { /* a layer (every layer has its shapes), then the head */
        tp_status s = build_step(G, pass ? (uint32_t)c->layers : 0, lastpos, 0, 0, 1, &g);
        if (s) return s;
        graph_bytes(g, &cb, &big, &wb, &vn);
        for (uint32_t i = 0; i < tp_graph_size(g); i++) { /* the largest layer weight, the largest input never split */
            const tp_vertex *v = tp_graph_vertex(g, i);
            if (v->kind != TP_V_INPUT || !strcmp(v->id, "x")) continue;
            if (pass == 0 && v->ndim == 2 && !strncmp(v->id, "model.layers.", 13)) {
                if (v->bytes > out->split_bytes) out->split_bytes = v->bytes; /* the largest, for now */
            } else if (v->bytes + 256 > out->stream_slot) {
                out->stream_slot = v->bytes + 256;
            }
        }
        tp_graph_free(g);
        if (wb > out->work_bytes) out->work_bytes = wb;
        if (vn > out->work_min) out->work_min = vn;
        if (pass && vn > out->work_min_split) out->work_min_split = vn;
        if (big > out->stream_bytes) out->stream_bytes = big;
        if (cb > out->step_max) out->step_max = cb;
        if (pass) {
            out->model_bytes += cb;
            dev_cache[layer_dev(G, c->layers)] += cb;
        } else {
            /* K and V of one layer: [B, kv_heads, max_len, hd] f32 each */
            uint64_t kv = 2 * ((uint64_t)batch * (uint64_t)c->kv_heads * (uint64_t)max_len * (uint64_t)(c->hidden / c->heads) * 4 + 256);
            if ((double)cb * (double)c->layers > 0x1p62)
                return tp__fail(err, TP_ERR_ARG, "generate: %lld layers of %llu bytes of weights and KV cache exceed 2^62 bytes",
                                (long long)c->layers, (unsigned long long)cb);
            out->kv_bytes = kv * (uint64_t)c->layers;
            out->model_bytes += (cb - kv) * (uint64_t)c->layers;
            for (int64_t l = 0; l < c->layers; l++) dev_cache[layer_dev(G, l)] += cb;
        }
    }
    /* the plans' own memory, below the cache's range: the activations (all of a step's, no
     * reuse counted), room to stream the largest tensor when it is not cached, and slack for
     * the planner's alignment */
    out->split_bytes = (out->split_bytes / GEN_SPLIT_DIV + 255) & ~(uint64_t)255;
    if (out->split_bytes + 256 > out->stream_slot) out->stream_slot = out->split_bytes + 256;
    tp_status s = build_step(G, 0, lastpos, 0, out->split_bytes, 1, &g); /* one kernel's need, a layer's weights in chunks */
    if (s) return s;
    graph_bytes(g, &cb, &big, &wb, &vn);
    tp_graph_free(g);
    if (vn > out->work_min_split) out->work_min_split = vn;
    out->work_min_split += 4096;
    out->work_bytes += out->work_bytes / 4 + out->stream_bytes + 4096;
    for (int d = 0; d < devices; d++) {
        out->device_need[d] = dev_cache[d] + out->work_bytes;
        if (out->device_need[d] > out->need) out->need = out->device_need[d];
    }
    out->work_min += 4096;
    out->min_cap = out->work_min + 4096; /* and a cache range of at least a page */
    return TP_OK;
}

/* ---- the cache tensors --------------------------------------------------------------------- */

static void free_steps(gen *G)
{
    for (uint32_t s = 0; G->steps && s < G->nsteps; s++) {
        for (uint32_t j = 0; j < G->steps[s].n; j++) free(G->steps[s].names[j]);
        free(G->steps[s].names);
        free(G->steps[s].ids);
        free(G->steps[s].tick);
        free(G->steps[s].streamed);
        free(G->steps[s].spill);
        tp_graph_free(G->steps[s].g);
    }
    free(G->steps);
    tp__strmap_free(&G->byname);
    free(G->id_step);
    free(G->id_j);
    free(G->id_load);
    free(G->kvrow);
}

/* the bytes a cache tensor takes in its range (the cache aligns to 256) */
static uint64_t taken(const gen *G, tp_cache_id id)
{
    return (tp_cache_bytes(G->cache, id) + 255) & ~(uint64_t)255;
}

/* The maps from names and handles to the steps' tensors, once every step is made; the small
 * tensors' bound. */
static tp_status index_steps(gen *G)
{
    uint32_t n = 0;
    for (uint32_t si = 0; si < G->nsteps; si++)
        for (uint32_t j = 0; j < G->steps[si].n; j++) {
            if (G->steps[si].ids[j] > G->nids) G->nids = G->steps[si].ids[j];
            n++;
        }
    G->id_step = malloc((G->nids + 1) * sizeof *G->id_step);
    G->id_j = malloc((G->nids + 1) * sizeof *G->id_j);
    G->id_load = calloc(G->nids + 1, 1);
    if (!G->id_step || !G->id_j || !G->id_load || !tp__strmap_init(&G->byname, n)) return oom(G);
    for (uint32_t si = 0; si < G->nsteps; si++)
        for (uint32_t j = 0; j < G->steps[si].n; j++) {
            tp_cache_id id = G->steps[si].ids[j];
            G->id_step[id] = si;
            G->id_j[id] = j;
            if (tp__strmap_put(&G->byname, G->steps[si].names[j], id, NULL) < 0) return oom(G);
            if (taken(G, id) / GEN_SMALL_DIV > G->small) G->small = taken(G, id) / GEN_SMALL_DIV;
        }
    return TP_OK;
}

/* the cache handle of step tensor `name` (any step), or 0 */
static tp_cache_id tensor_named(const gen *G, const char *name)
{
    uint32_t id;
    return tp__strmap_get(&G->byname, name, &id) ? id : 0;
}

/* the host copy of layer l's K (kv 0) or V (1) cache tensor, or NULL */
static float *kv_host(const gen *G, int64_t l, int kv)
{
    char nm[64];
    snprintf(nm, sizeof nm, "kv.%lld.%s", (long long)l, kv ? "v" : "k");
    tp_cache_id id = tensor_named(G, nm);
    return id ? tp_cache_host(G->cache, id) : NULL;
}

/* Creates the cache tensors every step reads, from a graph of that step: weights from the
 * checkpoint, K/V from the prefill (host copies filled later). */
static tp_status make_step(gen *G, step_t *st, tp_graph *g)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < tp_graph_size(g); i++)
        if (tp_graph_vertex(g, i)->kind == TP_V_INPUT && strcmp(tp_graph_vertex(g, i)->id, "x")) n++;
    st->ids = calloc(n + 1, sizeof *st->ids);
    st->names = calloc(n + 1, sizeof *st->names);
    st->tick = calloc(n + 1, sizeof *st->tick);
    st->streamed = calloc(n + 1, 1);
    st->spill = calloc(n + 1, 1);
    if (!st->ids || !st->names || !st->tick || !st->streamed || !st->spill) return oom(G);
    tp_status s = TP_OK;
    for (uint32_t i = 0; i < tp_graph_size(g) && !s; i++) {
        const tp_vertex *v = tp_graph_vertex(g, i);
        if (v->kind != TP_V_INPUT || !strcmp(v->id, "x")) continue;
        uint32_t j = st->n++;
        if (!(st->names[j] = strdup(v->id))) return oom(G);
        s = tp_cache_create(G->cache, v->dtype, v->ndim, v->shape, NULL, &st->ids[j], G->err);
        if (s) break;
        int is_kv = !strncmp(v->id, "kv.", 3);
        if (is_kv || !G->o->data) continue;
        void *host = tp_cache_host(G->cache, st->ids[j]);
        if (!host) return tp__fail(G->err, TP_ERR_ARG, "generate: the cache holds no host copy of '%s'", v->id);
        s = tp_llama_weights_read(G->o->weights, v->id, v->dtype, v->bytes, host, G->err);
    }
    return s;
}

/* ---- one plan in the session ------------------------------------------------------------------ */

static int output_index(const tp_graph *g, const char *id)
{
    int64_t v = tp_graph_find(g, id);
    for (uint32_t k = 0; k < tp_graph_num_outputs(g) && v >= 0; k++)
        if (tp_graph_outputs(g)[k] == (uint32_t)v) return (int)k;
    return -1;
}

static tp_status read_output(gen *G, tp_exec *x, const tp_memgraph *mg, const char *id, void *dst, uint64_t bytes)
{
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    int k = output_index(g, id);
    if (k < 0) return tp__fail(G->err, TP_ERR_INVALID, "generate: the step has no output '%s'", id);
    tp_mvertex mv;
    tp_memgraph_vertex(mg, tp_memgraph_outputs(mg)[k], &mv);
    if (mv.write.bytes != bytes)
        return tp__fail(G->err, TP_ERR_INVALID, "generate: output '%s' has %llu bytes, expected %llu", id,
                        (unsigned long long)mv.write.bytes, (unsigned long long)bytes);
    return tp_exec_read(x, &mv.write, dst, G->err);
}

/* TURNIP_CHECK_PLAN_REUSE=1: plans g afresh under po and fails (TP_ERR_CHECK) unless the plan
 * is the reused one, mg, to the byte of their JSON */
static tp_status check_reused(gen *G, const tp_graph *g, const tp_plan_opts *po, const tp_memgraph *mg)
{
    tp_memgraph *fresh = NULL;
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    tp_status s = tp_plan(g, po, &fresh, G->err);
    if (!s) s = tp_memgraph_to_string(mg, &a, &na, G->err);
    if (!s) s = tp_memgraph_to_string(fresh, &b, &nb, G->err);
    if (!s && (na != nb || memcmp(a, b, na)))
        s = tp__fail(G->err, TP_ERR_CHECK, "generate: a reused plan differs from the plan made for its step (TURNIP_CHECK_PLAN_REUSE)");
    free(a);
    free(b);
    tp_memgraph_free(fresh);
    return s;
}

/* Plans g (finalized) in `order` under the caps, small allocations packed below pack_below bytes (0:
 * none), checks it, makes its executor in the session. With reuse (a plan per step), takes the
 * last step's plan instead where g is the same graph but for kernel attributes
 * (tp_graph_same_plan; the planner is deterministic). *mg is the caller's either way. */
static tp_status plan_exec(gen *G, const tp_graph *g, tp_order order, uint64_t pack_below, int reuse, tp_memgraph **mg,
                           tp_exec **x)
{
    tp_plan_opts po;
    tp_plan_opts_init(&po, G->D, G->o->device_mem);
    po.order = order;
    po.pack_below = pack_below;
    tp_status s = TP_OK;
    if (reuse && G->rmg && tp_memgraph_rebind(G->rmg, g, NULL) == TP_OK) { /* refused (no message): plan g */
        *mg = G->rmg;
        G->rmg = NULL;
        tp_graph_free(G->rg); /* no longer the plan's */
        G->rg = NULL;
        G->r->decode_plans_reused++;
        if (G->check_reuse) s = check_reused(G, g, &po, *mg);
    } else {
        s = tp_plan(g, &po, mg, G->err);
        if (!s && reuse) G->r->decode_plans++;
    }
    if (!s && G->o->verify) {
        char *text;
        size_t len;
        s = tp_memgraph_to_string(*mg, &text, &len, G->err);
        if (!s) s = tp_verify_json(text, len, "decode step", g, G->err);
        free(text);
    }
    if (!s) s = tp_exec_new_in(G->sess, *mg, &G->o->run, x, G->err);
    return s;
}

static void account(const tp_run_summary *sum, double *run_s, uint64_t *bytes)
{
    *run_s += sum->makespan;
    *bytes += sum->bytes_moved;
}

/* Pins the tensors step si reads of lo..hi-1 bytes (loads are listed for the next plan) while
 * the pinned bytes of its device fit the cache's range; a tensor beyond that (a step larger
 * than the range) is streamed instead: a plain input of its plan, loaded and dropped by it,
 * never admitted. The step is armed by the call whose range ends at UINT64_MAX (the last). */
static tp_status pin_step(gen *G, uint32_t si, uint64_t lo, uint64_t hi)
{
    step_t *st = &G->steps[si];
    tp_status s = TP_OK;
    for (uint32_t j = 0; j < st->n && !s; j++) {
        uint64_t off, b = taken(G, st->ids[j]);
        if (b < lo || b >= hi) continue;
        int d = -1;
        st->tick[j] = TP_CACHE_NO_HINT;
        st->streamed[j] = 0;
        if (!(tp_cache_where(G->cache, st->ids[j], &d, &off) && d == st->dev) &&
            (st->spill[j] || G->pinned[st->dev] + b > G->range[st->dev])) {
            st->streamed[j] = 1;
            continue;
        }
        st->tick[j] = tp_cache_clock(G->cache);
        s = tp_cache_get(G->cache, st->ids[j], st->dev, &off, G->err);
        if (s == TP_ERR_NOMEM) { /* the range is fragmented by pinned tensors: stream this one */
            s = TP_OK;
            st->streamed[j] = 1;
            st->tick[j] = TP_CACHE_NO_HINT;
            continue;
        }
        if (!s) G->pinned[st->dev] += b;
    }
    st->armed = !s && hi == UINT64_MAX;
    return s;
}

/* A plan per step: which large tensors (of at least G->small bytes) stay pinned where a device's
 * range holds only some of them, spread evenly along the step (a tensor is kept while the kept
 * bytes stay within their share of the bytes so far, rounded to the nearest tensor) instead of
 * the first layers' ones. With the first layers kept, the link idles while they compute: the
 * plan's room is full with the first streamed tensors, which wait for those kernels (docs/
 * generation.md "Where a step's link idles"). Spread, the compute of a kept tensor runs while
 * the link loads the next streamed one. The small tensors are all kept where they fit (their
 * bytes come off the range first). Sets the steps' spill flags; the pinned set stays the same
 * every step. */
static void spread_pins(gen *G)
{
    for (int d = 0; d < G->D; d++) {
        uint64_t small = 0, large = 0;
        for (uint32_t si = 0; si < G->nsteps; si++)
            for (uint32_t j = 0; j < G->steps[si].n && G->steps[si].dev == d; j++) { /* (a step is on one device) */
                uint64_t b = taken(G, G->steps[si].ids[j]);
                if (b < G->small) small += b;
                else large += b;
            }
        uint64_t budget = G->range[d] > small ? G->range[d] - small : 0;
        if (large <= budget) continue;
        double share = (double)budget / (double)large, credit = 0;
        uint64_t kept = 0;
        for (uint32_t si = 0; si < G->nsteps; si++)
            for (uint32_t j = 0; j < G->steps[si].n && G->steps[si].dev == d; j++) {
                uint64_t b = taken(G, G->steps[si].ids[j]);
                if (b < G->small) continue;
                credit += share * (double)b;
                int keep = (double)(kept + b) <= credit + (double)b / 2 && kept + b <= budget;
                if (keep) kept += b;
                G->steps[si].spill[j] = (uint8_t)!keep;
            }
        for (uint32_t si = 0; si < G->nsteps; si++) /* what the rounding left of the budget */
            for (uint32_t j = 0; j < G->steps[si].n && G->steps[si].dev == d; j++) {
                uint64_t b = taken(G, G->steps[si].ids[j]);
                if (G->steps[si].spill[j] && kept + b <= budget) {
                    kept += b;
                    G->steps[si].spill[j] = 0;
                }
            }
    }
}

/* Unpins step si's tensors with their next access (none after the last step). */
static tp_status unpin_step(gen *G, uint32_t si, int last)
{
    step_t *st = &G->steps[si];
    tp_status s = TP_OK;
    for (uint32_t j = 0; j < st->n && !s; j++) {
        if (!st->streamed[j]) {
            s = tp_cache_put(G->cache, st->ids[j], 0, last ? TP_CACHE_NO_HINT : st->tick[j] + G->gets_per_token, G->err);
            G->pinned[st->dev] -= taken(G, st->ids[j]);
        } else if (!last) {
            s = tp_cache_hint(G->cache, st->ids[j], tp_cache_clock(G->cache) + G->gets_per_token - 1, G->err);
        }
    }
    st->armed = 0;
    return s;
}

/* tp_llama_decode_opts.split: 1 when the step tensor `name` is streamed this step */
static int is_streamed(void *ctx, const char *name)
{
    gen *G = ctx;
    tp_cache_id id = tensor_named(G, name);
    return id && G->steps[G->id_step[id]].streamed[G->id_j[id]];
}

/* Every plan of the session keeps off the cache's host copies at the bottom of its host block:
 * set on each graph before anything is placed there. */
static tp_status reserve_host(gen *G, tp_graph *g)
{
    return G->harena ? tp_graph_set_host_reserved(g, G->hres, G->err) : TP_OK;
}

/* Declares input v of g (reserve_host done) to be the bytes at offset `at` of cache tensor id's
 * host copy (a row chunk where at > 0), where they lie in the session's host block: the plan
 * loads them from there. Bytes not aligned for the planner are left unplaced (write_inputs
 * copies them in). */
static tp_status place_host_at(gen *G, tp_graph *g, uint32_t v, tp_cache_id id, uint64_t at)
{
    if (!G->harena) return TP_OK;
    const uint8_t *h = tp_cache_host(G->cache, id);
    if (!h) return tp__fail(G->err, TP_ERR_INVALID, "generate: cache tensor %u has no host copy", (unsigned)id);
    at += (uint64_t)(h - G->harena);
    return at % tp__align_of(tp_graph_vertex(g, v)->bytes) ? TP_OK : tp_graph_set_host(g, v, at, G->err);
}

/* Declares input v of g (reserve_host done) to be cache tensor id's host copy, where it lies in
 * the session's host block: the plan loads it from there, and nothing is copied in for it. */
static tp_status place_host(gen *G, tp_graph *g, uint32_t v, tp_cache_id id)
{
    return place_host_at(G, g, v, id, 0);
}

/* ---- where plans read the host copies --------------------------------------------------- */

/* Whether input v is rows a..z-1 of a tensor of tb bytes, exactly its bytes: 1 with the rows'
 * byte offset in the tensor. */
static int rows_at(const tp_vertex *v, uint64_t tb, int64_t a, int64_t z, uint64_t *off)
{
    if (!(0 <= a && a < z)) return 0;
    uint64_t rb = v->bytes / (uint64_t)(z - a);
    if (!rb || (uint64_t)a > tb / rb) return 0; /* no row bytes, or rows past the tensor (no overflow below) */
    *off = (uint64_t)a * rb;
    return rb * (uint64_t)(z - a) == v->bytes && *off <= tb && v->bytes <= tb - *off;
}

/* Which cache tensor a decode plan's input v streams, and from which byte of it: v's id names
 * the tensor ("name", with an "@..." device suffix or not) or rows A..Z-1 of it ("name#rA:Z"),
 * and v's bytes are exactly those. 1 with *id and the offset *at; 0 otherwise (no such tensor,
 * a column slice, bytes that do not match). */
static int cache_rows(const gen *G, const tp_vertex *v, tp_cache_id *id, uint64_t *at)
{
    char name[TP_LLAMA_ID_MAX], kind;
    int64_t a, z;
    if (!tp_llama_parse_input(v->id, name, sizeof name, &kind, &a, &z) || kind == 'c' || !(*id = tensor_named(G, name)))
        return 0;
    uint64_t tb = tp_cache_bytes(G->cache, *id);
    *at = 0;
    return kind == 'r' ? rows_at(v, tb, a, z, at) : v->bytes == tb;
}

/* ---- where the prefill reads its weights ------------------------------------------------ */

#define GEN_EMBED "model.embed_tokens.weight"

/* A host copy a prefill input may be read from in place, by name (a step tensor's whole name, or
 * the embedding table's): its bytes and its offset in the session's host block. 1 if found. */
typedef int (*copy_look)(const gen *G, const void *ctx, const char *name, uint64_t *bytes, uint64_t *at);

/* After the cache exists: the cache's host copies and the embedding table. */
static int cache_look(const gen *G, const void *ctx, const char *name, uint64_t *bytes, uint64_t *at)
{
    (void)ctx;
    if (!strcmp(name, GEN_EMBED)) {
        *bytes = G->eb;
        *at = G->embed_at;
        return G->embed != NULL;
    }
    tp_cache_id id = tensor_named(G, name);
    const uint8_t *h = id ? tp_cache_host(G->cache, id) : NULL;
    if (!h) return 0;
    *bytes = tp_cache_bytes(G->cache, id);
    *at = (uint64_t)(h - G->harena);
    return 1;
}

/* Where input v's bytes lie among the host copies: a host copy's whole name ("name", or a chunk
 * such as lm_head's "name#rA:Z", with or without an "@..." device suffix), rows A..Z-1 of a
 * tensor ("name#rA:Z"), or all the columns of one ("name#c0:C", the whole tensor). 1 with *at;
 * 0 otherwise (no such copy, a column slice, bytes that do not match). */
static int input_at(const gen *G, copy_look look, const void *ctx, const tp_vertex *v, uint64_t *at)
{
    char key[TP_LLAMA_ID_MAX], name[TP_LLAMA_ID_MAX], kind;
    int64_t a, z;
    uint64_t tb, base;
    size_t n = strcspn(v->id, "@");
    if (n >= sizeof key) return 0;
    memcpy(key, v->id, n);
    key[n] = 0;
    if (look(G, ctx, key, &tb, &base)) {
        *at = base;
        return tb == v->bytes;
    }
    if (!tp_llama_parse_input(v->id, name, sizeof name, &kind, &a, &z) || !kind || !look(G, ctx, name, &tb, &base)) return 0;
    *at = base;
    if (kind == 'c') return a == 0 && v->bytes == tb; /* columns 0..C-1 of a [R, C] tensor: all of it */
    uint64_t off;
    if (!rows_at(v, tb, a, z, &off)) return 0;
    *at = base + off;
    return 1;
}

/* The prefill's inputs that input_at finds are read where the host copies lie; the rest (column
 * slices, input_ids, a second device's copy of bytes already placed, a copy at an offset the
 * planner cannot place it at) are copied in. set: declares the placements in g (reserve_host
 * done); *copied: the bytes of the inputs copied in. The same rule before the session (the
 * host need, prefill_host) and after it (place_prefill). */
static tp_status prefill_spans(gen *G, tp_graph *g, copy_look look, const void *ctx, int set, uint64_t *copied)
{
    tp_status s = TP_OK;
    tp__span *sp = malloc(((size_t)tp_graph_size(g) + 1) * sizeof *sp);
    if (!sp) return oom(G);
    uint32_t n = 0;
    uint64_t all = 0, placed = 0;
    for (uint32_t i = 0; i < tp_graph_size(g); i++) {
        const tp_vertex *v = tp_graph_vertex(g, i);
        uint64_t at;
        if (v->kind != TP_V_INPUT) continue;
        all += v->bytes;
        if (!v->bytes || !input_at(G, look, ctx, v, &at)) continue;
        if (at % tp__align_of(v->bytes)) continue; /* not where the planner could place it */
        sp[n++] = (tp__span){-1, at, at + v->bytes, i};
    }
    qsort(sp, n, sizeof *sp, tp__span_cmp);
    uint64_t end = 0;
    for (uint32_t q = 0; q < n && !s; q++)
        if (!q || sp[q].a >= end) { /* bytes placed once; an overlapping input is copied */
            if (set) s = tp_graph_set_host(g, sp[q].v, sp[q].a, G->err);
            placed += sp[q].b - sp[q].a;
            end = sp[q].b;
        }
    free(sp);
    if (copied) *copied = all - placed;
    return s;
}

static tp_status place_prefill(gen *G, tp_graph *g)
{
    return G->harena ? prefill_spans(G, g, cache_look, NULL, 1, NULL) : TP_OK;
}

/* Before the session: the host copies as the cache will lay them out, from the steps' graphs
 * (their inputs but "x", step by step, each at an offset rounded up to TP_CACHE_ALIGN_DEFAULT,
 * which keeps every offset's alignment), then the embedding table at G->embed_at. Names are
 * borrowed from the steps' graphs (step_t.g). */
typedef struct dry_copy {
    uint64_t bytes, at;
} dry_copy;

typedef struct dry_copies {
    tp__strmap m; /* name -> index into c */
    dry_copy *c;
    size_t n, cap;
} dry_copies;

static int dry_look(const gen *G, const void *ctx, const char *name, uint64_t *bytes, uint64_t *at)
{
    const dry_copies *d = ctx;
    uint32_t k;
    if (!strcmp(name, GEN_EMBED)) {
        *bytes = G->eb;
        *at = G->embed_at;
        return 1;
    }
    if (!tp__strmap_get(&d->m, name, &k)) return 0;
    *bytes = d->c[k].bytes;
    *at = d->c[k].at;
    return 1;
}

static tp_status dry_build(gen *G, dry_copies *d)
{
    uint64_t at = 0;
    if (!tp__strmap_init(&d->m, 64)) return oom(G);
    for (uint32_t si = 0; si < G->nsteps; si++) {
        const tp_graph *g = G->steps[si].g;
        for (uint32_t i = 0; i < tp_graph_size(g); i++) {
            const tp_vertex *v = tp_graph_vertex(g, i);
            if (v->kind != TP_V_INPUT || !strcmp(v->id, "x")) continue;
            if (!TP__GROW(d->c, d->cap, d->n + 1) || tp__strmap_put(&d->m, v->id, (uint32_t)d->n, NULL) < 0) return oom(G);
            d->c[d->n++] = (dry_copy){v->bytes, at};
            at += (v->bytes + TP_CACHE_ALIGN_DEFAULT - 1) & ~(uint64_t)(TP_CACHE_ALIGN_DEFAULT - 1);
        }
    }
    return TP_OK;
}

/* The host memory the prefill's plan needs past the reserved bytes G->hres (the host copies
 * and the embedding table): the alignment after them, the inputs it copies in (prefill_spans)
 * and the high-water mark of what it offloads, from planning its graph (G->pre) now, unplaced
 * (where its inputs lie does not change what it offloads). */
static tp_status prefill_host(gen *G, uint64_t *extra)
{
    dry_copies d = {0};
    uint64_t copied = 0, in_end;
    tp_memgraph *mg = NULL;
    tp_status s = dry_build(G, &d);
    if (!s) s = prefill_spans(G, G->pre, dry_look, &d, 0, &copied);
    free(d.c);
    tp__strmap_free(&d.m);
    if (!s) s = tp_graph_set_host_reserved(G->pre, G->hres, G->err);
    if (!s) {
        tp_plan_opts po;
        tp_plan_opts_init(&po, G->D, G->o->device_mem);
        po.order = G->pre_order;
        s = tp_plan(G->pre, &po, &mg, G->err);
    }
    uint64_t pad = (TP__MAX_ALIGN - G->hres % TP__MAX_ALIGN) % TP__MAX_ALIGN;
    in_end = G->hres + pad;
    for (uint32_t i = 0; mg && i < tp_memgraph_size(mg); i++) { /* the inputs' end: the offload arena's start */
        tp_mvertex mv;
        tp_memgraph_vertex(mg, i, &mv);
        if (mv.kind == TP_M_INPUT && mv.write.space == TP_SPACE_HOST && mv.write.offset + mv.write.bytes > in_end)
            in_end = mv.write.offset + mv.write.bytes;
    }
    uint64_t hb = mg ? tp_memgraph_host_bytes(mg) : 0; /* the offloads' high-water mark lies past the inputs */
    if (!s) *extra = G->pre_host = pad + copied + (hb > in_end ? hb - in_end : 0);
    tp_memgraph_free(mg);
    return s;
}

/* Write-through: layer l's new K/V rows (outputs kn, vn of the plan) into the cache's host
 * copies at position pos, so an evicted K/V tensor is never dirty. */
static tp_status write_kv(gen *G, tp_exec *x, const tp_memgraph *mg, int64_t l, const char *kn, const char *vn, int64_t pos)
{
    uint64_t rows = (uint64_t)G->B * (uint64_t)G->KVH, rb = (uint64_t)G->hd * 4;
    tp_status s = TP_OK;
    for (int kv = 0; kv < 2 && !s; kv++) {
        s = read_output(G, x, mg, kv ? vn : kn, G->kvrow, rows * rb);
        float *h = kv_host(G, l, kv);
        if (!s && !h) s = tp__fail(G->err, TP_ERR_INVALID, "generate: no K/V cache tensor of layer %lld", (long long)l);
        for (uint64_t r = 0; r < rows && !s; r++)
            memcpy(h + (r * (uint64_t)G->maxlen + (uint64_t)pos) * (uint64_t)G->hd, G->kvrow + r * (uint64_t)G->hd, rb);
    }
    return s;
}

/* The session inputs of plan g, which reads the tensors of steps s0..s1 (pinned or streamed
 * by pin_step): every tensor the cache holds on devices d0..d1, and every load pending
 * elsewhere, becomes a pinned resident input where the cache put it, "load" when it is to be
 * loaded (from its host copy, in place) — a step's tensor under its name, any other as an
 * input "cache.N" of its own so the plan's temporaries go around it —; the streamed tensors
 * are plain inputs read from their host copies. Finalizes g. *src (malloc'd, one entry per
 * vertex of g) names the host copy of every loaded or streamed input for write_inputs. */
typedef struct {
    const void *host;
    int streamed;
} in_src;

static tp_status declare_inputs(gen *G, tp_graph *g, uint32_t s0, uint32_t s1, int d0, int d1, in_src **src)
{
    const tp_cache_load *pend = NULL;
    uint32_t npend = tp_cache_pending(G->cache, &pend), n = npend;
    for (int d = d0; d <= d1; d++) n += tp_cache_residents(G->cache, d, NULL, 0);
    tp_cache_id *r = malloc((n + 1) * sizeof *r);
    uint32_t *vx = malloc((n + 1) * sizeof *vx);
    int *rdev = malloc((n + 1) * sizeof *rdev);
    uint64_t *roff = malloc((n + 1) * sizeof *roff);
    tp_status s = r && vx && rdev && roff ? TP_OK : oom(G);
    uint32_t k = 0;
    for (int d = d0; d <= d1 && !s; d++) k += tp_cache_residents(G->cache, d, r + k, n - k);
    for (uint32_t q = 0; q < npend && !s; q++) {
        if (pend[q].device < d0 || pend[q].device > d1) r[k++] = pend[q].id;
        G->id_load[pend[q].id] = 1;
    }
    for (uint32_t i = 0; i < k && !s; i++) {
        tp_cache_where(G->cache, r[i], &rdev[i], &roff[i]);
        uint32_t si = G->id_step[r[i]];
        if (si >= s0 && si <= s1 && G->steps[si].dev == rdev[i]) {
            const char *name = G->steps[si].names[G->id_j[r[i]]];
            int64_t v = tp_graph_find(g, name);
            if (v < 0) s = tp__fail(G->err, TP_ERR_INVALID, "generate: the step graph has no input '%s'", name);
            else vx[i] = (uint32_t)v;
        } else {
            char id[32];
            snprintf(id, sizeof id, "cache.%u", (unsigned)r[i]);
            s = tp_graph_add_input(g, id, rdev[i], TP_DT_NONE, -1, NULL, tp_cache_bytes(G->cache, r[i]), &vx[i], G->err);
        }
    }
    if (!s) s = tp_graph_finalize(g, G->err);
    in_src *in = *src = s ? NULL : calloc((size_t)tp_graph_size(g) + 1, sizeof *in);
    if (!s && !in) s = oom(G);
    for (uint32_t i = 0; i < k && !s; i++) {
        int load = G->id_load[r[i]];
        s = tp_graph_set_resident(g, vx[i], roff[i], load, G->err);
        if (!s) s = tp_graph_set_resident_flags(g, vx[i], TP_RESIDENT_PIN | (load ? TP_RESIDENT_LOAD : 0u), G->err);
        if (!s && load) s = place_host(G, g, vx[i], r[i]);
        if (load) in[vx[i]].host = tp_cache_host(G->cache, r[i]);
    }
    for (uint32_t q = 0; q < npend; q++) G->id_load[pend[q].id] = 0;
    /* streamed: plain inputs, loaded from their host copies, whole or in row chunks
     * (tp_llama_decode_opts.split_bytes: "name#rA:Z") */
    for (uint32_t i = 0; i < tp_graph_size(g) && !s; i++) {
        const tp_vertex *v = tp_graph_vertex(g, i);
        if (v->kind != TP_V_INPUT) continue;
        uint64_t at = 0;
        tp_cache_id id = tensor_named(G, v->id); /* a step tensor by its own name (lm_head's chunks too), or rows of one */
        if (!id && !cache_rows(G, v, &id, &at)) continue;
        uint32_t si = G->id_step[id];
        if (si < s0 || si > s1 || !G->steps[si].streamed[G->id_j[id]]) continue;
        s = place_host_at(G, g, i, id, at);
        const uint8_t *h = tp_cache_host(G->cache, id);
        if (!s) in[i] = (in_src){h ? h + at : NULL, 1};
    }
    free(r);
    free(vx);
    free(rdev);
    free(roff);
    return s;
}

/* The input bytes of plan mg (declare_inputs made it) the executor x reads from the host: the
 * residual stream "x", and every loaded or streamed tensor the plan does not read in place
 * (host-placed), from its host copy. */
static tp_status write_inputs(gen *G, const tp_graph *g, const tp_memgraph *mg, tp_exec *x, const in_src *src)
{
    tp_status s = TP_OK;
    for (uint32_t i = 0; i < tp_memgraph_size(mg) && !s && G->o->data; i++) {
        tp_mvertex mv;
        tp_memgraph_vertex(mg, i, &mv);
        if (mv.kind != TP_M_INPUT) continue;
        const char *id = tp_graph_vertex(g, mv.task)->id;
        const void *h = !strcmp(id, "x") ? G->x : src[mv.task].host;
        if (src[mv.task].streamed) G->r->streamed_bytes += mv.write.bytes;
        if (!h) s = tp__fail(G->err, TP_ERR_ARG, "generate: no host copy for input '%s'", id);
        else if (!tp_graph_host(g, mv.task, NULL)) s = tp_exec_write(x, &mv.write, h, G->err);
    }
    return s;
}

/* The last decode step's last plan, as tp_gen_opts.trace and .plan_out ask (after its run: no
 * file I/O inside it); each file whole or not at all. */
static tp_status write_last(gen *G, const tp_exec *x, const tp_memgraph *mg)
{
    tp_status s = G->o->trace ? tp_exec_trace_write(x, G->o->trace, G->err) : TP_OK;
    if (s || !G->o->plan_out) return s;
    tp_outfile *of;
    if ((s = tp_outfile_open(G->o->plan_out, &of, G->err))) return s;
    if ((s = tp_memgraph_write(mg, tp_outfile_stream(of), G->err))) {
        tp_outfile_abort(of);
        return s;
    }
    return tp_outfile_commit(of, G->err);
}

/* Plans and runs g (built, its tensors pinned by the caller), which reads the tensors of steps
 * s0..s1 on devices d0..d1: a layer's or the head's plan (s0 = s1) or a whole decode step
 * (tp_llama_decode_token: its outputs "L<l>.k_new" where a layer's are "k_new"). Reads the
 * new K/V rows into the cache's host copies, the residual stream after a layer's plan, the
 * logits after the head; commits the cache's loads and unpins steps s0..s1. Takes g: frees it,
 * or, a whole step's that ran, keeps it with its plan for the next step (plan_exec). */
static tp_status run_plan(gen *G, tp_graph *g, uint32_t s0, uint32_t s1, int d0, int d1, int64_t pos, int last, double *run_s,
                          uint64_t *bytes)
{
    tp_memgraph *mg = NULL;
    tp_exec *x = NULL;
    in_src *src = NULL;
    tp_status s = declare_inputs(G, g, s0, s1, d0, d1, &src);
    int whole = s1 > s0;
    if (!s) s = plan_exec(G, g, G->o->plan_order, whole ? G->small : 0, whole, &mg, &x);
    if (!s) s = write_inputs(G, g, mg, x, src);
    tp_run_summary sum;
    if (!s) s = tp_exec_run(x, &sum, G->err);
    if (!s) account(&sum, run_s, bytes);
    if (!s && last && s1 + 1 == G->nsteps) s = write_last(G, x, mg);
    for (uint32_t l = s0; l <= s1 && l < (uint32_t)G->L && !s && G->o->data; l++) {
        char kn[32] = "k_new", vn[32] = "v_new";
        if (whole) {
            snprintf(kn, sizeof kn, "L%u.k_new", (unsigned)l);
            snprintf(vn, sizeof vn, "L%u.v_new", (unsigned)l);
        }
        s = write_kv(G, x, mg, l, kn, vn, pos);
    }
    if (!s && G->o->data && !whole && s1 < G->L) s = read_output(G, x, mg, "x.out", G->x, (uint64_t)G->B * (uint64_t)G->H * 4);
    if (!s && G->o->data && s1 == G->L) s = read_output(G, x, mg, "logits", G->logits, (uint64_t)G->B * (uint64_t)G->V * 4);
    tp_exec_free(x);
    if (whole && !s && mg) { /* kept for the next step (plan_exec) */
        tp_memgraph_free(G->rmg);
        tp_graph_free(G->rg);
        G->rmg = mg;
        G->rg = g;
    } else {
        tp_memgraph_free(mg);
        tp_graph_free(g);
    }
    free(src);
    if (!s) tp_cache_commit(G->cache);
    for (uint32_t si = s0; si <= s1 && !s; si++) s = unpin_step(G, si, last);
    return s;
}

/* One step (a layer si < L, or the head) of decode position pos. With lookahead, the next
 * step's tensors are pinned now, so their loads run in this plan beside its compute. */
static tp_status run_step(gen *G, uint32_t si, int64_t pos, int last, double *run_s, uint64_t *bytes)
{
    step_t *st = &G->steps[si];
    tp_graph *g = NULL;
    tp_status s = build_step(G, si, pos, 0, 0, 0, &g); /* every position its own plan: nothing to mask */
    if (!s) s = reserve_host(G, g);
    if (!s && !st->armed) s = pin_step(G, si, 0, UINT64_MAX);
    uint32_t next = si + 1 < G->nsteps ? si + 1 : 0;
    if (!s && G->o->lookahead && !(last && next == 0) && !G->steps[next].armed) s = pin_step(G, next, 0, UINT64_MAX);
    if (!s) s = tp_cache_prefetch(G->cache, st->dev, NULL, G->err);
    if (s) {
        tp_graph_free(g);
        return s;
    }
    return run_plan(G, g, si, si, st->dev, st->dev, pos, last, run_s, bytes);
}

/* A whole decode step in one plan (tp_gen_opts.per_token): the tensors of every step, the small
 * ones first (GEN_SMALL_DIV), then the rest, each in layer order and pinned if it fits its
 * device's range and spread_pins keeps it (the rest streamed through the plan's own memory,
 * loaded by it just in time, so the loads of later layers run beside the compute of earlier
 * ones), then one graph (tp_llama_decode_token, the streamed 2-D weights in row chunks of
 * G->split bytes, attending to attend_of(pos) positions), one plan (the last step's where the
 * graph is the same but for kernel attributes: plan_exec), one run. */
static tp_status run_token(gen *G, int64_t pos, int last, double *run_s, uint64_t *bytes)
{
    tp_status s = TP_OK;
    for (int pass = 0; pass < 2; pass++) /* the small tensors first (GEN_SMALL_DIV), then the rest */
        for (uint32_t si = 0; si < G->nsteps && !s; si++)
            if (!G->steps[si].armed) s = pin_step(G, si, pass ? G->small : 0, pass ? UINT64_MAX : G->small);
    tp_graph *g = NULL;
    tp_llama_decode_opts d = {.devices = G->D, .batch = G->B, .pos = pos, .max_len = G->maxlen, .attend = attend_of(G, pos),
                              .vocab_chunks = G->VC, .split_bytes = G->split, .split = is_streamed, .split_ctx = G};
    if (!s) s = tp_llama_decode_token(G->c, &d, &g, G->err);
    if (!s) s = reserve_host(G, g);
    if (s) {
        tp_graph_free(g);
        return s;
    }
    return run_plan(G, g, 0, G->nsteps - 1, 0, G->D - 1, pos, last, run_s, bytes);
}

/* ---- prefill ----------------------------------------------------------------------------------- */

/* the prefill's graph: the batch's prompts, K/V of every layer as outputs */
static tp_status prefill_graph(gen *G, tp_graph **g)
{
    tp_llama_opts lo;
    tp_llama_opts_default(&lo, G->c, G->D, G->o->prompt_len, G->o->device_mem);
    lo.batch = G->B;
    lo.kv_out = 1;
    if (G->VC > lo.vocab_chunks) lo.vocab_chunks = G->VC;
    G->pre_order = G->o->plan_order == TP_ORDER_DEFAULT ? tp_llama_plan_order(&lo) : G->o->plan_order;
    return tp_llama_build(G->c, &lo, g, G->err);
}

/* Before anything is allocated: a cap the prefill cannot plan under (its largest kernel's
 * inputs and output, tp_plan_bounds) is refused, as the decode step's is. The graph stays in
 * G->pre for prefill. */
static tp_status prefill_fits(gen *G)
{
    uint64_t minf[TP_MAX_DEVICES];
    tp_status s = prefill_graph(G, &G->pre);
    if (!s) s = tp_plan_bounds(G->pre, G->pre_order, minf, NULL, G->err);
    for (int d = 0; d < G->D && !s; d++)
        if (minf[d] > G->o->device_mem) {
            char b1[32], b2[32];
            s = tp__fail(G->err, TP_ERR_INFEASIBLE,
                         "generate: the prefill needs %s of device memory on device %d (its largest kernel's inputs and "
                         "output), the cap is %s",
                         tp_format_size(minf[d], b1, sizeof b1), d, tp_format_size(G->o->device_mem, b2, sizeof b2));
        }
    return s;
}

static tp_status prefill(gen *G, double *run_s, uint64_t *bytes)
{
    const tp_gen_opts *o = G->o;
    tp_graph *g = G->pre; /* built by prefill_fits, which every generation runs first; ours now */
    tp_memgraph *mg = NULL;
    tp_exec *x = NULL;
    G->pre = NULL;
    tp_status s = reserve_host(G, g);
    if (!s) s = place_prefill(G, g);
    if (!s) s = plan_exec(G, g, G->pre_order, 0, 0, &mg, &x);
    if (!s && G->harena) { /* what sized the session's host block */
        uint64_t used = tp_memgraph_host_bytes(mg) > G->hres ? tp_memgraph_host_bytes(mg) - G->hres : 0;
        if (used > G->pre_host || (G->check_reuse && used != G->pre_host))
            s = tp__fail(G->err, TP_ERR_CHECK, "generate: the prefill's plan uses %llu bytes of host memory past the host copies, "
                         "counted %llu", (unsigned long long)used, (unsigned long long)G->pre_host);
    }
    for (uint32_t i = 0; i < (mg ? tp_memgraph_size(mg) : 0) && !s && o->data; i++) {
        tp_mvertex mv;
        tp_memgraph_vertex(mg, i, &mv);
        if (mv.kind != TP_M_INPUT || tp_graph_host(g, mv.task, NULL)) continue; /* placed: read in place */
        const tp_vertex *v = tp_graph_vertex(g, mv.task);
        if (!strcmp(v->id, "input_ids")) {
            s = tp_exec_write(x, &mv.write, o->prompts, G->err);
            continue;
        }
        void *buf = malloc(v->bytes ? v->bytes : 1);
        if (!buf) s = oom(G);
        if (!s) s = tp_llama_weights_read(o->weights, v->id, v->dtype, v->bytes, buf, G->err);
        if (!s) s = tp_exec_write(x, &mv.write, buf, G->err);
        free(buf);
    }
    tp_run_summary sum;
    if (!s) s = tp_exec_run(x, &sum, G->err);
    if (!s) account(&sum, run_s, bytes);
    if (!s && o->data) s = read_output(G, x, mg, "logits", G->logits, (uint64_t)G->B * (uint64_t)G->V * 4);
    /* the prompt's K and V into the cache tensors' host copies: [B, kv_heads, max_len, hd] */
    uint64_t T = (uint64_t)o->prompt_len, rb = (uint64_t)G->hd * 4;
    float *tmp = o->data ? malloc(T * rb + 1) : NULL;
    if (!s && o->data && !tmp) s = oom(G);
    for (int64_t l = 0; l < G->L && !s && o->data; l++)
        for (int kv = 0; kv < 2 && !s; kv++) {
            float *h = kv_host(G, l, kv);
            if (!h) s = tp__fail(G->err, TP_ERR_INVALID, "generate: no K/V cache tensor of layer %lld", (long long)l);
            for (int64_t b = 0; b < G->B && !s; b++)
                for (int64_t q = 0; q < G->KVH && !s; q++) {
                    char id[96];
                    snprintf(id, sizeof id, "kv.%lld.%s.b%lld.g%lld", (long long)l, kv ? "v" : "k", (long long)b, (long long)q);
                    s = read_output(G, x, mg, id, tmp, T * rb);
                    float *dst = h + ((uint64_t)b * (uint64_t)G->KVH + (uint64_t)q) * (uint64_t)G->maxlen * (uint64_t)G->hd;
                    if (!s) memcpy(dst, tmp, T * rb);
                }
        }
    free(tmp);
    tp_exec_free(x);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return s;
}

/* ---- sampling ---------------------------------------------------------------------------------- */

/* Greedy (temperature 0): the largest logit, ties to the lower id. Else a seeded draw from the
 * softmax of logits / T over the top k (all when k is 0), from (seed, step, sequence). */
static int32_t sample(const gen *G, const float *lg, int64_t step, int64_t b)
{
    const tp_gen_opts *o = G->o;
    int64_t V = G->V;
    if (o->temperature <= 0) {
        int32_t best = 0;
        for (int64_t i = 1; i < V; i++)
            if (lg[i] > lg[best]) best = (int32_t)i;
        return best;
    }
    int k = o->top_k > 0 && o->top_k < V ? o->top_k : (int)V;
    int32_t *ids = malloc((size_t)k * sizeof *ids);
    double *p = malloc((size_t)k * sizeof *p);
    int32_t tok = 0;
    if (ids && p) {
        int n = tp_llama_top_k(lg, V, k, ids);
        double sum = 0;
        for (int i = 0; i < n; i++) sum += p[i] = exp(((double)lg[ids[i]] - (double)lg[ids[0]]) / o->temperature);
        uint64_t h = tp__mix64(tp__mix64(o->seed ^ 0x9e3779b97f4a7c15ull) ^ tp__mix64((uint64_t)step * 1000003u + (uint64_t)b));
        double u = (double)(h >> 11) * (1.0 / 9007199254740992.0) * sum;
        tok = ids[n - 1];
        for (int i = 0; i < n; i++) {
            if (u < p[i]) {
                tok = ids[i];
                break;
            }
            u -= p[i];
        }
    }
    free(ids);
    free(p);
    return tok;
}

/* the embedding rows of tokens (one per sequence) as the residual stream */
static void embed_rows(gen *G, const int32_t *tok)
{
    for (int64_t b = 0; b < G->B; b++)
        for (int64_t i = 0; i < G->H; i++) {
            uint64_t at = (uint64_t)tok[b] * (uint64_t)G->H + (uint64_t)i;
            float f;
            switch (G->c->dtype) {
            case TP_DT_F16: f = tp__f16_to_f32(((const uint16_t *)G->embed)[at]); break;
            case TP_DT_BF16: f = tp__bf16_to_f32(((const uint16_t *)G->embed)[at]); break;
            default: f = ((const float *)G->embed)[at]; break;
            }
            G->x[b * G->H + i] = f;
        }
}

/* ---- the whole generation ------------------------------------------------------------------------ */

tp_status tp_llama_generate(const tp_gen_opts *o, tp_gen_result *r, tp_error *err)
{
    memset(r, 0, sizeof *r);
    const tp_llama_config *c = o->config;
    if (o->batch < 1 || o->prompt_len < 1 || o->max_new < 1 || o->devices < 1 || o->devices > TP_MAX_DEVICES ||
        o->devices > c->layers + 1 || !o->backend || (o->data && (!o->weights || !o->prompts)))
        return tp__fail(err, TP_ERR_ARG, "generate: need batch, prompt, new tokens >= 1, 1..layers devices, a backend and weights");
    if (o->per_token && o->lookahead)
        return tp__fail(err, TP_ERR_ARG, "generate: lookahead pins the next step's tensors in a plan per layer; a plan per token has no next step");
    if (o->prompt_len > INT32_MAX - o->max_new)
        return tp__fail(err, TP_ERR_ARG, "generate: prompt plus new tokens exceed 2^31-1 positions");
    gen G0 = {0}, *G = &G0;
    G->o = o;
    const char *cr = getenv("TURNIP_CHECK_PLAN_REUSE");
    G->check_reuse = cr && !strcmp(cr, "1");
    G->c = c;
    G->err = err;
    G->r = r;
    G->D = o->devices;
    G->L = c->layers;
    G->B = o->batch;
    G->H = c->hidden;
    G->hd = c->hidden / c->heads;
    G->KVH = c->kv_heads;
    G->V = c->vocab;
    G->VC = o->vocab_chunks > 0 ? o->vocab_chunks : tp_llama_generate_vocab_chunks(c, o->device_mem, 0);
    G->maxlen = o->prompt_len + o->max_new; /* the last new token's K/V are never needed: slack */
    tp_status s = tp_llama_generate_need(c, G->D, G->B, G->maxlen, G->VC, &r->need, err);
    /* a plan per step: unless asked for, lm_head's chunks no larger than the weights' (its room
     * holds two of the largest piece never split) */
    if (!s && o->vocab_chunks <= 0 && o->per_token) {
        int vc = tp_llama_generate_vocab_chunks(c, o->device_mem, r->need.split_bytes);
        if (vc != G->VC) s = tp_llama_generate_need(c, G->D, G->B, G->maxlen, G->VC = vc, &r->need, err);
    }
    if (s) return s;
    if (o->device_mem < r->need.min_cap) {
        char b1[32], b2[32];
        return tp__fail(err, TP_ERR_INFEASIBLE, "generate: a decode step needs %s of device memory, the cap is %s",
                        tp_format_size(r->need.min_cap, b1, sizeof b1), tp_format_size(o->device_mem, b2, sizeof b2));
    }
    if ((s = prefill_fits(G))) {
        tp_graph_free(G->pre);
        return s;
    }
    G->split = o->per_token ? r->need.split_bytes : 0;
    r->tokens = calloc((size_t)(G->B * o->max_new), sizeof *r->tokens);
    G->x = calloc((size_t)(G->B * G->H), sizeof *G->x);
    G->logits = calloc((size_t)(G->B * G->V), sizeof *G->logits);
    G->nsteps = (uint32_t)G->L + 1;
    G->steps = calloc(G->nsteps, sizeof *G->steps);
    if (!r->tokens || !G->x || !G->logits || !G->steps) s = oom(G);
    for (uint32_t si = 0; si < G->nsteps && !s; si++) s = build_step(G, si, 0, 0, 0, 1, &G->steps[si].g); /* each step's graph, once */
    /* the session's host block: at its bottom the cache's host copies (need's model and KV bytes
     * count every step input with 256 bytes of slack, at least what the cache takes of each: its
     * size rounded up to TP_CACHE_ALIGN_DEFAULT), then the embedding table; past them the plans'
     * own host memory: a decode plan's, and the prefill's as planned now (prefill_host). Without
     * data, a copy of the model's bytes for the plans' inputs and as much for the prefill's. */
    _Static_assert(TP_CACHE_ALIGN_DEFAULT <= 256, "need's slack covers the cache's rounding");
    uint64_t hcache = o->data ? r->need.model_bytes + r->need.kv_bytes : 0, extra = 0;
    G->eb = (uint64_t)G->V * (uint64_t)G->H * tp_dtype_size(c->dtype);
    if (o->data) {
        G->embed_at = (hcache + TP__MAX_ALIGN - 1) & ~(uint64_t)(TP__MAX_ALIGN - 1);
        G->hres = G->embed_at + G->eb;
        if (!s) s = prefill_host(G, &extra);
    } else {
        extra = (uint64_t)G->B * (uint64_t)o->prompt_len * (uint64_t)G->V * 4 + 2 * r->need.model_bytes;
    }
    uint64_t cap[TP_MAX_DEVICES], host = G->hres + r->need.kv_bytes + 4 * r->need.work_bytes + extra;
    r->host_bytes = host;
    for (int d = 0; d < G->D; d++) cap[d] = o->device_mem;
    if (!s) s = tp_session_new(o->backend, G->D, cap, host, &G->sess, err);
    tp_cache_opts co;
    tp_cache_opts_init(&co, G->D, cap);
    co.policy = o->policy ? o->policy : "latency";
    co.prefetch = o->prefetch;
    co.deferred = 1;
    co.no_host = !o->data;
    G->harena = o->data && !s ? tp_session_host(G->sess, NULL) : NULL;
    if (G->harena) {
        co.host_arena = G->harena;
        co.host_arena_bytes = hcache;
        G->embed = G->harena + G->embed_at;
    }
    /* the bottom of each device stays the plans': room for the activations of the largest layer
     * (or head) plan and a streamed tensor (with a plan per step, on a device whose tensors do
     * not all stay, a second one: one in use, the next loading), or under a tight cap half of
     * it, never less than one kernel's need (the planner offloads the rest: TURNIP inside the
     * plan) */
    for (int d = 0; d < G->D; d++) {
        uint64_t want = r->need.work_bytes;
        if (o->per_token && o->device_mem < r->need.device_need[d]) /* streaming: two pieces, one in use, one loading */
            want = want - r->need.stream_bytes + 2 * r->need.stream_slot;
        uint64_t work = want < o->device_mem / 2 ? want : o->device_mem / 2;
        if (work < (G->split ? r->need.work_min_split : r->need.work_min)) work = G->split ? r->need.work_min_split : r->need.work_min;
        co.base[d] = work;
        co.size[d] = G->range[d] = o->device_mem - work;
    }
    if (!s) s = tp_cache_new(NULL, &co, &G->cache, err);
    /* cache tensors, step by step, and the embedding table on the host */
    for (uint32_t si = 0; si < G->nsteps && !s; si++) {
        G->steps[si].dev = layer_dev(G, si);
        s = make_step(G, &G->steps[si], G->steps[si].g);
        tp_graph_free(G->steps[si].g);
        G->steps[si].g = NULL;
        G->gets_per_token += G->steps[si].n;
    }
    if (!s) s = index_steps(G);
    if (!s && o->per_token) spread_pins(G);
    if (!s && !(G->kvrow = malloc((uint64_t)G->B * (uint64_t)G->KVH * (uint64_t)G->hd * 4 + 1))) s = oom(G);

    if (!s && o->data) s = tp_llama_weights_read(o->weights, GEN_EMBED, c->dtype, G->eb, G->embed, err);
    /* prefill */
    double t0 = tp__now(), run_s = 0;
    uint64_t bytes = 0;
    if (!s) s = prefill(G, &run_s, &bytes);
    r->ttft = tp__now() - t0;
    r->prefill_run_seconds = run_s;
    r->prefill_bytes = bytes;
    for (int64_t b = 0; b < G->B && !s; b++) r->tokens[b * o->max_new] = o->data ? sample(G, G->logits + b * G->V, 0, b) : 0;
    if (!s && o->on_step) {
        int32_t *t = malloc((size_t)G->B * sizeof *t);
        if (!t) s = oom(G);
        for (int64_t b = 0; b < G->B && t; b++) t[b] = r->tokens[b * o->max_new];
        tp_gen_step ev = {0, o->data ? G->logits : NULL, t, r->ttft, run_s, bytes};
        if (t) o->on_step(o->ctx, &ev);
        free(t);
    }
    /* first hints: the order of the first decode step's gets */
    uint64_t tick = tp_cache_clock(G->cache);
    for (uint32_t si = 0; si < G->nsteps && !s; si++)
        for (uint32_t j = 0; j < G->steps[si].n && !s; j++) s = tp_cache_hint(G->cache, G->steps[si].ids[j], tick++, err);
    /* decode */
    int32_t *tok = malloc((size_t)G->B * sizeof *tok);
    if (!s && !tok) s = oom(G);
    double t1 = tp__now();
    for (int64_t step = 1; step < o->max_new && !s; step++) {
        int64_t pos = o->prompt_len + step - 1;
        double ts = tp__now(), rs = 0;
        uint64_t bs = 0;
        for (int64_t b = 0; b < G->B; b++) tok[b] = r->tokens[b * o->max_new + step - 1];
        if (o->data) embed_rows(G, tok);
        if (o->per_token) s = run_token(G, pos, step + 1 == o->max_new, &rs, &bs);
        for (uint32_t si = 0; si < G->nsteps && !s && !o->per_token; si++) s = run_step(G, si, pos, step + 1 == o->max_new, &rs, &bs);
        for (int64_t b = 0; b < G->B && !s; b++) tok[b] = r->tokens[b * o->max_new + step] = o->data ? sample(G, G->logits + b * G->V, step, b) : 0;
        r->decode_run_seconds += rs;
        r->decode_bytes += bs;
        if (step == 1) r->first_decode_bytes = bs, r->first_decode_seconds = tp__now() - ts;
        r->decode_steps++;
        if (!s && o->on_step) {
            tp_gen_step ev = {step, o->data ? G->logits : NULL, tok, tp__now() - ts, rs, bs};
            o->on_step(o->ctx, &ev);
        }
    }
    r->decode_seconds = tp__now() - t1;
    free(tok);
    if (G->cache) tp_cache_counters_get(G->cache, &r->cache);
    tp_cache_free(G->cache);
    tp_session_free(G->sess);
    tp_memgraph_free(G->rmg);
    tp_graph_free(G->rg);
    tp_graph_free(G->pre); /* when the prefill never ran */
    free_steps(G);
    free(G->x);
    free(G->logits);
    if (s) {
        free(r->tokens);
        r->tokens = NULL;
    }
    return s;
}

void tp_gen_result_free(tp_gen_result *r)
{
    if (!r) return;
    free(r->tokens);
    r->tokens = NULL;
}
