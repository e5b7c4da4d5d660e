/* preempt.c -- making room for a pending job that cannot start now.
 *
 *   the soon set   a second copy of the nodes as they will be once the
 *                  jobs being stopped (terminating, stopping replicas, this
 *                  cycle's victims) are gone; built on the first need in a
 *                  cycle and kept in step with the walk's admissions;
 *   claims         a job that room is being made for takes its place in
 *                  the soon set; where the soon set then has less room
 *                  than the nodes have now, the difference is claimed
 *                  (q__node.cl_*), so later jobs of the walk cannot take
 *                  what it will need;
 *   the search     candidates (whole gangs it may preempt by the policy's
 *                  rules, replicas of elastic jobs above their minimum),
 *                  cheapest first; the set is found by releasing a prefix
 *                  (binary search on its length) and then putting back,
 *                  most expensive first, every candidate it can do
 *                  without; one-replica jobs compare the cheapest set per
 *                  node. Bounded: Q__MAX_SEARCH searches per cycle,
 *                  Q__MAX_CAND candidates each (docs/queue.md);
 *   actions        what the caller carries out (q_output.actions).
 *
 * Nothing here runs unless the cycle can make room at all (st->room_any:
 * a preemption rule in the policy, a cohort that lends, an elastic job
 * above its minimum, or a job being stopped). */
#include "queue/q_int.h"

#include <math.h>
#include <string.h>

static const struct q_job *rjob(const q_state *st, const struct q_input *in, int k) {
    return &in->jobs[st->runl[k]];
}

/* What one replica of running job j needs (for release and occupy). */
static void req_of_job(const struct q_job *j, q__req *r) {
    memset(r, 0, sizeof *r);
    r->dom = r->model = -1;
    r->replicas = 1;
    r->gpus = j->gpus;
    r->gmem = j->gpu_memory_mib;
    r->milli = j->gpu_milli;
    r->cpu = j->cpu_milli;
    r->mem = j->memory_bytes;
}

void q__room_scan(q_state *st, const struct q_input *in) {
    const struct q_policy *p = &in->policy;
    st->rinf_on = st->rscored = st->soon_on = false;
    st->nsoon_rel = st->nsearch = st->nacts = 0;
    bool pre = p->preempt_lower || p->preempt_within || (st->any_cohort && !p->no_reclaim);
    st->room_any = st->any_term || (in->actions_on && (pre || st->any_elastic));
}

int q__act_push(q_state *st, const struct q_action *a) {
    if (Q_GROW(st, st->acts, st->cap_acts, (size_t)st->nacts + 1)) return -1;
    st->acts[st->nacts++] = *a;
    return 0;
}

int q__rinf_init(q_state *st, const struct q_input *in) {
    if (st->rinf_on) return 0;
    if (Q_GROW(st, st->rinf, st->cap_rinf, (size_t)st->nrunl + 1)) return -1;
    const struct q_policy *p = &in->policy;
    for (int k = 0; k < st->nrunl; k++) {
        const struct q_job *j = rjob(st, in, k);
        q__rinf *ri = &st->rinf[k];
        memset(ri, 0, sizeof *ri);
        ri->size = j->replicas;
        ri->live = j->terminating ? 0 : j->replicas - (j->stopping > 0 ? j->stopping : 0);
        ri->by = -1;
        ri->level = in->policy.nlevels - 1;
        /* The protection: the policy's minimum runtime, or the job's own
         * up to the policy's cap; the hourly limit; the admin's flag. An
         * unknown start counts as just started. */
        double jm = j->min_runtime_s < p->max_job_min_runtime_s ? j->min_runtime_s : p->max_job_min_runtime_s;
        double eff = jm > p->min_runtime_s ? jm : p->min_runtime_s;
        double ran = j->started > 0 && in->now > j->started ? in->now - j->started : 0;
        ri->prot = j->non_preemptible || j->terminating || (eff > 0 && ran < eff) ||
                   (p->max_preemptions_per_hour > 0 && j->preemptions_1h >= p->max_preemptions_per_hour);
    }
    st->rinf_on = true;
    return 0;
}

/* Scores every running job once per cycle: the same factors and scorer
 * as pending jobs (waited 0 hours, attained including this run). */
void q__score_running(q_state *st, const struct q_input *in, const q_scorer *sc) {
    if (st->rscored) return;
    int nl = in->policy.nlevels;
    for (int k = 0; k < st->nrunl; k++) {
        q__rinf *ri = &st->rinf[k];
        const struct q_job *j = rjob(st, in, k);
        double f[Q_NFACTORS];
        q__fill_factors(st, in, st->runl[k], f);
        ri->score = j->priority;
        ri->level = 0;
        if (sc && sc->score && sc->score(sc->ctx, f, &ri->score) != 0) ri->score = 0;
        if (isnan(ri->score)) ri->score = 0;
        if (sc && sc->level) {
            int lv = 0;
            if (sc->level(sc->ctx, f, &lv) != 0 || lv < 0 || lv >= nl) lv = nl - 1;
            ri->level = lv;
        }
        ri->scored = 1;
    }
    st->rscored = true;
}

/* ---- the soon set --------------------------------------------------------- */

static void release_top(q_state *st, const struct q_input *in, const struct q_job *j, int from,
                        int to, bool whole) {
    q__req rq;
    req_of_job(j, &rq);
    for (int r = from; r < to; r++) q__release(&st->soon, &j->placement[r], &rq);
    q__res need;
    q__need_n(j, to - from, whole, &need);
    q__quota_adj(st, in, j->user, j->group, &need, +1, j->non_preemptible);
}

static int soon_begin(q_state *st, const struct q_input *in) {
    if (st->soon_on) return 0;
    if (q__nodeset_copy(st, &st->soon, &st->ns) ||
        Q_GROW(st, st->uadj, st->cap_uadj, (size_t)in->nusers + 1) ||
        Q_GROW(st, st->gadj, st->cap_gadj, (size_t)in->ngroups + 1) ||
        q__rinf_init(st, in))
        return -1;
    for (int i = 0; i < st->soon.nn; i++) {
        q__node *n = &st->soon.n[i];
        n->res_mask = n->cl_mask = 0;
        n->res_cpu = n->res_mem = n->cl_cpu = n->cl_mem = 0;
    }
    memset(st->uadj, 0, (size_t)in->nusers * sizeof *st->uadj);
    memset(st->gadj, 0, (size_t)in->ngroups * sizeof *st->gadj);
    if (st->any_cohort) memcpy(st->csoon, st->cnow, (size_t)st->ncoh * sizeof *st->csoon);
    st->soon_on = true;
    /* Jobs being stopped leave their room to whoever it was made for. */
    for (int k = 0; k < st->nrunl && st->any_term; k++) {
        const struct q_job *j = rjob(st, in, k);
        q__rinf *ri = &st->rinf[k];
        if (j->terminating) {
            release_top(st, in, j, 0, j->replicas, true);
            ri->size = 0;
            st->nsoon_rel++;
        } else if (j->stopping > 0 && j->stopping < j->replicas) {
            release_top(st, in, j, j->replicas - j->stopping, j->replicas, false);
            st->nsoon_rel++;
        }
    }
    return 0;
}

void q__soon_admit(q_state *st, int off, const q__req *r) {
    if (!st->soon_on) return;
    for (int k = off; k < off + r->replicas; k++) q__occupy(&st->soon, &st->places[k], r);
}

/* After a job took its place in the soon set: where the soon set has less
 * room than the nodes now, that room is claimed on the nodes now. */
static void claim_nodes(q_state *st, int off, int end) {
    for (int k = off; k < end; k++) {
        int i = st->places[k].node;
        q__node *n = &st->ns.n[i];
        const q__node *s = &st->soon.n[i];
        uint64_t m = 0;
        for (int g = 0; g < n->ngpus; g++)
            if (s->used[g] > n->used[g]) m |= 1ull << g;
        n->cl_mask = m;
        n->cl_cpu = n->cpu_free > s->cpu_free ? n->cpu_free - s->cpu_free : 0;
        n->cl_mem = n->mem_free > s->mem_free ? n->mem_free - s->mem_free : 0;
    }
    st->epoch++; /* cached "fits" answers are stale */
}

/* ---- checks ---------------------------------------------------------------- */

static bool gpu_room_soon(const q__nodeset *ns, const q__req *r) {
    if (r->gpus <= 0) return true;
    if (r->gpus > Q_MAX_GPUS || r->replicas < 1) return false;
    int64_t want = (int64_t)r->gpus * r->replicas;
    if (r->dom >= 0) return r->dom < ns->ndom && ns->dom_free[r->dom] >= want;
    for (int d = 0; d < ns->ndom; d++)
        if (ns->dom_free[d] >= want) return true;
    return false;
}

/* Would o start in the soon set as it is now (quota and nodes)? Returns
 * 1, 0, or -1 out of memory. Nothing is placed. */
static int fits_soon(q_state *st, const struct q_input *in, const q__orec *o, const q__req *req,
                     bool spread) {
    struct q_result tmp;
    memset(&tmp, 0, sizeof tmp);
    if (q__quota_check_soon(st, in, o, &tmp)) return 0;
    if (!gpu_room_soon(&st->soon, req)) return 0;
    int off = st->nplaces;
    int rc = q__place(st, &st->soon, req, false, spread);
    if (rc == 1) {
        while (st->nplaces > off) q__release(&st->soon, &st->places[--st->nplaces], req);
    }
    return rc;
}

/* ---- candidates -------------------------------------------------------------- */

static void cand_release(q_state *st, const struct q_input *in, q__cand *c) {
    const struct q_job *v = rjob(st, in, c->k);
    q__rinf *ri = &st->rinf[c->k];
    if (c->rep >= 0) {
        release_top(st, in, v, c->rep, c->rep + 1, false);
        ri->live = c->rep;
        c->nrel = 1;
    } else {
        c->nrel = ri->live;
        release_top(st, in, v, 0, ri->live, true);
        ri->live = 0;
    }
    c->on = 1;
}

static void cand_undo(q_state *st, const struct q_input *in, q__cand *c) {
    const struct q_job *v = rjob(st, in, c->k);
    q__rinf *ri = &st->rinf[c->k];
    q__req rq;
    req_of_job(v, &rq);
    int from = c->rep >= 0 ? c->rep : 0, to = c->rep >= 0 ? c->rep + 1 : c->nrel;
    for (int r = from; r < to; r++) q__occupy(&st->soon, &v->placement[r], &rq);
    q__res need;
    q__need_n(v, to - from, c->rep < 0, &need);
    q__quota_adj(st, in, v->user, v->group, &need, -1, v->non_preemptible);
    ri->live = to;
    c->on = 0;
}

/* Can c be put back without breaking "replicas leave from the top"? */
static bool cand_undoable(const q_state *st, const q__cand *c) {
    const q__rinf *ri = &st->rinf[c->k];
    return c->rep < 0 ? ri->live == 0 : ri->live == c->rep;
}

/* Is one of job j's replicas on a node the request could use? */
static bool on_compatible(const q_state *st, const struct q_job *j, const q__req *req) {
    for (int r = 0; r < j->replicas; r++) {
        const q__node *n = &st->ns.n[j->placement[r].node];
        if (n->sched && (req->model < 0 || n->model == req->model) && (req->dom < 0 || n->dom == req->dom))
            return true;
    }
    return false;
}

static int64_t units_of(const struct q_job *j) {
    return q__units(j->gpus, j->gpu_memory_mib, j->gpu_milli);
}

/* GPU-hours of work a whole gang loses when stopped now: since its start,
 * or since its last checkpoint at most (an unknown interval: none). */
static double lost_work(const struct q_input *in, const struct q_job *j) {
    double ran = j->started > 0 && in->now > j->started ? in->now - j->started : 0;
    if (j->checkpointable) ran = j->checkpoint_interval_s > 0 && j->checkpoint_interval_s < ran
                                     ? j->checkpoint_interval_s : (j->checkpoint_interval_s > 0 ? ran : 0);
    return (double)((int64_t)j->replicas * units_of(j)) * ran / 3600.0;
}

typedef struct {
    const q_state *st;
    const struct q_input *in;
} cctx;

/* Cheapest first: elastic replicas (from the top of the job) before any
 * whole gang; gangs by lost work, then GPUs freed, then the lower level,
 * then the most recent start, then job index. */
static int cand_cmp(const void *vctx, int32_t x, int32_t y) {
    const cctx *c = vctx;
    const q__cand *a = &c->st->cand[x], *b = &c->st->cand[y];
    bool ua = a->rep >= 0, ub = b->rep >= 0;
    if (ua != ub) return ua ? -1 : 1;
    if (ua) {
        if (a->level != b->level) return a->level > b->level ? -1 : 1;
        if (a->k != b->k) return a->k < b->k ? -1 : 1;
        return a->rep > b->rep ? -1 : (a->rep < b->rep);
    }
    if (a->lost != b->lost) return a->lost < b->lost ? -1 : 1;
    if (a->gpus != b->gpus) return a->gpus < b->gpus ? -1 : 1;
    if (a->level != b->level) return a->level > b->level ? -1 : 1;
    const struct q_job *ja = rjob(c->st, c->in, a->k), *jb = rjob(c->st, c->in, b->k);
    if (ja->started != jb->started) return ja->started > jb->started ? -1 : 1;
    return a->k < b->k ? -1 : (a->k > b->k);
}

static int cand_push(q_state *st, const q__cand *c) {
    if (Q_GROW(st, st->cand, st->cap_cand, (size_t)st->ncand + 1)) return -1;
    st->cand[st->ncand++] = *c;
    return 0;
}

/* May o reclaim running job ri (whose group borrows what o needs)? Only
 * when ri would not come back ahead of o and take the room again: a job
 * of a lower level, or of o's level ranked behind it (a victim requeues
 * as the newest job, so a tie goes behind). One ranked ahead of o only
 * when o's cohort has lent what o's group needs (pool): the lenders'
 * held demand (quota.c) then keeps it from borrowing that back; nodes
 * are not held, so not when o waits for them (docs/queue.md
 * "Borrowing"). Never one of a higher level. */
static bool reclaimable(const q__rinf *ri, const q__orec *o, bool pool) {
    if (ri->level != o->level) return ri->level > o->level;
    return pool || ri->score <= o->score;
}

/* Lists what o may take (st->cand, in no order). Returns the count or -1
 * out of memory. */
static int gather(q_state *st, const struct q_input *in, const q__orec *o, const q__req *req,
                  const struct q_result *qr, bool qfail) {
    const struct q_policy *pol = &in->policy;
    bool lower = pol->preempt_lower, within = pol->preempt_within;
    q__res need;
    q__need_rec(o, &need);
    st->sneed = need;
    int coh = o->group >= 0 && o->group < in->ngroups && st->any_cohort ? in->groups[o->group].cohort : 0;
    bool nominal = coh > 0 && q__within_nominal(st, in, o->group, &need);
    bool borrower = coh > 0 && !nominal;
    bool reclaim = nominal && !pol->no_reclaim;
    bool need_user = qfail && qr->reason == Q_R_QUOTA && !qr->group_scope;
    bool need_group = qfail && qr->reason == Q_R_QUOTA && qr->group_scope;
    bool need_pool = qfail && qr->reason == Q_R_BORROW;
    st->ncand = 0;
    for (int k = 0; k < st->nrunl; k++) {
        const struct q_job *v = rjob(st, in, k);
        const q__rinf *ri = &st->rinf[k];
        if (v->terminating || ri->victim || ri->size != v->replicas || ri->live <= 0) continue;
        bool same_coh = coh > 0 && v->group >= 0 && v->group != o->group &&
                        in->groups[v->group].cohort == coh;
        bool qrel = (need_user && v->user == o->user) || (need_group && v->group == o->group) ||
                    (need_pool && same_coh && q__borrowing(st, in, v->group, &need));
        if (!qrel && !on_compatible(st, v, req)) continue;
        q__cand c;
        memset(&c, 0, sizeof c);
        c.k = k;
        c.level = ri->level;
        int minr = q__min_size(v);
        if (v->max_replicas > 0 && !v->non_preemptible && ri->live > minr) {
            c.why = Q_R_SHRUNK;
            c.gpus = units_of(v);
            for (int rep = ri->live - 1; rep >= minr && rep >= 0; rep--) {
                c.rep = rep;
                if (cand_push(st, &c)) return -1;
            }
        }
        if (ri->prot) continue;
        c.rep = -1;
        c.why = 0;
        if (same_coh && borrower) continue; /* a borrower takes from no one in its cohort */
        if (lower && ri->level > o->level) c.why = Q_R_PREEMPTED;
        else if (within && ri->level == o->level && o->score >= ri->score + pol->preempt_margin)
            c.why = Q_R_PREEMPTED_SCORE;
        else if (reclaim && same_coh && reclaimable(ri, o, need_pool) && q__borrowing(st, in, v->group, &need))
            c.why = Q_R_RECLAIMED;
        if (!c.why) continue;
        c.lost = lost_work(in, v);
        c.gpus = (int64_t)ri->live * units_of(v);
        if (cand_push(st, &c)) return -1;
    }
    return st->ncand;
}

/* Puts the candidates in cost order in st->cidx and keeps the cheapest
 * Q__MAX_CAND. Returns how many, or -1 out of memory. */
static int order_cands(q_state *st, const struct q_input *in) {
    if (Q_GROW(st, st->cidx, st->cap_cidx, (size_t)st->ncand + 1) ||
        Q_GROW(st, st->tmp1, st->cap_tmp1, (size_t)st->ncand + 1))
        return -1;
    for (int i = 0; i < st->ncand; i++) st->cidx[i] = i;
    cctx cc = {st, in};
    q__msort(st->cidx, st->ncand, st->tmp1, cand_cmp, &cc);
    return st->ncand < Q__MAX_CAND ? st->ncand : Q__MAX_CAND;
}

/* A reclaimed job must still belong to a group that borrows what the
 * preemptor needs (the ones released before it may have ended that). */
static bool still_helps(const q_state *st, const struct q_input *in, const q__cand *c) {
    if (c->why != Q_R_RECLAIMED) return true;
    return q__borrowing(st, in, rjob(st, in, c->k)->group, &st->sneed) != 0;
}

/* Sets the released prefix to the first m candidates of the order. */
static void set_prefix(q_state *st, const struct q_input *in, int *cur, int m) {
    while (*cur < m) {
        q__cand *c = &st->cand[st->cidx[(*cur)++]];
        if (still_helps(st, in, c) && (c->rep < 0 || st->rinf[c->k].live == c->rep + 1))
            cand_release(st, in, c);
    }
    while (*cur > m) {
        q__cand *c = &st->cand[st->cidx[--(*cur)]];
        if (c->on) cand_undo(st, in, c);
    }
}

/* Puts back, most expensive first, every released candidate o can do
 * without. Returns 0 or -1 out of memory. */
static int minimize(q_state *st, const struct q_input *in, const q__orec *o, const q__req *req,
                    bool spread, const int32_t *idx, int upto) {
    for (int i = upto - 1; i >= 0; i--) {
        q__cand *c = &st->cand[idx[i]];
        if (!c->on || !cand_undoable(st, c)) continue;
        cand_undo(st, in, c);
        int rc = fits_soon(st, in, o, req, spread);
        if (rc < 0) return -1;
        if (rc == 0) cand_release(st, in, c);
    }
    return 0;
}

/* Cost of the released set: any whole gang at all, GPUs, lost work. */
typedef struct {
    int whole;
    int64_t gpus;
    double lost;
} setcost;

static setcost cost_of(const q_state *st, const int32_t *idx, int upto) {
    setcost s = {0, 0, 0};
    for (int i = 0; i < upto; i++) {
        const q__cand *c = &st->cand[idx[i]];
        if (!c->on) continue;
        s.whole |= c->rep < 0;
        s.gpus += c->gpus;
        s.lost += c->lost;
    }
    return s;
}

static bool cheaper(setcost a, setcost b) {
    if (a.whole != b.whole) return a.whole < b.whole;
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    return a.lost < b.lost;
}

/* Releases, in order, the candidates of list idx[0..n) (all with a
 * replica on node i) until one replica of req fits there, then puts back
 * what it can do without. Returns 1 (released set left in place, *cost
 * set) or 0 (nothing released). */
static int eval_node(q_state *st, const struct q_input *in, const q__req *req, const int32_t *idx,
                     int n, int i, setcost *cost) {
    const q__node *nd = &st->soon.n[i];
    int upto = 0;
    for (int y = 0; y < n && q__node_fit(nd, req, false) < 1; y++) {
        q__cand *c = &st->cand[idx[y]];
        upto = y + 1;
        if (c->on || !still_helps(st, in, c)) continue;
        if (c->rep >= 0 && st->rinf[c->k].live != c->rep + 1) continue;
        cand_release(st, in, c);
    }
    if (q__node_fit(nd, req, false) < 1) {
        for (int y = upto - 1; y >= 0; y--)
            if (st->cand[idx[y]].on) cand_undo(st, in, &st->cand[idx[y]]);
        return 0;
    }
    for (int y = upto - 1; y >= 0; y--) {
        q__cand *c = &st->cand[idx[y]];
        if (!c->on || !cand_undoable(st, c)) continue;
        cand_undo(st, in, c);
        if (q__node_fit(nd, req, false) < 1) cand_release(st, in, c);
    }
    *cost = cost_of(st, idx, upto);
    return 1;
}

/* One replica, capacity only: the cheapest set per node. Candidates are
 * bucketed by the nodes they hold (every candidate, not only the
 * globally cheapest: freeing one node takes the jobs on that node), each
 * node's few sorted by cost; the cheapest node wins and is left released,
 * then minimized once more against the whole cluster (a gang victim frees
 * other nodes too). Linear in the candidates. Returns 1 found, 0 none, -1
 * out of memory. */
static int per_node(q_state *st, const struct q_input *in, const q__orec *o, const q__req *req,
                    bool spread, int nc) {
    int nn = st->soon.nn;
    size_t nent = 0;
    for (int x = 0; x < nc; x++)
        nent += st->cand[x].rep >= 0 ? 1 : (size_t)rjob(st, in, st->cand[x].k)->replicas;
    if (Q_GROW(st, st->tmp2, st->cap_tmp2, (size_t)nn + 2) ||
        Q_GROW(st, st->touched, st->cap_touched, (size_t)nn + 1) ||
        Q_GROW(st, st->cidx, st->cap_cidx, nent + 1) ||
        Q_GROW(st, st->tmp1, st->cap_tmp1, (size_t)nn + 1))
        return -1;
    /* counting sort of (node, candidate) pairs; a candidate once per node */
    int32_t *off = st->tmp2, *fill = st->tmp1, *ent = st->cidx;
    for (int i = 0; i <= nn; i++) off[i] = 0;
    for (int i = 0; i < nn; i++) st->touched[i] = -1;
    for (int x = 0; x < nc; x++) {
        const q__cand *c = &st->cand[x];
        const struct q_job *v = rjob(st, in, c->k);
        int from = c->rep >= 0 ? c->rep : 0, to = c->rep >= 0 ? c->rep + 1 : v->replicas;
        for (int r = from; r < to; r++) {
            int i = v->placement[r].node;
            if (st->touched[i] == x) continue;
            st->touched[i] = x;
            off[i + 1]++;
        }
    }
    for (int i = 0; i < nn; i++) off[i + 1] += off[i];
    for (int i = 0; i < nn; i++) {
        fill[i] = off[i];
        st->touched[i] = -1;
    }
    for (int x = 0; x < nc; x++) {
        const q__cand *c = &st->cand[x];
        const struct q_job *v = rjob(st, in, c->k);
        int from = c->rep >= 0 ? c->rep : 0, to = c->rep >= 0 ? c->rep + 1 : v->replicas;
        for (int r = from; r < to; r++) {
            int i = v->placement[r].node;
            if (st->touched[i] == x) continue;
            st->touched[i] = x;
            ent[fill[i]++] = x;
        }
    }
    cctx cc = {st, in};
    int best = -1;
    setcost bc = {1, INT64_MAX, INFINITY};
    for (int i = 0; i < nn; i++) {
        int n = off[i + 1] - off[i];
        const q__node *nd = &st->soon.n[i];
        if (n == 0 || !nd->sched || (req->model >= 0 && nd->model != req->model) ||
            (req->dom >= 0 && nd->dom != req->dom))
            continue;
        int32_t *list = &ent[off[i]];
        for (int a = 1; a < n; a++) /* a node holds a few jobs: insertion sort */
            for (int b = a; b > 0 && cand_cmp(&cc, list[b], list[b - 1]) < 0; b--) {
                int32_t t = list[b];
                list[b] = list[b - 1];
                list[b - 1] = t;
            }
        setcost c;
        if (!eval_node(st, in, req, list, n, i, &c)) continue;
        if (cheaper(c, bc)) {
            bc = c;
            best = i;
        }
        for (int y = n - 1; y >= 0; y--)
            if (st->cand[list[y]].on) cand_undo(st, in, &st->cand[list[y]]);
    }
    if (best < 0) return 0;
    setcost c;
    int32_t *list = &ent[off[best]];
    int n = off[best + 1] - off[best];
    if (!eval_node(st, in, req, list, n, best, &c)) return 0; /* cannot happen: it did */
    /* commit() walks st->cidx: leave the best node's list there */
    memmove(st->cidx, list, (size_t)n * sizeof *list);
    st->ncidx = n;
    return minimize(st, in, o, req, spread, st->cidx, n) ? -1 : 1;
}

/* Chooses victims for o in the soon set and leaves them released there.
 * Returns 1 found, 0 none, -1 out of memory. */
static int search(q_state *st, const struct q_input *in, const q_scorer *sc, q__orec *o,
                  const q__req *req, bool spread) {
    const struct q_policy *pol = &in->policy;
    struct q_result qr;
    memset(&qr, 0, sizeof qr);
    int qfail = q__quota_check_soon(st, in, o, &qr);
    if (qfail && qr.reason == Q_R_BUDGET) return 0; /* preemption gives no budget back */
    if (pol->preempt_lower || pol->preempt_within || (st->any_cohort && !pol->no_reclaim))
        q__score_running(st, in, sc);
    int nc = gather(st, in, o, req, &qr, qfail);
    if (nc <= 0) return nc;
    if (!qfail && req->replicas == 1) return per_node(st, in, o, req, spread, nc);
    if ((nc = order_cands(st, in)) < 0) return -1;
    st->ncidx = nc;
    /* Everything at once first: when that does not do, nothing does. */
    int cur = 0, rc;
    set_prefix(st, in, &cur, nc);
    if ((rc = fits_soon(st, in, o, req, spread)) <= 0) {
        set_prefix(st, in, &cur, 0);
        return rc;
    }
    /* The shortest prefix that does (more room never hurts quota; the
     * placement heuristic is checked again at the end). */
    int lo = 1, hi = nc;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        set_prefix(st, in, &cur, mid);
        if ((rc = fits_soon(st, in, o, req, spread)) < 0) return -1;
        if (rc == 1) hi = mid;
        else lo = mid + 1;
    }
    set_prefix(st, in, &cur, lo);
    if ((rc = fits_soon(st, in, o, req, spread)) < 0) return -1;
    if (rc == 0) {
        set_prefix(st, in, &cur, nc);
        lo = nc;
    }
    if (minimize(st, in, o, req, spread, st->cidx, lo)) return -1;
    return 1;
}

/* Turns the released candidates into victims and shrinks, and the actions
 * for them. Returns how many jobs were acted on, or -1 out of memory. */
static int commit(q_state *st, const struct q_input *in, int for_job, int nc) {
    int n = 0;
    for (int i = 0; i < nc; i++) {
        const q__cand *c = &st->cand[st->cidx[i]];
        if (!c->on || c->rep >= 0) continue;
        q__rinf *ri = &st->rinf[c->k];
        ri->victim = 1;
        ri->size = 0;
        ri->by = for_job;
        ri->reason = c->why;
        struct q_action a = {st->runl[c->k], for_job, 0, 0, 0, Q_ACT_PREEMPT, c->why};
        if (q__act_push(st, &a)) return -1;
        n++;
    }
    for (int i = 0; i < nc; i++) {
        const q__cand *c = &st->cand[st->cidx[i]];
        if (!c->on || c->rep < 0) continue;
        q__rinf *ri = &st->rinf[c->k];
        if (ri->victim || ri->size != rjob(st, in, c->k)->replicas) continue;
        /* the lowest released replica of the job is its new size */
        int size = c->rep;
        for (int y = i + 1; y < nc; y++) {
            const q__cand *d = &st->cand[st->cidx[y]];
            if (d->on && d->k == c->k && d->rep >= 0 && d->rep < size) size = d->rep;
        }
        ri->size = size;
        ri->by = for_job;
        ri->reason = Q_R_SHRUNK;
        struct q_action a = {st->runl[c->k], for_job, size, 0, 0, Q_ACT_SHRINK, Q_R_SHRUNK};
        if (q__act_push(st, &a)) return -1;
        n++;
    }
    for (int i = 0; i < st->ncand; i++) st->cand[i].on = 0;
    return n;
}

/* o takes its place in the soon set, claims what it needs of the room
 * free now, and counts against its quota from now on. */
static int claim(q_state *st, const struct q_input *in, const q__orec *o, const q__req *req,
                 bool spread) {
    int off = st->nplaces;
    int rc = q__place(st, &st->soon, req, false, spread);
    if (rc <= 0) return rc < 0 ? -1 : 0; /* 0 cannot happen: it was checked */
    claim_nodes(st, off, st->nplaces);
    st->nplaces = off;
    q__quota_commit(st, in, o);
    return 1;
}

int q__make_room(q_state *st, const struct q_input *in, const q_scorer *sc,
                 q__orec *o, const q__req *req, bool spread, struct q_result *res) {
    if (!st->room_any || o->replicas < 1 || o->gpus > Q_MAX_GPUS) return 0;
    if (soon_begin(st, in)) return -1;
    int rc;
    /* Room already being made (jobs stopping) may be enough. */
    if (st->nsoon_rel > 0) {
        if ((rc = fits_soon(st, in, o, req, spread)) < 0) return -1;
        if (rc == 1) {
            if ((rc = claim(st, in, o, req, spread)) < 0) return -1;
            if (rc == 1) {
                res->reason = Q_R_PREEMPTING;
                res->inuse = 0;
                return 1;
            }
        }
    }
    if (st->nsearch >= Q__MAX_SEARCH || !in->actions_on) return 0;
    st->nsearch++;
    if ((rc = search(st, in, sc, o, req, spread)) <= 0) return rc;
    int n = commit(st, in, o->slot, st->ncidx);
    if (n < 0) return -1;
    st->nsoon_rel += n;
    /* The search placed o in the soon set, so this places it again; were
     * it not to, o still waits for its victims and claims next cycle. */
    if ((rc = claim(st, in, o, req, spread)) < 0) return -1;
    res->reason = Q_R_PREEMPTING;
    res->inuse = n;
    return 1;
}

void q__actions_results(q_state *st) {
    if (st->nacts == 0) return;
    for (int k = 0; k < st->nrunl && st->rinf_on; k++) {
        const q__rinf *ri = &st->rinf[k];
        struct q_result *r = &st->res[st->runl[k]];
        r->level = (int16_t)ri->level;
        r->score = ri->score;
    }
    for (int i = 0; i < st->nacts; i++) {
        const struct q_action *a = &st->acts[i];
        struct q_result *r = &st->res[a->job];
        if (r->decision == Q_DEC_ADMIT) continue; /* growth of a job admitted now */
        r->decision = a->kind == Q_ACT_PREEMPT ? Q_DEC_PREEMPT : Q_DEC_RESIZE;
        r->reason = a->reason;
        r->blocker = a->for_job;
        r->nplace = (int16_t)a->replicas;
        r->place_off = a->place_off;
        r->need = a->nplace;
    }
}
