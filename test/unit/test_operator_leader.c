/* test_operator_leader.c -- the Lease election's decision step
 * (operator/leader.c): create, renew, respect a live holder, take over an
 * expired lease judged by our own clock, and the renew deadline. */
#include <string.h>

#include <json-c/json.h>

#include "common/json.h"
#include "operator/leader.h"
#include "test/unit/th.h"

static json_object *lease(const char *holder, const char *renew, int dur,
                          const char *rv, int transitions) {
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"aiq-operator\",\"namespace\":\"aiq-system\","
             "\"resourceVersion\":\"%s\"},\"spec\":{\"holderIdentity\":\"%s\","
             "\"leaseDurationSeconds\":%d,\"acquireTime\":\"2026-01-01T00:00:00.000000Z\","
             "\"renewTime\":\"%s\",\"leaseTransitions\":%d}}",
             rv, holder, dur, renew, transitions);
    return json_tokener_parse(buf);
}

TEST(leader_creates_missing_lease) {
    struct leader l;
    leader_init(&l, "me", "aiq-system", NULL);
    CHECK_STR(l.name, "aiq-operator");
    CHECK_DBL(l.duration_s, 15, 0);
    int create = 0;
    json_object *w = leader_next(&l, NULL, 1000.5, &create);
    CHECK(w != NULL);
    CHECK_INT(create, 1);
    CHECK_STR(aiq_jpath_str(w, "spec.holderIdentity"), "me");
    CHECK_STR(aiq_jpath_str(w, "spec.renewTime"), "1970-01-01T00:16:40.500000Z");
    CHECK_STR(aiq_jpath_str(w, "metadata.namespace"), "aiq-system");
    CHECK_STR(aiq_jpath_str(w, "apiVersion"), "coordination.k8s.io/v1");
    CHECK(aiq_jpath_str(w, "metadata.resourceVersion") == NULL);
    CHECK(!l.is_leader); /* only after the write succeeded */
    leader_written(&l, true, 1000.5);
    CHECK(l.is_leader);
    json_object_put(w);
}

TEST(leader_renews_own_lease_with_rv) {
    struct leader l;
    leader_init(&l, "me", "ns", "lk");
    json_object *cur = lease("me", "2026-01-01T00:00:05.000000Z", 15, "77", 2);
    int create = 1;
    json_object *w = leader_next(&l, cur, 2000, &create);
    CHECK(w != NULL);
    CHECK_INT(create, 0);
    CHECK_STR(aiq_jpath_str(w, "metadata.resourceVersion"), "77");
    /* A renewal keeps acquireTime and the transition count. */
    CHECK_STR(aiq_jpath_str(w, "spec.acquireTime"), "2026-01-01T00:00:00.000000Z");
    json_object *sp = NULL, *tr = NULL;
    json_object_object_get_ex(w, "spec", &sp);
    json_object_object_get_ex(sp, "leaseTransitions", &tr);
    CHECK_INT(json_object_get_int(tr), 2);
    json_object_put(w);
    json_object_put(cur);
}

TEST(leader_waits_for_live_holder_then_takes_over) {
    struct leader l;
    leader_init(&l, "me", "ns", "lk");
    int create = 0;
    json_object *cur = lease("other", "2026-01-01T00:00:05.000000Z", 15, "10", 4);
    /* First seen at t=100: live for 15 s of OUR clock, whatever renewTime
     * says (it is far in the past here: skewed clocks must not matter). */
    CHECK(leader_next(&l, cur, 100, &create) == NULL);
    CHECK(!l.is_leader);
    CHECK(leader_next(&l, cur, 114.9, &create) == NULL);
    json_object *w = leader_next(&l, cur, 115, &create);
    CHECK(w != NULL);
    CHECK_INT(create, 0);
    CHECK_STR(aiq_jpath_str(w, "spec.holderIdentity"), "me");
    CHECK_STR(aiq_jpath_str(w, "metadata.resourceVersion"), "10");
    json_object *sp = NULL, *tr = NULL;
    json_object_object_get_ex(w, "spec", &sp);
    json_object_object_get_ex(sp, "leaseTransitions", &tr);
    CHECK_INT(json_object_get_int(tr), 5);
    json_object_put(w);

    /* The holder renewed (record changed): the clock restarts. */
    json_object *cur2 = lease("other", "2026-01-01T00:00:10.000000Z", 15, "11", 4);
    CHECK(leader_next(&l, cur2, 120, &create) == NULL);
    CHECK(leader_next(&l, cur2, 134, &create) == NULL);
    json_object_put(cur2);
    json_object_put(cur);
}

TEST(leader_takes_released_lease_at_once) {
    struct leader l;
    leader_init(&l, "me", "ns", "lk");
    int create = 0;
    json_object *cur = lease("", "2026-01-01T00:00:05.000000Z", 1, "12", 1);
    json_object *w = leader_next(&l, cur, 50, &create);
    CHECK(w != NULL);
    json_object_put(w);
    json_object_put(cur);
}

TEST(leader_renew_deadline) {
    struct leader l;
    leader_init(&l, "me", "ns", "lk");
    leader_written(&l, true, 100);
    CHECK(l.is_leader);
    leader_written(&l, false, 105); /* one failed renewal: still leader */
    CHECK(l.is_leader);
    leader_written(&l, false, 110); /* 10 s without a renewal: step down */
    CHECK(!l.is_leader);
}
