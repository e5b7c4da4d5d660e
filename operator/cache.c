/* cache.c -- keyed in-memory object views (see cache.h): a dense entry
 * array for iteration plus an open-addressing hash index on the key. */
#include "operator/cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"

struct opcache {
    struct opcache_obj **ent; /* dense; count used */
    struct opcache_stamp *stamp; /* ent[i]'s counts, cap of them */
    size_t count, cap;
    int32_t *slots;           /* hash index: entry index, -1 empty, -2 deleted */
    size_t nslots;            /* power of two */
    size_t used_slots;        /* occupied + deleted */
    uint32_t epoch;
    uint64_t seq;
    uint64_t ndel;            /* deletions so far (opcache_version) */
    void (*free_parsed)(void *);
    void (*free_ext)(void *);
    json_object *(*lean)(json_object *raw, void *ctx); /* NULL: keep raw */
    void *lean_ctx;
    /* The freeze sweep (opcache_set_freeze): on or off, the clock hand
     * (an index into ent), whether anything was put or thawed and how
     * many entries were frozen since the current pass began, and idle:
     * a whole pass changed nothing, so steps wait for a put or thaw. */
    bool freeze, idle, active;
    size_t hand, pass_froze;
    size_t nfrozen;
    uint64_t thaws, freezes;
    void (*thaw_failed)(void *ud, const char *key);
    void *thaw_ud;
    uint64_t (*facts)(json_object *obj); /* NULL: entries' facts stay 0 */
};

static uint64_t cache_hash(const char *s) {
    return aiq_fnv_cstr(AIQ_FNV_TABLE_SEED, s);
}

/* Creates the cache; see cache.h. */
opcache *opcache_create(void (*free_parsed)(void *), void (*free_ext)(void *)) {
    opcache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->nslots = 64;
    c->slots = malloc(c->nslots * sizeof *c->slots);
    if (!c->slots) {
        free(c);
        return NULL;
    }
    memset(c->slots, 0xff, c->nslots * sizeof *c->slots); /* all -1 */
    c->free_parsed = free_parsed;
    c->free_ext = free_ext;
    return c;
}

static void cache_free_obj(opcache *c, struct opcache_obj *o) {
    if (!o)
        return;
    json_object_put(o->tree);
    if (o->frozen)
        c->nfrozen--;
    free(o->frozen);
    if (o->parsed && c->free_parsed)
        c->free_parsed(o->parsed);
    if (o->ext && c->free_ext)
        c->free_ext(o->ext);
    free(o->memo_blob);
    free(o->perr);
    free(o->cold_txt);
    free(o);
}

const aiq_err *opcache_perr(const struct opcache_obj *o) {
    static const aiq_err none; /* zero: AIQ_OK, empty strings */
    return o->perr ? o->perr : &none;
}

/* Copies e into o's own error; see cache.h. */
int opcache_set_perr(struct opcache_obj *o, const aiq_err *e) {
    if (!e) {
        free(o->perr);
        o->perr = NULL;
        return 0;
    }
    if (!o->perr) {
        o->perr = malloc(sizeof *o->perr);
        if (!o->perr)
            return -1;
    }
    *o->perr = *e;
    return 0;
}

/* Moves members of raw into text; see cache.h. */
int opcache_stash(struct opcache_obj *o, const char *const *names) {
    const char *txt[OPCACHE_STASH_MAX], *names_at[OPCACHE_STASH_MAX];
    size_t nlen[OPCACHE_STASH_MAX], tlen[OPCACHE_STASH_MAX], total = 1, n = 0;
    json_object *m = NULL;
    json_object *raw = opcache_raw(o);
    if (o->cold_txt || !raw)
        return o->cold_txt ? 0 : -1;
    for (size_t i = 0; names[i] && n < OPCACHE_STASH_MAX; i++) {
        if (!json_object_object_get_ex(raw, names[i], &m) ||
            !json_object_is_type(m, json_type_object))
            continue;
        /* json-c keeps each member's text in the member until it
         * changes: the pointers stay good while raw keeps them. */
        txt[n] = json_object_to_json_string_length(m, JSON_C_TO_STRING_PLAIN, &tlen[n]);
        if (!txt[n])
            return -1;
        nlen[n] = strlen(names[i]);
        total += nlen[n] + 1 + tlen[n] + 1;
        names_at[n] = names[i];
        n++;
    }
    if (n == 0)
        return 0;
    char *buf = malloc(total), *p = buf;
    if (!buf)
        return -1;
    for (size_t k = 0; k < n; k++) { /* name NUL text NUL, ..., NUL */
        memcpy(p, names_at[k], nlen[k] + 1);
        p += nlen[k] + 1;
        memcpy(p, txt[k], tlen[k]);
        p += tlen[k];
        *p++ = '\0';
    }
    *p = '\0';
    for (size_t k = 0; k < n; k++)
        json_object_object_del(raw, names_at[k]);
    o->cold_txt = buf;
    return 0;
}

/* The stashed text of member name; see cache.h. */
const char *opcache_stashed(const struct opcache_obj *o, const char *name) {
    for (const char *p = o->cold_txt; p && *p;) {
        const char *val = p + strlen(p) + 1;
        if (strcmp(p, name) == 0)
            return val;
        p = val + strlen(val) + 1;
    }
    return NULL;
}

/* One past the end of the JSON value that starts at p, in compact text
 * as json-c writes it (no spaces between tokens); NULL when the text ends
 * first. Strings are skipped whole (a bracket or quote in one is text). */
static const char *cache_value_end(const char *p) {
    int depth = 0;
    for (; *p; p++) {
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (!*p)
                return NULL;
            if (depth == 0)
                return p + 1;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']' || *p == ',') {
            if (depth == 0)
                return p; /* a number, true, false or null ends here */
            if (*p != ',' && --depth == 0)
                return p + 1;
        }
    }
    return depth == 0 ? p : NULL;
}

/* The text of member key of the JSON object text obj (compact), its
 * length in *len; NULL when obj has no such member or is not an object. */
static const char *cache_sub_text(const char *obj, const char *key, size_t *len) {
    size_t klen = strlen(key);
    const char *p = obj;
    if (*p++ != '{')
        return NULL;
    while (*p == '"') {
        const char *k = p + 1, *kend = cache_value_end(p);
        if (!kend || *kend != ':')
            return NULL;
        const char *v = kend + 1, *vend = cache_value_end(v);
        if (!vend || vend == v)
            return NULL;
        if ((size_t)(kend - 1 - k) == klen && memcmp(k, key, klen) == 0) {
            *len = (size_t)(vend - v);
            return v;
        }
        if (*vend != ',')
            return NULL;
        p = vend + 1;
    }
    return NULL;
}

/* Member name of raw with only its member part; see cache.h. */
json_object *opcache_member_part(struct opcache_obj *o, const char *name,
                                 const char *part) {
    json_object *m = NULL, *v = NULL, *raw = NULL, *out = NULL;
    const char *txt = opcache_stashed(o, name);
    /* A stashed member is not in the tree: a frozen entry stays frozen. */
    if ((!(txt && !o->tree) && !(raw = opcache_raw(o))) || !(out = json_object_new_object()))
        return NULL;
    if (raw && json_object_object_get_ex(raw, name, &m)) {
        if (json_object_object_get_ex(m, part, &v) &&
            json_object_object_add(out, part, json_object_get(v)) != 0) {
            json_object_put(v); /* not taken */
            json_object_put(out);
            return NULL;
        }
        return out;
    }
    size_t len = 0;
    const char *vt = txt ? cache_sub_text(txt, part, &len) : NULL;
    if (!vt)
        return out; /* no member, or none with that part */
    char *one = strndup(vt, len); /* NUL-ended: a number needs its end */
    v = one ? json_tokener_parse(one) : NULL;
    free(one);
    if (!v || json_object_object_add(out, part, v) != 0) {
        json_object_put(v);
        json_object_put(out);
        return NULL;
    }
    return out;
}

/* One member of raw, stashed or not; see cache.h. Only the asked
 * member's text is parsed. */
json_object *opcache_member(struct opcache_obj *o, const char *name) {
    json_object *m = NULL;
    const char *txt = opcache_stashed(o, name);
    if (txt && !o->tree) /* not in the tree: a frozen entry stays frozen */
        return json_tokener_parse(txt);
    json_object *raw = opcache_raw(o);
    if (!raw)
        return NULL;
    if (json_object_object_get_ex(raw, name, &m))
        return json_object_get(m);
    return txt ? json_tokener_parse(txt) : NULL;
}

void opcache_set_freeze(opcache *c, bool on) {
    c->freeze = on;
    c->idle = false;
}

void opcache_set_facts(opcache *c, uint64_t (*facts)(json_object *obj)) {
    c->facts = facts;
}

void opcache_set_thaw_failed(opcache *c, void (*fn)(void *ud, const char *key), void *ud) {
    c->thaw_failed = fn;
    c->thaw_ud = ud;
}

/* The tree, thawed when frozen; see cache.h. */
json_object *opcache_raw(struct opcache_obj *o) {
    o->warm = true;
    if (o->tree)
        return o->tree;
    opcache *c = o->owner;
    /* The text is what json-c wrote: anything but NULL here is the tree
     * it was. NULL is out of memory (or a bug): the handler says so. */
    json_object *t = o->frozen ? json_tokener_parse(o->frozen) : NULL;
    if (!t) {
        if (c->thaw_failed)
            c->thaw_failed(c->thaw_ud, o->key);
        return NULL;
    }
    free(o->frozen);
    o->frozen = NULL;
    o->tree = t;
    c->nfrozen--;
    c->thaws++;
    c->active = true;
    c->idle = false;
    return t;
}

/* Keeps o as text only; 0, or -1 out of memory (o unchanged). */
static int cache_freeze(opcache *c, struct opcache_obj *o) {
    size_t len = 0;
    /* The text lives in the tree's print buffer until the tree goes:
     * copied to size. No slash escaping: json-c reads "/" back the same. */
    const char *txt = json_object_to_json_string_length(
        o->tree, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    char *copy = txt ? malloc(len + 1) : NULL;
    if (!copy)
        return -1;
    memcpy(copy, txt, len + 1);
    json_object_put(o->tree);
    o->tree = NULL;
    o->frozen = copy;
    c->nfrozen++;
    c->freezes++;
    return 0;
}

/* One step of the clock; see cache.h. */
size_t opcache_freeze_sweep(opcache *c, size_t visits, size_t *frozen) {
    size_t n = 0;
    if (!c->freeze || c->idle)
        return 0;
    while (n < visits && c->count > 0) {
        if (c->hand >= c->count) { /* a pass ends */
            c->hand = 0;
            if (!c->active && c->pass_froze == 0) {
                c->idle = true;
                break;
            }
            c->active = false;
            c->pass_froze = 0;
        }
        struct opcache_obj *o = c->ent[c->hand++];
        n++;
        if (!o->tree)
            continue;
        if (o->warm) {
            o->warm = false;
            continue;
        }
        if (o->memo_str && o->memo_changed == o->changed)
            continue; /* the memo points into the tree */
        if (cache_freeze(c, o) == 0) {
            c->pass_froze++;
            (*frozen)++;
        }
    }
    return n;
}

struct opcache_freeze_stats opcache_freeze_stats(const opcache *c) {
    return (struct opcache_freeze_stats){c->nfrozen, c->thaws, c->freezes};
}

void opcache_set_lean(opcache *c, json_object *(*lean)(json_object *raw, void *ctx),
                      void *ctx) {
    c->lean = lean;
    c->lean_ctx = ctx;
}

/* Frees the cache; see cache.h. */
void opcache_free(opcache *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->count; i++)
        cache_free_obj(c, c->ent[i]);
    free(c->ent);
    free(c->stamp);
    free(c->slots);
    free(c);
}

/* Builds the key; see cache.h. */
int opcache_key(char *buf, size_t cap, json_object *obj) {
    json_object *m = NULL, *n = NULL, *ns = NULL;
    if (!json_object_object_get_ex(obj, "metadata", &m) ||
        !json_object_object_get_ex(m, "name", &n) ||
        !json_object_is_type(n, json_type_string) ||
        json_object_get_string_len(n) == 0)
        return -1;
    const char *nsv = NULL;
    if (json_object_object_get_ex(m, "namespace", &ns) &&
        json_object_is_type(ns, json_type_string) &&
        json_object_get_string_len(ns) > 0)
        nsv = json_object_get_string(ns);
    int w = nsv ? snprintf(buf, cap, "%s/%s", nsv, json_object_get_string(n))
                : snprintf(buf, cap, "%s", json_object_get_string(n));
    if (w < 0 || (size_t)w >= cap || (size_t)w >= OPCACHE_KEY_MAX)
        return -1;
    return 0;
}

int64_t opcache_rv_num(const char *rv) {
    char *end = NULL;
    if (!rv || !*rv)
        return -1;
    long long v = strtoll(rv, &end, 10);
    return (*end || v < 0) ? -1 : (int64_t)v;
}

/* obj's metadata.resourceVersion for opcache_obj.rv. */
static int64_t cache_rv(json_object *obj) {
    json_object *m = NULL, *v = NULL;
    if (!json_object_object_get_ex(obj, "metadata", &m) ||
        !json_object_object_get_ex(m, "resourceVersion", &v) ||
        json_object_get_string_len(v) == 0)
        return OPCACHE_RV_NONE;
    const char *t = json_object_get_string(v);
    int64_t n = opcache_rv_num(t);
    if (n >= 0)
        return n;
    /* Opaque: FNV-1a of the text, folded to [OPCACHE_RV_OPAQUE - 2^61, OPCACHE_RV_OPAQUE]. */
    uint64_t h = 1469598103934665603ull;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ull;
    return OPCACHE_RV_OPAQUE - (int64_t)(h >> 3);
}

/* Takes raw as o's tree, with what the entry keeps of it readable
 * without the tree (rv, facts). */
static void cache_take_tree(opcache *c, struct opcache_obj *o, json_object *raw) {
    o->tree = raw;
    o->rv = cache_rv(raw);
    o->facts = c->facts ? c->facts(raw) : 0;
}

/* Finds the slot holding key (>= 0), or -1-(first free slot) when absent. */
static long cache_find(const opcache *c, const char *key) {
    size_t mask = c->nslots - 1, i = (size_t)cache_hash(key) & mask;
    long first_free = -1;
    for (size_t probe = 0; probe < c->nslots; probe++, i = (i + 1) & mask) {
        int32_t s = c->slots[i];
        if (s == -1)
            return -1 - (first_free >= 0 ? first_free : (long)i);
        if (s == -2) {
            if (first_free < 0)
                first_free = (long)i;
            continue;
        }
        if (strcmp(c->ent[s]->key, key) == 0)
            return (long)i;
    }
    return -1 - (first_free >= 0 ? first_free : 0);
}

/* Rebuilds the hash index with nslots slots. */
static int cache_rehash(opcache *c, size_t nslots) {
    int32_t *ns = malloc(nslots * sizeof *ns);
    if (!ns)
        return -1;
    memset(ns, 0xff, nslots * sizeof *ns);
    free(c->slots);
    c->slots = ns;
    c->nslots = nslots;
    c->used_slots = c->count;
    for (size_t e = 0; e < c->count; e++) {
        size_t mask = nslots - 1, i = (size_t)cache_hash(c->ent[e]->key) & mask;
        while (ns[i] != -1)
            i = (i + 1) & mask;
        ns[i] = (int32_t)e;
    }
    return 0;
}

struct opcache_obj *opcache_get(opcache *c, const char *key) {
    long s = cache_find(c, key);
    return s >= 0 ? c->ent[c->slots[s]] : NULL;
}

/* What the cache keeps of raw (taking it): the lean copy when the cache
 * has one, else raw without its managedFields. NULL on ENOMEM (err). */
static json_object *cache_slim(opcache *c, json_object *raw, const char *key, aiq_err *err) {
    if (c->lean) {
        json_object *l = c->lean(raw, c->lean_ctx);
        json_object_put(raw);
        if (!l)
            aiq_err_set(err, AIQ_ENOMEM, "out of memory keeping the lean copy of %s", key);
        return l;
    }
    /* Nothing in the operator reads managedFields, and on a real API
     * server they are a large part of every object (server-side apply
     * bookkeeping): the cache does not keep them. */
    json_object *md = NULL;
    if (json_object_object_get_ex(raw, "metadata", &md) && json_object_is_type(md, json_type_object))
        json_object_object_del(md, "managedFields");
    return raw;
}

/* o's object is now raw (taken): its parse and stash are dropped, its
 * ext state kept. Returns o. */
static struct opcache_obj *cache_replace(opcache *c, struct opcache_obj *o, json_object *raw) {
    json_object_put(o->tree);
    cache_take_tree(c, o, raw);
    if (o->frozen)
        c->nfrozen--;
    free(o->frozen);
    o->frozen = NULL;
    o->warm = true;
    c->active = true;
    c->idle = false;
    if (o->parsed && c->free_parsed)
        c->free_parsed(o->parsed);
    o->parsed = NULL;
    o->parse_ok = false;
    (void)opcache_set_perr(o, NULL); /* clearing never fails */
    free(o->cold_txt);
    o->cold_txt = NULL;
    o->epoch = c->epoch;
    o->changed = ++c->seq;
    c->stamp[o->idx].changed = o->changed;
    return o;
}

/* Inserts or replaces; see cache.h. */
struct opcache_obj *opcache_put(opcache *c, json_object *raw, aiq_err *err) {
    char key[OPCACHE_KEY_MAX];
    if (opcache_key(key, sizeof key, raw) != 0) {
        json_object_put(raw);
        aiq_err_field(err, AIQ_EINVAL, "metadata.name",
                      "metadata.name: missing, or namespace/name too long");
        return NULL;
    }
    raw = cache_slim(c, raw, key, err);
    if (!raw)
        return NULL;
    long s = cache_find(c, key);
    if (s >= 0)
        return cache_replace(c, c->ent[c->slots[s]], raw);
    /* Keep the index at most half full (deleted slots count). */
    if ((c->used_slots + 1) * 2 > c->nslots) {
        size_t want = c->nslots;
        /* Live entries at most a quarter of the new table; a table full
         * of deleted slots is rebuilt at the same size. */
        while ((c->count + 1) * 4 > want && want < ((size_t)1 << 30))
            want *= 2;
        if (cache_rehash(c, want) != 0)
            goto nomem;
        s = cache_find(c, key);
    }
    if (c->count == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        struct opcache_obj **ne = realloc(c->ent, ncap * sizeof *ne);
        if (!ne)
            goto nomem;
        c->ent = ne;
        struct opcache_stamp *nst = realloc(c->stamp, ncap * sizeof *nst);
        if (!nst)
            goto nomem; /* ent is larger, cap not yet: nothing lost */
        c->stamp = nst;
        c->cap = ncap;
    }
    size_t klen = strlen(key) + 1;
    struct opcache_obj *o = calloc(1, sizeof *o + klen);
    if (!o)
        goto nomem;
    memcpy(o->key, key, klen);
    cache_take_tree(c, o, raw);
    o->warm = true;
    c->active = true;
    c->idle = false;
    o->epoch = c->epoch;
    o->changed = ++c->seq;
    o->owner = c;
    o->idx = (uint32_t)c->count;
    c->stamp[c->count] = (struct opcache_stamp){o->changed, 0};
    size_t slot = (size_t)(-1 - s);
    if (c->slots[slot] == -1)
        c->used_slots++;
    c->slots[slot] = (int32_t)c->count;
    c->ent[c->count++] = o;
    return o;
nomem:
    json_object_put(raw);
    aiq_err_set(err, AIQ_ENOMEM, "out of memory caching %s", key);
    return NULL;
}

/* Removes entry at dense index e whose slot is s. */
static void cache_remove(opcache *c, long s, size_t e) {
    struct opcache_obj *o = c->ent[e];
    c->slots[s] = -2;
    size_t last = c->count - 1;
    if (e != last) {
        /* Move the last entry into e and repoint its slot. */
        long ls = cache_find(c, c->ent[last]->key);
        c->ent[e] = c->ent[last];
        c->ent[e]->idx = (uint32_t)e;
        c->stamp[e] = c->stamp[last];
        if (ls >= 0)
            c->slots[ls] = (int32_t)e;
    }
    c->count--;
    c->ndel++;
    cache_free_obj(c, o);
}

/* Deletes by key; see cache.h. */
int opcache_del(opcache *c, const char *key) {
    long s = cache_find(c, key);
    if (s < 0)
        return 0;
    cache_remove(c, s, (size_t)c->slots[s]);
    return 1;
}

size_t opcache_count(const opcache *c) {
    return c->count;
}

/* Puts and deletions so far: both only grow, so the sum changes with
 * either; see cache.h. */
uint64_t opcache_version(const opcache *c) {
    return c->seq + c->ndel;
}

uint64_t opcache_puts(const opcache *c) {
    return c->seq;
}

uint64_t opcache_deletions(const opcache *c) {
    return c->ndel;
}

struct opcache_obj *opcache_at(opcache *c, size_t i) {
    return i < c->count ? c->ent[i] : NULL;
}

struct opcache_stamp opcache_stamp(const opcache *c, size_t i) {
    if (i >= c->count)
        return (struct opcache_stamp){0, 0};
#ifdef AIQ_SELFCHECK
    /* the copy must never differ from the entry's own counts */
    if (c->stamp[i].changed != c->ent[i]->changed ||
        c->stamp[i].state_seq != c->ent[i]->state_seq || c->ent[i]->idx != i)
        abort();
#endif
    return c->stamp[i];
}

/* Bumps o's state count and its stamp; see cache.h. */
void opcache_state_changed(struct opcache_obj *o) {
    o->state_seq++;
    o->owner->stamp[o->idx].state_seq = o->state_seq;
}

void opcache_touch(opcache *c, struct opcache_obj *o) {
    o->epoch = c->epoch;
}

void opcache_relist_begin(opcache *c) {
    c->epoch++;
}

/* Drops what the relist did not bring back; see cache.h. */
size_t opcache_relist_end(opcache *c,
                          void (*on_drop)(void *ud, struct opcache_obj *o),
                          void *ud) {
    size_t dropped = 0, i = 0;
    while (i < c->count) {
        struct opcache_obj *o = c->ent[i];
        if (o->epoch == c->epoch) {
            i++;
            continue;
        }
        if (on_drop)
            on_drop(ud, o);
        long s = cache_find(c, o->key);
        if (s >= 0)
            cache_remove(c, s, i); /* the last entry moves into i */
        dropped++;
    }
    return dropped;
}
