/* fairshare.c -- decayed usage and the classic (Slurm) fair-share factor
 * over the group -> user hierarchy; the formulas are in fairshare.h and
 * docs/fairshare.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy/fairshare.h"

/* See fairshare.h for each public function's contract. */

double fs_decay(double usage, double dt_s, double half_life_s) {
    if (!(half_life_s > 0) || !(dt_s > 0)) return usage;
    return usage * exp2(-dt_s / half_life_s);
}

void fs_usage_add(struct fs_usage *u, double gpu_hours, double now,
                  double half_life_s) {
    if (u->at > 0 && now > u->at)
        u->gpu_hours = fs_decay(u->gpu_hours, now - u->at, half_life_s);
    if (now > u->at) u->at = now;
    if (gpu_hours > 0 && isfinite(gpu_hours)) u->gpu_hours += gpu_hours;
}

double fs_usage_at(const struct fs_usage *u, double now, double half_life_s) {
    if (u->at <= 0) return u->gpu_hours;
    return fs_decay(u->gpu_hours, now - u->at, half_life_s);
}

double fs_shares_from_quota(double explicit_weight, const struct aiq_quota *q) {
    if (explicit_weight > 0 && isfinite(explicit_weight)) return explicit_weight;
    if (q && q->gpus > 0) return (double)q->gpus;
    return 1.0;
}

/* 2^(-ue/s), 0 without shares. */
static double fs_factor_of(double ue, double s) {
    if (!(s > 0)) return 0.0;
    return exp2(-ue / s);
}

static int fs_bad(double v) { return !(v >= 0) || !isfinite(v); }

aiq_rc fs_compute(const struct fs_group *groups, int ngroups,
                  const struct fs_user *users, int nusers,
                  struct fs_factor *gout, struct fs_factor *uout,
                  aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    char field[64];
    double gshares = 0, gusage = 0;
    if (ngroups > 0) memset(gout, 0, (size_t)ngroups * sizeof *gout);
    if (nusers > 0) memset(uout, 0, (size_t)nusers * sizeof *uout);
    for (int g = 0; g < ngroups; g++) {
        if (fs_bad(groups[g].shares)) {
            snprintf(field, sizeof field, "groups[%d].shares", g);
            rc = aiq_err_field(err, AIQ_EINVAL, field, "%s: must be >= 0, got %g",
                               field, groups[g].shares);
            goto out;
        }
        if (fs_bad(groups[g].usage)) {
            snprintf(field, sizeof field, "groups[%d].usage", g);
            rc = aiq_err_field(err, AIQ_EINVAL, field, "%s: must be >= 0, got %g",
                               field, groups[g].usage);
            goto out;
        }
        gshares += groups[g].shares;
        gusage += groups[g].usage;
    }
    for (int u = 0; u < nusers; u++) {
        if (users[u].group < 0 || users[u].group >= ngroups) {
            snprintf(field, sizeof field, "users[%d].group", u);
            rc = aiq_err_field(err, AIQ_EINVAL, field, "%s: must be 0..%d, got %d",
                               field, ngroups - 1, users[u].group);
            goto out;
        }
        if (fs_bad(users[u].shares)) {
            snprintf(field, sizeof field, "users[%d].shares", u);
            rc = aiq_err_field(err, AIQ_EINVAL, field, "%s: must be >= 0, got %g",
                               field, users[u].shares);
            goto out;
        }
        if (fs_bad(users[u].usage)) {
            snprintf(field, sizeof field, "users[%d].usage", u);
            rc = aiq_err_field(err, AIQ_EINVAL, field, "%s: must be >= 0, got %g",
                               field, users[u].usage);
            goto out;
        }
    }
    /* siblings' shares per group, kept in gout[g].factor until the
     * groups' own values are written last */
    for (int u = 0; u < nusers; u++) gout[users[u].group].factor += users[u].shares;
    for (int u = 0; u < nusers; u++) {
        int g = users[u].group;
        double siblings = gout[g].factor;
        double gs = gshares > 0 ? groups[g].shares / gshares : 0.0;
        double gue = gusage > 0 ? groups[g].usage / gusage : 0.0;
        double frac = siblings > 0 ? users[u].shares / siblings : 0.0;
        struct fs_factor *o = &uout[u];
        o->norm_shares = gs * frac;
        o->norm_usage = gusage > 0 ? users[u].usage / gusage : 0.0;
        o->eff_usage = o->norm_usage + (gue - o->norm_usage) * frac;
        o->factor = fs_factor_of(o->eff_usage, o->norm_shares);
    }
    for (int g = 0; g < ngroups; g++) {
        struct fs_factor *o = &gout[g];
        o->norm_shares = gshares > 0 ? groups[g].shares / gshares : 0.0;
        o->norm_usage = gusage > 0 ? groups[g].usage / gusage : 0.0;
        o->eff_usage = o->norm_usage;
        o->factor = fs_factor_of(o->eff_usage, o->norm_shares);
    }
out:
    if (rc != AIQ_OK) {
        if (ngroups > 0) memset(gout, 0, (size_t)ngroups * sizeof *gout);
        if (nusers > 0) memset(uout, 0, (size_t)nusers * sizeof *uout);
    }
    return rc;
}
