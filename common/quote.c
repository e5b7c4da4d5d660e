/* quote.c -- escaping and truncating untrusted strings for error messages
 * (see quote.h). */
#include "common/quote.h"

#include <string.h>

static void quote_put(char *buf, size_t cap, size_t *n, const char *s) {
    size_t l = strlen(s);
    if (*n + l >= cap) return;
    memcpy(buf + *n, s, l);
    *n += l;
    buf[*n] = '\0';
}

char *aiq_quote(char *buf, size_t cap, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (cap == 0) return buf;
    buf[0] = '\0';
    if (!s) {
        quote_put(buf, cap, &n, "null");
        return buf;
    }
    quote_put(buf, cap, &n, "\"");
    size_t show = len > AIQ_QUOTE_SHOW ? AIQ_QUOTE_SHOW : len;
    int cut = show < len;
    for (size_t i = 0; i < show; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[5];
        if (c == '"' || c == '\\') {
            e[0] = '\\'; e[1] = (char)c; e[2] = '\0';
        } else if (c >= 0x20 && c < 0x7f) {
            e[0] = (char)c; e[1] = '\0';
        } else {
            e[0] = '\\'; e[1] = 'x'; e[2] = hex[c >> 4]; e[3] = hex[c & 15];
            e[4] = '\0';
        }
        /* Keep room for the closing quote and a possible "...". */
        if (n + strlen(e) + 5 >= cap) { cut = 1; break; }
        quote_put(buf, cap, &n, e);
    }
    if (cut) quote_put(buf, cap, &n, "...");
    quote_put(buf, cap, &n, "\"");
    return buf;
}

char *aiq_quotes(char *buf, size_t cap, const char *s) {
    return aiq_quote(buf, cap, s, s ? strlen(s) : 0);
}
