/* test_jshare.c -- the pool of equal JSON subtrees (operator/jshare.c):
 * equal trees come back as one object whatever their members' order,
 * different ones stay apart, and at its bound the pool lets go of what it
 * holds without taking anything from the holders (ASan would see a
 * use after free or a leak). */
#include <json-c/json.h>
#include <string.h>

#include "operator/jshare.h"
#include "test/unit/th.h"

static json_object *js(const char *txt) {
    return json_tokener_parse(txt);
}

TEST(jshare_hash_follows_equality) {
    json_object *a = js("{\"x\":1,\"y\":[\"a\",true,null,2.5],\"z\":{\"k\":\"v\"}}");
    json_object *b = js("{\"z\":{\"k\":\"v\"},\"x\":1,\"y\":[\"a\",true,null,2.5]}");
    json_object *c = js("{\"x\":1,\"y\":[true,\"a\",null,2.5],\"z\":{\"k\":\"v\"}}");
    json_object *d = js("{\"x\":\"1\",\"y\":[\"a\",true,null,2.5],\"z\":{\"k\":\"v\"}}");
    CHECK(json_object_equal(a, b));
    CHECK(jshare_hash(a) == jshare_hash(b)); /* members in another order */
    CHECK(jshare_hash(a) != jshare_hash(c)); /* an array's order counts */
    CHECK(jshare_hash(a) != jshare_hash(d)); /* 1 is not "1" */
    /* Two members swapping values is a different object. */
    json_object *e = js("{\"p\":\"1\",\"q\":\"2\"}"), *f = js("{\"p\":\"2\",\"q\":\"1\"}");
    CHECK(jshare_hash(e) != jshare_hash(f));
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
    json_object_put(d);
    json_object_put(e);
    json_object_put(f);
}

TEST(jshare_gives_one_copy_of_equal_trees) {
    struct jshare *p = jshare_new(16);
    CHECK(p != NULL);
    json_object *a = jshare_intern(p, js("{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]}"));
    json_object *b = jshare_intern(p, js("{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]}"));
    json_object *c = jshare_intern(p, js("{\"schedulingGates\":[{\"name\":\"other.io/gate\"}]}"));
    CHECK(a != NULL && a == b);
    CHECK(c != NULL && c != a);
    /* Interning the pool's own object again changes nothing. */
    CHECK(jshare_intern(p, json_object_get(a)) == a);
    json_object_put(a);
    struct jshare_stats st;
    jshare_stats(p, &st);
    CHECK_INT(st.hits, 1);
    CHECK_INT(st.misses, 2);
    CHECK_INT(st.held, 2);
    CHECK_INT(st.resets, 0);
    CHECK(jshare_intern(p, NULL) == NULL);
    CHECK(jshare_intern(NULL, c) == c); /* no pool: as it is */
    /* The holders' references outlive the pool. */
    jshare_free(p);
    CHECK_STR(json_object_to_json_string_ext(b, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
              "{\"schedulingGates\":[{\"name\":\"aiq.dev/admission\"}]}");
    json_object_put(a);
    json_object_put(b);
    json_object_put(c);
}

TEST(jshare_lets_go_at_its_bound) {
    struct jshare *p = jshare_new(4);
    json_object *held[10];
    char buf[64];
    for (int i = 0; i < 10; i++) {
        snprintf(buf, sizeof buf, "{\"startTime\":\"t%d\"}", i);
        held[i] = jshare_intern(p, js(buf));
        CHECK(held[i] != NULL);
    }
    struct jshare_stats st;
    jshare_stats(p, &st);
    CHECK_INT(st.misses, 10);
    CHECK_INT(st.resets, 2); /* at the 5th and the 9th */
    CHECK_INT(st.held, 2);
    /* What the pool let go of is still whole for its holder. */
    CHECK_STR(json_object_get_string(json_object_object_get(held[0], "startTime")), "t0");
    /* After a reset an equal tree is a new copy; later ones share it. */
    json_object *again = jshare_intern(p, js("{\"startTime\":\"t0\"}"));
    json_object *third = jshare_intern(p, js("{\"startTime\":\"t0\"}"));
    CHECK(again != held[0]);
    CHECK(third == again);
    jshare_free(p);
    for (int i = 0; i < 10; i++)
        json_object_put(held[i]);
    json_object_put(again);
    json_object_put(third);
}
