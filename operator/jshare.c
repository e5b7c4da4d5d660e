/* jshare.c -- a bounded pool of distinct JSON subtrees (see jshare.h):
 * open addressing on a structural hash, equality by json_object_equal. */
#include "operator/jshare.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct jshare_slot {
    uint64_t hash;
    json_object *v; /* NULL: empty */
};

struct jshare {
    struct jshare_slot *slot;
    size_t mask;     /* slots - 1; slots a power of two >= 2 * cap */
    size_t cap, held;
    uint64_t hits, misses, resets;
};

/* FNV-1a over n bytes, continuing from h. */
static uint64_t js_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* A finaliser (splitmix64's), so that the order-free sum over an
 * object's members does not cancel out similar members. */
static uint64_t js_mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t jshare_hash(json_object *v) {
    uint64_t h = 14695981039346656037ULL;
    json_type t = json_object_get_type(v);
    unsigned char tb = (unsigned char)t;
    h = js_bytes(h, &tb, 1);
    switch (t) {
    case json_type_null: break;
    case json_type_boolean: {
        unsigned char b = (unsigned char)json_object_get_boolean(v);
        h = js_bytes(h, &b, 1);
        break;
    }
    case json_type_int: {
        int64_t i = json_object_get_int64(v);
        h = js_bytes(h, &i, sizeof i);
        break;
    }
    case json_type_double: {
        double d = json_object_get_double(v);
        h = js_bytes(h, &d, sizeof d);
        break;
    }
    case json_type_string:
        h = js_bytes(h, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        break;
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(v); i++)
            h = js_mix(h ^ jshare_hash(json_object_array_get_idx(v, i)));
        break;
    case json_type_object: {
        /* json_object_equal ignores the members' order: so does this. */
        uint64_t sum = 0;
        json_object_object_foreach(v, k, m) {
            uint64_t hk = js_bytes(14695981039346656037ULL, k, strlen(k));
            sum += js_mix(hk ^ js_mix(jshare_hash(m)));
        }
        h = js_mix(h ^ sum);
        break;
    }
    }
    return h;
}

struct jshare *jshare_new(size_t cap) {
    struct jshare *p = calloc(1, sizeof *p);
    size_t slots = 2;
    if (!p)
        return NULL;
    if (cap < 1)
        cap = 1;
    while (slots < 2 * cap)
        slots *= 2;
    p->slot = calloc(slots, sizeof *p->slot);
    if (!p->slot) {
        free(p);
        return NULL;
    }
    p->mask = slots - 1;
    p->cap = cap;
    return p;
}

/* Lets go of every subtree held. */
static void js_clear(struct jshare *p) {
    for (size_t i = 0; i <= p->mask; i++) {
        /* The return value says whether this was the last reference:
         * either is fine (holders keep theirs). */
        (void)json_object_put(p->slot[i].v);
        p->slot[i].v = NULL;
    }
    p->held = 0;
}

void jshare_free(struct jshare *p) {
    if (!p)
        return;
    js_clear(p);
    free(p->slot);
    free(p);
}

json_object *jshare_intern(struct jshare *p, json_object *v) {
    if (!v || !p)
        return v;
    uint64_t h = jshare_hash(v);
    size_t i = (size_t)h & p->mask;
    for (; p->slot[i].v; i = (i + 1) & p->mask) {
        if (p->slot[i].hash == h && json_object_equal(p->slot[i].v, v)) {
            if (p->slot[i].v == v) /* already the pool's own */
                return v;
            p->hits++;
            (void)json_object_put(v); /* the caller's copy: the pooled one stands for it */
            return json_object_get(p->slot[i].v);
        }
    }
    if (p->held >= p->cap) {
        js_clear(p);
        p->resets++;
        i = (size_t)h & p->mask; /* every slot is empty now */
    }
    p->slot[i].hash = h;
    p->slot[i].v = json_object_get(v);
    p->held++;
    p->misses++;
    return v;
}

void jshare_stats(const struct jshare *p, struct jshare_stats *out) {
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    out->hits = p->hits;
    out->misses = p->misses;
    out->resets = p->resets;
    out->held = p->held;
}
