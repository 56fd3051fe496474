/* test_hostile_io.c - issue 18, library side of defects 6, 9 and 11: outputs are atomic
 * (tp_outfile: a failure or a signal leaves the old file byte-identical and no temporary file;
 * a full disk is an error), a simulated time that is not a finite number fails the run
 * naming the vertex instead of hanging, backend options and machine numbers out of range are
 * refused, and the cpu backend refuses arenas the machine cannot back. Each case arms an
 * alarm: a hang fails it in seconds. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "turnip/turnip.h"
#include "harness.h"
#include "sim_profile.h"

/* a fresh directory under /tmp (the caller removes it with rm_dir) */
static void mk_dir(char *dir, size_t len)
{
    snprintf(dir, len, "/tmp/tp_hostile_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char p[512];
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    CHECK(fclose(f) == 0);
}

static int holds(const char *path, const char *text)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return n == strlen(text) && !memcmp(buf, text, n);
}

TEST(outfile_commit_replaces_abort_keeps)
{
    alarm(20);
    char dir[64], path[128];
    mk_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    put(path, "old");
    tp_outfile *o;
    tp_error e;
    ASSERT_OK_ERR(tp_outfile_open(path, &o, &e), e);
    fputs("new, half written", tp_outfile_stream(o));
    fflush(tp_outfile_stream(o));
    CHECK(holds(path, "old")); /* nothing visible before the commit */
    ASSERT_EQ(entries(dir), 2);
    tp_outfile_abort(o);
    CHECK(holds(path, "old"));
    ASSERT_EQ(entries(dir), 1); /* no temporary file left */
    ASSERT_OK_ERR(tp_outfile_open(path, &o, &e), e);
    fputs("new", tp_outfile_stream(o));
    ASSERT_OK_ERR(tp_outfile_commit(o, &e), e);
    CHECK(holds(path, "new"));
    ASSERT_EQ(entries(dir), 1);
    /* a name that does not exist yet appears only at the commit */
    snprintf(path, sizeof path, "%s/fresh.txt", dir);
    ASSERT_OK_ERR(tp_outfile_open(path, &o, &e), e);
    CHECK(access(path, F_OK) != 0);
    ASSERT_OK_ERR(tp_outfile_commit(o, &e), e);
    CHECK(holds(path, ""));
    rm_dir(dir);
}

TEST(outfile_signal_cleanup_removes_temporaries)
{
    alarm(20);
    char dir[64], path[128];
    mk_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.st", dir);
    put(path, "old");
    tp_outfile *o;
    tp_error e;
    ASSERT_OK_ERR(tp_outfile_open(path, &o, &e), e);
    fputs("partial", tp_outfile_stream(o));
    ASSERT_EQ(entries(dir), 2);
    tp_outfile_cleanup_signal(); /* what the command's SIGINT handler does before dying */
    ASSERT_EQ(entries(dir), 1);
    CHECK(holds(path, "old"));
    tp_outfile_abort(o); /* the temporary file is already gone: harmless */
    CHECK(holds(path, "old"));
    ASSERT_EQ(entries(dir), 1);
    rm_dir(dir);
}

TEST(outfile_errors_are_reported)
{
    alarm(20);
    char dir[64], path[128];
    mk_dir(dir, sizeof dir);
    tp_outfile *o = NULL;
    tp_error e;
    ASSERT_STATUS(tp_outfile_open(dir, &o, &e), TP_ERR_IO); /* a directory */
    CHECK(strstr(e.msg, "is a directory") != NULL);
    snprintf(path, sizeof path, "%s/no/such.txt", dir);
    ASSERT_STATUS(tp_outfile_open(path, &o, &e), TP_ERR_IO);
    CHECK(strstr(e.msg, "such.txt") != NULL);
    ASSERT_EQ(entries(dir), 0);
    if (access("/dev/full", W_OK) == 0) { /* a full disk: the error comes at the commit */
        ASSERT_OK_ERR(tp_outfile_open("/dev/full", &o, &e), e);
        fputs("x", tp_outfile_stream(o));
        ASSERT_STATUS(tp_outfile_commit(o, &e), TP_ERR_IO);
        CHECKF(strstr(e.msg, "/dev/full: write error") != NULL, "%s", e.msg);
    }
    if (access("/dev/null", W_OK) == 0) { /* a device is written in place, and stays one */
        ASSERT_OK_ERR(tp_outfile_open("/dev/null", &o, &e), e);
        fputs("x", tp_outfile_stream(o));
        ASSERT_OK_ERR(tp_outfile_commit(o, &e), e);
        struct stat st;
        CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    }
    rm_dir(dir);
}

TEST(st_write_failure_keeps_the_old_file)
{
    alarm(20);
    char dir[64], path[128];
    mk_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    put(path, "old");
    float x[4] = {1, 2, 3, 4};
    tp_st_tensor t[2] = {{.name = "a", .dtype = TP_DT_F32, .ndim = 1, .shape = {4}, .data = x, .bytes = sizeof x},
                         {.name = "b", .dtype = TP_DT_NONE, .ndim = 1, .shape = {4}, .data = x, .bytes = sizeof x}};
    tp_error e;
    CHECK(tp_st_write(path, 2, t, &e) != TP_OK); /* a dtype safetensors cannot hold */
    CHECK(holds(path, "old"));
    ASSERT_EQ(entries(dir), 1);
    ASSERT_OK_ERR(tp_st_write(path, 1, t, &e), e);
    tp_st *st;
    ASSERT_OK_ERR(tp_st_open(path, &st, &e), e);
    tp_st_close(st);
    ASSERT_EQ(entries(dir), 1);
    if (access("/dev/full", W_OK) == 0) {
        ASSERT_STATUS(tp_st_write("/dev/full", 1, t, &e), TP_ERR_IO);
        CHECKF(strstr(e.msg, "/dev/full") != NULL, "%s", e.msg);
    }
    rm_dir(dir);
}

static tp_sim_profile prof(void)
{
    return test_sim_profile("test", 1, 0.5, 1e11, 0, 1e9, 1e9);
}

/* input x (1 KiB) on device 0, kernel k reading it with `flops`; the run's status, e filled */
static tp_status sim_run(const tp_sim_profile *p, double flops, tp_error *e)
{
    tp_graph *g = tp_graph_new(1);
    uint32_t x, k;
    ASSERT_OK_ERR(tp_graph_add_input(g, "x", 0, TP_DT_NONE, -1, NULL, 1024, &x, e), *e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "k", 0, "opaque", 1, &x, TP_DT_NONE, -1, NULL, 1024, NULL, flops, &k, e), *e);
    ASSERT_OK_ERR(tp_graph_add_output(g, k, e), *e);
    ASSERT_OK_ERR(tp_graph_finalize(g, e), *e);
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, 1u << 20);
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(g, &po, &mg, e), *e);
    tp_backend *be = NULL;
    ASSERT_OK_ERR(tp_backend_sim_new(p, 0, &be, e), *e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *x_ = NULL;
    tp_status s = tp_exec_new(mg, be, &ro, &x_, e);
    tp_run_summary sum;
    if (!s) s = tp_exec_run(x_, &sum, e);
    tp_exec_free(x_);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
    return s;
}

TEST(sim_non_finite_kernel_time_fails_the_vertex)
{
    alarm(20); /* it used to spin forever on a NaN time */
    tp_sim_profile p = prof();
    p.peak_flops = 1e-300;
    p.efficiency = 1e-300; /* rate x efficiency is 0: 1 flop takes forever */
    tp_error e;
    ASSERT_STATUS(sim_run(&p, 1, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "'k'") && strstr(e.msg, "not a finite number"), "%s", e.msg);
}

TEST(sim_non_finite_copy_time_fails_the_vertex)
{
    alarm(20);
    tp_sim_profile p = prof();
    p.h2d_bw = 1e-320; /* 1 KiB / 1e-320 B/s is inf */
    tp_error e;
    ASSERT_STATUS(sim_run(&p, 1, &e), TP_ERR_INVALID);
    CHECKF(strstr(e.msg, "'x'") && strstr(e.msg, "not a finite number"), "%s", e.msg);
    p = prof();
    p.copy_latency_s = INFINITY; /* not finite: refused when the backend is made */
    tp_backend *be = NULL;
    ASSERT_STATUS(tp_backend_sim_new(&p, 0, &be, &e), TP_ERR_ARG);
    CHECK(be == NULL);
}

TEST(backend_options_in_range)
{
    alarm(20);
    const struct {
        const char *backend, *key, *value;
        int ok;
    } cases[] = {
        {"cpu", "jitter", "inf", 0},          {"cpu", "jitter", "1e300", 0},        {"cpu", "jitter", "4.5", 0},
        {"cpu", "jitter", "4", 1},            {"cpu", "link-latency", "inf", 0},    {"cpu", "link-latency", "1e7", 0},
        {"cpu", "link-latency", "1e6", 1},    {"cpu", "link-bandwidth", "1e-300", 0}, {"cpu", "link-bandwidth", "nan", 0},
        {"cpu", "link-bandwidth", "0.001", 1}, {"sim", "jitter", "1e10", 0},        {"sim", "jitter", "10", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tp_backend_opt o[2] = {{cases[i].key, cases[i].value}, {"machine", "a100x8"}};
        tp_backend *be = NULL;
        tp_error e;
        tp_status s = tp_backend_new(cases[i].backend, o, strcmp(cases[i].backend, "sim") ? 1 : 2, &be, &e);
        CHECKF((s == TP_OK) == cases[i].ok, "%s %s=%s: %s", cases[i].backend, cases[i].key, cases[i].value,
               s ? e.msg : "accepted");
        if (!s) tp_backend_free(be);
        else CHECKF(strstr(e.msg, cases[i].key) != NULL, "%s", e.msg);
    }
    tp_cpu_opts co;
    tp_cpu_opts_init(&co);
    co.link_gbps = 1e-300;
    tp_backend *be = NULL;
    tp_error e;
    ASSERT_STATUS(tp_backend_cpu_new(&co, &be, &e), TP_ERR_ARG);
    tp_cpu_opts_init(&co);
    co.jitter = INFINITY;
    ASSERT_STATUS(tp_backend_cpu_new(&co, &be, &e), TP_ERR_ARG);
}

TEST(cpu_arenas_beyond_available_memory_are_refused)
{
    alarm(20);
    if (access("/proc/meminfo", R_OK)) SKIP("no /proc/meminfo: available memory unknown");
    tp_graph *g = tp_graph_new(1);
    tp_error e;
    uint32_t x, k;
    ASSERT_OK_ERR(tp_graph_add_input(g, "x", 0, TP_DT_NONE, -1, NULL, 1024, &x, &e), e);
    ASSERT_OK_ERR(tp_graph_add_kernel(g, "k", 0, "opaque", 1, &x, TP_DT_NONE, -1, NULL, 1024, NULL, 0, &k, &e), e);
    ASSERT_OK_ERR(tp_graph_add_output(g, k, &e), e);
    ASSERT_OK_ERR(tp_graph_finalize(g, &e), e);
    tp_plan_opts po;
    tp_plan_opts_init(&po, 1, 1ull << 50); /* 1 PiB: posix_memalign may grant it, RAM cannot back it */
    tp_memgraph *mg;
    ASSERT_OK_ERR(tp_plan(g, &po, &mg, &e), e);
    tp_backend *be = NULL;
    ASSERT_OK_ERR(tp_backend_cpu_new(NULL, &be, &e), e);
    tp_run_opts ro;
    tp_run_opts_init(&ro);
    tp_exec *xe = NULL;
    tp_status s = tp_exec_new(mg, be, &ro, &xe, &e);
    ASSERT_STATUS(s, TP_ERR_DEVICE);
    CHECKF(strstr(e.msg, "1.0 PiB") && strstr(e.msg, "available"), "%s", e.msg);
    tp_exec_free(xe);
    tp_backend_free(be);
    tp_memgraph_free(mg);
    tp_graph_free(g);
}
