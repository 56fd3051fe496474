/* train.c - LoRA fine-tuning steps of a LLaMA model in one session (issue 13).
 *
 * Design: the step graph (tp_llama_train_build) is the same at every step; only its inputs
 * change (the batch, the hyperparameters of step t, the adapters and moments). It is built once
 * and planned in its builder's order (TP_ORDER_TOPO). Every frozen weight input is declared
 * "keep", so what fits of the weights stays on the devices from one step to the next: before
 * step k > 1 the previous plan's kept inputs are declared resident (tp_plan_carry_inputs).
 * The adapters and moments either stay on device 0 (resident mode: their updated values are
 * kept outputs of step k - 1, declared resident inputs without a host copy at those regions in
 * step k, where AdamW and the moments update them in place) or travel through the host
 * (written before and read after every step). A step whose resident declarations equal the last
 * step's reuses its plan (the planner is deterministic), so the graph is planned once or twice
 * in the common case, every step only when the cap moves the kept tensors around.
 *
 * Host copies: the frozen weights are written to the session's host block only where a plan
 * puts an input vertex at an offset that does not already hold that weight (the host block
 * persists; the inputs' prefix of a plan is never written by its run).
 *
 * The labels of a sequence are its ids shifted by one (the next token), -1 at the last position;
 * the graph divides each position's loss by B (T - 1), so the sum of the "loss" output is the
 * mean next-token loss. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/app.h"
#include "turnip/safetensors.h"
#include "io/util.h"

/* ---- sizes --------------------------------------------------------------------------------- */

tp_status tp_llama_train_need(const tp_llama_config *c, const tp_train_opts *o, tp_order order, tp_train_need *out, tp_error *err)
{
    memset(out, 0, sizeof *out);
    tp_graph *g = NULL;
    tp_status s = tp_llama_train_build(c, o, &g, err);
    uint64_t minf[TP_MAX_DEVICES], peak[TP_MAX_DEVICES];
    if (!s) s = tp_plan_bounds(g, order, minf, peak, err);
    if (!s) {
        for (int d = 0; d < o->devices; d++) {
            if (minf[d] > out->min_cap) out->min_cap = minf[d], out->min_device = d;
            if (peak[d] > out->need) out->need = peak[d];
        }
        for (uint32_t v = 0; v < tp_graph_size(g); v++) {
            const tp_vertex *x = tp_graph_vertex(g, v);
            uint32_t nc;
            tp_graph_consumers(g, v, &nc);
            out->edges += nc;
            if (x->kind != TP_V_INPUT) continue; /* the sums saturate: absurd models must be refused, not wrap */
            if (!strncmp(x->id, "base_model.", 11) && !strstr(x->id, ".exp_avg") && __builtin_add_overflow(out->adapter_bytes, x->bytes, &out->adapter_bytes))
                out->adapter_bytes = UINT64_MAX;
            if (__builtin_add_overflow(out->input_bytes, x->bytes, &out->input_bytes)) out->input_bytes = UINT64_MAX;
        }
        out->vertices = tp_graph_size(g);
    }
    tp_graph_free(g);
    return s;
}

/* ---- the run's state ---------------------------------------------------------------------------- */

typedef struct tr {
    const tp_train_run_opts *o;
    const tp_llama_config *c;
    tp_error *err;
    tp_train_result *r;
    tp_graph *g;
    tp_memgraph *mg;
    tp_session *sess;
    uint32_t n;            /* graph vertices */
    int32_t *role;         /* per vertex: -1 other, -2 hyper, -3 ids, -4 labels, else 3 x adapter + q (q: 0 p, 1 m, 2 v) */
    int64_t *seq;          /* per vertex: the sequence of an ids or labels input */
    int64_t *outk;         /* per vertex: its output index, or -1 */
    uint32_t *avert;       /* [3 n]: the adapter, moment inputs */
    uint64_t *valid;       /* per vertex: the host offset that holds this weight (UINT64_MAX: none) */
    uint64_t *decl;        /* per vertex: 1 + resident offset (0: not resident), with the host flag in bit 63 */
    float *m, *v;          /* the moments on the host (host mode) */
    const int32_t *data;   /* the sequences: [nseq x T] (o->tokens, or own) */
    int32_t *own;          /* random sequences made here */
    int64_t nseq;
    int32_t *lab;          /* one sequence's labels */
    uint64_t host;         /* the session's host block */
} tr;

static tp_status oom(tr *R)
{
    return tp__fail(R->err, TP_ERR_NOMEM, "out of memory");
}

/* a float in [-1, 1) from (key, i) */
static float unit(uint64_t key, uint64_t i)
{
    return (float)((double)(tp__mix64(key + i) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static void init_adapters(tr *R)
{
    tp_train_result *r = R->r;
    uint64_t base = tp__mix64(R->o->seed * 0x9e3779b97f4a7c15ull + 11);
    for (int64_t i = 0; i < r->n; i++) {
        const tp_lora_tensor *t = &r->t[i];
        uint64_t key = base;
        for (const char *p = t->name; *p; p++) key = tp__mix64(key ^ (unsigned char)*p);
        int isB = strstr(t->name, "lora_B") != NULL;
        /* A: Kaiming-uniform with a = sqrt(5) is uniform in +-1/sqrt(fan_in); B: zero, or +-0.5/sqrt(r) */
        double bound = isB ? (R->o->init == TP_LORA_INIT_NONZERO ? 0.5 / sqrt((double)R->o->graph.rank) : 0) : 1.0 / sqrt((double)t->shape[1]);
        uint64_t nf = (uint64_t)(t->shape[0] * t->shape[1]);
        for (uint64_t k = 0; k < nf; k++) r->initial[t->offset + k] = (float)(bound * unit(key, k));
    }
    memcpy(r->adapters, r->initial, r->floats * sizeof(float));
}

/* the adapters' table, the data's sequences, the per-vertex roles */
static tp_status setup(tr *R)
{
    const tp_train_run_opts *o = R->o;
    tp_train_result *r = R->r;
    const tp_train_opts *go = &o->graph;
    int64_t L = R->c->layers, T = go->seq, B = go->batch;
    int nt = __builtin_popcount(go->targets);
    r->n = L * nt * 2;
    r->t = calloc((size_t)r->n + 1, sizeof *r->t);
    r->loss = calloc((size_t)o->steps + 1, sizeof *r->loss);
    if (!r->t || !r->loss) return oom(R);
    int64_t i = 0;
    for (int64_t l = 0; l < L; l++)
        for (int t = 0; t < TP_LORA_NTARGETS; t++)
            for (int m = 0; m < 2 && (go->targets >> t & 1); m++, i++) {
                tp_lora_adapter_name(l, t, m, r->t[i].name, sizeof r->t[i].name);
                tp_lora_adapter_shape(R->c, t, m, go->rank, r->t[i].shape);
                r->t[i].offset = r->floats;
                if (__builtin_add_overflow(r->floats, (uint64_t)(r->t[i].shape[0] * r->t[i].shape[1]), &r->floats) ||
                    r->floats > SIZE_MAX / sizeof(float) - 1)
                    return tp__fail(R->err, TP_ERR_ARG, "train: the adapters' floats overflow the address space");
            }
    for (int64_t k = 0; k < o->steps; k++) r->loss[k] = NAN;
    if (!o->data) return TP_OK;
    size_t fb = (size_t)r->floats * sizeof(float) + 1;
    r->initial = malloc(fb);
    r->adapters = malloc(fb);
    R->m = calloc(1, fb);
    R->v = calloc(1, fb);
    R->lab = malloc(sizeof(int32_t) * (size_t)T);
    if (go->grads_out) r->grads = calloc(1, fb);
    if (!r->initial || !r->adapters || !R->m || !R->v || !R->lab || (go->grads_out && !r->grads)) return oom(R);
    init_adapters(R);
    if (o->tokens) {
        if (o->ntokens < B * T)
            return tp__fail(R->err, TP_ERR_ARG, "train: %lld tokens of data, a batch needs %lld x %lld", (long long)o->ntokens, (long long)B,
                            (long long)T);
        for (int64_t k = 0; k < o->ntokens; k++)
            if (o->tokens[k] < 0 || o->tokens[k] >= R->c->vocab)
                return tp__fail(R->err, TP_ERR_ARG, "train: token %lld (%d) is outside the vocabulary [0, %lld)", (long long)k,
                                (int)o->tokens[k], (long long)R->c->vocab);
        R->nseq = o->ntokens / T;
        R->data = o->tokens;
    } else {
        R->nseq = B;
        R->data = R->own = malloc(sizeof(int32_t) * (size_t)(B * T));
        if (!R->own) return oom(R);
        for (int64_t b = 0; b < B; b++) {
            tp_status s = tp_llama_random_prompt(o->seed + (uint64_t)b, T, R->c->vocab, R->own + b * T, R->err);
            if (s) return s;
        }
    }
    return TP_OK;
}

/* roles of g's vertices, output indices */
static tp_status roles(tr *R)
{
    tp_graph *g = R->g;
    tp_train_result *r = R->r;
    R->n = tp_graph_size(g);
    R->role = malloc(sizeof(int32_t) * (R->n + 1));
    R->seq = calloc(R->n + 1, sizeof(int64_t));
    R->outk = malloc(sizeof(int64_t) * (R->n + 1));
    R->valid = malloc(sizeof(uint64_t) * (R->n + 1));
    R->decl = calloc(R->n + 1, sizeof(uint64_t));
    R->avert = malloc(sizeof(uint32_t) * 3 * ((size_t)r->n + 1));
    if (!R->role || !R->seq || !R->outk || !R->valid || !R->decl || !R->avert) return oom(R);
    for (uint32_t v = 0; v < R->n; v++) {
        const tp_vertex *x = tp_graph_vertex(g, v);
        long long sq;
        R->role[v] = -1;
        R->outk[v] = -1;
        R->valid[v] = UINT64_MAX;
        if (x->kind != TP_V_INPUT) continue;
        if (!strcmp(x->id, "hyper")) R->role[v] = -2;
        else if (sscanf(x->id, "input_ids.s%lld", &sq) == 1) R->role[v] = -3, R->seq[v] = sq;
        else if (sscanf(x->id, "labels.s%lld", &sq) == 1) R->role[v] = -4, R->seq[v] = sq;
    }
    for (uint32_t k = 0; k < tp_graph_num_outputs(g); k++) R->outk[tp_graph_outputs(g)[k]] = k;
    char id[TP_LLAMA_ID_MAX + 32];
    for (int64_t i = 0; i < r->n; i++)
        for (int q = 0; q < 3; q++) {
            snprintf(id, sizeof id, "%s%s", r->t[i].name, q == 0 ? "" : q == 1 ? ".exp_avg" : ".exp_avg_sq");
            int64_t v = tp_graph_find(g, id);
            if (v < 0) return tp__fail(R->err, TP_ERR_INVALID, "train: the step graph has no input '%s'", id);
            R->avert[i * 3 + q] = (uint32_t)v;
            R->role[v] = (int32_t)(i * 3 + q);
        }
    return TP_OK;
}

/* the output vertex of adapter i's value q (0 the adapter, 1 and 2 the moments, 3 the gradient) */
static tp_status out_region(tr *R, int64_t i, int q, tp_region *reg)
{
    char id[TP_LLAMA_ID_MAX + 32];
    snprintf(id, sizeof id, "%s%s", R->r->t[i].name, (const char *[]){".updated", ".exp_avg.updated", ".exp_avg_sq.updated", ".grad"}[q]);
    int64_t v = tp_graph_find(R->g, id);
    if (v < 0 || R->outk[v] < 0) return tp__fail(R->err, TP_ERR_INVALID, "train: the step graph has no output '%s'", id);
    tp_mvertex mv;
    tp_memgraph_vertex(R->mg, tp_memgraph_outputs(R->mg)[R->outk[v]], &mv);
    *reg = mv.write;
    return TP_OK;
}

/* the declarations of g's inputs now, into decl (1 + offset, bit 63 the host flag) */
static void snapshot(tr *R, uint64_t *decl)
{
    for (uint32_t v = 0; v < R->n; v++) {
        uint64_t off;
        int hc;
        decl[v] = tp_graph_resident(R->g, v, &off, &hc) ? (1 + off) | ((uint64_t)(hc != 0) << 63) : 0;
    }
}

static tp_status plan(tr *R, double *secs)
{
    const tp_train_run_opts *o = R->o;
    tp_plan_opts po;
    tp_plan_opts_init(&po, o->graph.devices, o->device_mem);
    po.order = o->plan_order;
    if (o->no_sum_into) po.sum_into = 0;
    po.host_mem = R->host;
    double t0 = tp__now();
    tp_memgraph *mg = NULL;
    tp_status s = tp_plan(R->g, &po, &mg, R->err);
    *secs = tp__now() - t0; /* planning alone: the verifier's check is not counted */
    if (!s && o->verify) {
        char *text;
        size_t len;
        s = tp_memgraph_to_string(mg, &text, &len, R->err);
        if (!s) s = tp_verify_json(text, len, "training step", R->g, R->err);
        free(text);
    }
    if (s) {
        tp_memgraph_free(mg);
        return s;
    }
    tp_memgraph_free(R->mg);
    R->mg = mg;
    snapshot(R, R->decl);
    R->r->plans++;
    return TP_OK;
}

/* Declares what the last plan left on the devices resident for the next: the kept weights and,
 * in resident mode, the adapters and moments at their updated values' regions. Replans unless
 * the declarations are the last plan's. */
static tp_status carry(tr *R, double *secs)
{
    *secs = 0;
    tp_graph_clear_resident(R->g); /* the adapters' inputs were consumed in place: their values are the kept outputs */
    tp_status s = tp_plan_carry_inputs(R->g, R->mg, NULL, R->err);
    for (int64_t i = 0; i < R->r->n && !s && R->r->resident; i++)
        for (int q = 0; q < 3 && !s; q++) {
            tp_region reg;
            s = out_region(R, i, q, &reg);
            if (!s && reg.space != TP_SPACE_DEVICE)
                s = tp__fail(R->err, TP_ERR_INVALID, "train: kept output of '%s' is not on a device", R->r->t[i].name);
            if (!s) s = tp_graph_set_resident(R->g, R->avert[i * 3 + q], reg.offset, 0, R->err);
        }
    if (s) return s;
    uint64_t *now = malloc(sizeof(uint64_t) * (R->n + 1));
    if (!now) return oom(R);
    snapshot(R, now);
    int same = !memcmp(now, R->decl, sizeof(uint64_t) * R->n);
    free(now);
    return same ? TP_OK : plan(R, secs);
}

/* the inputs of the plan's input vertices for step k (0-based) */
static tp_status write_inputs(tr *R, tp_exec *x, int64_t k)
{
    const tp_train_run_opts *o = R->o;
    tp_train_result *r = R->r;
    int64_t B = o->graph.batch, T = o->graph.seq;
    tp_status s = TP_OK;
    double t = (double)(k + 1);
    float hyper[3] = {(float)o->lr, (float)(1 - pow(o->graph.beta1, t)), (float)(1 - pow(o->graph.beta2, t))};
    uint8_t *fresh = calloc(R->n + 1, 1); /* inputs of this plan */
    if (!fresh) return oom(R);
    for (uint32_t i = 0; i < tp_memgraph_size(R->mg) && !s; i++) {
        tp_mvertex mv;
        tp_memgraph_vertex(R->mg, i, &mv);
        if (mv.kind != TP_M_INPUT) continue;
        uint32_t v = mv.task;
        const tp_vertex *gv = tp_graph_vertex(R->g, v);
        int32_t role = R->role[v];
        fresh[v] = 1;
        if (role == -2) s = tp_exec_write(x, &mv.write, hyper, R->err);
        else if (role == -3 || role == -4) {
            const int32_t *ids = R->data + ((k * B + R->seq[v]) % R->nseq) * T;
            if (role == -4) {
                memcpy(R->lab, ids + 1, sizeof(int32_t) * (size_t)(T - 1));
                R->lab[T - 1] = -1;
                ids = R->lab;
            }
            s = tp_exec_write(x, &mv.write, ids, R->err);
        } else if (role >= 0) {
            int64_t a = role / 3;
            int q = role % 3;
            const float *src = (q == 0 ? r->adapters : q == 1 ? R->m : R->v) + r->t[a].offset;
            s = tp_exec_write(x, &mv.write, src, R->err);
        } else if (R->valid[v] != mv.write.offset) { /* a frozen weight not at this offset of the host block yet */
            void *buf = malloc(gv->bytes ? gv->bytes : 1);
            if (!buf) s = oom(R);
            if (!s) s = tp_llama_weights_read(o->weights, gv->id, gv->dtype, gv->bytes, buf, R->err);
            if (!s) s = tp_exec_write(x, &mv.write, buf, R->err);
            free(buf);
            if (!s) R->valid[v] = mv.write.offset;
        }
    }
    /* a weight without an input vertex in this plan may have its old bytes overwritten by offloads */
    for (uint32_t v = 0; v < R->n; v++)
        if (!fresh[v]) R->valid[v] = UINT64_MAX;
    free(fresh);
    return s;
}

static tp_status read_outputs(tr *R, tp_exec *x, int64_t k, int last, double *loss)
{
    tp_train_result *r = R->r;
    const tp_train_run_opts *o = R->o;
    int64_t BT = o->graph.batch * o->graph.seq;
    int64_t lv = tp_graph_find(R->g, "loss");
    if (lv < 0 || R->outk[lv] < 0) return tp__fail(R->err, TP_ERR_INVALID, "train: the step graph has no output 'loss'");
    tp_mvertex mv;
    tp_memgraph_vertex(R->mg, tp_memgraph_outputs(R->mg)[R->outk[lv]], &mv);
    float *l = malloc(sizeof(float) * (size_t)BT);
    if (!l) return oom(R);
    tp_status s = mv.write.bytes == (uint64_t)BT * 4 ? tp_exec_read(x, &mv.write, l, R->err)
                                                      : tp__fail(R->err, TP_ERR_INVALID, "train: 'loss' has %llu bytes", (unsigned long long)mv.write.bytes);
    double sum = 0;
    for (int64_t i = 0; i < BT && !s; i++) sum += l[i];
    free(l);
    *loss = sum;
    for (int64_t i = 0; i < r->n && !s; i++)
        for (int q = 0; q < 4 && !s; q++) {
            if (q == 3 ? !(k == 0 && r->grads) : (r->resident && !(last && q == 0))) continue;
            tp_region reg;
            s = out_region(R, i, q, &reg);
            float *dst = (q == 0 ? r->adapters : q == 1 ? R->m : q == 2 ? R->v : r->grads) + r->t[i].offset;
            if (!s) s = tp_exec_read(x, &reg, dst, R->err);
        }
    return s;
}

/* plans the first step: resident mode keeps the updated adapters and moments on device 0 */
static tp_status first_plan(tr *R, double *secs)
{
    const tp_train_run_opts *o = R->o;
    tp_train_result *r = R->r;
    tp_status s = tp_llama_train_build(R->c, &o->graph, &R->g, R->err);
    if (!s) s = roles(R);
    for (uint32_t v = 0; v < R->n && !s; v++) /* the frozen weights stay where they fit */
        if (tp_graph_vertex(R->g, v)->kind == TP_V_INPUT && R->role[v] == -1) s = tp_graph_set_keep(R->g, v, R->err);
    for (int64_t i = 0; i < r->n && !s && r->resident; i++)
        for (int q = 0; q < 3 && !s; q++) {
            char id[TP_LLAMA_ID_MAX + 32];
            snprintf(id, sizeof id, "%s%s", r->t[i].name, (const char *[]){".updated", ".exp_avg.updated", ".exp_avg_sq.updated"}[q]);
            s = tp_graph_set_keep(R->g, (uint32_t)tp_graph_find(R->g, id), R->err);
        }
    if (!s) s = plan(R, secs);
    return s;
}

static void free_plan_state(tr *R)
{
    tp_memgraph_free(R->mg);
    tp_graph_free(R->g);
    free(R->role);
    free(R->seq);
    free(R->outk);
    free(R->valid);
    free(R->decl);
    free(R->avert);
    R->mg = NULL, R->g = NULL, R->role = NULL, R->seq = NULL, R->outk = NULL, R->valid = NULL, R->decl = NULL, R->avert = NULL;
}

tp_status tp_llama_train(const tp_train_run_opts *o, tp_train_result *r, tp_error *err)
{
    memset(r, 0, sizeof *r);
    const tp_llama_config *c = o->config;
    if (!c || !o->backend || o->steps < 1 || (o->data && !o->weights) || !(o->lr >= 0 && o->lr < INFINITY) ||
        (o->init != TP_LORA_INIT_PEFT && o->init != TP_LORA_INIT_NONZERO) || o->resident < -1 || o->resident > 1)
        return tp__fail(err, TP_ERR_ARG, "train: need a config, a backend, steps >= 1, weights with data, a finite lr >= 0, a known init");
    tr R0 = {0}, *R = &R0;
    R->o = o;
    R->c = c;
    R->err = err;
    R->r = r;
    tp_status s = tp_llama_train_need(c, &o->graph, o->plan_order, &r->need, err);
    if (!s && o->device_mem < r->need.min_cap) {
        char b1[32], b2[32];
        s = tp__fail(err, TP_ERR_INFEASIBLE, "train: a step needs at least %s on device %d (one kernel's inputs and output), the cap is %s",
                     tp_format_size(r->need.min_cap, b1, sizeof b1), r->need.min_device, tp_format_size(o->device_mem, b2, sizeof b2));
    }
    if (!s) s = setup(R);
    /* resident mode: asked for, or (auto) when the adapters and moments take at most a quarter of the cap */
    r->resident = o->resident == TP_TRAIN_RESIDENT_AUTO ? r->need.adapter_bytes <= o->device_mem / 12 : o->resident;
    double t0 = tp__now(), secs = 0;
    if (!s) s = first_plan(R, &secs);
    if (s == TP_ERR_INFEASIBLE && o->resident == TP_TRAIN_RESIDENT_AUTO && r->resident) { /* they do not fit beside the step */
        free_plan_state(R);
        r->resident = 0;
        r->plans = 0;
        s = first_plan(R, &secs);
    }
    r->first_plan_seconds = secs;
    if (!s) {
        tp_plan_stats st;
        tp_memgraph_stats(R->mg, &st);
        for (int d = 0; d < st.ndevices; d++) {
            r->offloads += st.dev[d].offload_count;
            r->offload_bytes += st.dev[d].offload_bytes;
            r->drops += st.dev[d].drop_count;
            r->reloads += st.dev[d].reload_count;
        }
        r->sums_marked = st.sums_marked;
        r->sum_groups = st.sum_groups;
        r->sum_into_fallback = st.sum_into_fallback;
    }
    double plan_s = secs;
    /* the session: the caps, and the host for the first plan and room for later ones to offload */
    uint64_t cap[TP_MAX_DEVICES];
    int D = o->graph.devices;
    if (!s) {
        R->host = tp_memgraph_host_bytes(R->mg);
        for (int d = 0; d < D; d++) {
            cap[d] = o->device_mem;
            R->host = R->host > UINT64_MAX - cap[d] ? UINT64_MAX : R->host + cap[d];
        }
        r->host_bytes = R->host;
        s = tp_session_new(o->backend, D, cap, R->host, &R->sess, err);
    }
    for (int64_t k = 0; k < o->steps && !s; k++) {
        double ts = tp__now();
        if (k) s = carry(R, &plan_s);
        tp_exec *x = NULL;
        if (!s) s = tp_exec_new_in(R->sess, R->mg, &o->run, &x, err);
        if (!s && o->data) s = write_inputs(R, x, k);
        tp_run_summary sum;
        if (!s) s = tp_exec_run(x, &sum, err);
        double loss = NAN;
        if (!s && o->data) s = read_outputs(R, x, k, k + 1 == o->steps, &loss);
        tp_exec_free(x);
        if (s) break;
        r->loss[k] = loss;
        r->plan_seconds += plan_s;
        r->run_seconds += sum.makespan;
        r->bytes_moved += sum.bytes_moved;
        tp_train_step ev = {k + 1, loss, tp__now() - ts + (k ? 0 : plan_s), plan_s, sum.makespan, sum.bytes_moved};
        if (o->on_step) o->on_step(o->ctx, &ev);
        plan_s = 0;
    }
    r->seconds = tp__now() - t0;
    tp_session_free(R->sess);
    free_plan_state(R);
    free(R->m);
    free(R->v);
    free(R->lab);
    free(R->own);
    if (s) tp_train_result_free(r);
    return s;
}

void tp_train_result_free(tp_train_result *r)
{
    if (!r) return;
    free(r->t);
    free(r->initial);
    free(r->adapters);
    free(r->grads);
    free(r->loss);
    r->t = NULL, r->initial = r->adapters = r->grads = NULL, r->loss = NULL;
}

/* ---- PEFT's files ------------------------------------------------------------------------------ */

tp_status tp_lora_write_peft(const char *dir, const tp_train_result *r, const float *values, const tp_train_opts *o, const char *base,
                             tp_error *err)
{
    char path[4096], cpath[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir) >= sizeof path ||
        (size_t)snprintf(cpath, sizeof cpath, "%s/adapter_config.json", dir) >= sizeof cpath)
        return tp__fail(err, TP_ERR_IO, "%s: the directory name is too long", dir);
    json_t *j = json_object(), *tm = json_array(); /* every json_object_set_new takes its value, also when it fails */
    int ok = j && !json_object_set_new(j, "target_modules", tm);
    if (!j) json_decref(tm);
    for (int k = 0; k < TP_LORA_NTARGETS && ok; k++)
        if (o->targets >> k & 1) ok = !json_array_append_new(tm, json_string(tp_lora_target_name(k)));
    int whole = o->alpha == floor(o->alpha) && o->alpha < 1e15;
    ok = ok && !json_object_set_new(j, "peft_type", json_string("LORA")) && !json_object_set_new(j, "task_type", json_string("CAUSAL_LM")) &&
         !json_object_set_new(j, "r", json_integer(o->rank)) &&
         !json_object_set_new(j, "lora_alpha", whole ? json_integer((json_int_t)o->alpha) : json_real(o->alpha)) &&
         !json_object_set_new(j, "lora_dropout", json_real(0)) && !json_object_set_new(j, "bias", json_string("none")) &&
         !json_object_set_new(j, "fan_in_fan_out", json_false()) && !json_object_set_new(j, "inference_mode", json_true()) &&
         !json_object_set_new(j, "base_model_name_or_path", base ? json_string(base) : json_null()) &&
         !json_object_set_new(j, "modules_to_save", json_null()) && !json_object_set_new(j, "init_lora_weights", json_true());
    char *text = ok ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    if (!text) return tp__fail(err, TP_ERR_NOMEM, "out of memory (or a base model name that is not UTF-8)");
    /* the two files are replaced together: both written and synced (a full disk shows here,
     * with neither replaced), then renamed one after the other */
    tp_outfile *cf = NULL, *sf = NULL;
    tp_status s = tp_outfile_open(cpath, &cf, err);
    if (!s) {
        fputs(text, tp_outfile_stream(cf));
        fputc('\n', tp_outfile_stream(cf));
        s = tp_outfile_sync(cf, err);
    }
    free(text);
    tp_st_tensor *t = s ? NULL : calloc((size_t)r->n + 1, sizeof *t);
    if (!s && !t) s = tp__fail(err, TP_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; !s && i < r->n; i++)
        t[i] = (tp_st_tensor){r->t[i].name, TP_DT_F32, 2, {r->t[i].shape[0], r->t[i].shape[1]},
                              (uint64_t)(r->t[i].shape[0] * r->t[i].shape[1]) * 4, values + r->t[i].offset};
    if (!s) s = tp_st_write_open(path, (size_t)r->n, t, &sf, err);
    free(t);
    if (!s) { /* the commit syncs it before its rename */
        s = tp_outfile_commit(sf, err);
        sf = NULL;
    }
    if (!s) {
        s = tp_outfile_commit(cf, err);
        cf = NULL;
    }
    tp_outfile_abort(sf);
    tp_outfile_abort(cf);
    return s;
}
