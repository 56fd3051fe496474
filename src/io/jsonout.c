/* jsonout.c - JSON string escaping for the streaming writers (the MemGraph writer emits
 * millions of vertices, too many to build as a jansson tree first). */
#include "io/util.h"

void tp__json_str(FILE *f, const char *s)
{
    putc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            putc('\\', f);
            putc((int)c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c == '\r') {
            fputs("\\r", f);
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
        } else {
            putc((int)c, f);
        }
    }
    putc('"', f);
}
