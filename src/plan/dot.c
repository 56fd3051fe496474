/* dot.c - Graphviz drawing of a MemGraph, in the style of the paper's Figures 5 and 7:
 * data dependencies solid black, memory dependencies dashed red, offload and reload
 * vertices as filled boxes, sum-into accumulates (yellow ellipses) and joins (yellow diamonds)
 * labelled with their group, one cluster per device. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "turnip/plan.h"
#include "io/util.h"

static void dot_str(FILE *f, const char *s)
{
    tp__json_str(f, s); /* JSON string escaping is valid DOT quoting for our labels */
}

tp_status tp_dot_json(const char *text, size_t len, const char *name, FILE *out, tp_error *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) return tp__fail(err, TP_ERR_PARSE, "%s:%d:%d: not valid JSON: %s", name, je.line, je.column, je.text);
    json_t *vs = json_object_get(root, "vertices");
    if (!json_is_array(vs)) {
        json_decref(root);
        return tp__fail(err, TP_ERR_PARSE, "%s: field 'vertices' must be an array", name);
    }
    int ndev = (int)json_array_size(json_object_get(root, "devices"));
    fputs("digraph memgraph {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n", out);
    for (int d = -1; d < ndev; d++) {
        if (d >= 0) fprintf(out, "  subgraph cluster_dev%d {\n    label=\"device %d\"; color=gray;\n", d, d);
        for (size_t i = 0; i < json_array_size(vs); i++) {
            json_t *v = json_array_get(vs, i);
            const char *kind = json_string_value(json_object_get(v, "kind"));
            const char *task = json_string_value(json_object_get(v, "task"));
            json_t *jd = json_object_get(v, "device");
            int dev = json_is_integer(jd) ? (int)json_integer_value(jd) : -1;
            if (!kind || !task) {
                json_decref(root);
                return tp__fail(err, TP_ERR_PARSE, "%s: vertex %zu needs 'kind' and 'task'", name, i);
            }
            if (dev != d) continue;
            const char *style = "shape=ellipse";
            if (!strcmp(kind, "input")) style = "shape=box, style=filled, fillcolor=\"#eeeeee\"";
            else if (!strcmp(kind, "transfer")) style = "shape=hexagon";
            else if (!strcmp(kind, "offload")) style = "shape=box, style=\"filled,bold\", fillcolor=\"#ffd6d6\"";
            else if (!strcmp(kind, "reload")) style = "shape=box, style=\"filled,bold\", fillcolor=\"#d6f5d6\"";
            else if (!strcmp(kind, "resident")) style = "shape=box, style=filled, fillcolor=\"#d6e4ff\"";
            else if (!strcmp(kind, "accumulate")) style = "shape=ellipse, style=filled, fillcolor=\"#fff2cc\"";
            else if (!strcmp(kind, "join")) style = "shape=diamond, style=filled, fillcolor=\"#fff2cc\"";
            json_t *jg = json_object_get(v, "group");
            char grp[40] = "";
            if (json_is_integer(jg)) snprintf(grp, sizeof grp, " (group %lld)", (long long)json_integer_value(jg));
            char label[560];
            snprintf(label, sizeof label, "%zu: %s%s%.400s%s", i,
                     strcmp(kind, "kernel") ? kind : "", strcmp(kind, "kernel") ? " " : "", task, grp);
            fprintf(out, "%s  v%zu [label=", d >= 0 ? "  " : "", i);
            dot_str(out, label);
            fprintf(out, ", %s];\n", style);
        }
        if (d >= 0) fputs("  }\n", out);
    }
    for (size_t i = 0; i < json_array_size(vs); i++) {
        json_t *v = json_array_get(vs, i), *reads = json_object_get(v, "reads"), *deps = json_object_get(v, "deps");
        for (size_t k = 0; k < json_array_size(deps); k++) {
            json_int_t d = json_integer_value(json_array_get(deps, k));
            int data = 0;
            for (size_t r = 0; r < json_array_size(reads); r++)
                if (json_integer_value(json_object_get(json_array_get(reads, r), "from")) == d) data = 1;
            const char *kind = json_string_value(json_object_get(v, "kind"));
            int join = kind && !strcmp(kind, "join"); /* a group's members into its join */
            fprintf(out, "  v%lld -> v%zu%s;\n", (long long)d, i,
                    data ? "" : join ? " [style=dotted, color=orange]" : " [style=dashed, color=red]");
        }
    }
    fputs("}\n", out);
    json_decref(root);
    return ferror(out) ? tp__fail(err, TP_ERR_IO, "write error") : TP_OK;
}
