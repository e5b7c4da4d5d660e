/* fnv.h -- FNV-1a, the 64-bit hash the operator's fingerprints use
 * (status economy, capacity changes). Header-only: two small inlines. */
#ifndef AIQ_COMMON_FNV_H
#define AIQ_COMMON_FNV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define AIQ_FNV_OFFSET 0xcbf29ce484222325ULL

/* Continues h over n bytes at p. */
static inline uint64_t aiq_fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* The offset the in-memory hash tables (operator cache, user maps, the
 * simulator's maps) have always started from: FNV's basis with its last
 * digit missing. Kept so their layouts, and anything that iterates them,
 * do not change; aiq_fnv over the string's bytes (no NUL) from it gives
 * the values those tables had. */
#define AIQ_FNV_TABLE_SEED 1469598103934665603ULL

/* h continued over the bytes of s, without its NUL (table keys). */
static inline uint64_t aiq_fnv_cstr(uint64_t h, const char *s) {
    return aiq_fnv(h, s, strlen(s));
}

/* Continues h over s and its NUL, so "ab","c" and "a","bc" differ;
 * NULL hashes as "". */
static inline uint64_t aiq_fnv_str(uint64_t h, const char *s) {
    return s ? aiq_fnv(h, s, strlen(s) + 1) : aiq_fnv(h, "", 1);
}

/* Continues h over n bytes at p eight at a time: FNV-1a's step on 64-bit
 * words (the tail byte by byte), about eight times fewer multiplies than
 * aiq_fnv. For in-memory change detection (the status fingerprint over
 * every waiting job each cycle), not for values kept anywhere: it gives
 * other values than aiq_fnv. Each step is a bijection of h for a given
 * word, so strings that differ in one place always hash apart. */
static inline uint64_t aiq_fnv_w(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, sizeof w);
        h = (h ^ w) * 0x100000001b3ULL;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* aiq_fnv_str with aiq_fnv_w: s and its NUL; NULL hashes as "". */
static inline uint64_t aiq_fnv_wstr(uint64_t h, const char *s) {
    return s ? aiq_fnv_w(h, s, strlen(s) + 1) : aiq_fnv_w(h, "", 1);
}

#endif
