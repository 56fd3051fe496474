/* cmd_dot.c - turnip dot: a MemGraph as Graphviz DOT. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"

typedef struct {
    const char *out;
} flags;

static const cli_opt opts[] = {
    CLI_O_STR("-o", "FILE", flags, out, "write the DOT there (default: standard output)"),
    CLI_O_END,
};

static void help(FILE *f)
{
    cli_print_help(f,
                   "usage: turnip dot MEMGRAPH [-o FILE]\n"
                   "\n"
                   "Writes Graphviz DOT: data dependencies solid, memory dependencies dashed red,\n"
                   "offload (red) and reload (green) vertices as boxes, one cluster per device.\n"
                   "Render with: dot -Tpng FILE -o plan.png\n"
                   "\n",
                   opts, NULL);
}

/* the whole file into a new malloc'd buffer (*text, the caller's); 2 or 3 after printing why.
 * Regular files only, opened without blocking: a directory or a FIFO is an error, not a hang. */
static int slurp(const char *path, char **text, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return cli_errorf("dot", 2, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return cli_errorf("dot", 2, "%s: not a regular file", path);
    }
    size_t sz = (size_t)st.st_size, n = 0;
    if ((uint64_t)st.st_size >= SIZE_MAX || !(*text = malloc(sz + 1))) {
        close(fd);
        return cli_errorf("dot", 3, "%s: out of memory reading %lld bytes", path, (long long)st.st_size);
    }
    while (n < sz) {
        ssize_t r = read(fd, *text + n, sz - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* shrunk meanwhile: parse what is there */
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return 0;
}

static int run(int argc, char **argv)
{
    flags fl = {0};
    const char *mgp;
    int npos, rc = cli_parse("dot", opts, &fl, argc, argv, 2, &mgp, 1, &npos, "MemGraph");
    if (rc) return rc;
    if (!npos) return cli_usage_error("dot", "no MemGraph given", NULL);
    char *text = NULL;
    size_t len = 0;
    if ((rc = slurp(mgp, &text, &len))) return rc;
    cli_out out;
    if ((rc = cli_out_open("dot", fl.out, &out))) {
        free(text);
        return rc;
    }
    tp_error e;
    tp_status s = tp_dot_json(text, len, mgp, out.f, &e);
    free(text);
    rc = cli_out_close("dot", &out, !s); /* a MemGraph that cannot be drawn leaves -o as it was */
    if (s == TP_ERR_IO) return cli_errorf("dot", 2, "writing %s failed: %s", fl.out ? fl.out : "standard output", e.msg);
    return s ? cli_fail(NULL, s, &e) : rc;
}

const cli_cmd cmd_dot = {"dot", "draw a MemGraph as Graphviz DOT", run, help};
