/* q_int.h -- private layout of the queue core, shared by the queue/ sources only.
 * Cross-file symbols carry the q__ prefix. */
#ifndef AIQ_Q_INT_H
#define AIQ_Q_INT_H

#include "queue/queue.h"

#include <math.h>

#define Q__NBUCKET (Q_MAX_GPUS + 1)
/* Per-replica caps, so that replicas x size never overflows int64. */
#define Q__MAX_GPU_MEM (1LL << 30)    /* MiB per GPU (1 EiB) */
#define Q__MAX_CPU (1LL << 40)        /* millicores per replica */
#define Q__MAX_MEM (1LL << 52)        /* bytes per replica (4 PiB) */
#define Q__MEMO_SLOTS 4096

/* A resource vector in quota units (q_res order). */
typedef struct { int64_t v[Q__NRES]; } q__res;

/* Job shapes the estimate remembers as unable to backfill (eta.c). */
#define Q__BFMEMO 16

/* A timed event (a job's end). reserve(): aux = placement offset of a
 * just-admitted job, -1 for a running one. eta.c: an end gives back the
 * aux (> 0) entries of st->epl from job (an offset); aux -1 is a
 * quota-delayed start taking its GPUs (job = its order index); aux2 =
 * radix key. */
typedef struct q__ev {
    double t;
    int32_t job;
    int32_t aux;
    uint64_t aux2;
} q__ev;

/* An owner's events in the estimate (eta.c): time and usage change (a
 * start adds, an end frees; kept in the entry: a job's record would be a
 * cache miss per event). h[0..n) is a binary min-heap, h[n..m) events not
 * yet sorted in; pos sums the unapplied starts. Kept across cycles. */
typedef struct q__oend { double t; q__res need; } q__oend;
typedef struct q__oheap { q__oend *h; size_t cap; int n, m; q__res pos; } q__oheap;

/* The estimate's per-node capacity (eta_nodes.c). A node as the
 * simulation sees it: its free whole GPUs (below 1 it is in no list; a
 * quota-delayed start may take it below 0), its cell (-1: not simulated)
 * and its links in its cell's list of nodes with as many free. */
typedef struct q__enode { int32_t free, ngpus, cell, prev, next; } q__enode;
/* A cell: the simulated nodes of one domain with one GPU model. Lists and
 * counts by free GPUs (1..Q_MAX_GPUS), nodes by size (for "ever fits"),
 * and masks of the non-empty ones (bit c-1 for c GPUs). */
typedef struct q__ecell {
    int32_t dom, model, first;
    uint64_t mask, smask;
    int32_t head[Q__NBUCKET], cnt[Q__NBUCKET], size[Q__NBUCKET];
} q__ecell;
/* What one simulated or running job holds on one node (whole GPUs). */
typedef struct q__epl { int32_t node, gpus; } q__epl;

/* Working copy of one node for this cycle. Bucket lists hold the
 * schedulable nodes of a domain by their count of wholly free GPUs. */
typedef struct q__node {
    int64_t tot[Q_MAX_GPUS], used[Q_MAX_GPUS];
    int64_t cpu_free, mem_free;
    int64_t res_cpu, res_mem;   /* held for the backfill reservation */
    uint64_t res_mask;          /* GPUs held for the reservation */
    /* Claimed by jobs that preempt (preempt.c): what they will take of
     * the room free now, so later jobs of the walk leave it alone. Always
     * excluded from fits, unlike the reservation. */
    uint64_t cl_mask;
    int64_t cl_cpu, cl_mem;
    int32_t ngpus, nfree, dom, model;
    int32_t prev, next, bucket; /* bucket -1: in no list */
    bool sched;
    bool frag_ok;               /* frag is this node's FGD measure now */
    double frag;                /* (frag.c), recomputed when it changed */
} q__node;

typedef struct q__nodeset {
    q__node *n;
    int nn;
    int ndom;
    int32_t *head;      /* ndom * Q__NBUCKET list heads, -1 = empty */
    int64_t *dom_free;  /* wholly free GPUs per domain (schedulable) */
    size_t cap_n, cap_head, cap_dom;
} q__nodeset;

/* What one replica needs, with the job's constraints resolved. */
typedef struct q__req {
    int32_t dom;        /* domain id, -1 = any */
    int32_t model;      /* model id, -1 = any */
    int32_t replicas, gpus;
    int64_t gmem, cpu, mem;
    int32_t milli;      /* a fractional share (q_job.gpu_milli), 0 none */
} q__req;

/* MiB one replica's share takes on a GPU of tot MiB: its fixed gmem, or
 * its fraction of that GPU rounded down (at least 1 MiB). Down, so that
 * fractions adding up to one GPU fit on it: 0.1 + 0.9 of 32768 MiB is
 * 3276 + 29491; rounded up it would be 3277 + 29492, one MiB too many. */
static inline int64_t q__share_mib(int32_t milli, int64_t gmem, int64_t tot) {
    if (milli <= 0) return gmem;
    /* floor(tot x milli / 1000) without overflow: GPU sizes are the
     * caller's and may be near INT64_MAX */
    int64_t m = tot / 1000 * milli + tot % 1000 * milli / 1000;
    return m > 0 ? m : 1;
}
/* Is this a GPU share (no whole GPUs, some GPU memory or fraction)? */
static inline bool q__is_share(int32_t gpus, int64_t gmem, int32_t milli) {
    return gpus == 0 && (gmem > 0 || milli > 0);
}
/* Whole-GPU equivalents of one replica: a share counts as one. */
static inline int64_t q__units(int32_t gpus, int64_t gmem, int32_t milli) {
    return gpus > 0 ? gpus : q__is_share(gpus, gmem, milli);
}

/* The clock a waiting job's time factors (wait.hours, job.age_hours) are
 * read at: now, or with a rescore interval I the start of the interval
 * now is in (floor(now / I) * I, intervals counted from the Unix epoch),
 * so that a score is the same at every cycle of the interval, whichever
 * cycles compute it. */
static inline double q__score_clock(const struct q_policy *p, double now) {
    double i = p->rescore_interval_s;
    return i > 0 && isfinite(now) ? floor(now / i) * i : now;
}

/* Distinct node shapes (for "can this ever run" checks). */
typedef struct q__shape {
    int32_t dom, model, ngpus, count;
    int64_t tot[Q_MAX_GPUS]; /* sorted, largest first */
    int64_t cpu, mem;
} q__shape;

/* Interned strings: ids are stable for the life of the state. */
typedef struct q__intern {
    char **s;
    int n;
    size_t cap;
    int32_t *tab;
    size_t tcap;        /* power of two */
} q__intern;

/* Per-job cache, kept across cycles and indexed by job slot. */
typedef struct q__jc {
    char *uid;          /* owned copy; NULL = no entry */
    uint64_t ident;     /* q_job.ident when the entry was taken, 0 = none */
    uint64_t kpre[2];   /* the key's first 16 bytes, big-endian: ties sort
                         * on these before the key itself (cold) */
    uint64_t gen;
    double score;
    int32_t base_level; /* from the scorer */
    int32_t level;      /* after starvation promotion */
    int32_t dom, model; /* interned constraints, -1 any */
    int32_t oslot;      /* in the side table (st->ojc): its old slot */
    int32_t user, group; /* the job's indexes when scored: an index can
                          * move (a group added) while the job does not */
    bool pending;
    bool score_failed;
    bool promoted;
    bool dirty;         /* needs re-insertion into the order this cycle */
} q__jc;

/* One pending job in queue order, with everything the walk and the
 * estimate need, so that both stream through memory instead of chasing
 * job pointers. Kept across cycles (clean jobs keep their record). */
typedef struct q__orec {
    int32_t slot;       /* job index this cycle */
    int32_t level;
    double score;
    double queued;
    double pred;        /* planned runtime, 0 = unknown */
    int64_t gmem, cpu, mem;
    int32_t replicas, gpus;
    int32_t user, group, dom, model;
    uint64_t fit_key;   /* == st->fit_key: known not to be rejected */
    int8_t bad;         /* invalid field code, -1 = valid */
    uint8_t suspended, promoted, score_failed;
    uint8_t nonpre;     /* non-preemptible: may not borrow */
    uint8_t held;       /* this cycle, not yet reached by the walk: its
                         * need is in st->gpend (quota.c) */
    int16_t milli;      /* q_job.gpu_milli (fits the record's padding) */
} q__orec;

/* Fit memo, cleared every cycle. Capacity only shrinks during a walk, so
 * a request that failed fails again until the walk ends (used == 1); a
 * "fits now" answer holds until the next admission (used == 2, epoch). */
typedef struct q__memo_key {
    q__req r;
    int32_t avoid;
    int32_t used;      /* 0 empty, 1 known to fail, 2 fits at `epoch` */
    uint32_t epoch;
} q__memo_key;

/* A job's size as the queue counts it: a running job holds `replicas`; a
 * pending elastic job starts as a gang of its minimum. */
static inline int q__min_size(const struct q_job *j) {
    return j->min_replicas > 0 ? j->min_replicas : j->replicas;
}
static inline int q__size(const struct q_job *j) {
    return j->state == Q_JOB_PENDING && j->max_replicas > 0 ? q__min_size(j) : j->replicas;
}

/* Per running job (indexed like st->runl), filled when this cycle needs to
 * make room or grow (preempt.c). */
typedef struct q__rinf {
    double score;
    int32_t level;
    int32_t size;       /* replicas after this cycle's shrink or growth */
    int32_t live;       /* soon set: replicas not released there */
    int32_t by;         /* the job it was preempted or shrunk for, -1 */
    uint8_t reason;     /* q_reason of its action */
    uint8_t victim;     /* preempted this cycle */
    uint8_t prot;       /* protected from whole preemption */
    uint8_t scored;
} q__rinf;

/* A way to make room: a whole gang (rep -1) or one replica of an elastic
 * job above its minimum (rep = its index, taken from the top). */
typedef struct q__cand {
    double lost;        /* GPU-hours of work it would lose */
    int64_t gpus;       /* GPUs it frees */
    int32_t k;          /* index into st->runl */
    int32_t rep;
    int32_t level;
    int32_t nrel;       /* replicas released (to put them back) */
    uint8_t why;        /* q_reason for the victim */
    uint8_t on;         /* released in the soon set right now */
} q__cand;

/* Bounds of the victim search (docs/queue.md, "Preemption"). */
#define Q__MAX_SEARCH 16      /* victim searches per cycle */
#define Q__MAX_CAND 256       /* cheapest candidates a gang's search weighs */
#define Q__MAX_GROW 256       /* replicas added by growth per cycle */

struct q_state {
    struct q_alloc a;
    size_t bytes, peak;

    q__intern doms, models;

    /* cross-cycle caches */
    q__jc *jc;  size_t cap_jc;  int njc;
    q__jc *ojc; size_t cap_ojc; int nojc;
    int32_t *order; size_t cap_order; int norder;  /* output: slots */
    q__orec *ord, *ord2; size_t cap_ord, cap_ord2; /* the order itself */
    uint64_t gen;
    bool warm;          /* caches are valid */
    double rescore_at;  /* with a rescore interval: the interval's start
                         * the cached scores were taken at (q__score_clock) */
    uint64_t levels;    /* ... and the users' and groups' levels then */
    double cl_free, cl_total;   /* whole GPUs at cycle start (factors) */

    /* per-cycle scratch (grow only) */
    q__nodeset ns, fut;
    q__shape *shapes; size_t cap_shapes; int nshapes;
    int32_t *shape_tab; size_t cap_shape_tab;
    q__res *uin, *gin;  size_t cap_uin, cap_gin;   /* quota in use */
    double *ubud, *gbud; size_t cap_ubud, cap_gbud; /* budget committed */
    /* Start-of-cycle GPUs in use and budget committed: the values factors
     * read (the walk's admissions change uin/gin/ubud/gbud, not these). */
    int64_t *ugpu0, *ggpu0; size_t cap_ugpu0, cap_ggpu0;
    double *ubud0, *gbud0; size_t cap_ubud0, cap_gbud0;
    /* 1 = no concurrent limit and no budget: quota checks skip it */
    uint8_t *uopen, *gopen; size_t cap_uopen, cap_gopen;
    struct q_result *res; size_t cap_res;          /* 64-byte aligned */
    void *res_raw;                                 /* what was allocated */
    struct q_place *places; size_t cap_places; int nplaces;
    int32_t *tmp1, *tmp2, *tmp3; size_t cap_tmp1, cap_tmp2, cap_tmp3;
    int32_t *otab; size_t cap_otab;                /* old uid hash */
    int32_t *kfit; size_t cap_kfit;                /* fit count per node */
    int32_t *touched; size_t cap_touched;
    int64_t *dsum; size_t cap_dsum;                /* per domain */
    int32_t *doms_try; size_t cap_doms_try;
    q__ev *heap; size_t cap_heap;
    int32_t *admitted; size_t cap_admitted; int nadmitted; /* order idx */
    struct q_result *rseq; size_t cap_rseq;        /* results in order */
    int32_t *runl; size_t cap_runl; int nrunl;     /* running jobs */
    q__memo_key *memo; size_t cap_memo; int nmemo;
    uint32_t epoch;     /* bumped by every admission in the walk */
    uint64_t fit_key;   /* node shapes + input generation of this cycle */
    /* The estimate's owners (eta.c), per scope (0 user, 1 group): usage
     * as the simulation goes, GPU-hours charged before and after the
     * budget window ends, and a leftist heap of the owner's jobs' ends
     * (roots into a pool of nodes). eta_q: some owner has a limit. */
    q__res *einu[2]; size_t cap_einu[2];
    double *ebud[2]; size_t cap_ebud[2];   /* 2 per owner: pre, post */
    double *eclk[2]; size_t cap_eclk[2];   /* the owner's usage is as of */
    uint8_t *elim[2]; size_t cap_elim[2];  /* bit 0 quota, bit 1 budget */
    q__res *elimv[2]; size_t cap_elimv[2]; /* limits, borrowing in; -1 none */
    q__oheap *eh[2]; size_t cap_eh[2]; int neh[2]; /* per owner, kept */
    bool eta_q;
    /* per-node capacity of the estimate (eta_nodes.c): nodes, cells,
     * cells grouped by domain (edc[edoff[d] .. edoff[d+1]), the domains
     * that have cells (edl), what jobs hold (epl), a cell lookup table */
    q__enode *en; size_t cap_en;
    q__ecell *ec; size_t cap_ec; int nec;
    int32_t *edc, *edoff, *edl; size_t cap_edc, cap_edoff, cap_edl; int nedl, endom;
    q__epl *epl; size_t cap_epl; int nepl;
    int32_t *etab; size_t cap_etab;
    /* radix heap for the estimate (eta.c): 65 buckets of events */
    q__ev *rb[65]; size_t cap_rb[65]; int nrb[65];
    uint64_t rb_last; int rb_size;
    /* The estimate as a resumable pass (eta.c): q_eta continues it after
     * the cycle when the input asked for lazy estimates. */
    int32_t *kof; size_t cap_kof;  /* lazy: job index -> order index */
    /* Decision and reason per order index (walk -> estimate), apart from
     * the records so that the walk leaves them clean (no write-back of
     * 100 bytes per job for 2 bytes of news). */
    uint8_t *dw; size_t cap_dw;
    /* After the reservation: per domain, the most free memory on one GPU
     * that is not held for it (an upper bound for the rest of the walk,
     * where free memory only shrinks). */
    int64_t *dgmax; size_t cap_dgmax;
    int64_t *dgfree; size_t cap_dgfree; /* same: wholly free GPUs, not held */
    /* Preemption and elastic jobs (preempt.c, grow.c). */
    bool any_term;      /* some running job is terminating or stopping */
    bool any_elastic;   /* some running job could shrink or grow */
    bool any_cohort;    /* some group borrows or lends */
    bool room_any;      /* this cycle may search for room at all */
    bool rinf_on;       /* rinf/rof are filled for this cycle */
    bool rscored;       /* running jobs are scored this cycle */
    bool soon_on;       /* the soon set exists this cycle */
    int nsoon_rel;      /* releases in the soon set (terminating, victims) */
    int nsearch;        /* victim searches this cycle */
    q__nodeset soon;    /* the nodes once terminating jobs and victims left */
    /* Scored placement (place.c, frag.c): Q__PM_LEGACY (binpack/spread by
     * the callers' flag), Q__PM_FGD or Q__PM_SCORE (in->placer). */
    int pmode;
    const q_placer *placer;
    const struct q_node *innodes;           /* this cycle's input nodes */
    struct q_task_class *wl; size_t cap_wl; int nwl; /* FGD workload */
    double wsum;                            /* its total weight */
    int nplace_err;                         /* placer failures this cycle */
    q__rinf *rinf; size_t cap_rinf;
    q__res *uadj, *gadj; size_t cap_uadj, cap_gadj; /* quota that will go */
    int ncoh;                          /* cohorts 1..ncoh-1 */
    q__res *ccap, *cnow, *csoon; size_t cap_ccap, cap_cnow, cap_csoon;
    q__res *gguar; size_t cap_gguar;   /* per group: never-lent part, -1 */
    q__res *gnp, *gnpadj; size_t cap_gnp, cap_gnpadj; /* non-preemptible use */
    q__res *gpend; size_t cap_gpend;   /* per group: held pending demand */
    /* Per group and per cohort: held jobs the walk reached that wait for
     * room (capacity, or behind the head). */
    int32_t *gblk, *cblk; size_t cap_gblk, cap_cblk;
    q__cand *cand; size_t cap_cand; int ncand;
    q__res sneed;       /* the need of the job being searched for */
    int32_t *cidx; size_t cap_cidx; int ncidx; /* the candidates a search weighed */
    struct q_action *acts; size_t cap_acts; int nacts;
    int32_t *gcand; size_t cap_gcand;  /* growth candidates */
    bool out_valid;     /* the last cycle succeeded; q_eta may run */
    bool eta_lazy;      /* estimates go to res[] on demand */
    bool eta_started;   /* events are loaded (eta_begin ran) */
    bool eta_failed;    /* out of memory mid-estimate */
    bool eta_strict, eta_stuck;
    int eta_k;          /* next order index to estimate */
    int eta_head;       /* reserved job, -1 */
    double eta_tres, eta_t;
    /* EASY backfill in the estimate (eta.c): the simulated head that
     * waits for its reservation (order index, -1 none) and its start; per
     * node it takes then, the GPUs left there after it (ebres: node,
     * gpus); the ends popped to find that start and not yet carried out
     * (ela from ela0, a FIFO); the look-ahead's undo log (eundo: node,
     * the GPUs it gained); the jobs deferred behind the head (edef:
     * order index << 2 | times deferred; edef2 while they are estimated,
     * eflush, eagain the times of the one estimated). */
    bool eta_bf, eflush;
    int ebk;
    double ebt;
    q__epl *ebres, *ebsav; size_t cap_ebres, cap_ebsav; int nebres;
    int32_t *edef, *edef2; size_t cap_edef, cap_edef2; int nedef, eagain;
    uint64_t bfm[Q__BFMEMO]; int nbfm; /* shapes that could not backfill (eta.c) */
    q__ev *ela; size_t cap_ela; int nela, ela0;
    q__epl *eundo; size_t cap_eundo; int neundo;
};

/* ---- state.c ------------------------------------------------------------ */
void *q__alloc(q_state *st, size_t size);
void q__free(q_state *st, void *p);
/* Grows *arr to at least need elements of size elem (contents kept),
 * to exactly need when exact. Returns 0, or -1 when out of memory (array
 * unchanged). */
int q__grow(q_state *st, void *arr, size_t *cap, size_t need, size_t elem, bool exact);
#define Q_GROW(st, arr, cap, need) \
    ((size_t)(need) <= (cap) ? 0 : q__grow((st), &(arr), &(cap), (need), sizeof *(arr), false))
/* Q_GROW for an open-addressing table: need is a power of two and the
 * table's cap stays one (its cap - 1 is the hash mask). */
#define Q_GROW_P2(st, arr, cap, need) \
    ((size_t)(need) <= (cap) ? 0 : q__grow((st), &(arr), &(cap), (need), sizeof *(arr), true))
uint32_t q__hash(const char *s);
/* Interns s (NULL = ""); returns its id or -1 when out of memory. */
int32_t q__intern_id(q_state *st, q__intern *t, const char *s);
/* Looks s up without adding; -1 when absent. */
int32_t q__intern_find(const q__intern *t, const char *s);
void q__intern_free(q_state *st, q__intern *t);
/* A job's constraint: -1 when s is NULL or "" (any), the id when some node
 * has that name, Q__UNKNOWN otherwise. */
#define Q__UNKNOWN (-2)
int32_t q__resolve(const q__intern *t, const char *s);
/* Stable merge sort of a[0..n) with cmp(ctx, x, y) < 0 when x goes first. */
void q__msort(int32_t *a, int n, int32_t *tmp,
              int (*cmp)(const void *ctx, int32_t x, int32_t y),
              const void *ctx);

void q__heapify(q__ev *h, int n);
q__ev q__heap_pop(q__ev *h, int *n);

/* ---- place.c ------------------------------------------------------------ */
int q__nodeset_build(q_state *st, const struct q_input *in, aiq_err *err);
int q__nodeset_copy(q_state *st, q__nodeset *dst, const q__nodeset *src);
int q__shapes_build(q_state *st);
/* Replicas of r that fit node n now (capped at r->replicas); avoid skips
 * what the reservation holds. */
int q__node_fit(const q__node *n, const q__req *r, bool avoid);
enum { Q__PM_LEGACY = 0, Q__PM_FGD, Q__PM_SCORE };
/* frag.c: sets st->pmode, placer and the FGD workload for this cycle (the
 * input's, or the classes of its jobs). Returns 0, or -1 with err set
 * (AIQ_EINVAL naming workload[i].field, AIQ_ENOMEM). */
int q__place_setup(q_state *st, const struct q_input *in, aiq_err *err);
/* The FGD measure of a node state (see q_frag_node) for st's workload. */
double q__frag(const q_state *st, const int64_t *tot, const int64_t *used, int ngpus,
               int64_t cpu_free, int64_t mem_free);
/* Places all replicas or none; appends r->replicas entries to st->places.
 * Returns 1 placed, 0 no fit, -1 out of memory. */
int q__place(q_state *st, q__nodeset *ns, const q__req *r, bool avoid,
             bool spread);
/* Would r fit on st->ns now (nothing is placed)? Cached per request until
 * the next admission (st->epoch). Returns 1, 0, or -1 out of memory. */
int q__probe(q_state *st, const q__req *r, bool avoid, bool spread);
/* Returns resources of one replica to node p->node. */
void q__release(q__nodeset *ns, const struct q_place *p, const q__req *r);
/* Takes the resources of one replica at placement p (the inverse of
 * q__release; the caller knows they are free). */
void q__occupy(q__nodeset *ns, const struct q_place *p, const q__req *r);
/* Reject check against the cluster's node shapes. Returns 0 when some
 * domain can hold the gang, else fills res (reason, numbers) and returns 1. */
int q__reject_check(q_state *st, const q__req *r, struct q_result *res);
void q__memo_clear(q_state *st);

/* ---- quota.c ------------------------------------------------------------ */
void q__need(const struct q_job *j, q__res *need);
void q__need_rec(const q__orec *o, q__res *need);
double q__rec_gpu_hours(const q__orec *o);
double q__pred_runtime(const struct q_job *j);
/* Uses st->runl (the running jobs). */
int q__quota_init(q_state *st, const struct q_input *in);
/* Limit of resource r (q_res) in q; -1 = unlimited. */
int64_t q__lim_of(const struct aiq_quota *q, int r);
/* Quota/budget check for pending job o plus `extra` (the reserved job's
 * need when it shares the user or group; NULL otherwise) and extra_hours.
 * Returns 0 when it fits, else fills res (Q_R_QUOTA or Q_R_BUDGET) and
 * returns 1. */
int q__quota_check(q_state *st, const struct q_input *in, const q__orec *o,
                   const q__res *extra_u, const q__res *extra_g,
                   double extra_hours_u, double extra_hours_g,
                   struct q_result *res);
/* Rejects a job bigger than its quota or budget (returns 1). */
int q__quota_reject(const q_state *st, const struct q_input *in, const q__orec *o,
                    struct q_result *res);
void q__quota_commit(q_state *st, const struct q_input *in, const q__orec *o);
/* The same for an arbitrary amount (need, planned GPU-hours), e.g. one
 * replica of a growing job. */
void q__quota_add(q_state *st, const struct q_input *in, int user, int group,
                  const q__res *need, double hours, bool nonpre);
/* Quota check against the soon state: usage that is going away (st->uadj,
 * st->gadj) does not count. Budgets as in q__quota_check. */
int q__quota_check_soon(q_state *st, const struct q_input *in, const q__orec *o,
                        struct q_result *res);
/* Quota check for `need` on behalf of user/group (now state), e.g. one
 * more replica; nonpre: the job may not borrow. 0 = fits. nonpre in
 * q__quota_add/adj: the amount is a non-preemptible job's (cohort groups
 * keep those within their quota). */
int q__quota_fits(q_state *st, const struct q_input *in, int user, int group,
                  const q__res *need, double hours, bool nonpre);
/* Moves `need` of user/group into (sign +1) or out of (-1) the usage that
 * goes away in the soon state, keeping the cohorts' soon totals. */
void q__quota_adj(q_state *st, const struct q_input *in, int user, int group,
                  const q__res *need, int sign, bool nonpre);
/* 1 when group g (soon state) is within its quota with need added in
 * every borrowable resource; 1 when it has no cohort. */
int q__within_nominal(const q_state *st, const struct q_input *in, int g,
                      const q__res *need);
/* Pending demand a cohort group holds against borrowers (docs/queue.md
 * "Borrowing"): q__pend_wants says whether pending job o (valid, not
 * suspended, not rejected: the caller checks that) may hold its need for
 * its group: its group lends in a cohort and o fits its quota on its own.
 * q__pend_hold adds (+1) or drops (-1) o's need in st->gpend; the walk
 * drops it when it reaches o. */
bool q__pend_wants(const q_state *st, const struct q_input *in, const q__orec *o);
void q__pend_hold(q_state *st, const q__orec *o, int sign);
/* A held job o the walk reached waits for room: q__lender_blocked
 * counts it; q__blocked_lenders says whether other groups of o's cohort
 * have such jobs; q__would_borrow whether o, started now, puts its group
 * above its quota (false outside cohorts). */
void q__lender_blocked(q_state *st, const struct q_input *in, const q__orec *o);
bool q__blocked_lenders(const q_state *st, const struct q_input *in, const q__orec *o);
bool q__would_borrow(const q_state *st, const struct q_input *in, const q__orec *o);
/* 1 when group g (soon state) uses more than its quota in some
 * borrowable resource; need (NULL: any) limits that to the resources
 * need asks for (what a reclaim can take back for it). */
int q__borrowing(const q_state *st, const struct q_input *in, int g, const q__res *need);
/* A job's need for `replicas` replicas (jobs: 1 when whole). */
void q__need_n(const struct q_job *j, int replicas, bool whole, q__res *need);

/* ---- order.c ------------------------------------------------------------ */
/* Matches jobs to the cache, scores what is dirty and rebuilds the order. */
int q__order_update(q_state *st, const struct q_input *in, const q_scorer *sc,
                    int *nscored, aiq_err *err);
void q__cache_clear(q_state *st);

/* ---- preempt.c ---------------------------------------------------------- */
/* Scans the running jobs once per cycle (after check_input): sets
 * any_term, any_elastic and room_any. */
void q__room_scan(q_state *st, const struct q_input *in);
/* For pending job o that cannot start now (no room, or its quota is
 * full): tries to make room, first from jobs already being stopped, then
 * by choosing victims. Returns 1 when
 * o now waits for room made for it (res filled: Q_R_PREEMPTING), 0 when
 * nothing can be done, -1 out of memory. */
int q__make_room(q_state *st, const struct q_input *in, const q_scorer *sc,
                 q__orec *o, const q__req *req, bool spread, struct q_result *res);
/* An admission in the walk also happens in the soon set. */
void q__soon_admit(q_state *st, int off, const q__req *r);
/* Elastic growth after the walk (grow into idle capacity). Returns 0 or
 * -1 out of memory. */
int q__grow_jobs(q_state *st, const struct q_input *in, const q_scorer *sc,
                 bool spread);
/* Writes the actions' results into st->res (after the scatter). */
void q__actions_results(q_state *st);
/* Level and score of running job runl[k], scoring it when needed. */
void q__score_running(q_state *st, const struct q_input *in, const q_scorer *sc);
/* Fills running-job info (rinf) for this cycle. -1 out of memory. */
int q__rinf_init(q_state *st, const struct q_input *in);
int q__act_push(q_state *st, const struct q_action *a);

/* ---- order.c (factors) --------------------------------------------------- */
/* Fills f[Q_NFACTORS] for job j (pending or running) at the start of the
 * cycle. */
void q__fill_factors(const q_state *st, const struct q_input *in, int j, double *f);

/* ---- eta_nodes.c -------------------------------------------------------- */
/* Loads the nodes as the walk left them (st->ns: free whole GPUs of the
 * schedulable nodes) into the estimate's per-node capacity; empties
 * st->epl. Returns 0, or -1 out of memory. */
int q__en_begin(q_state *st);
/* Appends to st->epl what the n replicas at pl of job j hold (whole GPUs
 * by their masks, a share as one GPU, nodes outside the simulation left
 * out); *off and *cnt say where. Returns 0, or -1 out of memory. */
int q__en_hold(q_state *st, const struct q_job *j, const struct q_place *pl, int n,
               int32_t *off, int32_t *cnt);
/* Could o's gang fit the simulated nodes when all are empty (ever), or
 * now? Its GPU model and domain are respected, and a gang uses one
 * domain. A job without GPUs always fits. */
bool q__en_fits(const q_state *st, const q__orec *o, bool ever);
/* Starts o's gang: each replica on the node with the fewest free GPUs
 * that holds it, in the first domain that holds the whole gang; with
 * force, a replica no node holds takes its GPUs from the node with the
 * most free (below 0 if need be). Appends the entries to st->epl (*off,
 * *cnt). Returns 0, or -1 out of memory. */
int q__en_take(q_state *st, const q__orec *o, bool force, int32_t *off, int32_t *cnt);
/* Gives back the cnt entries of st->epl from off. */
void q__en_give(q_state *st, int32_t off, int32_t cnt);
/* Node i's free GPUs in the estimate, and setting them (to undo a
 * look-ahead; nodes outside the simulation are left alone). */
static inline int32_t q__en_free(const q_state *st, int32_t i) { return st->en[i].free; }
void q__en_set(q_state *st, int32_t i, int32_t free);

/* ---- eta.c -------------------------------------------------------------- */
/* Starts the estimate of this cycle (reserved job head at t_res). Eager:
 * runs it over the whole order into st->rseq; lazy: only records where to
 * start (q__eta_upto continues). Returns 0 or -1 out of memory. */
int q__eta_run(q_state *st, const struct q_input *in, int head,
               double t_res);
/* Lazy mode: runs the estimate up to and including order index kend,
 * writing st->res[].eta. Returns 0 or -1 out of memory. */
int q__eta_upto(q_state *st, const struct q_input *in, int kend);

#endif
