/* test_json.c -- typed JSON member getters (common/json.c): each getter
 * on a present member, a missing one, one of the wrong type, and a
 * non-object or NULL parent; the checked adds of the builders (aiq_jset,
 * aiq_jset_null, aiq_jpush): ownership on success and failure, and the
 * sticky failed flag. */
#include "common/json.h"

#include <stdio.h>

#include "common/units.h"
#include "test/unit/th.h"

static const char *doc = "{\"s\":\"x\",\"i\":7,\"d\":2.5,\"t\":true,\"f\":false,"
                         "\"n\":null,\"o\":{\"p\":{\"q\":\"deep\"},\"a.b\":\"dotted\"},"
                         "\"arr\":[1]}";

TEST(json_getters) {
    json_object *o = json_tokener_parse(doc);
    CHECK(o != NULL);
    CHECK_STR(aiq_jstr(o, "s"), "x");
    CHECK(aiq_jstr(o, "i") == NULL);     /* wrong type */
    CHECK(aiq_jstr(o, "none") == NULL);  /* missing */
    CHECK(aiq_jstr(NULL, "s") == NULL);
    CHECK(aiq_jget(aiq_jget(o, "arr"), "0") == NULL); /* not an object */
    CHECK_DBL(aiq_jnum(o, "i", -1), 7, 0);
    CHECK_DBL(aiq_jnum(o, "d", -1), 2.5, 0);
    CHECK_DBL(aiq_jnum(o, "s", -1), -1, 0);
    CHECK_DBL(aiq_jnum(o, "n", -1), -1, 0);
    CHECK_INT(aiq_jint(o, "i", -1), 7);
    CHECK_INT(aiq_jint(o, "d", -1), 2);
    CHECK_INT(aiq_jint(o, "t", -1), -1);
    CHECK(aiq_jtrue(o, "t"));
    CHECK(!aiq_jtrue(o, "f"));
    CHECK(!aiq_jtrue(o, "i"));
    CHECK(!aiq_jtrue(o, "none"));
    json_object_put(o);
}

TEST(json_paths) {
    json_object *o = json_tokener_parse(doc);
    CHECK_STR(aiq_jpath_str(o, "o.p.q"), "deep");
    CHECK(aiq_jpath(o, "") == o);
    CHECK(aiq_jpath(o, "o.p") == aiq_jget(aiq_jget(o, "o"), "p"));
    CHECK(aiq_jpath_str(o, "o.p") == NULL);      /* an object, not a string */
    CHECK(aiq_jpath_str(o, "o.a.b") == NULL);    /* a dotted key needs aiq_jget */
    CHECK_STR(aiq_jstr(aiq_jget(o, "o"), "a.b"), "dotted");
    CHECK(aiq_jpath_str(o, "s.x") == NULL);      /* through a string */
    CHECK(aiq_jpath_str(o, "o.missing.q") == NULL);
    char longseg[300];
    memset(longseg, 'k', sizeof longseg - 1);
    longseg[sizeof longseg - 1] = '\0';
    CHECK(aiq_jpath(o, longseg) == NULL);
    CHECK(aiq_jpath(NULL, "o") == NULL);
    json_object_put(o);
}

/* aiq_jmib: the quantity member, else the legacy integer member, else 0;
 * a quantity that is not a whole MiB reads as absent. */
TEST(json_mib) {
    json_object *o = json_tokener_parse(
        "{\"q\":\"40Gi\",\"odd\":\"1.5Mi\",\"old\":81920,\"num\":5}");
    CHECK(o != NULL);
    CHECK_INT(aiq_jmib(o, "q", "old"), 40960);
    CHECK_INT(aiq_jmib(o, "none", "old"), 81920);
    CHECK_INT(aiq_jmib(o, "none", NULL), 0);
    CHECK_INT(aiq_jmib(o, "odd", "old"), 0);
    CHECK_INT(aiq_jmib(o, "num", NULL), 0); /* not a string: absent */
    CHECK_INT(aiq_jmib(NULL, "q", "old"), 0);
    json_object_put(o);
}

/* A legacy gpuMemoryMiB the quantity form could not read back reads as
 * absent: a status read, rewritten as "gpuMemory" and read again keeps its
 * placement's memory (fuzz_status: 8e1920, a 90-digit integer, -1). The
 * largest count that round-trips is kept. */
TEST(json_mib_legacy_range) {
    char text[160], q[64];
    snprintf(text, sizeof text,
             "{\"inf\":8e1920,\"big\":4096111111111111111111111111,\"neg\":-1,"
             "\"max\":%lld,\"over\":%lld}",
             (long long)AIQ_QUANTITY_MIB_MAX, (long long)AIQ_QUANTITY_MIB_MAX + 1);
    json_object *o = json_tokener_parse(text);
    CHECK(o != NULL);
    CHECK_INT(aiq_jmib(o, "none", "inf"), 0);
    CHECK_INT(aiq_jmib(o, "none", "big"), 0);
    CHECK_INT(aiq_jmib(o, "none", "neg"), 0);
    CHECK_INT(aiq_jmib(o, "none", "over"), 0);
    int64_t max = aiq_jmib(o, "none", "max"), back = -1;
    CHECK_INT(max, AIQ_QUANTITY_MIB_MAX);
    aiq_err e;
    aiq_err_clear(&e);
    CHECK(aiq_quantity_mib(aiq_quantity_format_mib(max, q, sizeof q), &back, &e) == AIQ_OK);
    CHECK_INT(back, max);
    json_object_put(o);
}

/* aiq_jset / aiq_jpush on success: o holds v (the caller's extra
 * reference outlives neither), members in the order added, failed left
 * false. */
TEST(json_build_ok) {
    bool failed = false;
    json_object *o = json_object_new_object(), *a = json_object_new_array();
    json_object *v = json_object_new_string("x");
    json_object_get(v);
    CHECK_INT(aiq_jset(o, "s", v, &failed), 0);
    CHECK_INT(json_object_put(v), 0); /* o still holds it */
    CHECK(aiq_jget(o, "s") == v);
    CHECK_INT(aiq_jpush(a, json_object_new_int(1), &failed), 0);
    CHECK_INT(aiq_jpush(a, json_object_new_int(2), NULL), 0);
    CHECK_INT(aiq_jset(o, "a", a, &failed), 0);
    CHECK_INT(aiq_jset_null(o, "n", &failed), 0);
    CHECK_INT(aiq_jset(o, "b", json_object_new_boolean(1), NULL), 0);
    CHECK(!failed);
    CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
              "{\"s\":\"x\",\"a\":[1,2],\"n\":null,\"b\":true}");
    json_object_put(o);
}

/* A NULL value (a constructor out of memory) is a failure, not a JSON
 * null: no member, failed set; and failed stays set, so a later good
 * value is freed instead of added. */
TEST(json_build_fails_sticky) {
    bool failed = false;
    json_object *o = json_object_new_object(), *a = json_object_new_array();
    CHECK_INT(aiq_jset(o, "gone", NULL, &failed), -1);
    CHECK(failed);
    CHECK(!json_object_object_get_ex(o, "gone", NULL));
    json_object *v = json_object_new_string("late");
    json_object_get(v);
    CHECK_INT(aiq_jset(o, "late", v, &failed), -1);
    CHECK_INT(json_object_put(v), 1); /* the helper let go of its reference */
    CHECK(!json_object_object_get_ex(o, "late", NULL));
    CHECK_INT(aiq_jset_null(o, "n", &failed), -1);
    CHECK_INT(aiq_jpush(a, json_object_new_int(1), &failed), -1);
    CHECK(failed);
    CHECK_INT(json_object_object_length(o), 0);
    CHECK_INT(json_object_array_length(a), 0);
    failed = false;
    CHECK_INT(aiq_jpush(a, NULL, &failed), -1);
    CHECK(failed);
    CHECK_INT(json_object_array_length(a), 0);
    json_object_put(o);
    json_object_put(a);
}

/* A NULL parent (its constructor out of memory) fails and frees v; with
 * failed NULL only the return says so. */
TEST(json_build_null_parent) {
    bool failed = false;
    json_object *v = json_object_new_string("x");
    json_object_get(v);
    CHECK_INT(aiq_jset(NULL, "k", v, &failed), -1);
    CHECK(failed);
    CHECK_INT(json_object_put(v), 1);
    CHECK_INT(aiq_jpush(NULL, json_object_new_int(1), NULL), -1);
    CHECK_INT(aiq_jset_null(NULL, "k", NULL), -1);
    CHECK_INT(aiq_jset(NULL, "k", NULL, NULL), -1);
}
