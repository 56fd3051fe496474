/* test_harness.c - the harness itself (tests/harness.h): every check passes when it holds,
 * evaluates its operands once, and fails when it does not, with exit code 1 and a message
 * naming both expressions and both values; registration has no limit and refuses a name
 * registered twice. Each failing check runs in a forked child whose output is captured. */
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

/* runs body in a child with stdout and stderr captured; returns its exit code (or -1 if it
 * did not exit) and the output in out */
static int run_child(void (*body)(void), char *out, size_t cap)
{
    int p[2];
    CHECK(pipe(p) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[1]);
        body();
        fflush(stdout);
        exit(0);
    }
    close(p[1]);
    size_t len = 0;
    for (;;) {
        char buf[4096];
        ssize_t n = read(p[0], buf, sizeof buf);
        if (n <= 0) break;
        size_t k = (size_t)n < cap - 1 - len ? (size_t)n : cap - 1 - len;
        memcpy(out + len, buf, k);
        len += k;
    }
    out[len] = 0;
    close(p[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* body must fail (exit code 1) printing every string of want (NULL-terminated) */
static void expect_failure(void (*body)(void), const char *const *want)
{
    static char out[1 << 16];
    int rc = run_child(body, out, sizeof out);
    CHECKF(rc == 1, "the check exited with %d, not 1; output: %s", rc, out);
    for (const char *const *w = want; *w; w++) CHECKF(strstr(out, *w), "output lacks '%s': %s", *w, out);
}
#define EXPECT_FAILURE(body, ...)                                                             \
    do {                                                                                      \
        static const char *const want_[] = {__VA_ARGS__, NULL};                               \
        expect_failure(body, want_);                                                          \
    } while (0)

static int calls;
static int64_t once(int64_t v)
{
    calls++;
    return v;
}
static tp_status give(tp_status s)
{
    calls++;
    return s;
}

/* ---- integers ---- */

TEST(harness_int_asserts_pass_when_they_hold)
{
    calls = 0;
    ASSERT_EQ(once(3), 3);
    ASSERT_NE(once(3), 4);
    ASSERT_LT(once(-1), 0u); /* mathematical, where C's -1 < 0u is false */
    ASSERT_LE(once(4), 4);
    ASSERT_GT(once(5), -7);
    ASSERT_GE(once(5), 5u);
    CHECK(calls == 6); /* each operand evaluated once */
    uint64_t big = UINT64_MAX;
    int64_t most_negative = INT64_MIN;
    ASSERT_EQ(big, 18446744073709551615ull);
    ASSERT_GT(big, INT64_MAX);
    ASSERT_LT(most_negative, 0);
    ASSERT_LT(most_negative, big);
    ASSERT_EQ('a', 97);
    ASSERT_EQ((unsigned char)200, 200);
    ASSERT_EQ((signed char)-5, -5);
    ASSERT_EQ(true, 1);
    ASSERT_EQ(TP_ERR_PARSE, 3);
    size_t sz = 7;
    ASSERT_EQ(sz, 7);
}

static void eq_signed(void)
{
    int left = -3;
    ASSERT_EQ(left, 4);
}
static void eq_unsigned(void)
{
    uint64_t big = UINT64_MAX;
    ASSERT_EQ(big, 1);
}
static void eq_mixed_sign(void)
{
    int64_t minus_one = -1;
    uint64_t all_ones = UINT64_MAX;
    ASSERT_EQ(minus_one, all_ones); /* equal after C's conversions, not as integers */
}
static void eq_int64_min(void)
{
    int64_t lo = INT64_MIN;
    ASSERT_EQ(lo, 0);
}
static void ne_fails(void)
{
    unsigned x = 7;
    ASSERT_NE(x, 7);
}
static void lt_fails(void)
{
    int a = 5;
    ASSERT_LT(a, 5);
}
static void le_fails(void)
{
    long a = 6;
    ASSERT_LE(a, 5);
}
static void gt_fails(void)
{
    int neg = -2;
    ASSERT_GT(neg, 0u);
}
static void ge_fails(void)
{
    size_t one = 1;
    ASSERT_GE(one, 2);
}

TEST(harness_int_asserts_print_both_values)
{
    EXPECT_FAILURE(eq_signed, "test_harness.c:", "ASSERT_EQ failed", "left == 4", "(-3 == 4)");
    EXPECT_FAILURE(eq_unsigned, "ASSERT_EQ failed", "big == 1", "(18446744073709551615 == 1)");
    EXPECT_FAILURE(eq_mixed_sign, "minus_one == all_ones", "(-1 == 18446744073709551615)");
    EXPECT_FAILURE(eq_int64_min, "lo == 0", "(-9223372036854775808 == 0)");
    EXPECT_FAILURE(ne_fails, "ASSERT_NE failed", "x != 7", "(7 != 7)");
    EXPECT_FAILURE(lt_fails, "ASSERT_LT failed", "a < 5", "(5 < 5)");
    EXPECT_FAILURE(le_fails, "ASSERT_LE failed", "a <= 5", "(6 <= 5)");
    EXPECT_FAILURE(gt_fails, "ASSERT_GT failed", "neg > 0u", "(-2 > 0)");
    EXPECT_FAILURE(ge_fails, "ASSERT_GE failed", "one >= 2", "(1 >= 2)");
}

/* ---- strings, doubles ---- */

static void str_differs(void)
{
    const char *got = "abc";
    ASSERT_STR_EQ(got, "abd");
}
static void str_null(void)
{
    const char *none = NULL;
    ASSERT_STR_EQ(none, "x");
}
static void near_fails(void)
{
    double x = 1.0;
    ASSERT_NEAR(x, 1.5, 0.25);
}
static void near_nan(void)
{
    volatile double zero = 0.0;
    double not_a_number = zero / zero;
    ASSERT_NEAR(not_a_number, not_a_number, 1e300);
}

TEST(harness_str_and_near_asserts)
{
    char buf[8] = "abc";
    ASSERT_STR_EQ(buf, "abc");
    ASSERT_NEAR(0.1 + 0.2, 0.3, 1e-12);
    ASSERT_NEAR(-2.0, -2.5, 0.5);
    EXPECT_FAILURE(str_differs, "ASSERT_STR_EQ failed", "got == \"abd\"", "(\"abc\" == \"abd\")");
    EXPECT_FAILURE(str_null, "ASSERT_STR_EQ failed", "none == \"x\"", "(NULL == \"x\")");
    EXPECT_FAILURE(near_fails, "ASSERT_NEAR failed", "|x - 1.5| <= 0.25", "|1 - 1.5| = 0.5 > 0.25");
    EXPECT_FAILURE(near_nan, "ASSERT_NEAR failed", "|not_a_number - not_a_number|", "nan");
}

/* ---- statuses ---- */

static void ok_fails(void)
{
    ASSERT_OK(give(TP_ERR_PARSE));
}
static void ok_err_fails(void)
{
    tp_error e;
    snprintf(e.msg, sizeof e.msg, "g.json: vertex 'q' is unknown");
    ASSERT_OK_ERR(give(TP_ERR_INVALID), e);
}
static void status_fails(void)
{
    ASSERT_STATUS(give(TP_OK), TP_ERR_INFEASIBLE);
}

TEST(harness_status_asserts)
{
    calls = 0;
    tp_error e;
    ASSERT_OK(give(TP_OK));
    ASSERT_OK_ERR(give(TP_OK), e); /* e unset: read only on failure */
    ASSERT_STATUS(give(TP_ERR_CHECK), TP_ERR_CHECK);
    CHECK(calls == 3);
    EXPECT_FAILURE(ok_fails, "ASSERT_OK failed", "give(TP_ERR_PARSE) == TP_OK", "got 3 \"malformed input\"",
                   "wanted 0 \"ok\"");
    EXPECT_FAILURE(ok_err_fails, "ASSERT_OK_ERR failed", "give(TP_ERR_INVALID)", "\"invalid input\"",
                   ": g.json: vertex 'q' is unknown");
    EXPECT_FAILURE(status_fails, "ASSERT_STATUS failed", "give(TP_OK) == TP_ERR_INFEASIBLE", "got 0 \"ok\"",
                   "wanted 5 \"infeasible\"");
}

/* ---- CHECK, CHECKF, SKIP ---- */

static void check_fails(void)
{
    int two = 2;
    CHECK(1 == two);
}
static void checkf_fails(void)
{
    int two = 2;
    CHECKF(1 == two, "two is %d", two);
}

TEST(harness_check_and_checkf)
{
    CHECK(1 + 1 == 2);
    CHECKF(2 > 1, "never printed");
    EXPECT_FAILURE(check_fails, "test_harness.c:", "CHECK failed: 1 == two");
    EXPECT_FAILURE(checkf_fails, "CHECK failed: 1 == two: two is 2");
}

static void skips(void)
{
    SKIP("no GPU");
}

TEST(harness_skip_exits_77)
{
    static char out[256];
    CHECK(run_child(skips, out, sizeof out) == 77);
    CHECK(strstr(out, "skipped: no GPU"));
}

/* ---- registration ---- */

static void empty(void)
{
}

#define BULK 3000
static char bulk_names[BULK][16];

/* registers BULK more cases (past the old limit of 512), then lists them */
static void register_bulk_and_list(void)
{
    for (int i = 0; i < BULK; i++) {
        snprintf(bulk_names[i], sizeof bulk_names[i], "bulk_%d", i);
        tpt_register(bulk_names[i], empty);
    }
    char arg0[] = "test_harness", arg1[] = "--list";
    char *argv[] = {arg0, arg1, NULL};
    exit(tpt_main(2, argv));
}

static void register_bulk_and_run_last(void)
{
    for (int i = 0; i < BULK; i++) {
        snprintf(bulk_names[i], sizeof bulk_names[i], "bulk_%d", i);
        tpt_register(bulk_names[i], empty);
    }
    char arg0[] = "test_harness", arg1[] = "bulk_2999";
    char *argv[] = {arg0, arg1, NULL};
    exit(tpt_main(2, argv));
}

static void register_twice(void)
{
    tpt_register("dup_case", empty);
    tpt_register("dup_case", empty);
    char arg0[] = "test_harness", arg1[] = "--list";
    char *argv[] = {arg0, arg1, NULL};
    exit(tpt_main(2, argv));
}

static void run_unknown(void)
{
    char arg0[] = "test_harness", arg1[] = "no_such_case";
    char *argv[] = {arg0, arg1, NULL};
    exit(tpt_main(2, argv));
}

TEST(harness_registration_is_unbounded_and_listed)
{
    static char out[1 << 16];
    CHECK(run_child(register_bulk_and_list, out, sizeof out) == 0);
    /* this file's own cases come first, then every bulk one */
    CHECK(strstr(out, "harness_registration_is_unbounded_and_listed\n"));
    CHECK(strstr(out, "\nbulk_0\n") && strstr(out, "\nbulk_511\n") && strstr(out, "\nbulk_512\n"));
    CHECK(strstr(out, "\nbulk_2999\n"));
    int lines = 0;
    for (const char *c = out; *c; c++) lines += *c == '\n';
    ASSERT_GE(lines, BULK + 6);
    CHECK(run_child(register_bulk_and_run_last, out, sizeof out) == 0);
    CHECK(strstr(out, "ok bulk_2999\n"));
    CHECK(run_child(register_twice, out, sizeof out) == 2);
    CHECK(strstr(out, "dup_case: registered twice"));
    CHECK(run_child(run_unknown, out, sizeof out) == 2);
    CHECK(strstr(out, "no test named no_such_case"));
}
