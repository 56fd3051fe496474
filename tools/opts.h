/* opts.h - the one option parser of the turnip command: each command describes its flags in
 * a table of {flag, value name, kind, where the value goes in the command's flag struct,
 * range or names, help}, and gets "--flag VALUE" and "--flag=VALUE" parsing, range checks,
 * every parse error in one style ("turnip CMD: MESSAGE: ARG" and a pointer to --help) and its
 * flag list in --help, all from that table. */
#ifndef CLI_OPTS_H
#define CLI_OPTS_H

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "turnip/turnip.h"

typedef enum cli_kind {
    CLI_SIZE,   /* uint64_t, a size with units, > 0 */
    CLI_SIZES,  /* cli_sizes, a comma-separated list of sizes */
    CLI_INT,    /* long long in [min, max] */
    CLI_NUM,    /* double in [fmin, fmax] */
    CLI_STR,    /* const char * (borrowed from argv) */
    CLI_CHOICE, /* const char *, one of names[] (borrowed from argv) */
    CLI_SWITCH  /* int, set to 1 by the bare flag */
} cli_kind;

typedef struct cli_sizes {
    uint64_t v[TP_MAX_DEVICES];
    int n; /* 0: not given */
} cli_sizes;

typedef struct cli_opt {
    const char *flag;  /* "--device-mem", or aliases "-o|--output" (the first names it in errors) */
    const char *meta;  /* the value's name in --help ("SIZE[,..]"); NULL for switches */
    cli_kind kind;
    size_t off;        /* offset of the destination in the command's flag struct */
    long long min, max;       /* CLI_INT */
    double fmin, fmax;        /* CLI_NUM */
    const char *const *names; /* CLI_CHOICE: NULL-terminated */
    const char *help;  /* lines separated by '\n'; NULL: not listed (test hooks) */
} cli_opt;

/* Table entries; S is the command's flag struct, F its member. */
#define CLI_O_SIZE(flag, meta, S, F, help) {flag, meta, CLI_SIZE, offsetof(S, F), 0, 0, 0, 0, NULL, help}
#define CLI_O_SIZES(flag, meta, S, F, help) {flag, meta, CLI_SIZES, offsetof(S, F), 0, 0, 0, 0, NULL, help}
#define CLI_O_INT(flag, meta, S, F, lo, hi, help) {flag, meta, CLI_INT, offsetof(S, F), lo, hi, 0, 0, NULL, help}
#define CLI_O_NUM(flag, meta, S, F, lo, hi, help) {flag, meta, CLI_NUM, offsetof(S, F), 0, 0, lo, hi, NULL, help}
#define CLI_O_STR(flag, meta, S, F, help) {flag, meta, CLI_STR, offsetof(S, F), 0, 0, 0, 0, NULL, help}
#define CLI_O_CHOICE(flag, meta, S, F, names, help) {flag, meta, CLI_CHOICE, offsetof(S, F), 0, 0, 0, 0, names, help}
#define CLI_O_SWITCH(flag, S, F, help) {flag, NULL, CLI_SWITCH, offsetof(S, F), 0, 0, 0, 0, NULL, help}
#define CLI_O_END {NULL, NULL, CLI_SWITCH, 0, 0, 0, 0, 0, NULL, NULL}

/* The names of the choices shared by several commands, in the library's spelling. */
#define CLI_MAX_POLICIES 32
extern const char *cli_policy_names[];           /* the library's dispatch policies (any fixed random
                                                    ...): --order of run, sim, llama */
/* Fills the name lists that come from the library's tables; main calls it first. */
void cli_opts_init(void);
extern const char *const cli_plan_order_names[]; /* topo dfs greedy: the planner's serial order */
extern const char *const cli_completion_names[]; /* callback poll: how the cuda backend completes */
extern const char *const cli_matmul_names[];     /* fast exact: the cuda backend's matmul arithmetic */
extern const char *const cli_residual_names[];   /* gather scatter: the LLaMA prefill's residual stream */
int cli_residual(const char *name);              /* a --residual choice (NULL: gather) as tp_llama_opts.residual */
extern const char *const cli_attention_names[];  /* scores fused (by tp_llama_attention): the LLaMA prefill's attention */
int cli_attention(const char *name);             /* an --attention choice (NULL: fused) as tp_llama_opts.attention */
/* --attention of llama and gen llama */
#define CLI_O_ATTENTION(T, f)                                                                                               \
    CLI_O_CHOICE("--attention", "fused|scores", T, f, cli_attention_names,                                                  \
                 "how a block's attention runs: fused (default: one attention kernel per head\n"                           \
                 "and block, the scores never a tensor, so blocks of at most 8192 rows and a graph\n"                      \
                 "linear in the tokens) or scores (the scores a tensor, then softmax and a matmul:\n"                       \
                 "blocks grow with tokens^2 to bound their memory)")

/* Parses argv[first..argc-1] of command `cmd` against opts (ended by CLI_O_END) into the
 * struct at dst. Arguments that are not flags go to pos[0..maxpos-1] (*npos counts them; "-"
 * alone is one); one more is an error: "more than one POSNAME given", or "unknown argument"
 * when posname is NULL. Returns 0, or 2 after printing the error. */
int cli_parse(const char *cmd, const cli_opt *opts, void *dst, int argc, char **argv, int first, const char **pos,
              int maxpos, int *npos, const char *posname);

/* Prints the flag list of opts for --help: "  FLAG META   help", continuation lines indented. */
void cli_print_opts(FILE *f, const cli_opt *opts);

/* Prints the help of a command: usage (synopsis and description), the flags of opts (may be
 * NULL), then footer (may be NULL). */
void cli_print_help(FILE *f, const char *usage, const cli_opt *opts, const char *footer);

#endif
