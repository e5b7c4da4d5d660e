/* test_fairshare.c -- decayed usage and the classic fair-share factor,
 * against values computed by hand (docs/fairshare.md shows the same
 * example). */
#include <math.h>

#include "policy/fairshare.h"
#include "test/unit/th.h"

TEST(fs_decay_halves_per_half_life) {
    double hl = 7 * 24 * 3600.0;
    CHECK_DBL(fs_decay(100, hl, hl), 50, 1e-12);
    CHECK_DBL(fs_decay(100, 2 * hl, hl), 25, 1e-12);
    CHECK_DBL(fs_decay(100, hl / 2, hl), 100 / sqrt(2), 1e-9);
    CHECK_DBL(fs_decay(100, 0, hl), 100, 0);
    CHECK_DBL(fs_decay(100, -5, hl), 100, 0);   /* clock skew: no change */
    CHECK_DBL(fs_decay(100, hl, 0), 100, 0);    /* no half-life: no decay */
    CHECK_DBL(FS_DEFAULT_HALF_LIFE_S, 604800, 0);
}

TEST(fs_usage_accumulates_with_decay) {
    double hl = 3600;
    struct fs_usage u = {0, 0};
    fs_usage_add(&u, 10, 1000, hl);
    CHECK_DBL(u.gpu_hours, 10, 0);
    CHECK_DBL(u.at, 1000, 0);
    fs_usage_add(&u, 10, 1000 + hl, hl);        /* 10 decays to 5, + 10 */
    CHECK_DBL(u.gpu_hours, 15, 1e-12);
    CHECK_DBL(fs_usage_at(&u, 1000 + 3 * hl, hl), 3.75, 1e-12);
    CHECK_DBL(u.gpu_hours, 15, 1e-12);          /* _at does not change u */
    fs_usage_add(&u, -4, 1000 + hl, hl);        /* negative amounts ignored */
    fs_usage_add(&u, NAN, 1000 + hl, hl);
    CHECK_DBL(u.gpu_hours, 15, 1e-12);
    fs_usage_add(&u, 1, 500, hl);               /* earlier clock: no decay */
    CHECK_DBL(u.gpu_hours, 16, 1e-12);
    CHECK_DBL(u.at, 1000 + hl, 0);
}

TEST(fs_shares_sources) {
    struct aiq_quota q = {16, -1, -1, -1, -1};
    CHECK_DBL(fs_shares_from_quota(5, &q), 5, 0);   /* explicit weight wins */
    CHECK_DBL(fs_shares_from_quota(0, &q), 16, 0);  /* else quota GPUs */
    q.gpus = -1;
    CHECK_DBL(fs_shares_from_quota(0, &q), 1, 0);   /* unlimited: 1 */
    q.gpus = 0;
    CHECK_DBL(fs_shares_from_quota(0, &q), 1, 0);
    CHECK_DBL(fs_shares_from_quota(0, NULL), 1, 0);
    CHECK_DBL(fs_shares_from_quota(NAN, NULL), 1, 0);
}

/* Groups A (1 share, 30 GPU-h) and B (1 share, 10 GPU-h); users a1 (1
 * share, 30), a2 (1, 0) in A; b1 (3, 10), b2 (1, 0) in B.
 *   S_A = S_B = 0.5; U_A = 0.75, U_B = 0.25
 *   F_A = 2^-1.5 = 0.353553, F_B = 2^-0.5 = 0.707107
 *   a1: S = .25,  U = .75, UE = .75 + (.75-.75)*.5 = .75,  F = 2^-3 = .125
 *   a2: S = .25,  U = 0,   UE = 0 + (.75-0)*.5 = .375,     F = 2^-1.5
 *   b1: S = .375, U = .25, UE = .25 + 0 = .25,            F = 2^(-2/3)
 *   b2: S = .125, U = 0,   UE = 0 + .25*.25 = .0625,       F = 2^-0.5 */
TEST(fs_classic_factor_by_hand) {
    struct fs_group g[2] = {{1, 30}, {1, 10}};
    struct fs_user u[4] = {{0, 1, 30}, {0, 1, 0}, {1, 3, 10}, {1, 1, 0}};
    struct fs_factor go[2], uo[4];
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(fs_compute(g, 2, u, 4, go, uo, &e), AIQ_OK);
    CHECK_DBL(go[0].norm_shares, 0.5, 1e-15);
    CHECK_DBL(go[0].norm_usage, 0.75, 1e-15);
    CHECK_DBL(go[0].factor, 0.35355339059327373, 1e-15);
    CHECK_DBL(go[1].factor, 0.70710678118654757, 1e-15);
    CHECK_DBL(uo[0].norm_shares, 0.25, 1e-15);
    CHECK_DBL(uo[0].eff_usage, 0.75, 1e-15);
    CHECK_DBL(uo[0].factor, 0.125, 1e-15);
    CHECK_DBL(uo[1].eff_usage, 0.375, 1e-15);
    CHECK_DBL(uo[1].factor, 0.35355339059327373, 1e-15);
    CHECK_DBL(uo[2].norm_shares, 0.375, 1e-15);
    CHECK_DBL(uo[2].eff_usage, 0.25, 1e-15);
    CHECK_DBL(uo[2].factor, 0.62996052494743658, 1e-15);
    CHECK_DBL(uo[3].norm_shares, 0.125, 1e-15);
    CHECK_DBL(uo[3].eff_usage, 0.0625, 1e-15);
    CHECK_DBL(uo[3].factor, 0.70710678118654757, 1e-15);
    /* the hierarchy: an idle user of a busy group ranks below an idle
     * user of a quiet group */
    CHECK(uo[3].factor > uo[1].factor);
    /* and within a group, less usage ranks higher */
    CHECK(uo[1].factor > uo[0].factor);
}

TEST(fs_no_usage_and_no_shares) {
    struct fs_group g[2] = {{2, 0}, {0, 0}};
    struct fs_user u[2] = {{0, 1, 0}, {1, 1, 0}};
    struct fs_factor go[2], uo[2];
    CHECK_INT(fs_compute(g, 2, u, 2, go, uo, NULL), AIQ_OK);
    CHECK_DBL(go[0].factor, 1, 0);    /* nobody used anything: all 1 */
    CHECK_DBL(uo[0].factor, 1, 0);
    CHECK_DBL(go[1].factor, 0, 0);    /* no shares: 0 */
    CHECK_DBL(uo[1].factor, 0, 0);
    CHECK_INT(fs_compute(NULL, 0, NULL, 0, NULL, NULL, NULL), AIQ_OK);
}

TEST(fs_bad_input_named) {
    struct fs_group g[2] = {{1, 1}, {-1, 0}};
    struct fs_user u[1] = {{5, 1, 0}};
    struct fs_factor go[2], uo[1];
    aiq_err e;
    aiq_err_clear(&e);
    CHECK_INT(fs_compute(g, 2, u, 1, go, uo, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "groups[1].shares: must be >= 0, got -1");
    CHECK_STR(e.field, "groups[1].shares");
    CHECK_DBL(go[0].factor, 0, 0);    /* outputs zeroed after an error */
    g[1].shares = 1;
    aiq_err_clear(&e);
    CHECK_INT(fs_compute(g, 2, u, 1, go, uo, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "users[0].group: must be 0..1, got 5");
    u[0].group = 1;
    u[0].usage = NAN;
    aiq_err_clear(&e);
    CHECK_INT(fs_compute(g, 2, u, 1, go, uo, &e), AIQ_EINVAL);
    CHECK_STR(e.message, "users[0].usage: must be >= 0, got nan");
}
