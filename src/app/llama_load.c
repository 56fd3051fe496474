/* llama_load.c - filling a LLaMA run's weight inputs (app layer: a workflow over models,
 * io and the executor's write API): from Hugging Face safetensors (single file or
 * sharded), or random in-process. Each weight input id names its tensor and
 * slice (tp_llama_parse_input); rows of a row-major matrix are one contiguous copy, columns
 * a strided one. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/app.h"
#include "turnip/exec.h"
#include "turnip/models.h"
#include "turnip/safetensors.h"
#include "io/half.h"
#include "io/util.h"

#define PATH_LEN 4096 /* checkpoint file paths (directory + '/' + file name), with the NUL */

/* Hugging Face shape of a LLaMA tensor; 0 if the name is not one */
static int hf_shape(const tp_llama_config *c, const char *name, int64_t *shape)
{
    int64_t hd = c->hidden / c->heads;
    const char *p = name;
    if (!strcmp(name, "model.embed_tokens.weight") || !strcmp(name, "lm_head.weight")) {
        shape[0] = c->vocab;
        shape[1] = c->hidden;
        return 2;
    }
    if (!strcmp(name, "model.norm.weight")) {
        shape[0] = c->hidden;
        return 1;
    }
    if (strncmp(p, "model.layers.", 13)) return 0;
    p = strchr(p + 13, '.');
    if (!p) return 0;
    p++;
    if (!strcmp(p, "input_layernorm.weight") || !strcmp(p, "post_attention_layernorm.weight")) {
        shape[0] = c->hidden;
        return 1;
    }
    struct {
        const char *n;
        int64_t r, c;
    } t[] = {{"self_attn.q_proj.weight", c->heads * hd, c->hidden},    {"self_attn.k_proj.weight", c->kv_heads * hd, c->hidden},
             {"self_attn.v_proj.weight", c->kv_heads * hd, c->hidden}, {"self_attn.o_proj.weight", c->hidden, c->heads * hd},
             {"mlp.gate_proj.weight", c->intermediate, c->hidden},     {"mlp.up_proj.weight", c->intermediate, c->hidden},
             {"mlp.down_proj.weight", c->hidden, c->intermediate}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!strcmp(p, t[i].n)) {
            shape[0] = t[i].r;
            shape[1] = t[i].c;
            return 2;
        }
    return 0;
}

typedef struct {
    char path[PATH_LEN];
    tp_st *st;
} shard;

typedef struct {
    const char *dir;
    json_t *map; /* weight_map of a sharded checkpoint, or NULL */
    shard *sh;
    int nsh;
} ckpt;

static tp_status find_tensor(ckpt *k, const char *name, const tp_st_tensor **out, const char **file, tp_error *err)
{
    char path[PATH_LEN];
    if (k->map) {
        json_t *f = json_object_get(k->map, name);
        if (!json_is_string(f)) return tp__fail(err, TP_ERR_INVALID, "%s: no tensor '%s' in model.safetensors.index.json", k->dir, name);
        snprintf(path, sizeof path, "%s/%s", k->dir, json_string_value(f));
    } else {
        snprintf(path, sizeof path, "%s/model.safetensors", k->dir);
    }
    int i;
    for (i = 0; i < k->nsh && strcmp(k->sh[i].path, path); i++) {
    }
    if (i == k->nsh) {
        shard *ns = realloc(k->sh, sizeof *ns * (size_t)(k->nsh + 1));
        if (!ns) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        k->sh = ns;
        snprintf(k->sh[i].path, sizeof k->sh[i].path, "%s", path);
        tp_status s = tp_st_open(path, &k->sh[i].st, err);
        if (s) return s;
        k->nsh++;
    }
    *file = k->sh[i].path;
    *out = tp_st_find(k->sh[i].st, name);
    if (!*out) return tp__fail(err, TP_ERR_INVALID, "%s: no tensor '%s'", path, name);
    return TP_OK;
}

static void put(void *dst, tp_dtype t, uint64_t i, float f)
{
    if (t == TP_DT_F32) memcpy((char *)dst + 4 * i, &f, 4);
    else {
        uint16_t h = t == TP_DT_F16 ? tp__f32_to_f16(f) : tp__f32_to_bf16(f);
        memcpy((char *)dst + 2 * i, &h, 2);
    }
}

/* fills every input of x's graph; ck == NULL: random weights from seed */
static tp_status fill(tp_exec *x, const tp_llama_config *c, ckpt *ck, uint64_t seed, const int32_t *ids, tp_error *err)
{
    const tp_memgraph *mg = tp_exec_memgraph(x);
    const tp_graph *g = tp_memgraph_taskgraph(mg);
    tp_status s = TP_OK;
    for (uint32_t i = 0; i < tp_memgraph_size(mg) && !s; i++) {
        tp_mvertex mv;
        tp_memgraph_vertex(mg, i, &mv);
        if (mv.kind != TP_M_INPUT) continue;
        const tp_vertex *v = tp_graph_vertex(g, mv.task);
        if (!strcmp(v->id, "input_ids")) {
            s = tp_exec_write(x, &mv.write, ids, err);
            continue;
        }
        char name[TP_LLAMA_ID_MAX], kind;
        int64_t a, b, hs[2] = {0, 0};
        if (!tp_llama_parse_input(v->id, name, sizeof name, &kind, &a, &b)) return tp__fail(err, TP_ERR_INVALID, "input '%s': not a weight name", v->id);
        int nd = hf_shape(c, name, hs);
        if (!nd) return tp__fail(err, TP_ERR_INVALID, "input '%s': not a LLaMA tensor", v->id);
        uint64_t es = tp_dtype_size(v->dtype);
        int64_t cols = nd == 2 ? hs[1] : 1;
        void *buf = malloc(v->bytes);
        if (!buf) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        if (ck) {
            const tp_st_tensor *t;
            const char *file;
            s = find_tensor(ck, name, &t, &file, err);
            if (!s && t->dtype != v->dtype)
                s = tp__fail(err, TP_ERR_INVALID, "%s: tensor '%s' is %s, config.json's torch_dtype says %s", file, name,
                             tp_dtype_name(t->dtype), tp_dtype_name(v->dtype));
            if (!s && (t->ndim != nd || t->shape[0] != hs[0] || (nd == 2 && t->shape[1] != hs[1]))) {
                char got[96], want[96];
                int k = snprintf(got, sizeof got, "[");
                for (int q = 0; q < t->ndim && k < (int)sizeof got; q++) k += snprintf(got + k, sizeof got - (size_t)k, "%s%lld", q ? ", " : "", (long long)t->shape[q]);
                snprintf(got + k, sizeof got - (size_t)k, "]");
                if (nd == 2) snprintf(want, sizeof want, "[%lld, %lld]", (long long)hs[0], (long long)hs[1]);
                else snprintf(want, sizeof want, "[%lld]", (long long)hs[0]);
                s = tp__fail(err, TP_ERR_INVALID, "%s: tensor '%s' has shape %s, the config needs %s", file, name, got, want);
            }
            if (!s) {
                const char *src = t->data;
                if (kind == 'r') memcpy(buf, src + (uint64_t)a * (uint64_t)cols * es, v->bytes);
                else if (kind == 'c')
                    for (int64_t r = 0; r < hs[0]; r++)
                        memcpy((char *)buf + (uint64_t)r * (uint64_t)(b - a) * es, src + ((uint64_t)r * (uint64_t)cols + (uint64_t)a) * es,
                               (uint64_t)(b - a) * es);
                else memcpy(buf, src, v->bytes);
            }
        } else {
            uint64_t key = tp__mix64(seed * 0x2545f4914f6cdd1dull + 1);
            for (const char *p = name; *p; p++) key = tp__mix64(key ^ (unsigned char)*p);
            int norm = nd == 1;
            int64_t rows = kind == 'r' ? b - a : hs[0], w = kind == 'c' ? b - a : cols;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t q = 0; q < w; q++) {
                    int64_t rr = kind == 'r' ? r + a : r, cc = kind == 'c' ? q + a : q;
                    float f = (float)tp__normal(key ^ tp__mix64((uint64_t)(rr * cols + cc)));
                    put(buf, v->dtype, (uint64_t)(r * w + q), norm ? 1.0f + 0.1f * f : 0.02f * f);
                }
        }
        if (!s) s = tp_exec_write(x, &mv.write, buf, err);
        free(buf);
    }
    return s;
}

tp_status tp_llama_load(tp_exec *x, const tp_llama_config *c, const char *dir, const int32_t *ids, tp_error *err)
{
    ckpt k = {dir, NULL, NULL, 0};
    char path[PATH_LEN];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    json_t *idx = NULL;
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        json_error_t je;
        idx = json_load_file(path, 0, &je);
        if (!idx || !json_is_object(json_object_get(idx, "weight_map"))) {
            json_decref(idx);
            return tp__fail(err, TP_ERR_PARSE, "%s: needs an object 'weight_map'%s%s", path, idx ? "" : ": ", idx ? "" : je.text);
        }
        k.map = json_object_get(idx, "weight_map");
    }
    tp_status s = fill(x, c, &k, 0, ids, err);
    for (int i = 0; i < k.nsh; i++) tp_st_close(k.sh[i].st);
    free(k.sh);
    json_decref(idx);
    return s;
}

tp_status tp_llama_random(tp_exec *x, const tp_llama_config *c, uint64_t seed, const int32_t *ids, tp_error *err)
{
    return fill(x, c, NULL, seed, ids, err);
}
