/* opts.c - the table-driven option parser (see opts.h). */
#include "opts.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

const char *cli_policy_names[CLI_MAX_POLICIES + 1]; /* filled from the library's table */

void cli_opts_init(void)
{
    int n = 0;
    for (int i = 0; tp_policy_name(i) && n < CLI_MAX_POLICIES; i++) cli_policy_names[n++] = tp_policy_name(i);
    cli_policy_names[n] = NULL;
}
const char *const cli_plan_order_names[] = {"topo", "dfs", "greedy", NULL};
const char *const cli_completion_names[] = {"callback", "poll", NULL};
const char *const cli_matmul_names[] = {"fast", "exact", NULL};
const char *const cli_residual_names[] = {"gather", "scatter", NULL};

int cli_residual(const char *name)
{
    return name && !strcmp(name, "scatter") ? TP_LLAMA_SCATTER : TP_LLAMA_GATHER;
}

const char *const cli_attention_names[] = {"scores", "fused", NULL}; /* indexed by tp_llama_attention */

int cli_attention(const char *name)
{
    return name && !strcmp(name, "scores") ? TP_LLAMA_SCORES : TP_LLAMA_FUSED;
}

/* length of the first name of "-o|--output" */
static size_t first_len(const char *flag)
{
    return strcspn(flag, "|");
}

/* 1 if arg names opt ("--flag" or "--flag=..."); *val gets the text after '=' or NULL */
static int matches(const cli_opt *o, const char *arg, const char **val)
{
    for (const char *p = o->flag; *p;) {
        size_t n = strcspn(p, "|");
        if (!strncmp(arg, p, n) && (arg[n] == 0 || arg[n] == '=')) {
            *val = arg[n] == '=' ? arg + n + 1 : NULL;
            return 1;
        }
        p += n;
        if (*p == '|') p++;
    }
    return 0;
}

/* "needs an integer in 1..64: 0", "must be any, fixed or random: x": the one place such
 * messages are worded */
static int bad_value(const char *cmd, const cli_opt *o, const char *v)
{
    char msg[256], flag[64];
    snprintf(flag, sizeof flag, "%.*s", (int)first_len(o->flag), o->flag);
    switch (o->kind) {
    case CLI_SIZE: snprintf(msg, sizeof msg, "%s: not a positive size", flag); break;
    case CLI_SIZES: snprintf(msg, sizeof msg, "%s: not a size above 0 or a comma-separated list of them (devices' capacities)", flag); break;
    case CLI_INT:
        if (o->max == LLONG_MAX) snprintf(msg, sizeof msg, "%s needs an integer >= %lld", flag, o->min);
        else snprintf(msg, sizeof msg, "%s needs an integer in %lld..%lld", flag, o->min, o->max);
        break;
    case CLI_NUM:
        if (o->fmin == 0 && o->fmax == HUGE_VAL) snprintf(msg, sizeof msg, "%s needs a non-negative number", flag);
        else snprintf(msg, sizeof msg, "%s needs a number in %g..%g", flag, o->fmin, o->fmax);
        break;
    case CLI_CHOICE: {
        size_t len = (size_t)snprintf(msg, sizeof msg, "%s must be ", flag);
        for (int k = 0; o->names[k] && len < sizeof msg; k++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", k == 0 ? "" : o->names[k + 1] ? ", " : " or ", o->names[k]);
        break;
    }
    default: snprintf(msg, sizeof msg, "%s: bad value", flag); break;
    }
    return cli_usage_error(cmd, msg, v);
}

/* stores v into the destination of o; 0 or 2 after printing the error */
static int store(const char *cmd, const cli_opt *o, const char *v, char *dst)
{
    void *d = dst + o->off;
    char *end = NULL;
    switch (o->kind) {
    case CLI_SIZE: {
        uint64_t x;
        if (tp_parse_size(v, &x) || !x) return bad_value(cmd, o, v);
        *(uint64_t *)d = x;
        return 0;
    }
    case CLI_SIZES: {
        cli_sizes *s = d;
        if (tp_parse_size_list(v, s->v, TP_MAX_DEVICES, &s->n) || s->n < 1) {
            s->n = 0;
            return bad_value(cmd, o, v);
        }
        for (int k = 0; k < s->n; k++) /* size lists are devices' capacities: none holds anything at 0 */
            if (!s->v[k]) {
                s->n = 0;
                return bad_value(cmd, o, v);
            }
        return 0;
    }
    case CLI_INT: {
        errno = 0;
        long long x = strtoll(v, &end, 10); /* out of long long's range: ERANGE, x clamped */
        if (end == v || *end || errno == ERANGE || x < o->min || x > o->max) return bad_value(cmd, o, v);
        *(long long *)d = x;
        return 0;
    }
    case CLI_NUM: {
        double x = strtod(v, &end);
        if (end == v || *end || !isfinite(x) || !(x >= o->fmin && x <= o->fmax)) return bad_value(cmd, o, v);
        *(double *)d = x;
        return 0;
    }
    case CLI_STR: *(const char **)d = v; return 0;
    case CLI_CHOICE:
        for (int k = 0; o->names[k]; k++)
            if (!strcmp(v, o->names[k])) {
                *(const char **)d = o->names[k];
                return 0;
            }
        return bad_value(cmd, o, v);
    case CLI_SWITCH: *(int *)d = 1; return 0;
    }
    return 2;
}

int cli_parse(const char *cmd, const cli_opt *opts, void *dst, int argc, char **argv, int first, const char **pos,
              int maxpos, int *npos, const char *posname)
{
    *npos = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        const cli_opt *o = NULL;
        if (a[0] == '-' && a[1]) {
            for (const cli_opt *p = opts; p->flag && !o; p++)
                if (matches(p, a, &v)) o = p;
            if (!o) return cli_usage_error(cmd, "unknown option", a);
            if (o->kind == CLI_SWITCH) {
                if (v) return cli_usage_error(cmd, "the flag takes no value", a);
            } else if (!v) {
                if (i + 1 >= argc) {
                    char msg[80];
                    snprintf(msg, sizeof msg, "%.*s needs a value", (int)first_len(o->flag), o->flag);
                    return cli_usage_error(cmd, msg, NULL);
                }
                v = argv[++i];
            }
            int rc = store(cmd, o, v, dst);
            if (rc) return rc;
        } else if (*npos < maxpos) {
            pos[(*npos)++] = a;
        } else if (posname) {
            char msg[80];
            snprintf(msg, sizeof msg, "more than one %s given", posname);
            return cli_usage_error(cmd, msg, a);
        } else {
            return cli_usage_error(cmd, "unknown argument", a);
        }
    }
    return 0;
}

void cli_print_opts(FILE *f, const cli_opt *opts)
{
    for (const cli_opt *o = opts; o->flag; o++) {
        if (!o->help) continue;
        int n = fprintf(f, "  ");
        for (const char *p = o->flag; *p; p++) n += *p == '|' ? fprintf(f, ", ") : (fputc(*p, f), 1);
        if (o->meta) n += fprintf(f, " %s", o->meta);
        const char *h = o->help;
        if (n > 24) { /* help from column 26, at least two spaces after the flag */
            fputc('\n', f);
            n = 0;
        }
        while (*h) {
            size_t len = strcspn(h, "\n");
            fprintf(f, "%*s%.*s\n", 26 - n, "", (int)len, h);
            n = 0;
            h += len;
            if (*h) h++;
        }
    }
}

void cli_print_help(FILE *f, const char *usage, const cli_opt *opts, const char *footer)
{
    fputs(usage, f);
    if (opts) cli_print_opts(f, opts);
    if (footer) fputs(footer, f);
}
