/* test_quota_rules.c -- which UserQuotas a group accepts: oldest first,
 * the sums per resource never pass the group, unlimited users, budgets,
 * duplicates, and the exact rejection messages. */
#include "policy/quota_rules.h"
#include "test/unit/th.h"

#define GI ((int64_t)1 << 30)

static struct qr_entry uq(const char *name, const char *user, double t,
                          int64_t gpus, int64_t cpu_milli, int64_t mem) {
    struct qr_entry e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.user = user;
    e.creation_time = t;
    e.quota.gpus = gpus;
    e.quota.gpu_memory_mib = -1;
    e.quota.cpu_milli = cpu_milli;
    e.quota.memory_bytes = mem;
    e.quota.jobs = -1;
    e.budget.gpu_hours = -1;
    return e;
}

static struct aiq_quota group_quota(int64_t gpus, int64_t cpu, int64_t mem) {
    struct aiq_quota q = {gpus, -1, cpu, mem, -1};
    return q;
}

TEST(qr_oldest_first_and_exact_message) {
    struct aiq_quota g = group_quota(16, -1, -1);
    struct qr_entry e[3] = {
        uq("carol", "carol", 300, 4, 1000, GI),  /* newest: would make 20 */
        uq("alice", "alice", 100, 8, 1000, GI),
        uq("bob", "bob", 200, 8, 1000, GI),
    };
    struct qr_verdict v[3];
    struct qr_allotted al;
    aiq_err err;
    aiq_err_clear(&err);
    CHECK_INT(qr_decide("vision", &g, NULL, e, 3, v, &al, &err), AIQ_OK);
    CHECK(v[1].accepted);
    CHECK(v[2].accepted);
    CHECK(!v[0].accepted);
    CHECK_STR(v[0].message, "sum of user quotas for gpus would be 20, group vision has 16");
    CHECK_STR(v[1].message, "");
    CHECK_INT(al.quota.gpus, 16);
    CHECK_INT(al.quota.cpu_milli, -1);   /* the group does not limit cpu */
    CHECK_DBL(al.budget_gpu_hours, -1, 0);
}

TEST(qr_same_time_sorted_by_name_and_order_independent) {
    struct aiq_quota g = group_quota(10, -1, -1);
    struct qr_entry a[3] = {uq("zed", "z", 100, 6, -1, -1), uq("amy", "a", 100, 6, -1, -1),
                            uq("kim", "k", 100, 4, -1, -1)};
    struct qr_entry b[3] = {a[2], a[0], a[1]};
    struct qr_verdict va[3], vb[3];
    CHECK_INT(qr_decide("g", &g, NULL, a, 3, va, NULL, NULL), AIQ_OK);
    CHECK_INT(qr_decide("g", &g, NULL, b, 3, vb, NULL, NULL), AIQ_OK);
    /* amy (6) then kim (4) fill the 10; zed is rejected, in both orders */
    CHECK(va[1].accepted && va[2].accepted && !va[0].accepted);
    CHECK(vb[0].accepted && vb[2].accepted && !vb[1].accepted);
    CHECK_STR(va[0].message, "sum of user quotas for gpus would be 16, group g has 10");
    CHECK_STR(vb[1].message, va[0].message);
}

TEST(qr_cpu_and_memory_in_human_units) {
    struct aiq_quota g = group_quota(-1, 8000, 64 * GI);
    struct qr_entry e[4] = {
        uq("a", "a", 1, -1, 6000, 32 * GI),
        uq("b", "b", 2, -1, 2500, 8 * GI),   /* cpu 8.5 > 8 */
        uq("c", "c", 3, -1, 1000, 48 * GI),  /* memory 80Gi > 64Gi */
        uq("d", "d", 4, -1, 2000, 32 * GI),  /* fits exactly: 8 cores, 64Gi */
    };
    struct qr_verdict v[4];
    struct qr_allotted al;
    CHECK_INT(qr_decide("ml", &g, NULL, e, 4, v, &al, NULL), AIQ_OK);
    CHECK(v[0].accepted);
    CHECK(!v[1].accepted);
    CHECK_STR(v[1].message, "sum of user quotas for cpu would be 8500m, group ml has 8");
    CHECK(!v[2].accepted);
    CHECK_STR(v[2].message, "sum of user quotas for memory would be 80Gi, group ml has 64Gi");
    CHECK(v[3].accepted);
    CHECK_INT(al.quota.cpu_milli, 8000);
    CHECK_INT(al.quota.memory_bytes, 64 * GI);
    CHECK_INT(al.quota.gpus, -1);
}

TEST(qr_gpu_memory_and_jobs) {
    struct aiq_quota g = {-1, 81920, -1, -1, 3};
    struct qr_entry e[3] = {uq("a", "a", 1, -1, -1, -1), uq("b", "b", 2, -1, -1, -1),
                            uq("c", "c", 3, -1, -1, -1)};
    e[0].quota.gpu_memory_mib = 40960; e[0].quota.jobs = 2;
    e[1].quota.gpu_memory_mib = 40960; e[1].quota.jobs = 2;  /* jobs 4 > 3 */
    e[2].quota.gpu_memory_mib = 81920; e[2].quota.jobs = 1;  /* mem 122880 */
    struct qr_verdict v[3];
    CHECK_INT(qr_decide("g", &g, NULL, e, 3, v, NULL, NULL), AIQ_OK);
    CHECK(v[0].accepted);
    CHECK_STR(v[1].message, "sum of user quotas for jobs would be 4, group g has 3");
    CHECK_STR(v[2].message, "sum of user quotas for gpuMemory would be 120Gi, group g has 80Gi");
}

TEST(qr_unlimited_user_takes_the_whole_group) {
    struct aiq_quota g = group_quota(16, -1, -1);
    struct qr_entry e[3] = {uq("boss", "boss", 1, -1, -1, -1), uq("a", "a", 2, 1, -1, -1),
                            uq("b", "b", 3, 0, -1, -1)};
    struct qr_verdict v[3];
    struct qr_allotted al;
    CHECK_INT(qr_decide("g", &g, NULL, e, 3, v, &al, NULL), AIQ_OK);
    CHECK(v[0].accepted);   /* first: gets all 16 */
    CHECK(!v[1].accepted);
    CHECK_STR(v[1].message, "sum of user quotas for gpus would be 17, group g has 16");
    CHECK(v[2].accepted);   /* 0 GPUs still fits */
    CHECK_INT(al.quota.gpus, 16);
    /* unlimited after something is allotted: rejected */
    e[0].creation_time = 10;
    CHECK_INT(qr_decide("g", &g, NULL, e, 3, v, NULL, NULL), AIQ_OK);
    CHECK(v[1].accepted);
    CHECK(!v[0].accepted);
    CHECK_STR(v[0].message, "user quota for gpus is unlimited, but group g limits gpus to 16 "
                            "and 1 is already allotted");
    /* an unlimited group accepts anything */
    struct aiq_quota u = group_quota(-1, -1, -1);
    CHECK_INT(qr_decide("g", &u, NULL, e, 3, v, &al, NULL), AIQ_OK);
    CHECK(v[0].accepted && v[1].accepted && v[2].accepted);
    CHECK_INT(al.quota.gpus, -1);
}

TEST(qr_budgets) {
    struct aiq_quota g = group_quota(-1, -1, -1);
    struct aiq_budget gb = {1000, 2592000};   /* 1000 GPU-h per 30 days */
    struct qr_entry e[4] = {uq("a", "a", 1, 1, -1, -1), uq("b", "b", 2, 1, -1, -1),
                            uq("c", "c", 3, 1, -1, -1), uq("d", "d", 4, 1, -1, -1)};
    e[0].budget.gpu_hours = 600; e[0].budget.window_s = 2592000;
    e[1].budget.gpu_hours = 500; e[1].budget.window_s = 2592000;  /* 1100 > 1000 */
    e[2].budget.gpu_hours = 40;  e[2].budget.window_s = 86400 * 3; /* = 400 per 30d */
    e[3].budget.gpu_hours = -1;                                    /* unlimited */
    struct qr_verdict v[4];
    struct qr_allotted al;
    CHECK_INT(qr_decide("g", &g, &gb, e, 4, v, &al, NULL), AIQ_OK);
    CHECK(v[0].accepted);
    CHECK_STR(v[1].message, "sum of user budgets would be 1100 GPU-hours per 30d, group g has 1000");
    CHECK(v[2].accepted);
    CHECK_STR(v[3].message, "user budget is unlimited, but group g has 1000 GPU-hours per 30d "
                            "and 1000 are already allotted");
    CHECK_DBL(al.budget_gpu_hours, 1000, 1e-9);
    /* no group budget: user budgets are not limited */
    CHECK_INT(qr_decide("g", &g, NULL, e, 4, v, &al, NULL), AIQ_OK);
    CHECK(v[0].accepted && v[1].accepted && v[2].accepted && v[3].accepted);
}

TEST(qr_duplicate_user_and_edges) {
    struct aiq_quota g = group_quota(16, -1, -1);
    struct qr_entry e[2] = {uq("alice-1", "alice", 1, 2, -1, -1), uq("alice-2", "alice", 2, 2, -1, -1)};
    struct qr_verdict v[2];
    CHECK_INT(qr_decide("g", &g, NULL, e, 2, v, NULL, NULL), AIQ_OK);
    CHECK(v[0].accepted);
    CHECK_STR(v[1].message, "user alice already has UserQuota alice-1 in group g");
    /* the first one rejected: the second may still fit */
    e[0].quota.gpus = 20;
    CHECK_INT(qr_decide("g", &g, NULL, e, 2, v, NULL, NULL), AIQ_OK);
    CHECK(!v[0].accepted);
    CHECK(v[1].accepted);
    /* empty input and bad arguments */
    struct qr_allotted al;
    CHECK_INT(qr_decide("g", &g, NULL, NULL, 0, NULL, &al, NULL), AIQ_OK);
    CHECK_INT(al.quota.gpus, 0);
    aiq_err err;
    aiq_err_clear(&err);
    CHECK_INT(qr_decide("g", NULL, NULL, e, 2, v, NULL, &err), AIQ_EINVAL);
    CHECK_INT(qr_decide("g", &g, NULL, e, -1, v, NULL, NULL), AIQ_EINVAL);
    /* huge values do not overflow the sums */
    e[0].quota.gpus = INT64_MAX;
    e[1].quota.gpus = INT64_MAX;
    g.gpus = INT64_MAX;
    CHECK_INT(qr_decide("g", &g, NULL, e, 2, v, NULL, NULL), AIQ_OK);
    CHECK(v[0].accepted);
    CHECK(!v[1].accepted);
}

TEST(qr_formatting) {
    char b[32];
    CHECK_STR(qr_format_cpu(4000, b, sizeof b), "4");
    CHECK_STR(qr_format_cpu(1500, b, sizeof b), "1500m");
    CHECK_STR(qr_format_cpu(0, b, sizeof b), "0");
    CHECK_STR(qr_format_memory(64 * GI, b, sizeof b), "64Gi");
    CHECK_STR(qr_format_memory(512 << 20, b, sizeof b), "512Mi");
    CHECK_STR(qr_format_memory(1536 << 20, b, sizeof b), "1536Mi");
    CHECK_STR(qr_format_memory(1000, b, sizeof b), "1000");
    CHECK_STR(qr_format_memory(0, b, sizeof b), "0");
}
