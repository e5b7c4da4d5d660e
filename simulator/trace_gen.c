/* trace_gen.c -- synthetic traces from a seed (xoshiro256** random
 * numbers, so a seed gives the same trace on every machine):
 *   arrivals   Poisson, thinned by a day/night cycle (rate x (1 + 0.6 sin))
 *   durations  lognormal (median 1 h x the model's scale, sigma 1.2) with
 *              a Pareto tail (10% of jobs: 4 h x U^(-1/1.5)), capped at 7 d
 *   gangs      1 (40%), 2 (20%), 4 (15%), 8 (12%) or 16 (8%) GPUs; 16 is
 *              two 8-GPU replicas; 5% are GPU shares (10-20 GiB of one GPU)
 *   users      groups x users, each user with a favourite task type and an
 *              estimate bias (lognormal, median 1.5x: users overestimate);
 *              20% of jobs carry no estimate
 *   priority   10% 1000, 30% 100, the rest 0
 * Options added later (sim_gen_opts; all zero = the traces above, byte for
 * byte): a Tiresias-like profile (one user, no estimates or priorities, no
 * GPU shares, 1/2/4/8/16-GPU jobs, durations lognormal with a median of
 * 30 min and sigma 1.6, 15% Pareto tail 2 h x U^(-1/1.3)), a cap on job
 * size, a fraction of checkpointing jobs and of elastic jobs.
 * FGD mixes (opts->fgd_mix; arrivals, durations and users as above, the
 * rest of the job's shape replaced): every task one replica, its GPUs,
 * share (gpu_milli, of the GPU it lands on), cores and memory drawn from a
 * table of task shapes tallied from the openb trace's pod lists, the FGD
 * paper's workloads (Weng et al., ATC'23; trace_gen_fgd.c):
 *   default  the default pod list: 13% CPU-only, 38% shares, 49% whole GPUs
 *   whole    its whole-GPU pods only (99% 1 GPU, the rest 4 or 8)
 *   multi    the multigpu50 list: 12% CPU-only, 34% shares, 55% whole
 *            GPUs (6% 8-GPU tasks)
 *   share    the gpushare100 list: 13% CPU-only, 87% shares */
#include "simulator/sim_trace.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct rng {
    uint64_t s[4];
};

static uint64_t rotl__(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r) {
    uint64_t *s = r->s, res = rotl__(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl__(s[3], 45);
    return res;
}

static void rng_seed(struct rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) { /* splitmix64 */
        uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        r->s[i] = z ^ (z >> 31);
    }
}

/* Uniform in (0, 1). */
static double rng_unif(struct rng *r) {
    return ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_normal(struct rng *r) {
    return sqrt(-2 * log(rng_unif(r))) * cos(2 * M_PI * rng_unif(r));
}

static const struct {
    const char *task, *model;
    double scale; /* duration multiplier */
} models[] = {
    {"cv", "resnet50", 1.0},  {"cv", "vit-b16", 2.0},   {"nlp", "bert-large", 1.5},
    {"nlp", "llama-7b", 4.0}, {"rl", "ppo-atari", 0.5}, {"speech", "whisper-s", 1.2},
};
#define NMODELS ((int)(sizeof models / sizeof models[0]))

/* The generator's settings: the options with their defaults filled in. */
struct gen_cfg {
    int ngroups, upg; /* groups, users per group */
    double mean_ia;   /* mean interarrival time, s */
    int64_t gmem;     /* a whole GPU's memory, MiB */
    int max_gpus;
    double ckpt_s;    /* a checkpointing job's interval */
    double est_noise; /* an estimate's noise (sigma) */
    double est_cut;   /* a job has one when a uniform draw is >= this */
};

/* Fills cfg from opts, then checks them. */
static aiq_rc gen_settings(const struct sim_gen_opts *opts, struct gen_cfg *cfg, aiq_err *err) {
    cfg->ngroups = opts->ngroups > 0 ? opts->ngroups : 4;
    cfg->est_noise = opts->estimates_set ? opts->estimate_noise : SIM_GEN_ESTIMATE_NOISE;
    /* 0.2 as the generator always wrote it, not 1 - SIM_GEN_ESTIMATE_SHARE
     * (1 - 0.8 is not 0.2 in binary), so the default keeps old traces
     * byte for byte */
    cfg->est_cut = opts->estimates_set ? 1 - opts->estimate_share : 0.2;
    cfg->upg = opts->users_per_group > 0 ? opts->users_per_group : 5;
    cfg->mean_ia = opts->mean_interarrival_s > 0 ? opts->mean_interarrival_s : 120;
    cfg->gmem = opts->gpu_mem_mib > 0 ? (int64_t)opts->gpu_mem_mib : 40960;
    cfg->max_gpus = opts->max_gpus > 0 ? opts->max_gpus : 16;
    cfg->ckpt_s = opts->checkpoint_s > 0 ? opts->checkpoint_s : 600;
    if (opts->njobs < 1 || opts->njobs > SIM_MAX_JOBS)
        return aiq_err_field(err, AIQ_EINVAL, "jobs", "jobs: must be 1..%d, got %d",
                             SIM_MAX_JOBS, opts->njobs);
    if (cfg->ngroups > 64 || cfg->upg > 256)
        return aiq_err_field(err, AIQ_EINVAL, "groups", "groups: at most 64 groups of 256 "
                             "users, got %d x %d", cfg->ngroups, cfg->upg);
    if (opts->fgd_mix < SIM_MIX_NONE || opts->fgd_mix > SIM_MIX_DEFAULT)
        return aiq_err_field(err, AIQ_EINVAL, "fgd-mix", "fgd-mix: must be none, whole, multi, "
                             "share or default, got %d", opts->fgd_mix);
    if (cfg->max_gpus > 16 || opts->checkpoint_frac < 0 || opts->checkpoint_frac > 1 ||
        opts->elastic_frac < 0 || opts->elastic_frac > 1)
        return aiq_err_field(err, AIQ_EINVAL, "max-gpus", "generator: max-gpus must be 1..16 and "
                             "the fractions 0..1");
    if (opts->estimates_set && !(opts->estimate_share >= 0 && opts->estimate_share <= 1))
        return aiq_err_field(err, AIQ_EINVAL, "estimate-share",
                             "estimate-share: must be 0..1, got %g", opts->estimate_share);
    if (opts->estimates_set && !(opts->estimate_noise >= 0 && opts->estimate_noise <= 2))
        return aiq_err_field(err, AIQ_EINVAL, "estimate-noise",
                             "estimate-noise: must be 0..2, got %g", opts->estimate_noise);
    if (opts->tiresias && opts->estimates_set)
        return aiq_err_field(err, AIQ_EINVAL, "estimate-share",
                             "estimate-share, estimate-noise: the Tiresias profile has no "
                             "estimates");
    if (opts->tiresias)
        cfg->ngroups = cfg->upg = 1;
    return AIQ_OK;
}

/* A job's runtime in seconds (model m's scale), within 1 min .. 7 d. */
static double gen_duration(struct rng *r, const struct sim_gen_opts *opts, int m) {
    double d;
    if (opts->tiresias) {
        d = 1800 * exp(1.6 * rng_normal(r));
        if (rng_unif(r) < 0.15)
            d = 2 * 3600 * pow(rng_unif(r), -1 / 1.3);
    } else {
        d = 3600 * models[m].scale * exp(1.2 * rng_normal(r));
        if (rng_unif(r) < 0.1)
            d = 4 * 3600 * pow(rng_unif(r), -1 / 1.5);
    }
    if (d < 60)
        d = 60;
    if (d > 7 * 86400)
        d = 7 * 86400;
    return d;
}

/* The GPUs a job asks for in all (0: a GPU share), halved to fit
 * max_gpus. */
static int gen_total_gpus(struct rng *r, const struct sim_gen_opts *opts, int max_gpus) {
    double x = rng_unif(r);
    int total = x < 0.40 ? 1 : x < 0.60 ? 2 : x < 0.75 ? 4 : x < 0.87 ? 8 : x < 0.95 ? 16 : 0;
    if (opts->tiresias) /* no GPU shares */
        total = x < 0.40 ? 1 : x < 0.60 ? 2 : x < 0.80 ? 4 : x < 0.95 ? 8 : 16;
    while (total > max_gpus)
        total /= 2;
    return total;
}

/* A job's shape from its total GPUs: replicas, GPUs and memory per
 * replica, elastic range, cpu and memory (or an FGD mix's shape). */
static void gen_shape(struct rng *r, const struct sim_gen_opts *opts, const struct gen_cfg *cfg,
                      int total, struct sim_job *j) {
    if (total == 0) {
        j->replicas = 1;
        j->gpus = 0;
        j->gpu_mem_mib = 10240 + 1024 * (int64_t)(rng_unif(r) * 10);
    } else {
        j->replicas = total == 16 ? 2 : 1;
        j->gpus = total == 16 ? 8 : total;
        j->gpu_mem_mib = cfg->gmem;
    }
    if (opts->elastic_frac > 0 && total > 1 && rng_unif(r) < opts->elastic_frac) {
        /* N replicas of one GPU, running on N/2..2N of them */
        j->replicas = total;
        j->gpus = 1;
        j->min_replicas = total / 2;
        j->max_replicas = 2 * total > 16 ? 16 : 2 * total;
    }
    j->cpu_milli = 4000 * (j->gpus > 0 ? j->gpus : 1);
    j->mem_bytes = (int64_t)(j->gpus > 0 ? j->gpus : 1) * (32LL << 30);
    if (opts->fgd_mix != SIM_MIX_NONE) {
        j->min_replicas = j->max_replicas = 0;
        sim__fgd_shape(opts->fgd_mix, rng_unif(r), j);
    }
}

/* Generates a synthetic trace; see sim_trace.h. */
aiq_rc sim_generate(struct sim_trace *tr, const struct sim_gen_opts *opts,
                    aiq_err *err) {
    aiq_rc rc;
    struct gen_cfg cfg;
    if ((rc = gen_settings(opts, &cfg, err)) != AIQ_OK)
        return rc;
    int upg = cfg.upg;
    struct rng r;
    rng_seed(&r, opts->seed);
    int nusers = cfg.ngroups * upg;
    double bias[64 * 256];
    int fav[64 * 256];
    for (int u = 0; u < nusers; u++) {
        bias[u] = exp(log(1.5) + 0.5 * rng_normal(&r));
        fav[u] = (int)(rng_unif(&r) * NMODELS);
    }
    double t = 0;
    /* Thinning: candidates at the peak rate, kept with rate(t)/peak. */
    double peak = 1.6 / cfg.mean_ia;
    for (int i = 0; i < opts->njobs;) {
        t += -log(rng_unif(&r)) / peak;
        double rate = (1 + 0.6 * sin(2 * M_PI * t / 86400)) / cfg.mean_ia;
        if (rng_unif(&r) * peak > rate)
            continue;
        int u = (int)(rng_unif(&r) * nusers);
        int g = u / upg;
        /* Zipf-ish activity: lower user numbers submit more. */
        if (rng_unif(&r) < 0.3)
            u = g * upg;
        int m = rng_unif(&r) < 0.7 ? fav[u] : (int)(rng_unif(&r) * NMODELS);
        double d = gen_duration(&r, opts, m);
        int total = gen_total_gpus(&r, opts, cfg.max_gpus);
        char id[32], user[32], group[32];
        snprintf(id, sizeof id, "job-%06d", i + 1);
        snprintf(user, sizeof user, "u%02d-%02d", g, u % upg);
        snprintf(group, sizeof group, "team-%02d", g);
        struct sim_job j;
        memset(&j, 0, sizeof j);
        j.id = id;
        j.user = user;
        j.group = group;
        j.model = (char *)models[m].model;
        j.task = (char *)models[m].task;
        j.submit = floor(t);
        j.duration_s = floor(d);
        gen_shape(&r, opts, &cfg, total, &j);
        if (rng_unif(&r) >= cfg.est_cut && !opts->tiresias)
            j.estimate_s = floor(d * bias[u] * exp(cfg.est_noise * rng_normal(&r)));
        double pr = rng_unif(&r);
        j.priority = opts->tiresias ? 0 : pr < 0.1 ? 1000 : pr < 0.4 ? 100 : 0;
        if (opts->checkpoint_frac > 0 && rng_unif(&r) < opts->checkpoint_frac)
            j.checkpoint_s = cfg.ckpt_s;
        if ((rc = sim_trace_add_job(tr, &j, err)) != AIQ_OK)
            return rc;
        i++;
    }
    return rc;
}
