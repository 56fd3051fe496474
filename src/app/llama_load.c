/* llama_load.c - filling a LLaMA run's weight inputs (app layer: a workflow over models,
 * io and the executor's write API): from Hugging Face safetensors (single file or
 * sharded), or random in-process. Each weight input id names its tensor and
 * slice (tp_llama_parse_input); rows of a row-major matrix are one contiguous copy, columns
 * a strided one.
 *
 * A checkpoint directory is hostile input: its index names the shard files, and any of its
 * files may be a symlink. Every file read from it (the index, the shards, model.safetensors)
 * must be a plain relative name (no '..', not absolute, no control characters) whose real
 * path (symlinks resolved) lies inside the directory's real path, or, in a Hugging Face hub
 * cache snapshot (.../snapshots/REV, whose files are links to ../../blobs/), inside the
 * repository's blobs/ folder; the file opened is that real path, so a link swapped after the
 * check is not followed. Anything else is refused before it is opened, so a foreign file is
 * neither loaded nor quoted in an error. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    char *real;  /* realpath of dir (malloc'd) */
    char *blobs; /* realpath of ../../blobs when dir is a hub cache snapshot, else NULL (malloc'd) */
    json_t *idx; /* the parsed model.safetensors.index.json, or NULL */
    json_t *map; /* its weight_map (a sharded checkpoint), or NULL */
    shard *sh;
    int nsh;
    int check;   /* shards are confined but not opened (tp_llama_index_check) */
} ckpt;

/* 1 if the real path f lies strictly inside the real directory d */
static int under(const char *d, const char *f)
{
    size_t n = strlen(d);
    if (n && d[n - 1] == '/') n--; /* d is "/" */
    return !strncmp(d, f, n) && f[n] == '/' && f[n + 1];
}

static tp_status ckpt_init(ckpt *k, const char *dir, tp_error *err)
{
    k->real = realpath(dir, NULL);
    if (!k->real) return tp__fail(err, TP_ERR_IO, "%s: cannot open the checkpoint directory: %s", dir, strerror(errno));
    const char *last = strrchr(k->real, '/'), *prev = last;
    while (prev > k->real && prev[-1] != '/') prev--; /* prev: the parent's last component */
    if (last && prev > k->real && (size_t)(last - prev) == 9 && !strncmp(prev, "snapshots", 9)) {
        char b[PATH_LEN]; /* REPO/snapshots/REV: REPO/blobs */
        int n = (int)(prev - 1 - k->real);
        if ((size_t)snprintf(b, sizeof b, "%.*s/blobs", n, k->real) < sizeof b) k->blobs = realpath(b, NULL);
    }
    return TP_OK;
}

/* path = dir/name checked (see the top of the file); *real (malloc'd, the caller's) the file
 * to open. `what` says where the name came from, for the error. */
static tp_status confine(const ckpt *k, const char *name, const char *what, char *path, char **real, tp_error *err)
{
    const char *why = NULL;
    if (!*name) why = "is empty";
    else if (name[0] == '/') why = "is an absolute path";
    for (const char *c = name; *c && !why; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) why = "contains a control character";
    for (const char *c = name; *c && !why; c = strchr(c, '/') ? strchr(c, '/') + 1 : c + strlen(c))
        if (!strncmp(c, "..", 2) && (c[2] == '/' || !c[2])) why = "has a '..' component";
    if (why) return tp__fail(err, TP_ERR_INVALID, "%s: %s: the file name %s; it must name a file inside the directory", k->dir, what, why);
    if ((size_t)snprintf(path, PATH_LEN, "%s/%s", k->dir, name) >= PATH_LEN)
        return tp__fail(err, TP_ERR_INVALID, "%s: %s: the file name is too long", k->dir, what);
    *real = realpath(path, NULL);
    if (!*real) return tp__fail(err, TP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!under(k->real, *real) && !(k->blobs && under(k->blobs, *real))) {
        free(*real);
        *real = NULL;
        return tp__fail(err, TP_ERR_INVALID, "%s: a link to a file outside the checkpoint directory; refused", path);
    }
    return TP_OK;
}

/* the shard holding tensor `name` (model.safetensors without an index): k->sh[*out]; on
 * first use its name is confined and, unless k->check, the file opened */
static tp_status shard_of(ckpt *k, const char *name, int *out, tp_error *err)
{
    char path[PATH_LEN], *real = NULL, what[TP_LLAMA_ID_MAX + 64];
    const char *fname = "model.safetensors";
    if (k->map) {
        json_t *f = json_object_get(k->map, name);
        if (!json_is_string(f)) return tp__fail(err, TP_ERR_INVALID, "%s: no tensor '%s' in model.safetensors.index.json", k->dir, name);
        fname = json_string_value(f);
        snprintf(what, sizeof what, "model.safetensors.index.json: the shard of tensor '%s'", name);
    } else {
        snprintf(what, sizeof what, "model.safetensors");
    }
    if ((size_t)snprintf(path, sizeof path, "%s/%s", k->dir, fname) >= sizeof path)
        return tp__fail(err, TP_ERR_INVALID, "%s: %s: the file name is too long", k->dir, what);
    int i;
    for (i = 0; i < k->nsh && strcmp(k->sh[i].path, path); i++) {
    }
    if (i == k->nsh) {
        shard *ns = realloc(k->sh, sizeof *ns * (size_t)(k->nsh + 1));
        if (!ns) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        k->sh = ns;
        snprintf(k->sh[i].path, sizeof k->sh[i].path, "%s", path);
        k->sh[i].st = NULL;
        tp_status s = confine(k, fname, what, path, &real, err);
        if (!s && !k->check) s = tp_st_open(real, &k->sh[i].st, err);
        free(real);
        if (s) return s;
        k->nsh++;
    }
    *out = i;
    return TP_OK;
}

static tp_status find_tensor(ckpt *k, const char *name, const tp_st_tensor **out, const char **file, tp_error *err)
{
    int i;
    tp_status s = shard_of(k, name, &i, err);
    if (s) return s;
    *file = k->sh[i].path;
    *out = tp_st_find(k->sh[i].st, name);
    if (!*out) return tp__fail(err, TP_ERR_INVALID, "%s: no tensor '%s'", k->sh[i].path, name);
    return TP_OK;
}

/* the tensor name, slice and Hugging Face shape (nd dimensions) of weight input `id` */
static tp_status weight_of(const tp_llama_config *c, const char *id, char *name, char *kind, int64_t *a, int64_t *b, int64_t *hs, int *nd,
                           tp_error *err)
{
    if (!tp_llama_parse_input(id, name, TP_LLAMA_ID_MAX, kind, a, b)) return tp__fail(err, TP_ERR_INVALID, "input '%s': not a weight name", id);
    *nd = hf_shape(c, name, hs);
    if (!*nd) return tp__fail(err, TP_ERR_INVALID, "input '%s': not a LLaMA tensor", id);
    return TP_OK;
}

/* The bytes of weight input `id` (dtype dt, `bytes` long) into buf: from the checkpoint ck,
 * or random from seed when ck is NULL. */
static tp_status weight_bytes(const tp_llama_config *c, ckpt *ck, uint64_t seed, const char *id, tp_dtype dt, uint64_t bytes,
                              void *buf, tp_error *err)
{
    char name[TP_LLAMA_ID_MAX], kind;
    int64_t a, b, hs[2] = {0, 0};
    int nd;
    tp_status s;
    if ((s = weight_of(c, id, name, &kind, &a, &b, hs, &nd, err))) return s;
    uint64_t es = tp_dtype_size(dt);
    int64_t cols = nd == 2 ? hs[1] : 1;
    uint64_t want = (uint64_t)(kind == 'r' ? b - a : hs[0]) * (uint64_t)(kind == 'c' ? b - a : cols) * es;
    if (!es || want != bytes)
        return tp__fail(err, TP_ERR_INVALID, "input '%s': %llu bytes of %s do not hold that slice", id, (unsigned long long)bytes,
                        tp_dtype_name(dt));
    if (ck) {
        const tp_st_tensor *t;
        const char *file;
        s = find_tensor(ck, name, &t, &file, err);
        if (!s && t->dtype != dt)
            s = tp__fail(err, TP_ERR_INVALID, "%s: tensor '%s' is %s, config.json's torch_dtype says %s", file, name,
                         tp_dtype_name(t->dtype), tp_dtype_name(dt));
        if (!s && (t->ndim != nd || t->shape[0] != hs[0] || (nd == 2 && t->shape[1] != hs[1]))) {
            char got[96], wantd[96];
            int k = snprintf(got, sizeof got, "[");
            for (int q = 0; q < t->ndim && k < (int)sizeof got; q++) k += snprintf(got + k, sizeof got - (size_t)k, "%s%lld", q ? ", " : "", (long long)t->shape[q]);
            snprintf(got + k, sizeof got - (size_t)k, "]");
            if (nd == 2) snprintf(wantd, sizeof wantd, "[%lld, %lld]", (long long)hs[0], (long long)hs[1]);
            else snprintf(wantd, sizeof wantd, "[%lld]", (long long)hs[0]);
            s = tp__fail(err, TP_ERR_INVALID, "%s: tensor '%s' has shape %s, the config needs %s", file, name, got, wantd);
        }
        if (!s) {
            const char *src = t->data;
            if (kind == 'r') memcpy(buf, src + (uint64_t)a * (uint64_t)cols * es, bytes);
            else if (kind == 'c')
                for (int64_t r = 0; r < hs[0]; r++)
                    memcpy((char *)buf + (uint64_t)r * (uint64_t)(b - a) * es, src + ((uint64_t)r * (uint64_t)cols + (uint64_t)a) * es,
                           (uint64_t)(b - a) * es);
            else memcpy(buf, src, bytes);
        }
        return s;
    }
    uint64_t key = tp__mix64(seed * 0x2545f4914f6cdd1dull + 1);
    for (const char *p = name; *p; p++) key = tp__mix64(key ^ (unsigned char)*p);
    int norm = nd == 1;
    int64_t rows = kind == 'r' ? b - a : hs[0], w = kind == 'c' ? b - a : cols;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t q = 0; q < w; q++) {
            int64_t rr = kind == 'r' ? r + a : r, cc = kind == 'c' ? q + a : q;
            float f = (float)tp__normal(key ^ tp__mix64((uint64_t)(rr * cols + cc)));
            tp__store_f32(buf, dt, (uint64_t)(r * w + q), norm ? 1.0f + 0.1f * f : 0.02f * f);
        }
    return TP_OK;
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
        void *buf = malloc(v->bytes ? v->bytes : 1);
        if (!buf) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
        s = weight_bytes(c, ck, seed, v->id, v->dtype, v->bytes, buf, err);
        if (!s) s = tp_exec_write(x, &mv.write, buf, err);
        free(buf);
    }
    return s;
}

/* k for dir: its real path and, when there is one, its model.safetensors.index.json read
 * into k->idx and k->map (ckpt_close frees them) */
static tp_status ckpt_open(ckpt *k, const char *dir, int check, tp_error *err)
{
    *k = (ckpt){dir, NULL, NULL, NULL, NULL, NULL, 0, check};
    char path[PATH_LEN], *real = NULL, *text = NULL;
    struct stat sb;
    tp_status s = ckpt_init(k, dir, err);
    if (!s && (size_t)snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir) >= sizeof path)
        s = tp__fail(err, TP_ERR_INVALID, "%s: the directory name is too long", dir);
    /* no index (lstat says so without opening, which a FIFO would block): one model.safetensors */
    if (!s && !(lstat(path, &sb) && errno == ENOENT)) {
        size_t len;
        s = confine(k, "model.safetensors.index.json", "model.safetensors.index.json", path, &real, err);
        if (!s) s = tp__read_file(real, &text, &len, err);
        if (!s) {
            json_error_t je;
            k->idx = json_loadb(text, len, 0, &je);
            if (!k->idx || !json_is_object(json_object_get(k->idx, "weight_map")))
                s = tp__fail(err, TP_ERR_PARSE, "%s: needs an object 'weight_map'%s%s", path, k->idx ? "" : ": ", k->idx ? "" : je.text);
            else k->map = json_object_get(k->idx, "weight_map");
        }
    }
    free(real);
    free(text);
    return s;
}

static void ckpt_close(ckpt *k)
{
    for (int i = 0; i < k->nsh; i++) tp_st_close(k->sh[i].st);
    free(k->sh);
    free(k->real);
    free(k->blobs);
    json_decref(k->idx);
}

tp_status tp_llama_load(tp_exec *x, const tp_llama_config *c, const char *dir, const int32_t *ids, tp_error *err)
{
    ckpt k;
    tp_status s = ckpt_open(&k, dir, 0, err);
    if (!s) s = fill(x, c, &k, 0, ids, err);
    ckpt_close(&k);
    return s;
}

tp_status tp_llama_index_check(const char *dir, const tp_llama_config *c, tp_error *err)
{
    ckpt k;
    tp_graph *g = NULL;
    tp_llama_opts o;
    tp_status s = ckpt_open(&k, dir, 1, err);
    if (!s) {
        tp_llama_opts_default(&o, c, 1, 1, UINT64_MAX);
        s = tp_llama_build(c, &o, &g, err);
    }
    for (uint32_t i = 0; !s && i < tp_graph_size(g); i++) {
        const tp_vertex *v = tp_graph_vertex(g, i);
        char name[TP_LLAMA_ID_MAX], kind;
        int64_t a, b, hs[2] = {0, 0};
        int nd, sh;
        if (v->kind != TP_V_INPUT || !strcmp(v->id, "input_ids")) continue;
        s = weight_of(c, v->id, name, &kind, &a, &b, hs, &nd, err);
        if (!s) s = shard_of(&k, name, &sh, err);
    }
    tp_graph_free(g);
    ckpt_close(&k);
    return s;
}

tp_status tp_llama_random(tp_exec *x, const tp_llama_config *c, uint64_t seed, const int32_t *ids, tp_error *err)
{
    return fill(x, c, NULL, seed, ids, err);
}

struct tp_llama_weights {
    tp_llama_config c;
    uint64_t seed;
    int has_ckpt;
    ckpt k;
};

tp_status tp_llama_weights_open(const tp_llama_config *c, const char *dir, uint64_t seed, tp_llama_weights **out, tp_error *err)
{
    *out = NULL;
    tp_llama_weights *w = calloc(1, sizeof *w);
    if (!w) return tp__fail(err, TP_ERR_NOMEM, "out of memory");
    w->c = *c;
    w->seed = seed;
    if (dir) {
        tp_status s = ckpt_open(&w->k, dir, 0, err);
        if (s) {
            ckpt_close(&w->k);
            free(w);
            return s;
        }
        w->has_ckpt = 1;
    }
    *out = w;
    return TP_OK;
}

tp_status tp_llama_weights_read(tp_llama_weights *w, const char *id, tp_dtype dt, uint64_t bytes, void *buf, tp_error *err)
{
    return weight_bytes(&w->c, w->has_ckpt ? &w->k : NULL, w->seed, id, dt, bytes, buf, err);
}

void tp_llama_weights_close(tp_llama_weights *w)
{
    if (!w) return;
    if (w->has_ckpt) ckpt_close(&w->k);
    free(w);
}
