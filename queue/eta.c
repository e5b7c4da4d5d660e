/* eta.c -- estimated start times, like `squeue --start`: an event
 * simulation of the queue ahead in queue order. Capacity is each node's
 * free whole GPUs (eta_nodes.c), given back to the nodes they held by the
 * running and just-admitted jobs' predicted ends, and taken and given
 * back again by the jobs ahead as the simulation starts them: a gang
 * starts when all its replicas fit at once (each on the node with the
 * fewest free GPUs that holds it, GPU model and domain respected). Each
 * user and group with a concurrent quota or a GPU-hour budget has its own
 * usage in the simulation: a job starts no earlier than its owners have
 * room (their own jobs' ends, ahead of it included, free it), and no
 * earlier than the end of the budget window when the budget left cannot
 * pay for its planned GPU-hours. A job held only by quota or budget does
 * not hold up the jobs behind it (the queue passes it too). Under EASY
 * backfill, the jobs behind a head that waits start as they fit without
 * delaying it (see "EASY backfill" below). Estimates only: GPU memory,
 * CPU and host memory are not simulated (see docs/queue.md). The pass
 * can stop and resume: with q_input.lazy_eta the cycle skips it and
 * q_eta() runs it only as far as the job asked for. */
#include "queue/q_int.h"

#include <string.h>

/* The end the estimate plans for running job j. A job still running at
 * or past its predicted end (its start + plan <= now) is not about to
 * end: its plan was short by an unknown amount. The estimate doubles the
 * plan, from the run's start, until the end is after now (a job at 1.5x
 * its plan ends at 2x, one at 3x at 4x), so the longer it has overrun the
 * longer it is expected to go on. Planned at the past end, its GPUs would
 * be free at once and every job behind it promised an immediate start.
 * A job being stopped ends as its caller says (now: its pods go). */
static double run_end(const struct q_input *in, const struct q_job *j) {
    double e = j->end_time, plan = q__pred_runtime(j);
    if (e <= 0 || e > in->now || j->terminating || plan <= 0) return e;
    double start = e - plan;
    for (int k = 0; k < 64 && e <= in->now; k++) {
        plan *= 2;
        e = start + plan;
    }
    return e > in->now ? e : in->now;
}

static int owner(const struct q_input *in, int user, int group, int scope) {
    int o = scope ? group : user;
    int n = scope ? in->ngroups : in->nusers;
    return o >= 0 && o < n ? o : -1;
}

/* ---- owners' events -----------------------------------------------------
 * Per owner, events are appended unsorted (O(1)); only an owner whose
 * usage could pass a limit (usage plus every unapplied start) has them
 * sorted into its binary min-heap. Owners far from their limits, most of
 * them, never pay for the heap. */

/* Adds an event at t that changes owner o's usage by sign x need. */
static int oh_push(q_state *st, int s, int o, double t, const q__res *need, int sign) {
    q__oheap *h = &st->eh[s][o];
    if (Q_GROW(st, h->h, h->cap, (size_t)h->m + 1)) return -1;
    q__oend *e = &h->h[h->m++];
    e->t = t;
    for (int r = 0; r < Q__NRES; r++) e->need.v[r] = sign * need->v[r];
    if (sign > 0)
        for (int r = 0; r < Q__NRES; r++) h->pos.v[r] += need->v[r];
    return 0;
}

/* Sorts the appended events into the heap. */
static void oh_settle(q__oheap *h) {
    for (; h->n < h->m; h->n++) {
        q__oend x = h->h[h->n];
        int i = h->n;
        while (i > 0 && h->h[(i - 1) / 2].t > x.t) {
            h->h[i] = h->h[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        h->h[i] = x;
    }
}

/* Pops the earliest event (the heap is settled: n == m). */
static q__oend oh_pop(q__oheap *h) {
    q__oend top = h->h[0], last = h->h[--h->n];
    h->m = h->n;
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->h[c + 1].t < h->h[c].t) c++;
        if (h->h[c].t >= last.t) break;
        h->h[i] = h->h[c];
        i = c;
    }
    if (h->n > 0) h->h[i] = last;
    bool start = false; /* a start adds (jobs: 1), an end frees */
    for (int r = 0; r < Q__NRES; r++) start |= top.need.v[r] > 0;
    if (start)
        for (int r = 0; r < Q__NRES; r++) h->pos.v[r] -= top.need.v[r];
    return top;
}

/* The concurrent limit of owner o in scope s for resource r. A group in a
 * cohort may borrow up to its borrowing limit (unless the job may not
 * borrow, or it waits for its cohort to lend: then only its own quota). */
static int64_t olimit(const struct q_input *in, int s, int o, int r, bool nominal) {
    if (!s) return q__lim_of(&in->users[o].quota, r);
    const struct q_group *g = &in->groups[o];
    int64_t q = q__lim_of(&g->quota, r);
    if (nominal || g->cohort <= 0 || r == Q_RES_JOBS || q < 0) return q;
    int64_t b = q__lim_of(&g->borrowing_limit, r);
    return b < 0 || q > INT64_MAX - b ? -1 : q + b;
}

static bool over_limit(const q_state *st, const struct q_input *in, const q__res *inu,
                       int s, int o, const q__res *need, bool nominal) {
    const q__res *lv = &st->elimv[s][o];
    for (int r = 0; r < Q__NRES; r++) {
        int64_t lim = nominal ? olimit(in, s, o, r, true) : lv->v[r];
        if (lim >= 0 && inu->v[r] + need->v[r] > lim) return true;
    }
    return false;
}

/* Brings owner o's usage to time t (t never goes back: it is the
 * capacity clock): the events up to t are applied and dropped. */
static void owner_advance(q_state *st, int s, int o, double t) {
    q__oheap *h = &st->eh[s][o];
    q__res *inu = &st->einu[s][o];
    oh_settle(h);
    while (h->n > 0 && h->h[0].t <= t) {
        q__oend e = oh_pop(h);
        for (int r = 0; r < Q__NRES; r++) inu->v[r] += e.need.v[r];
    }
    st->eclk[s][o] = t;
}

/* Index heap over owner o's events by time, to visit them in order
 * without removing them (the k smallest of a binary heap in O(k log k)). */
static void aux_push(int32_t *a, int *n, const q__oend *ev, int32_t idx) {
    int i = (*n)++;
    while (i > 0 && ev[a[(i - 1) / 2]].t > ev[idx].t) {
        a[i] = a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    a[i] = idx;
}

static int32_t aux_pop(int32_t *a, int *n, const q__oend *ev) {
    int32_t top = a[0], last = a[--*n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && ev[a[c + 1]].t < ev[a[c]].t) c++;
        if (ev[a[c]].t >= ev[last].t) break;
        a[i] = a[c];
        i = c;
    }
    if (*n > 0) a[i] = last;
    return top;
}

/* The earliest time >= t at which owner o of scope s has room for need:
 * its usage at t, then its events (ends, and the starts of its jobs
 * already placed later) in time order until it fits; the events stay.
 * Returns 0 when none frees enough, -1 out of memory. */
static double owner_room(q_state *st, const struct q_input *in, int s, int o,
                         const q__res *need, bool nominal, double t) {
    const q__oheap *h = &st->eh[s][o];
    q__res u = st->einu[s][o];
    for (int r = 0; r < Q__NRES; r++) u.v[r] += h->pos.v[r];
    if (!over_limit(st, in, &u, s, o, need, nominal)) return t; /* fits whenever */
    owner_advance(st, s, o, t);
    u = st->einu[s][o];
    if (!over_limit(st, in, &u, s, o, need, nominal)) return t;
    if (h->n == 0) return 0;
    if (Q_GROW(st, st->tmp1, st->cap_tmp1, (size_t)h->n + 1)) return -1;
    int32_t *a = st->tmp1;
    int na = 0;
    aux_push(a, &na, h->h, 0);
    while (na > 0) {
        double at = h->h[a[0]].t;
        /* every event at that time (an end and a start may tie) */
        while (na > 0 && h->h[a[0]].t == at) {
            int32_t i = aux_pop(a, &na, h->h);
            for (int r = 0; r < Q__NRES; r++) u.v[r] += h->h[i].need.v[r];
            if (2 * i + 1 < h->n) aux_push(a, &na, h->h, 2 * i + 1);
            if (2 * i + 2 < h->n) aux_push(a, &na, h->h, 2 * i + 2);
        }
        if (!over_limit(st, in, &u, s, o, need, nominal)) return at > t ? at : t;
    }
    return 0;
}

/* Budget: the start (>= s0) at which owner o can pay `cost` GPU-hours, and
 * which window pays (*post: the next one, after window_end). 0 when
 * neither can. The next window's length is unknown: only one is
 * simulated, and it starts with nothing used. */
static double owner_budget(const q_state *st, const struct q_input *in, int s, int o,
                           double cost, double s0, bool *post) {
    double b = s ? in->groups[o].budget_gpu_hours : in->users[o].budget_gpu_hours;
    double wend = s ? in->groups[o].window_end : in->users[o].window_end;
    const double *eb = &st->ebud[s][2 * (size_t)o];
    bool next = wend > in->now;
    *post = next && s0 >= wend;
    if (!*post && eb[0] + cost <= b + 1e-9) return s0;
    if (!next || eb[1] + cost > b + 1e-9) return 0;
    *post = true;
    return s0 > wend ? s0 : wend;
}

/* Owners with a limit get their start-of-estimate usage (running and
 * admitted jobs, after the walk) and their jobs' ends. */
static int owners_begin(q_state *st, const struct q_input *in) {
    st->eta_q = false;
    for (int s = 0; s < 2; s++) {
        int no = s ? in->ngroups : in->nusers;
        const uint8_t *open = s ? st->gopen : st->uopen;
        for (int o = 0; o < no && !st->eta_q; o++) st->eta_q = !open[o];
    }
    if (!st->eta_q) return 0;
    for (int s = 0; s < 2; s++) {
        int no = s ? in->ngroups : in->nusers;
        if (Q_GROW(st, st->einu[s], st->cap_einu[s], (size_t)no + 1) ||
            Q_GROW(st, st->ebud[s], st->cap_ebud[s], 2 * (size_t)no + 2) ||
            Q_GROW(st, st->eclk[s], st->cap_eclk[s], (size_t)no + 1) ||
            Q_GROW(st, st->elim[s], st->cap_elim[s], (size_t)no + 1) ||
            Q_GROW(st, st->elimv[s], st->cap_elimv[s], (size_t)no + 1) ||
            Q_GROW(st, st->eh[s], st->cap_eh[s], (size_t)no + 1))
            return -1;
        for (; st->neh[s] < (int)st->cap_eh[s]; st->neh[s]++)
            st->eh[s][st->neh[s]] = (q__oheap){NULL, 0, 0, 0, {{0}}};
        memcpy(st->einu[s], s ? st->gin : st->uin, (size_t)no * sizeof(q__res));
        for (int o = 0; o < no; o++) {
            const struct aiq_quota *q = s ? &in->groups[o].quota : &in->users[o].quota;
            double b = s ? in->groups[o].budget_gpu_hours : in->users[o].budget_gpu_hours;
            double used = s ? in->groups[o].used_gpu_hours : in->users[o].used_gpu_hours;
            bool lim = false;
            for (int r = 0; r < Q__NRES; r++) {
                lim |= q__lim_of(q, r) >= 0;
                st->elimv[s][o].v[r] = olimit(in, s, o, r, false);
            }
            st->elim[s][o] = (uint8_t)((lim ? 1 : 0) | (b >= 0 ? 2 : 0));
            st->ebud[s][2 * (size_t)o] = used + (s ? st->gbud[o] : st->ubud[o]);
            st->ebud[s][2 * (size_t)o + 1] = 0;
            st->eh[s][o].n = st->eh[s][o].m = 0;
            memset(&st->eh[s][o].pos, 0, sizeof st->eh[s][o].pos);
            st->eclk[s][o] = in->now;
        }
        for (int k = 0; k < st->nrunl + st->nadmitted; k++) {
            int i = k < st->nrunl ? st->runl[k] : st->ord[st->admitted[k - st->nrunl]].slot;
            const struct q_job *j = &in->jobs[i];
            double e = j->state == Q_JOB_RUNNING ? run_end(in, j)
                       : (q__pred_runtime(j) > 0 ? in->now + q__pred_runtime(j) : 0);
            int o = owner(in, j->user, j->group, s);
            if (e <= 0 || o < 0 || !(st->elim[s][o] & 1)) continue;
            q__res need;
            q__need(j, &need);
            if (oh_push(st, s, o, e, &need, -1)) return -1;
        }
    }
    return 0;
}

/* The earliest start quota and budgets allow job o (order record) at or
 * after t (the capacity clock); 0 when unknown, -1 out of memory.
 * *post[s]: the owner of scope s pays from the next window. */
static double owners_start(q_state *st, const struct q_input *in, const q__orec *o,
                           bool nominal, double t, bool post[2]) {
    post[0] = post[1] = false;
    if (!st->eta_q) return t;
    q__res need;
    q__need_rec(o, &need);
    double start = t;
    for (int s = 0; s < 2; s++) {
        int w = owner(in, o->user, o->group, s);
        if (w < 0 || !(st->elim[s][w] & 1)) continue;
        double q = owner_room(st, in, s, w, &need, nominal && s == 1, t);
        if (q <= 0) return q;
        if (q > start) start = q;
    }
    double cost = -1;
    for (int s = 0; s < 2; s++) {
        int w = owner(in, o->user, o->group, s);
        if (w < 0 || !(st->elim[s][w] & 2)) continue;
        if (cost < 0) cost = q__rec_gpu_hours(o);
        double b = owner_budget(st, in, s, w, cost, start, &post[s]);
        if (b <= 0) return 0;
        if (b > start) start = b;
    }
    return start;
}

/* Job o (job index j) starts at `start` in the estimate: it holds its
 * owners' quota until start + its planned runtime and charges their
 * budget. Returns 0, or -1 out of memory. */
static int owners_take(q_state *st, const struct q_input *in, const q__orec *o,
                       int j, double start, const bool post[2]) {
    if (!st->eta_q) return 0;
    q__res need;
    q__need_rec(o, &need);
    for (int s = 0; s < 2; s++) {
        int w = owner(in, o->user, o->group, s);
        if (w < 0) continue;
        if (st->elim[s][w] & 1) {
            /* Usage is that of the owner's clock (it moves only when the
             * owner is checked); a later start is an event. */
            if (start <= st->eclk[s][w])
                for (int r = 0; r < Q__NRES; r++) st->einu[s][w].v[r] += need.v[r];
            else if (oh_push(st, s, w, start, &need, 1))
                return -1;
            if (o->pred > 0 && oh_push(st, s, w, start + o->pred, &need, -1)) return -1;
        }
        if (st->elim[s][w] & 2) st->ebud[s][2 * (size_t)w + (post[s] ? 1 : 0)] += q__rec_gpu_hours(o);
    }
    return 0;
}

/* ---- radix heap --------------------------------------------------------
 * The simulation's clock never goes back: every pushed end is at or after
 * the last popped one. A radix heap exploits that (keys are milliseconds
 * after now; an event's exact time rides along): push is O(1), pop is
 * amortized O(log range), with no comparisons chasing a tree. Keys that tie
 * within a millisecond pop in insertion order, deterministically. */

static uint64_t rkey(double t, double now) {
    double d = (t - now) * 1000.0;
    if (d <= 0) return 0;
    if (d >= 9.0e18) return (uint64_t)9.0e18;
    return (uint64_t)d;
}

static int rbucket(uint64_t k, uint64_t last) {
    return k == last ? 0 : 64 - __builtin_clzll(k ^ last);
}

static int rpush(q_state *st, q__ev e, uint64_t k) {
    int b = rbucket(k < st->rb_last ? st->rb_last : k, st->rb_last);
    if (Q_GROW(st, st->rb[b], st->cap_rb[b], (size_t)st->nrb[b] + 1)) return -1;
    e.aux2 = k < st->rb_last ? st->rb_last : k;
    st->rb[b][st->nrb[b]++] = e;
    st->rb_size++;
    return 0;
}

/* Pops the earliest event into *out. Returns 0, or -1 out of memory. */
static int rpop(q_state *st, q__ev *out) {
    if (st->nrb[0] == 0) {
        int b = 1;
        while (st->nrb[b] == 0) b++;
        uint64_t m = UINT64_MAX;
        for (int i = 0; i < st->nrb[b]; i++)
            if (st->rb[b][i].aux2 < m) m = st->rb[b][i].aux2;
        st->rb_last = m;
        /* Every event of bucket b moves to a strictly lower bucket. */
        int n = st->nrb[b];
        st->nrb[b] = 0;
        for (int i = 0; i < n; i++) {
            q__ev e = st->rb[b][i];
            int nb = rbucket(e.aux2, m);
            if (Q_GROW(st, st->rb[nb], st->cap_rb[nb], (size_t)st->nrb[nb] + 1)) return -1;
            st->rb[nb][st->nrb[nb]++] = e;
        }
    }
    st->rb_size--;
    /* All keys in bucket 0 are equal; LIFO is as deterministic as FIFO. */
    *out = st->rb[0][--st->nrb[0]];
    return 0;
}

static void rreset(q_state *st) {
    for (int b = 0; b < 65; b++) st->nrb[b] = 0;
    st->rb_last = 0;
    st->rb_size = 0;
}

/* The predicted end of running or just-admitted job j; 0 unknown. */
static double job_end(const struct q_input *in, const struct q_job *j) {
    if (j->state == Q_JOB_RUNNING) return run_end(in, j);
    return q__pred_runtime(j) > 0 ? in->now + q__pred_runtime(j) : 0;
}

/* An end at e that gives back what the n replicas at pl of job j hold.
 * Returns 0, or -1 out of memory. */
static int push_hold(q_state *st, const struct q_input *in, const struct q_job *j,
                     const struct q_place *pl, int n, double e) {
    int32_t off, cnt;
    if (e <= 0) return 0;
    if (q__en_hold(st, j, pl, n, &off, &cnt)) return -1;
    return cnt > 0 ? rpush(st, (q__ev){e, off, cnt, 0}, rkey(e, in->now)) : 0;
}

/* Loads the nodes and the events (running and just-admitted jobs' ends,
 * with what they hold: their placements and this cycle's growth); the
 * pass starts at order index 0. */
static int eta_begin(q_state *st, const struct q_input *in) {
    if (owners_begin(st, in) || q__en_begin(st)) return -1;
    rreset(st);
    for (int k = 0; k < st->nrunl + st->nadmitted; k++) {
        int i = k < st->nrunl ? st->runl[k] : st->ord[st->admitted[k - st->nrunl]].slot;
        const struct q_job *j = &in->jobs[i];
        const struct q_place *pl = j->placement;
        int n = j->replicas;
        if (k >= st->nrunl) { /* admitted now: the walk placed it */
            int a = st->admitted[k - st->nrunl];
            pl = &st->places[st->eta_lazy ? st->res[i].place_off : st->rseq[a].place_off];
            n = q__size(j);
        }
        if (push_hold(st, in, j, pl, n, job_end(in, j))) return -1;
    }
    for (int a = 0; a < st->nacts; a++) {
        const struct q_action *x = &st->acts[a];
        if (x->kind != Q_ACT_GROW || x->nplace <= 0) continue;
        const struct q_job *j = &in->jobs[x->job];
        if (push_hold(st, in, j, &st->places[x->place_off], x->nplace, job_end(in, j))) return -1;
    }
    st->eta_t = in->now;
    /* Without a reservation the walk blocks strictly: once a job's start
     * is unknown, so is every later one waiting on capacity. */
    st->eta_strict = st->eta_head < 0;
    st->eta_stuck = false;
    st->eta_bf = in->policy.backfill == AIQ_BACKFILL_EASY;
    st->ebk = -1;
    st->nela = st->ela0 = st->neundo = st->nebres = st->nedef = 0;
    st->eflush = false;
    st->nbfm = 0;
    st->eta_k = 0;
    st->eta_started = true;
    return 0;
}

/* Carries out event e: an end gives its GPUs back to the nodes it held;
 * a quota-delayed start takes its GPUs now (on the nodes that hold it,
 * else where the most are free: capacity is not waited for, an
 * estimate) and its end is queued. Returns 0 or -1 out of memory. */
static int eta_apply(q_state *st, const struct q_input *in, const q__ev *e) {
    if (e->aux >= 0) {
        q__en_give(st, e->job, e->aux);
        return 0;
    }
    const q__orec *o = &st->ord[e->job];
    int32_t off, cnt;
    if (q__en_take(st, o, true, &off, &cnt)) return -1;
    if (o->pred > 0 && cnt > 0 &&
        rpush(st, (q__ev){e->t + o->pred, off, cnt, 0}, rkey(e->t + o->pred, in->now)))
        return -1;
    return 0;
}

/* Pops events, moving the clock *t forward and carrying them out, until
 * o's gang fits the nodes and (later) *t is past now, or no event is
 * left (*fits false). Returns 0 or -1 out of memory. */
static inline int eta_wait_fit(q_state *st, const struct q_input *in, const q__orec *o,
                               bool later, double *t, bool *fits) {
    for (;;) {
        *fits = q__en_fits(st, o, false);
        if ((*fits && !(later && *t <= in->now)) || st->rb_size == 0) return 0;
        q__ev e;
        if (rpop(st, &e)) return -1;
        if (e.t > *t) *t = e.t;
        if (eta_apply(st, in, &e)) return -1;
    }
}

/* Job j (order record o at index k) starts at start: its owners count it
 * from then, and it takes its GPUs: now on the nodes that hold it, its
 * predicted end giving them back; later (delayed: held by quota or
 * budget) by an event at start. Returns 0 or -1 out of memory. */
static inline int eta_start(q_state *st, const struct q_input *in, const q__orec *o, int j,
                            int k, double start, bool delayed, const bool post[2]) {
    if (owners_take(st, in, o, j, start, post)) return -1;
    if (delayed) return rpush(st, (q__ev){start, k, -1, 0}, rkey(start, in->now));
    int32_t off, cnt;
    if (q__en_take(st, o, false, &off, &cnt)) return -1;
    if (o->pred > 0 && cnt > 0 &&
        rpush(st, (q__ev){start + o->pred, off, cnt, 0}, rkey(start + o->pred, in->now)))
        return -1;
    return 0;
}

/* The pass's state from one job to the next. */
typedef struct {
    double t;       /* the capacity clock */
    bool stuck;     /* strict and some start was unknown */
} eta_pass;

static int eta_job(q_state *st, const struct q_input *in, int k, eta_pass *p,
                   struct q_result *r);

/* Where the estimate of order index k goes: st->rseq[k] (eager) or its
 * job's st->res (lazy). */
static struct q_result *eta_res(q_state *st, int k) {
    return st->eta_lazy ? &st->res[st->ord[k].slot] : &st->rseq[k];
}

/* ---- EASY backfill -------------------------------------------------------
 * With the policy's backfill on, a job that cannot start at the capacity
 * clock t becomes the simulated head: a look-ahead pops the ends until
 * its gang fits (th, its start), notes the nodes it will take and what it
 * leaves on them, and undoes those ends (kept in a FIFO, st->ela) so the
 * nodes are at t again; the head starts by an event at th. A job behind
 * it starts at t, or at one of the next BF_LOOK of those ends (the clock
 * moves there), when it fits the nodes then and either ends (by its
 * planned runtime) by th or leaves the head's nodes what the head takes
 * there. A job that cannot is deferred, not estimated yet (the jobs
 * behind it may still backfill, as in the queue). When BF_DEFER jobs wait
 * so, or the pass ends, the clock moves to th, the head starts and the
 * deferred jobs are estimated in order from there, the first that does
 * not fit becoming the next head; one of them that cannot backfill behind
 * it is deferred again, at most BF_AGAIN times in all, then waits for it
 * (so each job is estimated at most BF_AGAIN + 1 times). A job shape that
 * could not backfill is remembered (BF_MEMO shapes) until the nodes
 * change, so a long run of jobs that cannot costs a lookup each. */
#define BF_LOOK 16
#define BF_DEFER 32
#define BF_MEMO Q__BFMEMO
#define BF_AGAIN 3 /* times a job may be deferred (fits edef's 2 bits) */

/* Gives back event e's GPUs, logging what each node gained (a node never
 * gets more than it has) so that bf_undo can take exactly that back, and
 * nothing a start took meanwhile. Returns 0, or -1 out of memory. */
static int bf_give_logged(q_state *st, const q__ev *e) {
    if (Q_GROW(st, st->eundo, st->cap_eundo, (size_t)st->neundo + (size_t)e->aux)) return -1;
    for (int32_t x = e->job; x < e->job + e->aux; x++) {
        int32_t node = st->epl[x].node, f = q__en_free(st, node);
        q__en_set(st, node, f + st->epl[x].gpus);
        st->eundo[st->neundo++] = (q__epl){node, q__en_free(st, node) - f};
    }
    return 0;
}

static void bf_undo(q_state *st) {
    for (int x = st->neundo - 1; x >= 0; x--) {
        int32_t node = st->eundo[x].node;
        q__en_set(st, node, q__en_free(st, node) - st->eundo[x].gpus);
    }
    st->neundo = 0;
}

/* Carries out the look-ahead's ends not yet carried out. */
static void bf_redo(q_state *st) {
    for (; st->ela0 < st->nela; st->ela0++) q__en_give(st, st->ela[st->ela0].job, st->ela[st->ela0].aux);
    st->nela = st->ela0 = 0;
}

/* Notes the nodes the head takes (st->epl from off, cnt entries; each
 * node once) with the free GPUs the take leaves there, then gives them
 * back. Returns 0, or -1 out of memory. */
static int bf_note(q_state *st, int32_t off, int32_t cnt) {
    if (Q_GROW(st, st->ebres, st->cap_ebres, (size_t)cnt + 1) ||
        Q_GROW(st, st->ebsav, st->cap_ebsav, (size_t)cnt + 1))
        return -1;
    st->nebres = 0;
    for (int32_t x = off; x < off + cnt; x++) {
        int32_t node = st->epl[x].node, y = 0;
        while (y < st->nebres && st->ebres[y].node != node) y++;
        if (y == st->nebres) st->ebres[st->nebres++] = (q__epl){node, q__en_free(st, node)};
    }
    q__en_give(st, off, cnt);
    st->nepl = off;
    return 0;
}

/* Looks ahead for o (job j), which cannot start at t: pops the ends into
 * st->ela, carrying them out, until its gang fits (after now when later).
 * Returns 1 with *th its start (the walk's reservation at least), its
 * nodes noted and the ends undone; 0 when no end frees enough (the ends
 * stay carried out, as without backfill); -1 out of memory. */
static int bf_look(q_state *st, const struct q_input *in, const q__orec *o, int j, bool later,
                   double t, double *th) {
    st->nela = st->ela0 = st->neundo = 0;
    double tt = t;
    bool fits;
    for (;;) {
        fits = q__en_fits(st, o, false);
        if ((fits && !(later && tt <= in->now)) || st->rb_size == 0) break;
        q__ev e;
        if (rpop(st, &e)) return -1;
        if (e.t > tt) tt = e.t;
        if (e.aux < 0) { /* a quota-delayed start: taken for good */
            if (eta_apply(st, in, &e)) return -1;
            continue;
        }
        if (Q_GROW(st, st->ela, st->cap_ela, (size_t)st->nela + 1) || bf_give_logged(st, &e)) return -1;
        st->ela[st->nela++] = e;
    }
    if (!fits) {
        st->nela = st->neundo = 0;
        return 0;
    }
    *th = j == st->eta_head && st->eta_tres > tt ? st->eta_tres : tt;
    int32_t off, cnt;
    if (q__en_take(st, o, false, &off, &cnt) || bf_note(st, off, cnt)) return -1;
    bf_undo(st);
    return 1;
}

/* Could o start at t without delaying the head? Ending by the head's
 * start it needs only fit the nodes; else it gets no more of the head's
 * nodes than the head leaves there. If so it starts (its owners count it,
 * it takes its GPUs, its end is queued). Returns 1 started, 0 not, -1 out
 * of memory. */
static int bf_fit(q_state *st, const struct q_input *in, const q__orec *o, int j, double t,
                  const bool post[2]) {
    bool shortjob = o->pred > 0 && t + o->pred <= st->ebt;
    int nb = shortjob ? 0 : st->nebres, rc = 0;
    for (int x = 0; x < nb; x++) { /* the head's nodes: what it leaves */
        int32_t node = st->ebres[x].node, f = q__en_free(st, node);
        st->ebsav[x] = (q__epl){node, f};
        if (f > st->ebres[x].gpus) q__en_set(st, node, st->ebres[x].gpus);
    }
    if (q__en_fits(st, o, false)) {
        int32_t off, cnt;
        rc = q__en_take(st, o, false, &off, &cnt) || owners_take(st, in, o, j, t, post) ||
                     (o->pred > 0 && cnt > 0 &&
                      rpush(st, (q__ev){t + o->pred, off, cnt, 0}, rkey(t + o->pred, in->now)))
                 ? -1 : 1;
    }
    for (int x = 0; x < nb; x++) { /* back, less what o took there */
        int32_t f0 = st->ebsav[x].gpus, cap = st->ebres[x].gpus;
        int32_t taken = (f0 < cap ? f0 : cap) - q__en_free(st, st->ebsav[x].node);
        q__en_set(st, st->ebsav[x].node, f0 - taken);
        st->ebres[x].gpus = cap - taken;
    }
    return rc;
}

/* The shapes of jobs that could not backfill since the nodes last
 * changed (a job of the same shape that does not end by the head's start
 * cannot either): its GPUs per replica, replicas, domain and model, and
 * whether it may not start at now. */
static uint64_t bf_shape(const q__orec *o, bool later) {
    uint64_t g = (uint64_t)q__units(o->gpus, o->gmem, o->milli) & 0xffff;
    uint64_t d = (uint64_t)(uint32_t)(o->dom + 2) & 0xfffff, m = (uint64_t)(uint32_t)(o->model + 2) & 0xfffff;
    return g | (uint64_t)(o->replicas & 0x7fff) << 16 | d << 31 | m << 51 | (uint64_t)later << 63;
}

static bool bf_failed(const q_state *st, uint64_t sh) {
    for (int x = 0; x < st->nbfm; x++)
        if (st->bfm[x] == sh) return true;
    return false;
}

/* With a head waiting: o (job j) starts by backfill at the clock *t or
 * at one of the next BF_LOOK look-ahead ends before the head's start (*t
 * and the look-ahead move there). Returns 1 backfilled, 0 not (nothing
 * moved), -1 out of memory. */
static int bf_wait(q_state *st, const struct q_input *in, const q__orec *o, int j, bool later,
                   const bool post[2], double *t) {
    int c0 = st->ela0;
    double t0 = *t;
    bool memo = o->pred <= 0 || *t + o->pred > st->ebt; /* long from here on */
    uint64_t sh = bf_shape(o, later);
    if (memo && bf_failed(st, sh)) return 0;
    st->neundo = 0;
    for (int n = 0;; n++) {
        if (!(later && *t <= in->now)) {
            int rc = bf_fit(st, in, o, j, *t, post);
            if (rc) {
                st->neundo = 0;
                st->nbfm = 0; /* the nodes changed */
                return rc;
            }
        }
        if (st->ela0 >= st->nela || n >= BF_LOOK) break;
        q__ev e = st->ela[st->ela0++];
        if (bf_give_logged(st, &e)) return -1;
        if (e.t > *t) *t = e.t;
    }
    bf_undo(st);
    st->ela0 = c0;
    *t = t0;
    if (memo) st->bfm[st->nbfm < BF_MEMO ? st->nbfm++ : (int)(sh % BF_MEMO)] = sh;
    return 0;
}

/* Moves the clock to the head's start: the look-ahead's ends, then the
 * queued events up to the head's own start. Returns 0, or -1 out of
 * memory. */
static int bf_head_start(q_state *st, const struct q_input *in, eta_pass *p) {
    bf_redo(st);
    int h = st->ebk;
    st->ebk = -1;
    st->nbfm = 0;
    if (h < 0) return 0;
    while (st->rb_size > 0) {
        q__ev e;
        if (rpop(st, &e) || eta_apply(st, in, &e)) return -1;
        if (e.t > p->t) p->t = e.t;
        if (e.aux < 0 && e.job == h) break;
    }
    if (st->ebt > p->t) p->t = st->ebt;
    return 0;
}

/* The head starts, then the deferred jobs are estimated from there, in
 * order (each may be deferred again behind a new head, BF_AGAIN times in
 * all: bounded work). Returns 0, or -1 out of memory. */
static int bf_flush(q_state *st, const struct q_input *in, eta_pass *p) {
    if (bf_head_start(st, in, p)) return -1;
    int n = st->nedef;
    if (Q_GROW(st, st->edef2, st->cap_edef2, (size_t)n + 1)) return -1;
    memcpy(st->edef2, st->edef, (size_t)n * sizeof *st->edef);
    st->nedef = 0;
    st->eflush = true;
    int rc = 0;
    for (int x = 0; x < n && rc == 0; x++) {
        int k = st->edef2[x] >> 2;
        st->eagain = st->edef2[x] & 3;
        rc = eta_job(st, in, k, p, eta_res(st, k));
    }
    st->eflush = false;
    return rc;
}

/* Job o (job j, order index k) under backfill: behind a waiting head it
 * backfills, or is deferred (unless BF_DEFER are, or it was BF_AGAIN
 * times: then the head starts first, and the deferred jobs are estimated
 * unless they are being estimated now); else, when it cannot start at
 * the clock, it becomes the head (its start r->eta, by an event; the
 * clock stays). Returns 1 when done, 0 when the in-order estimate goes on
 * from p->t, -1 out of memory. */
static int bf_job(q_state *st, const struct q_input *in, const q__orec *o, int j, int k,
                  bool later, const bool post[2], eta_pass *p, struct q_result *r) {
    while (st->ebk >= 0) {
        int rc = bf_wait(st, in, o, j, later, post, &p->t);
        if (rc) {
            if (rc == 1) r->eta = p->t;
            return rc;
        }
        int n = st->eflush ? st->eagain : 0;
        if (n < BF_AGAIN && st->nedef < BF_DEFER) {
            if (Q_GROW(st, st->edef, st->cap_edef, (size_t)st->nedef + 1)) return -1;
            st->edef[st->nedef++] = k << 2 | (n + 1);
            return 1;
        }
        if (st->eflush ? bf_head_start(st, in, p) : bf_flush(st, in, p)) return -1;
    }
    bool wait_res = j == st->eta_head && st->eta_tres > p->t;
    if (!wait_res && !(later && p->t <= in->now) && q__en_fits(st, o, false)) return 0;
    double th;
    int rc = bf_look(st, in, o, j, later, p->t, &th);
    if (rc <= 0) return rc;
    if (th <= p->t) { /* no wait after all (ends at the clock) */
        bf_redo(st);
        return 0;
    }
    r->eta = th;
    if (eta_start(st, in, o, j, k, th, true, post)) return -1;
    st->ebk = k;
    st->ebt = th;
    st->nbfm = 0;
    return 1;
}

/* Is order index k deferred (its estimate not made yet)? */
static bool bf_pending(const q_state *st, int k) {
    for (int x = 0; x < st->nedef; x++)
        if (st->edef[x] >> 2 == k) return true;
    return false;
}

/* Estimates the waiting job at order index k into r->eta. Returns 0 or
 * -1 out of memory. */
static int eta_job(q_state *st, const struct q_input *in, int k, eta_pass *p,
                   struct q_result *r) {
    const q__orec *o = &st->ord[k];
    uint8_t why = st->dw[2 * k + 1];
    int j = o->slot;
    r->eta = 0;
    /* Room is being made for it: it starts once the jobs it waits for
     * are gone (a grace period the queue does not know); it does not
     * take part in the simulation. */
    if (why == Q_R_PREEMPTING) {
        r->eta = p->t;
        return 0;
    }
    if (p->stuck) return 0;
    if (!q__en_fits(st, o, true)) { /* not even on empty nodes */
        p->stuck = st->eta_strict;
        return 0;
    }
    /* Quota and budget first: a job they hold does not hold the capacity
     * clock (the queue passes it). Waiting for its cohort to lend: it
     * starts at the latest once its group's own quota has room. */
    bool post[2];
    double sq = owners_start(st, in, o, why == Q_R_BORROW, p->t, post);
    if (sq < 0) return -1;
    if (sq == 0) return 0;
    if (sq > p->t) {
        r->eta = sq;
        return eta_start(st, in, o, j, k, sq, true, post);
    }
    /* The walk found no place for it now: what the nodes here do not
     * model (CPU, memory, GPU memory, the reservation) may hide that, so
     * it starts no earlier than the first end after now. */
    bool later = why == Q_R_CAPACITY || why == Q_R_BLOCKED, fits;
    if (st->eta_bf) {
        int rc = bf_job(st, in, o, j, k, later, post, p, r);
        if (rc) return rc < 0 ? -1 : 0;
    }
    if (eta_wait_fit(st, in, o, later, &p->t, &fits)) return -1;
    if (!fits) { /* no predicted end frees enough */
        p->stuck = st->eta_strict;
        return 0;
    }
    double start = p->t;
    if (j == st->eta_head && st->eta_tres > start) start = st->eta_tres;
    r->eta = start;
    if (eta_start(st, in, o, j, k, start, false, post)) return -1;
    p->t = start;
    return 0;
}

/* Estimates order indexes st->eta_k .. kend-1 and leaves the pass there.
 * The results are st->rseq[k] (eager) or st->res[slot] (lazy); at the
 * end of the order, the deferred jobs' too. */
static int eta_steps(q_state *st, const struct q_input *in, int kend) {
    eta_pass p = {st->eta_t, st->eta_stuck};
    int k = st->eta_k, rc = 0;
    for (; k < kend; k++) {
        uint8_t why = st->dw[2 * k + 1];
        if (st->dw[2 * k] != Q_DEC_WAIT || why == Q_R_SUSPENDED) continue;
        if ((rc = eta_job(st, in, k, &p, eta_res(st, k))) != 0) break;
    }
    /* The end: the deferred jobs are estimated. */
    while (rc == 0 && k == st->norder && st->nedef > 0) rc = bf_flush(st, in, &p);
    st->eta_t = p.t;
    st->eta_stuck = p.stuck;
    st->eta_k = k;
    return rc;
}

int q__eta_run(q_state *st, const struct q_input *in, int head, double t_res) {
    st->eta_head = head;
    st->eta_tres = t_res;
    st->eta_started = false;
    st->eta_failed = false;
    st->eta_k = 0;
    if (st->eta_lazy) return 0;
    if (eta_begin(st, in)) return -1;
    return eta_steps(st, in, st->norder);
}

int q__eta_upto(q_state *st, const struct q_input *in, int kend) {
    if (st->eta_failed) return -1;
    if (!st->eta_started && eta_begin(st, in)) goto fail;
    if (kend + 1 > st->eta_k && eta_steps(st, in, kend + 1 < st->norder ? kend + 1 : st->norder))
        goto fail;
    /* Deferred behind a head: on until it is estimated. */
    while (bf_pending(st, kend))
        if (eta_steps(st, in, st->eta_k < st->norder ? st->eta_k + 1 : st->norder)) goto fail;
    return 0;
fail:
    st->eta_failed = true;
    return -1;
}

aiq_rc q_eta(q_state *st, const struct q_input *in, q_output *out, int j, double *eta) {
    if (eta) *eta = 0;
    if (!st || !in || !out || !eta) return AIQ_EINVAL;
    if (!st->out_valid || out->res != st->res || out->njobs != in->njobs || j < 0 || j >= out->njobs)
        return AIQ_EINVAL;
    struct q_result *r = &st->res[j];
    if (st->eta_lazy && r->decision == Q_DEC_WAIT && r->reason != Q_R_SUSPENDED &&
        (st->kof[j] >= st->eta_k || bf_pending(st, st->kof[j]))) {
        if (q__eta_upto(st, in, st->kof[j])) return AIQ_ENOMEM;
    }
    *eta = r->eta;
    return AIQ_OK;
}
