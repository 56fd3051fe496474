/* main.c - the turnip command: a table of commands (one file each, tools/cmd_*.c), the
 * overall --help and --version. Thin: commands parse flags (opts.h), call the library and map
 * statuses to exit codes (cli.h): 0 ok, 1 failed check, 2 unusable input or infeasible plan,
 * 3 internal failure. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"

/* SIGINT, SIGTERM, SIGHUP, SIGPIPE (a report piped into `head`): the temporary files of outputs
 * being written are removed (their targets are untouched: tp_outfile), then the signal ends the
 * process as it would have. SIGXFSZ (ulimit -f) is ignored, so the write fails with EFBIG and
 * the command says which file could not be written, and removes its temporary file. */
static void on_signal(int sig)
{
    tp_outfile_cleanup_signal();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void catch_signals(void)
{
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue; /* nohup: stays ignored */
        sigaction(sigs[k], &sa, NULL);
    }
    signal(SIGXFSZ, SIG_IGN);
}

/* the commands, in the order `turnip --help` lists them */
extern const cli_cmd cmd_plan, cmd_verify, cmd_run, cmd_llama, cmd_sim, cmd_dot, cmd_gen, cmd_generate, cmd_train, cmd_convert,
    cmd_offload_plan;
static const cli_cmd *const commands[] = {&cmd_plan, &cmd_verify, &cmd_run, &cmd_llama, &cmd_sim, &cmd_dot, &cmd_gen, &cmd_generate,
                                          &cmd_train, &cmd_convert, &cmd_offload_plan};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage_main(FILE *f)
{
    fprintf(f, "usage: %s COMMAND [ARGS]\n"
               "\n"
               "Plans and checks computations larger than GPU memory (docs/ARCHITECTURE.md).\n"
               "\n"
               "commands:\n",
            cli_prog);
    for (size_t k = 0; k < NCOMMANDS; k++) fprintf(f, "  %-12s %s\n", commands[k]->name, commands[k]->summary);
    fprintf(f, "\n"
               "Run '%s COMMAND --help' for a command's flags. Sizes take plain bytes or\n"
               "KiB/MiB/GiB (powers of 1024) and KB/MB/GB (powers of 1000).\n"
               "  --version   print the version and the backends built in\n",
            cli_prog);
}

/* --help or -h anywhere after the command */
static int wants_help(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    cli_opts_init();
    if (argc < 2) {
        usage_main(stderr);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(c, "--version")) {
        printf("%s %s\nbackends:", cli_prog, TP_VERSION);
        for (int i = 0, first = 1; tp_backend_info_at(i); i++) { /* the registry's, as built */
            const tp_backend_info *bi = tp_backend_info_at(i);
            char b[256];
            if (bi->describe && !bi->describe(b, sizeof b)) continue;
            printf("%s %s", first ? "" : ",", bi->describe ? b : bi->name);
            first = 0;
        }
        putchar('\n');
        return 0;
    }
    for (size_t k = 0; k < NCOMMANDS; k++)
        if (!strcmp(c, commands[k]->name)) {
            if (wants_help(argc, argv)) {
                commands[k]->help(stdout);
                return 0;
            }
            catch_signals();
            int rc = commands[k]->run(argc, argv);
            /* a report (or tokens) lost on the way out is a failure, not exit 0 */
            errno = 0;
            if ((fflush(stdout) || ferror(stdout)) && !rc) {
                fprintf(stderr, "%s %s: writing standard output failed%s%s\n", cli_prog, c, errno ? ": " : "", errno ? strerror(errno) : "");
                rc = 2;
            }
            return rc;
        }
    fprintf(stderr, "%s: unknown command '%s'\n", cli_prog, c);
    usage_main(stderr);
    return 2;
}
