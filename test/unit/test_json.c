/* test_json.c -- typed JSON member getters (common/json.c): each getter
 * on a present member, a missing one, one of the wrong type, and a
 * non-object or NULL parent. */
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
