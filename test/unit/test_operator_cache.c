/* test_operator_cache.c -- the keyed object cache (operator/cache.c):
 * keys, put/replace keeping operator state, delete, growth past many
 * entries with deletions, and relist dropping vanished objects. */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "operator/cache.h"
#include "test/unit/th.h"

static json_object *obj(const char *ns, const char *name, int gen) {
    char b[512];
    if (ns)
        snprintf(b, sizeof b, "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"generation\":%d}}",
                 ns, name, gen);
    else
        snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"%s\",\"generation\":%d}}", name, gen);
    return json_tokener_parse(b);
}

static int freed_ext;
static void free_ext(void *p) {
    freed_ext++;
    free(p);
}

TEST(cache_keys) {
    char k[OPCACHE_KEY_MAX];
    json_object *o = obj("team-a", "job1", 1);
    CHECK_INT(opcache_key(k, sizeof k, o), 0);
    CHECK_STR(k, "team-a/job1");
    json_object_put(o);
    o = obj(NULL, "node-1", 1);
    CHECK_INT(opcache_key(k, sizeof k, o), 0);
    CHECK_STR(k, "node-1");
    json_object_put(o);
    o = json_tokener_parse("{\"metadata\":{\"namespace\":\"x\"}}");
    CHECK_INT(opcache_key(k, sizeof k, o), -1);
    aiq_err e;
    aiq_err_clear(&e);
    opcache *c = opcache_create(free, free_ext);
    CHECK(opcache_put(c, o, &e) == NULL); /* takes o even on failure */
    CHECK_INT(e.code, AIQ_EINVAL);
    opcache_free(c);
}

TEST(cache_put_replace_keeps_state) {
    freed_ext = 0;
    opcache *c = opcache_create(free, free_ext);
    struct opcache_obj *o = opcache_put(c, obj("ns", "a", 1), NULL);
    CHECK(o != NULL);
    o->ext = malloc(8);
    o->parsed = malloc(8);
    o->parse_ok = true;
    uint64_t ch = o->changed;
    struct opcache_obj *o2 = opcache_put(c, obj("ns", "a", 2), NULL);
    CHECK(o2 == o);
    CHECK(o2->ext != NULL);      /* operator state survives an update */
    CHECK(o2->parsed == NULL);   /* the parse is redone */
    CHECK(!o2->parse_ok);
    CHECK(o2->changed > ch);
    CHECK_INT(opcache_count(c), 1);
    CHECK(opcache_get(c, "ns/a") == o);
    CHECK(opcache_get(c, "ns/b") == NULL);
    CHECK_INT(opcache_del(c, "ns/a"), 1);
    CHECK_INT(freed_ext, 1);
    CHECK_INT(opcache_del(c, "ns/a"), 0);
    CHECK_INT(opcache_count(c), 0);
    opcache_free(c);
    opcache_free(NULL);
}

/* managedFields are dropped on the way in; the rest of metadata stays. */
TEST(cache_drops_managed_fields) {
    opcache *c = opcache_create(NULL, NULL);
    json_object *raw = json_tokener_parse(
        "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"7\","
        "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\"}]},\"spec\":{}}");
    struct opcache_obj *o = opcache_put(c, raw, NULL);
    json_object *md = NULL, *mf = NULL, *rv = NULL;
    CHECK(o && json_object_object_get_ex(o->raw, "metadata", &md));
    CHECK(!json_object_object_get_ex(md, "managedFields", &mf));
    CHECK(json_object_object_get_ex(md, "resourceVersion", &rv));
    CHECK_STR(json_object_get_string(rv), "7");
    opcache_free(c);
}

TEST(cache_many_with_deletes) {
    opcache *c = opcache_create(NULL, NULL);
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "j%d", i);
        CHECK(opcache_put(c, obj("ns", name, i), NULL) != NULL);
        if (i % 3 == 0) {
            char key[40];
            snprintf(key, sizeof key, "ns/j%d", i / 2);
            opcache_del(c, key);
        }
    }
    /* Every remaining key is found and points at its own object. */
    size_t n = opcache_count(c), bad = 0;
    for (size_t i = 0; i < n; i++) {
        struct opcache_obj *o = opcache_at(c, i);
        if (opcache_get(c, o->key) != o)
            bad++;
    }
    CHECK_INT(bad, 0);
    int missing = 0;
    for (int i = 2500; i < 5000; i++) {
        snprintf(name, sizeof name, "ns/j%d", i);
        if (!opcache_get(c, name))
            missing++;
    }
    CHECK_INT(missing, 0);
    opcache_free(c);
}

static void on_drop(void *ud, struct opcache_obj *o) {
    char *out = ud;
    size_t n = strlen(out), k = strlen(o->key);
    /* the caller's buffer is 64 bytes (cache_relist_drops_vanished) */
    if (n + k + 2 > 64)
        return;
    memcpy(out + n, o->key, k);
    memcpy(out + n + k, ";", 2);
}

TEST(cache_relist_drops_vanished) {
    opcache *c = opcache_create(NULL, NULL);
    opcache_put(c, obj(NULL, "n1", 1), NULL);
    opcache_put(c, obj(NULL, "n2", 1), NULL);
    opcache_put(c, obj(NULL, "n3", 1), NULL);
    opcache_relist_begin(c);
    opcache_put(c, obj(NULL, "n2", 2), NULL);
    opcache_put(c, obj(NULL, "n4", 1), NULL);
    char dropped[64] = "";
    CHECK_INT(opcache_relist_end(c, on_drop, dropped), 2);
    CHECK(strstr(dropped, "n1;") != NULL);
    CHECK(strstr(dropped, "n3;") != NULL);
    CHECK_INT(opcache_count(c), 2);
    CHECK(opcache_get(c, "n2") && opcache_get(c, "n4"));
    CHECK(opcache_get(c, "n1") == NULL);
    opcache_free(c);
}
