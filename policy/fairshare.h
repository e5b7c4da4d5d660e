/* fairshare.h -- decayed usage and Slurm's classic fair-share factor with
 * the group -> user hierarchy. Pure C, no I/O.
 *
 * Formulas (docs/fairshare.md has them with a worked example):
 *   decay       U(t + dt) = U(t) * 2^(-dt / halfLife)
 *   shares      S_g = shares_g / sum(shares of all groups)
 *               S_u = S_g * shares_u / sum(shares of the users in g)
 *   usage       U_g = usage_g / sum(usage of all groups)
 *               U_u = usage_u / sum(usage of all groups)
 *   effective   UE_g = U_g                           (groups sit under root)
 *               UE_u = U_u + (UE_g - U_u) * shares_u / sum(shares in g)
 *   factor      F = 2^(-UE / S), and F = 0 when S = 0 (no shares)
 * A user's effective usage pulls toward its group's: members of a group
 * that used a lot rank lower even if they used little themselves. */
#ifndef AIQ_FAIRSHARE_H
#define AIQ_FAIRSHARE_H

#include "common/aiq_err.h"
#include "common/model.h"

/* Default half-life: 7 days, in seconds. */
#define FS_DEFAULT_HALF_LIFE_S (7.0 * 24 * 3600)

/* Returns usage decayed over dt_s seconds: usage * 2^(-dt_s/half_life_s).
 * A half-life <= 0 means no decay; dt_s <= 0 leaves usage as is. */
double fs_decay(double usage, double dt_s, double half_life_s);

/* Decayed usage of one user or group, as of a time (unix seconds). */
struct fs_usage {
    double gpu_hours; /* decayed GPU-hours as of `at` */
    double at;        /* unix seconds; 0 = never updated */
};

/* Decays u to now, then adds gpu_hours (>= 0; negative or NaN amounts
 * are ignored). A `now` earlier than u->at does not decay (clock skew). */
void fs_usage_add(struct fs_usage *u, double gpu_hours, double now,
                  double half_life_s);

/* Returns u's usage decayed to now (u is not changed). */
double fs_usage_at(const struct fs_usage *u, double now, double half_life_s);

/* Raw shares: the explicit weight when > 0 (Group.spec.shares), else the
 * quota's GPU count when limited and > 0, else 1. q may be NULL. */
double fs_shares_from_quota(double explicit_weight, const struct aiq_quota *q);

/* Inputs: raw shares (>= 0) and decayed usage (>= 0) of each group, and of
 * each user with the index of its group. A group's usage should include
 * its users' (it is taken as given). */
struct fs_group {
    double shares;
    double usage;
};
struct fs_user {
    int group;
    double shares;
    double usage;
};

/* Output per group / user, named as sshare names them. */
struct fs_factor {
    double norm_shares; /* S */
    double norm_usage;  /* U */
    double eff_usage;   /* UE */
    double factor;      /* F = 2^(-UE/S), in [0, 1] */
};

/* Computes the fair-share factors. groups/users are borrowed; gout (ngroups
 * entries) and uout (nusers entries) are caller-owned and filled. Returns
 * AIQ_OK, or AIQ_EINVAL when an input is negative, not finite or a user's
 * group index is out of range (err names it: "users[2].group: must be
 * 0..1, got 5"); then the outputs are zeroed. */
aiq_rc fs_compute(const struct fs_group *groups, int ngroups,
                  const struct fs_user *users, int nusers,
                  struct fs_factor *gout, struct fs_factor *uout,
                  aiq_err *err);

#endif
