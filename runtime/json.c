/* runtime/json.c — JSON string escaping for the stats and trace writers. */
#include "json.h"

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when it is not one (a
 * name cut at its 47 bytes may end in half a character). Overlong forms and
 * surrogates are let through: the names come from the program, not from an attacker. */
static int utf8_length(const unsigned char *p) {
    int n = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
          : p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : 0;   /* 0x80-0xc1, 0xf5-0xff lead nothing */
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    /* No overlong form, no surrogate, nothing past U+10FFFF (RFC 3629's table). */
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

void kiln_json_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p == '"' || *p == '\\') {
            fprintf(out, "\\%c", *p++);
        } else if (*p < 0x20) {
            fprintf(out, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            fputc(*p++, out);
        } else {
            int n = utf8_length(p);
            if (n == 0) {   /* a stray byte: the replacement character, so the text stays UTF-8 */
                fputs("\\ufffd", out);
                p++;
            } else {
                fwrite(p, 1, (size_t)n, out);
                p += n;
            }
        }
    }
    fputc('"', out);
}
