/* fuzz_index.c - the sharded checkpoint's model.safetensors.index.json (tp_llama_index_check,
 * the code path tp_llama_load takes before reading weights). The input is written as
 * DIR/model.safetensors.index.json in a temporary checkpoint directory made once per process:
 * DIR holds empty shard files (model-0000K-of-00002.safetensors, model.safetensors,
 * sub/x.safetensors), a link to one of them and a link to ROOT/outside.safetensors beside DIR.
 * For the tiny preset, an accepted index must map every tensor the model needs (listed here
 * independently of the library) to a string naming a file whose real path lies inside DIR. */
#include "fuzz.h" /* first: it defines _GNU_SOURCE */
#include <jansson.h>
#include <limits.h>
#include <sys/stat.h>

static char root[64], dir[128], index_path[192], *dir_real;

static void put(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) FUZZ_BUG("cannot make %s", p);
    fclose(f);
}

static void cleanup(void)
{
    static const char *files[] = {"model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                  "model.safetensors", "sub/x.safetensors", "sub", "inlink.safetensors", "link.safetensors"};
    char p[256];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    rmdir(dir);
    snprintf(p, sizeof p, "%s/outside.safetensors", root);
    remove(p);
    rmdir(root);
}

static void setup(void)
{
    snprintf(root, sizeof root, "/tmp/fuzz_index.XXXXXX");
    if (!mkdtemp(root)) FUZZ_BUG("mkdtemp failed");
    atexit(cleanup);
    snprintf(dir, sizeof dir, "%s/ck", root);
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    char p[256];
    if (mkdir(dir, 0700)) FUZZ_BUG("cannot make %s", dir);
    snprintf(p, sizeof p, "%s/sub", dir);
    if (mkdir(p, 0700)) FUZZ_BUG("cannot make %s", p);
    put("model-00001-of-00002.safetensors");
    put("model-00002-of-00002.safetensors");
    put("model.safetensors");
    put("sub/x.safetensors");
    snprintf(p, sizeof p, "%s/outside.safetensors", root);
    FILE *f = fopen(p, "w");
    if (!f) FUZZ_BUG("cannot make %s", p);
    fclose(f);
    snprintf(p, sizeof p, "%s/link.safetensors", dir);
    if (symlink("../outside.safetensors", p)) FUZZ_BUG("cannot make %s", p);
    snprintf(p, sizeof p, "%s/inlink.safetensors", dir);
    if (symlink("model-00001-of-00002.safetensors", p)) FUZZ_BUG("cannot make %s", p);
    dir_real = realpath(dir, NULL);
    if (!dir_real) FUZZ_BUG("realpath %s failed", dir);
}

/* fname, from the index, names a file strictly inside DIR (symlinks resolved) */
static void check_inside(const char *tensor, const char *fname)
{
    char p[PATH_MAX + 256];
    snprintf(p, sizeof p, "%s/%s", dir, fname);
    char *r = realpath(p, NULL);
    size_t n = strlen(dir_real);
    if (!r) FUZZ_BUG("accepted: tensor '%s' in '%s', which does not resolve", tensor, fname);
    if (strncmp(r, dir_real, n) || r[n] != '/' || !r[n + 1]) FUZZ_BUG("accepted: tensor '%s' in '%s' = %s, outside %s", tensor, fname, r, dir_real);
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tp_llama_config c;
    if (!dir_real) {
        tp_error e;
        setup();
        if (tp_llama_preset("tiny", &c, &e)) FUZZ_BUG("no tiny preset: %s", e.msg);
    }
    FILE *f = fopen(index_path, "wb");
    if (!f) FUZZ_BUG("cannot write %s", index_path);
    if (size && fwrite(data, 1, size, f) != size) FUZZ_BUG("cannot write %s", index_path);
    fclose(f);
    tp_error e;
    if (tp_llama_index_check(dir, &c, &e) != TP_OK) return 0;
    /* accepted: every tensor of the tiny model (embedding, layers, final norm, lm_head) */
    json_error_t je;
    json_t *idx = json_loadb((const char *)data, size, 0, &je);
    json_t *map = json_object_get(idx, "weight_map");
    if (!json_is_object(map)) FUZZ_BUG("accepted an index without an object weight_map");
    static const char *layer[] = {"input_layernorm.weight",   "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                                  "self_attn.v_proj.weight",  "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                                  "mlp.gate_proj.weight",     "mlp.up_proj.weight",      "mlp.down_proj.weight"};
    char name[128];
    for (int64_t l = -1; l <= c.layers; l++)
        for (size_t t = 0; t < (l < 0 || l == c.layers ? 2 : sizeof layer / sizeof *layer); t++) {
            if (l < 0) snprintf(name, sizeof name, "%s", t ? "model.norm.weight" : "model.embed_tokens.weight");
            else if (l == c.layers) snprintf(name, sizeof name, "%s", t ? "lm_head.weight" : "model.norm.weight");
            else snprintf(name, sizeof name, "model.layers.%lld.%s", (long long)l, layer[t]);
            json_t *v = json_object_get(map, name);
            if (!json_is_string(v)) FUZZ_BUG("accepted: tensor '%s' has no shard", name);
            check_inside(name, json_string_value(v));
        }
    json_decref(idx);
    return 0;
}
