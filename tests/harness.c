/* harness.c - runs the registered cases (see harness.h). */
#include <string.h>
#include "harness.h"

#define MAX_TESTS 512
static struct {
    const char *name;
    tpt_fn fn;
} tests[MAX_TESTS];
static int ntests;
int (*tpt_main_hook)(int argc, char **argv);

void tpt_register(const char *name, tpt_fn fn)
{
    if (ntests < MAX_TESTS) {
        tests[ntests].name = name;
        tests[ntests].fn = fn;
        ntests++;
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && tpt_main_hook) {
        int r = tpt_main_hook(argc, argv);
        if (r >= 0) return r;
    }
    if (argc > 1 && !strcmp(argv[1], "--list")) {
        for (int i = 0; i < ntests; i++) puts(tests[i].name);
        return 0;
    }
    int ran = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1 && strcmp(argv[1], tests[i].name)) continue;
        tests[i].fn();
        printf("ok %s\n", tests[i].name);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "no test named %s\n", argc > 1 ? argv[1] : "(any)");
        return 2;
    }
    return 0;
}
