/* test_operator_cache.c -- the keyed object cache (operator/cache.c):
 * keys, put/replace keeping operator state, delete, growth past many
 * entries with deletions, relist dropping vanished objects, and the
 * dense stamps following every entry through puts, state changes and
 * the moves a deletion makes, and frozen entries read back as they were. */
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

/* The parse error is kept only when there is one, and a put clears it;
 * the key is stored to size, the longest one included. */
TEST(cache_perr_and_key_to_size) {
    opcache *c = opcache_create(NULL, NULL);
    struct opcache_obj *o = opcache_put(c, obj("ns", "a", 1), NULL);
    CHECK(o && o->perr == NULL);
    CHECK_INT(opcache_perr(o)->code, AIQ_OK);
    CHECK_STR(opcache_perr(o)->message, "");
    aiq_err e;
    aiq_err_clear(&e);
    aiq_err_field(&e, AIQ_EINVAL, "spec.replicas", "spec.replicas: must be >= 1");
    CHECK_INT(opcache_set_perr(o, &e), 0);
    CHECK_INT(opcache_perr(o)->code, AIQ_EINVAL);
    CHECK_STR(opcache_perr(o)->field, "spec.replicas");
    CHECK_STR(opcache_perr(o)->message, "spec.replicas: must be >= 1");
    CHECK(opcache_put(c, obj("ns", "a", 2), NULL) == o);
    CHECK(o->perr == NULL);
    CHECK_INT(opcache_perr(o)->code, AIQ_OK);
    CHECK_INT(opcache_set_perr(o, &e), 0);
    CHECK_INT(opcache_set_perr(o, NULL), 0);
    CHECK(o->perr == NULL);
    char ns[AIQ_MAX_NAME + 1], name[AIQ_MAX_NAME + 1], key[OPCACHE_KEY_MAX];
    memset(ns, 'n', AIQ_MAX_NAME);
    ns[AIQ_MAX_NAME] = '\0';
    memset(name, 'm', AIQ_MAX_NAME);
    name[AIQ_MAX_NAME] = '\0';
    snprintf(key, sizeof key, "%s/%s", ns, name);
    json_object *raw = json_object_new_object(), *md = json_object_new_object();
    json_object_object_add(md, "namespace", json_object_new_string(ns));
    json_object_object_add(md, "name", json_object_new_string(name));
    json_object_object_add(raw, "metadata", md);
    struct opcache_obj *l = opcache_put(c, raw, NULL);
    CHECK(l != NULL);
    CHECK(l && strcmp(l->key, key) == 0);
    CHECK(opcache_get(c, key) == l);
    opcache_set_perr(l, &e); /* freed with the entry */
    opcache_free(c);
}

/* Stashed members leave the tree and come back equal (numbers as the
 * server wrote them); a member that is not an object stays; the next
 * put drops the text; an entry without them gives NULL. */
TEST(cache_stash_members) {
    static const char *const cold[] = {"spec", "status", "note", NULL};
    opcache *c = opcache_create(NULL, NULL);
    const char *st_txt = "{\"phase\":\"Queued\",\"score\":4000000.0001,\"position\":7,"
                         "\"scoreTerms\":[{\"name\":\"job.priority\",\"value\":4000000}],"
                         "\"conditions\":[{\"type\":\"Queued\",\"status\":\"True\"}]}";
    const char *sp_txt = "{\"replicas\":2,\"resources\":{\"gpus\":1.50,\"cpu\":\"1\"}}";
    char b[1024];
    snprintf(b, sizeof b, "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\"},"
             "\"spec\":%s,\"status\":%s,\"note\":\"text\"}", sp_txt, st_txt);
    struct opcache_obj *o = opcache_put(c, json_tokener_parse(b), NULL);
    CHECK(o != NULL);
    json_object *want = json_tokener_parse(st_txt), *live = opcache_member(o, "status");
    json_object *want_sp = json_tokener_parse(sp_txt);
    CHECK(live && json_object_equal(live, want)); /* from the tree */
    json_object_put(live);
    CHECK_INT(opcache_stash(o, cold), 0);
    CHECK(o->cold_txt != NULL);
    CHECK(!json_object_object_get_ex(opcache_raw(o), "status", NULL));
    CHECK(!json_object_object_get_ex(opcache_raw(o), "spec", NULL));
    CHECK(json_object_object_get_ex(opcache_raw(o), "metadata", NULL));
    CHECK(json_object_object_get_ex(opcache_raw(o), "note", NULL)); /* a string: stays */
    CHECK_INT(opcache_stash(o, cold), 0); /* once per put: no change */
    live = opcache_member(o, "status");
    CHECK(live && json_object_equal(live, want)); /* from the text */
    CHECK_STR(json_object_to_json_string_ext(live, JSON_C_TO_STRING_PLAIN),
              json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
    json_object_put(live);
    live = opcache_member(o, "spec");
    CHECK(live && json_object_equal(live, want_sp));
    CHECK_STR(json_object_to_json_string_ext(live, JSON_C_TO_STRING_PLAIN),
              json_object_to_json_string_ext(want_sp, JSON_C_TO_STRING_PLAIN)); /* 1.50 kept */
    json_object_put(live);
    live = opcache_member(o, "note");
    CHECK(live && strcmp(json_object_get_string(live), "text") == 0);
    json_object_put(live);
    CHECK(opcache_member(o, "absent") == NULL);
    /* Each stashed member's own text, as compact as it came. */
    CHECK_STR(opcache_stashed(o, "spec"), sp_txt); /* it came compact */
    CHECK(opcache_stashed(o, "status") != NULL &&
          strstr(opcache_stashed(o, "status"), "\"spec\"") == NULL);
    CHECK(opcache_stashed(o, "note") == NULL); /* not stashed */
    CHECK(opcache_stashed(o, "absent") == NULL);
    CHECK(opcache_put(c, obj("ns", "a", 2), NULL) == o);
    CHECK(opcache_stashed(o, "spec") == NULL); /* a put frees it */
    CHECK(o->cold_txt == NULL);
    CHECK(opcache_member(o, "status") == NULL);
    CHECK_INT(opcache_stash(o, cold), 0); /* nothing to move */
    CHECK(o->cold_txt == NULL);
    o = opcache_put(c, json_tokener_parse(b), NULL);
    CHECK_INT(opcache_stash(o, cold), 0); /* freed with the entry */
    json_object_put(want);
    json_object_put(want_sp);
    opcache_free(c);
}

/* managedFields are dropped on the way in; the rest of metadata stays. */
TEST(cache_drops_managed_fields) {
    opcache *c = opcache_create(NULL, NULL);
    json_object *raw = json_tokener_parse(
        "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"7\","
        "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\"}]},\"spec\":{}}");
    struct opcache_obj *o = opcache_put(c, raw, NULL);
    json_object *md = NULL, *mf = NULL, *rv = NULL;
    CHECK(o && json_object_object_get_ex(opcache_raw(o), "metadata", &md));
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

/* Counts the entries whose dense stamp is not their own counts. */
static int stamps_off(opcache *c) {
    int off = 0;
    for (size_t i = 0; i < opcache_count(c); i++) {
        struct opcache_obj *o = opcache_at(c, i);
        struct opcache_stamp st = opcache_stamp(c, i);
        off += st.changed != o->changed || st.state_seq != o->state_seq || o->idx != i;
    }
    return off;
}

TEST(cache_stamps_follow_entries) {
    opcache *c = opcache_create(NULL, NULL);
    char name[32];
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "j%d", i);
        struct opcache_obj *o = opcache_put(c, obj("ns", name, i), NULL);
        CHECK(o != NULL);
        if (o && i % 4 == 0)
            opcache_state_changed(o);
    }
    CHECK_INT(stamps_off(c), 0);
    /* a state change shows in the stamp at once, a put too */
    struct opcache_obj *o = opcache_get(c, "ns/j7");
    CHECK(o != NULL);
    if (o) {
        uint32_t idx = o->idx;
        struct opcache_stamp before = opcache_stamp(c, idx);
        opcache_state_changed(o);
        opcache_state_changed(o);
        CHECK_INT(opcache_stamp(c, idx).state_seq, before.state_seq + 2);
        CHECK(opcache_put(c, obj("ns", "j7", 99), NULL) == o);
        CHECK(opcache_stamp(c, idx).changed > before.changed);
    }
    /* the puts since a count are the stamps above it, and a put is not
     * a deletion (what capacity.c's bound-pod list catches up from) */
    uint64_t puts = opcache_puts(c), dels = opcache_deletions(c);
    CHECK(opcache_put(c, obj("ns", "j11", 5), NULL) != NULL);
    CHECK(opcache_put(c, obj("ns", "new1", 5), NULL) != NULL);
    size_t above = 0;
    for (size_t i = 0; i < opcache_count(c); i++)
        above += opcache_stamp(c, i).changed > puts;
    CHECK_INT((int)above, 2);
    CHECK(opcache_puts(c) == puts + 2 && opcache_deletions(c) == dels);
    CHECK_INT(opcache_del(c, "ns/new1"), 1);
    CHECK(opcache_puts(c) == puts + 2 && opcache_deletions(c) == dels + 1);
    CHECK(opcache_version(c) == opcache_puts(c) + opcache_deletions(c));
    /* deletions move the last entry into the hole: its stamp goes too */
    for (int i = 0; i < 300; i += 3) {
        char key[40];
        snprintf(key, sizeof key, "ns/j%d", i);
        opcache_del(c, key);
    }
    CHECK_INT(stamps_off(c), 0);
    o = opcache_get(c, "ns/j299");
    CHECK(o != NULL);
    if (o) {
        opcache_state_changed(o);
        CHECK_INT(opcache_stamp(c, o->idx).state_seq, o->state_seq);
    }
    /* a relist that drops entries keeps the rest's stamps */
    opcache_relist_begin(c);
    for (int i = 1; i < 300; i += 2) {
        snprintf(name, sizeof name, "j%d", i);
        opcache_put(c, obj("ns", name, i), NULL);
    }
    opcache_relist_end(c, NULL, NULL);
    CHECK_INT(stamps_off(c), 0);
    CHECK_INT(opcache_stamp(c, opcache_count(c)).changed, 0); /* past the end */
    opcache_free(c);
}

/* opcache_member_part: one part of a member, from the tree or from the
 * stashed text alone, the same as the whole member's part; brackets,
 * quotes and the part's own name inside strings and nested objects do
 * not mislead the skip over the other parts. */
TEST(cache_member_part) {
    static const char *const cold[] = {"status", NULL};
    const char *sts[] = {
        "{\"phase\":\"Queued\",\"message\":\"a \\\"conditions\\\": [{\\\"x\\\"}] here\","
        "\"scoreTerms\":[{\"name\":\"conditions\",\"value\":-1.5e3}],\"n\":{\"conditions\":[1]},"
        "\"ok\":true,\"z\":null,\"conditions\":[{\"type\":\"Queued\",\"message\":\"]}{\\\\\"}]}",
        "{\"conditions\":[],\"phase\":\"Pending\"}",
        "{\"conditions\":42}",
        "{\"phase\":\"Queued\",\"position\":3}",
        "{}",
    };
    opcache *c = opcache_create(NULL, NULL);
    for (size_t i = 0; i < sizeof sts / sizeof sts[0]; i++) {
        char b[1024];
        snprintf(b, sizeof b, "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"p%zu\"},\"status\":%s}",
                 i, sts[i]);
        struct opcache_obj *o = opcache_put(c, json_tokener_parse(b), NULL);
        CHECK(o != NULL);
        if (!o)
            continue;
        json_object *whole = json_tokener_parse(sts[i]), *want_part = NULL;
        CHECK(whole != NULL);
        bool has = json_object_object_get_ex(whole, "conditions", &want_part);
        for (int stashed = 0; stashed < 2; stashed++) {
            if (stashed)
                CHECK_INT(opcache_stash(o, cold), 0);
            json_object *got = opcache_member_part(o, "status", "conditions"), *part = NULL;
            CHECK(got != NULL);
            if (!got)
                continue;
            CHECK_INT(json_object_object_length(got), has ? 1 : 0);
            if (has) {
                CHECK(json_object_object_get_ex(got, "conditions", &part) &&
                      json_object_equal(part, want_part));
            }
            json_object_put(got);
        }
        json_object_put(whole);
        json_object *none = opcache_member_part(o, "absent", "conditions");
        CHECK(none && json_object_object_length(none) == 0);
        json_object_put(none);
    }
    opcache_free(c);
}

/* Sweeps c until a step visits nothing (the sweep is idle); returns how
 * many entries it froze. */
static size_t sweep_all(opcache *c) {
    size_t frozen = 0;
    for (int i = 0; i < 100 && opcache_freeze_sweep(c, 3, &frozen) > 0; i++) {
    }
    return frozen;
}

static void on_thaw_failed(void *ud, const char *key) {
    (*(int *)ud)++;
    (void)key;
}

struct thaw_seen {
    int calls;
    char key[64];
};

static void on_thaw_failed_key(void *ud, const char *key) {
    struct thaw_seen *t = ud;
    t->calls++;
    snprintf(t->key, sizeof t->key, "%s", key);
}

/* A frozen entry that cannot be parsed back (in the operator: out of
 * memory; here its text is made unreadable, which json-c fails the same
 * way): the handler hears the key, the reader gets NULL, and the entry
 * is left frozen, counted so, for the handler to decide (the operator
 * aborts). */
TEST(cache_thaw_failure_calls_handler) {
    opcache *c = opcache_create(free, free_ext);
    struct thaw_seen seen = {0, ""};
    opcache_set_thaw_failed(c, on_thaw_failed_key, &seen);
    opcache_set_freeze(c, true);
    struct opcache_obj *o = opcache_put(c, obj("ns", "broken", 3), NULL);
    CHECK(o != NULL);
    if (!o) {
        opcache_free(c);
        return;
    }
    CHECK_INT((int)sweep_all(c), 1);
    CHECK(o->tree == NULL && o->frozen != NULL);
    o->frozen[strlen(o->frozen) - 1] = '\0'; /* drop the closing brace */
    CHECK(opcache_raw(o) == NULL);
    CHECK_INT(seen.calls, 1);
    CHECK_STR(seen.key, "ns/broken");
    CHECK(o->tree == NULL && o->frozen != NULL);
    struct opcache_freeze_stats st = opcache_freeze_stats(c);
    CHECK_INT((int)st.frozen, 1);
    CHECK_INT((int)st.thaws, 0);
    /* a reader through opcache_member sees nothing, and says so */
    CHECK(opcache_member(o, "metadata") == NULL);
    CHECK_INT(seen.calls, 2);
    /* a put replaces the text: the entry reads again */
    CHECK(opcache_put(c, obj("ns", "broken", 4), NULL) == o);
    CHECK(opcache_raw(o) != NULL);
    CHECK_INT(seen.calls, 2);
    opcache_free(c);
}

/* Frozen entries: an entry nobody read for two passes of the sweep is
 * kept as text, and reading it gives back the same object; a read, a
 * put or a memo into the tree keeps it a tree; the counts follow. */
TEST(cache_freeze_thaw) {
    opcache *c = opcache_create(free, free_ext);
    int failed = 0;
    opcache_set_thaw_failed(c, on_thaw_failed, &failed);
    const char *txt = "{\"metadata\":{\"namespace\":\"ns\",\"name\":\"j0\",\"uid\":\"u/1\","
                      "\"labels\":{\"aiq.dev/job\":\"j0\"}},\"spec\":{\"gates\":[{\"name\":\"g\"}],"
                      "\"n\":1.5,\"big\":9007199254740993},\"status\":{\"phase\":\"Pending\"}}";
    json_object *want = json_tokener_parse(txt);
    struct opcache_obj *o[4];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "j%d", i);
        json_object *x = json_tokener_parse(txt);
        json_object *md = NULL;
        CHECK(json_object_object_get_ex(x, "metadata", &md));
        json_object_object_add(md, "name", json_object_new_string(name));
        o[i] = opcache_put(c, x, NULL);
        CHECK(o[i] != NULL);
    }
    /* off by default: nothing is frozen */
    CHECK_INT((int)sweep_all(c), 0);
    CHECK(o[0]->tree != NULL);
    opcache_set_freeze(c, true);
    /* the first pass only cools what the puts warmed */
    size_t frozen = 0;
    CHECK_INT((int)opcache_freeze_sweep(c, 4, &frozen), 4);
    CHECK_INT((int)frozen, 0);
    /* a read between passes keeps j1 a tree; j2's memo points into it */
    CHECK(opcache_raw(o[1]) == o[1]->tree);
    o[2]->memo_changed = o[2]->changed;
    json_object *md2 = NULL, *uid = NULL;
    CHECK(json_object_object_get_ex(opcache_raw(o[2]), "metadata", &md2) &&
          json_object_object_get_ex(md2, "uid", &uid));
    o[2]->memo_str = json_object_get_string(uid);
    o[2]->warm = false;
    CHECK_INT((int)opcache_freeze_sweep(c, 5, &frozen), 5);
    CHECK_INT((int)frozen, 2); /* j0 and j3 */
    CHECK(o[0]->tree == NULL && o[0]->frozen != NULL);
    CHECK(o[1]->tree != NULL && o[2]->tree != NULL);
    struct opcache_freeze_stats st = opcache_freeze_stats(c);
    CHECK_INT((int)st.frozen, 2);
    CHECK_INT((int)st.freezes, 2);
    /* reading a frozen entry gives the same object back, a tree again */
    json_object *back = opcache_raw(o[0]);
    CHECK(back != NULL && back == o[0]->tree && o[0]->frozen == NULL);
    CHECK(json_object_equal(back, want));
    CHECK_STR(json_object_to_json_string_ext(back, JSON_C_TO_STRING_PLAIN),
              json_object_to_json_string_ext(want, JSON_C_TO_STRING_PLAIN));
    /* a member of a frozen entry */
    json_object *sp = opcache_member(o[3], "status"), *ph = NULL;
    CHECK(sp && json_object_object_get_ex(sp, "phase", &ph) &&
          strcmp(json_object_get_string(ph), "Pending") == 0);
    json_object_put(sp);
    st = opcache_freeze_stats(c);
    CHECK_INT((int)st.frozen, 0);
    CHECK_INT((int)st.thaws, 2);
    /* j1 went cold in the last pass, j0 and j3 were just read: all three
     * frozen by the time a pass changes nothing; j2 (memo) stays */
    CHECK_INT((int)sweep_all(c), 3);
    CHECK(o[2]->tree != NULL);
    CHECK_INT((int)opcache_freeze_sweep(c, 4, &frozen), 0); /* at rest */
    /* a put makes j2's memo stale: it is frozen after the put's warmth */
    CHECK(opcache_put(c, obj("ns", "j2", 7), NULL) == o[2]);
    CHECK_INT((int)sweep_all(c), 1);
    CHECK(o[2]->tree == NULL);
    /* a put of a frozen entry keeps the new object as a tree */
    CHECK(opcache_put(c, obj("ns", "j1", 8), NULL) == o[1]);
    CHECK(o[1]->frozen == NULL && o[1]->tree != NULL);
    CHECK_INT((int)opcache_freeze_stats(c).frozen, 3);
    json_object *md = NULL, *gen = NULL;
    CHECK(json_object_object_get_ex(opcache_raw(o[2]), "metadata", &md) &&
          json_object_object_get_ex(md, "generation", &gen) && json_object_get_int(gen) == 7);
    /* deleting a frozen entry frees its text (LeakSanitizer) */
    CHECK(o[3]->tree == NULL);
    CHECK_INT(opcache_del(c, "ns/j3"), 1);
    st = opcache_freeze_stats(c);
    CHECK_INT((int)st.frozen, 1); /* j0 */
    CHECK_INT((int)st.thaws, 3);
    CHECK_INT((int)st.freezes, 6);
    CHECK_INT(failed, 0);
    json_object_put(want);
    opcache_free(c);
}

/* What a frozen entry gives without being read back: its
 * resourceVersion, and a stashed member (a status to write needs the
 * live one); the rest of the tree comes back when asked for. */
TEST(cache_frozen_stash_and_rv) {
    opcache *c = opcache_create(free, free_ext);
    static const char *const cold[] = {"status", NULL};
    struct opcache_obj *o = opcache_put(
        c, json_tokener_parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
                              "\"resourceVersion\":\"42\"},\"status\":{\"phase\":\"Queued\","
                              "\"conditions\":[{\"type\":\"Admitted\"}]}}"), NULL);
    CHECK(o != NULL);
    if (!o) {
        opcache_free(c);
        return;
    }
    CHECK(o->rv == 42);
    CHECK_INT(opcache_stash(o, cold), 0);
    opcache_set_freeze(c, true);
    CHECK_INT((int)sweep_all(c), 1);
    CHECK(o->tree == NULL && o->rv == 42);
    json_object *st = opcache_member(o, "status"), *part = opcache_member_part(o, "status", "conditions");
    CHECK(st && json_object_object_length(st) == 2);
    CHECK(part && json_object_object_length(part) == 1);
    json_object_put(st);
    json_object_put(part);
    CHECK(o->tree == NULL);
    CHECK_INT((int)opcache_freeze_stats(c).thaws, 0);
    /* a member that is not stashed is in the tree: read back */
    json_object *md = opcache_member(o, "metadata");
    CHECK(md && o->tree != NULL);
    json_object_put(md);
    CHECK_INT((int)opcache_freeze_stats(c).thaws, 1);
    CHECK(opcache_put(c, json_tokener_parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
                                            "\"resourceVersion\":\"x7\"}}"), NULL) == o);
    /* there, but not a number: an identity of its text, unordered */
    int64_t x7 = o->rv;
    CHECK(x7 <= OPCACHE_RV_OPAQUE);
    CHECK(opcache_put(c, json_tokener_parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
                                            "\"resourceVersion\":\"x8\"}}"), NULL) == o);
    CHECK(o->rv <= OPCACHE_RV_OPAQUE && o->rv != x7);
    CHECK(opcache_put(c, json_tokener_parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
                                            "\"resourceVersion\":\"x7\"}}"), NULL) == o);
    CHECK(o->rv == x7);
    CHECK(opcache_put(c, json_tokener_parse("{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\","
                                            "\"resourceVersion\":\"\"}}"), NULL) == o);
    CHECK(o->rv == OPCACHE_RV_NONE); /* ours, not yet on the server */
    CHECK(opcache_rv_num("0") == 0 && opcache_rv_num("") == -1 && opcache_rv_num(NULL) == -1 &&
          opcache_rv_num("-3") == -1 && opcache_rv_num("12a") == -1);
    opcache_free(c);
}
