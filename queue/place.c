/* place.c -- nodes during one cycle: the working copy of every node, the
 * free-capacity index (per domain, schedulable nodes bucketed by how many
 * GPUs are wholly free), replica fit counting, gang placement (binpack or
 * spread, all replicas or none, one domain per gang), release, the node
 * shapes and the "can this job ever run" check. */
#include "queue/q_int.h"

#include <math.h>
#include <string.h>

static int count_free(const q__node *n) {
    int c = 0;
    for (int g = 0; g < n->ngpus; g++) c += n->used[g] == 0;
    return c;
}

static void unlink_node(q__nodeset *ns, int i) {
    q__node *n = &ns->n[i];
    if (n->bucket < 0) return;
    if (n->prev >= 0) ns->n[n->prev].next = n->next;
    else ns->head[n->dom * Q__NBUCKET + n->bucket] = n->next;
    if (n->next >= 0) ns->n[n->next].prev = n->prev;
    n->prev = n->next = n->bucket = -1;
}

static void link_node(q__nodeset *ns, int i) {
    q__node *n = &ns->n[i];
    int32_t *h = &ns->head[n->dom * Q__NBUCKET + n->nfree];
    n->bucket = n->nfree;
    n->prev = -1;
    n->next = *h;
    if (*h >= 0) ns->n[*h].prev = i;
    *h = i;
}

/* Recounts node i's free GPUs and moves it to the matching bucket. */
static void rebucket(q__nodeset *ns, int i) {
    q__node *n = &ns->n[i];
    int nf = count_free(n);
    n->frag_ok = false; /* it changed: FGD recomputes it when asked */
    if (!n->sched) {
        n->nfree = nf;
        return;
    }
    ns->dom_free[n->dom] += nf - n->nfree;
    n->nfree = nf;
    if (n->bucket != nf) {
        unlink_node(ns, i);
        link_node(ns, i);
    }
}

static int shape_find_or_add(q_state *st, const q__shape *s, uint32_t h) {
    size_t m = st->cap_shape_tab - 1;
    for (size_t i = h & m;; i = (i + 1) & m) {
        int32_t id = st->shape_tab[i];
        if (id < 0) {
            st->shape_tab[i] = st->nshapes;
            st->shapes[st->nshapes] = *s;
            return st->nshapes++;
        }
        q__shape tmp = st->shapes[id];
        tmp.count = 0;
        if (memcmp(&tmp, s, sizeof tmp) == 0) return id;
    }
}

static int nodes_oom(aiq_err *err) {
    aiq_err_set(err, AIQ_ENOMEM, "queue: out of memory building nodes");
    return -1;
}

/* Checks in->nodes[i] and loads it into n (not yet in a bucket). Returns
 * 0, or -1 with err set (AIQ_EINVAL naming the node field, or
 * AIQ_ENOMEM). */
static inline int node_load(q_state *st, const struct q_node *src, int i, q__node *n,
                            aiq_err *err) {
    if (src->ngpus < 0 || src->ngpus > Q_MAX_GPUS) {
        aiq_err_field(err, AIQ_EINVAL, "nodes[].ngpus",
                      "nodes[%d].ngpus: must be 0..%d, got %d", i,
                      Q_MAX_GPUS, src->ngpus);
        return -1;
    }
    memset(n, 0, sizeof *n);
    n->ngpus = src->ngpus;
    for (int g = 0; g < n->ngpus; g++) {
        int64_t t = src->gpu_mem_total[g], u = src->gpu_mem_used[g];
        if (t <= 0 || u < 0 || u > t) {
            aiq_err_field(err, AIQ_EINVAL, "nodes[].gpu_mem",
                          "nodes[%d] (%s) GPU %d: memory total %lld, used "
                          "%lld (need total > 0 and 0 <= used <= total)",
                          i, src->name ? src->name : "?", g, (long long)t,
                          (long long)u);
            return -1;
        }
        n->tot[g] = t;
        n->used[g] = u;
    }
    if (src->cpu_alloc < 0 || src->cpu_used < 0 || src->cpu_alloc > Q__MAX_CPU * 1024 ||
        src->cpu_used > Q__MAX_CPU * 1024 || src->mem_alloc < 0 || src->mem_used < 0 ||
        src->mem_alloc > Q__MAX_MEM * 1024 || src->mem_used > Q__MAX_MEM * 1024) {
        aiq_err_field(err, AIQ_EINVAL, "nodes[].cpu",
                      "nodes[%d] (%s): cpu %lld/%lldm or memory %lld/%lld bytes out of range",
                      i, src->name ? src->name : "?", (long long)src->cpu_used,
                      (long long)src->cpu_alloc, (long long)src->mem_used,
                      (long long)src->mem_alloc);
        return -1;
    }
    n->cpu_free = src->cpu_alloc - src->cpu_used;
    n->mem_free = src->mem_alloc - src->mem_used;
    n->sched = src->schedulable;
    n->dom = q__intern_id(st, &st->doms, src->domain);
    n->model = q__intern_id(st, &st->models, src->gpu_model);
    if (n->dom < 0 || n->model < 0) return nodes_oom(err);
    n->prev = n->next = n->bucket = -1;
    n->nfree = 0;
    return 0;
}

/* The free-capacity index of the loaded nodes: per domain, schedulable
 * nodes bucketed by free GPUs. Returns 0, or -1 out of memory. */
static inline int buckets_build(q_state *st) {
    q__nodeset *ns = &st->ns;
    ns->ndom = st->doms.n;
    if (Q_GROW(st, ns->head, ns->cap_head, (size_t)ns->ndom * Q__NBUCKET + 1)) return -1;
    if (Q_GROW(st, ns->dom_free, ns->cap_dom, (size_t)ns->ndom + 1)) return -1;
    for (int k = 0; k < ns->ndom * Q__NBUCKET; k++) ns->head[k] = -1;
    for (int d = 0; d < ns->ndom; d++) ns->dom_free[d] = 0;
    /* Link in reverse so every bucket lists nodes in input order. */
    for (int i = ns->nn - 1; i >= 0; i--) rebucket(ns, i);
    return 0;
}

/* Node n's shape (src is its input): domain, model, GPU memories in
 * descending order, allocatable cpu and memory. */
static inline void shape_of(const q__node *n, const struct q_node *src, q__shape *s) {
    memset(s, 0, sizeof *s);
    s->dom = n->dom;
    s->model = n->model;
    s->ngpus = src->ngpus;
    for (int g = 0; g < s->ngpus; g++) {
        int64_t t = src->gpu_mem_total[g];
        int k = g;
        while (k > 0 && s->tot[k - 1] < t) {
            s->tot[k] = s->tot[k - 1];
            k--;
        }
        s->tot[k] = t;
    }
    s->cpu = src->cpu_alloc;
    s->mem = src->mem_alloc;
}

/* Hashed a word at a time: byte-wise FNV over 5k nodes of 160 bytes was
 * a visible part of an incremental cycle. */
static inline uint32_t shape_hash(const q__shape *s) {
    uint64_t hw = 0x9e3779b97f4a7c15ull;
    const unsigned char *b = (const unsigned char *)s;
    for (size_t k = 0; k + 8 <= sizeof *s; k += 8) {
        uint64_t w;
        memcpy(&w, b + k, 8);
        hw = (hw ^ w) * 0xbf58476d1ce4e5b9ull;
        hw ^= hw >> 31;
    }
    return (uint32_t)(hw ^ (hw >> 32));
}

/* Shapes: nodes that look alike, for reject checks, counted; then the
 * key of what reject checks depend on (the shapes, their counts, the
 * input generation: quotas and budgets). Returns 0, or -1 out of memory. */
static inline int shapes_build(q_state *st, const struct q_input *in) {
    int nn = in->nnodes;
    size_t tcap = 64;
    while (tcap < (size_t)nn * 2) tcap *= 2;
    if (Q_GROW_P2(st, st->shape_tab, st->cap_shape_tab, tcap)) return -1;
    if (Q_GROW(st, st->shapes, st->cap_shapes, (size_t)nn + 1)) return -1;
    tcap = st->cap_shape_tab;
    for (size_t k = 0; k < tcap; k++) st->shape_tab[k] = -1;
    st->nshapes = 0;
    for (int i = 0; i < nn; i++) {
        q__shape s;
        shape_of(&st->ns.n[i], &in->nodes[i], &s);
        int id = shape_find_or_add(st, &s, shape_hash(&s));
        st->shapes[id].count++;
    }
    uint64_t fk = in->gen * 0x9e3779b97f4a7c15ull + (uint64_t)st->nshapes + 1;
    for (int k = 0; k < st->nshapes; k++) {
        const unsigned char *b = (const unsigned char *)&st->shapes[k];
        for (size_t x = 0; x < sizeof st->shapes[k]; x++) fk = (fk ^ b[x]) * 1099511628211ull;
    }
    st->fit_key = fk ? fk : 1;
    return 0;
}

/* Builds st->ns (and the shapes) from in->nodes. Returns 0, or -1 with
 * err set (AIQ_EINVAL naming the node field, or AIQ_ENOMEM). */
int q__nodeset_build(q_state *st, const struct q_input *in, aiq_err *err) {
    q__nodeset *ns = &st->ns;
    int nn = in->nnodes;
    if (Q_GROW(st, ns->n, ns->cap_n, (size_t)nn + 1)) return nodes_oom(err);
    for (int i = 0; i < nn; i++)
        if (node_load(st, &in->nodes[i], i, &ns->n[i], err)) return -1;
    ns->nn = nn;
    if (buckets_build(st) || shapes_build(st, in)) return nodes_oom(err);
    return 0;
}

/* Copies src into dst (dst's arrays grown as needed). Returns 0 or -1. */
int q__nodeset_copy(q_state *st, q__nodeset *dst, const q__nodeset *src) {
    if (Q_GROW(st, dst->n, dst->cap_n, (size_t)src->nn + 1) ||
        Q_GROW(st, dst->head, dst->cap_head,
               (size_t)src->ndom * Q__NBUCKET + 1) ||
        Q_GROW(st, dst->dom_free, dst->cap_dom, (size_t)src->ndom + 1))
        return -1;
    memcpy(dst->n, src->n, (size_t)src->nn * sizeof *src->n);
    memcpy(dst->head, src->head,
           (size_t)src->ndom * Q__NBUCKET * sizeof *src->head);
    memcpy(dst->dom_free, src->dom_free, (size_t)src->ndom * sizeof(int64_t));
    dst->nn = src->nn;
    dst->ndom = src->ndom;
    return 0;
}

/* Replicas of r that fit on a node with these GPUs and free cpu/memory. */
static int fit_on(const int64_t *tot, const int64_t *used, int ngpus,
                  uint64_t ex, int64_t cpu, int64_t mem, const q__req *r) {
    int k = r->replicas;
    if (r->gpus > 0) {
        int c = 0;
        for (int g = 0; g < ngpus; g++)
            c += !((ex >> g) & 1u) && used[g] == 0 && tot[g] >= r->gmem;
        if (c / r->gpus < k) k = c / r->gpus;
    } else if (q__is_share(r->gpus, r->gmem, r->milli)) {
        /* Counted only up to k: GPU sizes are the caller's and a sum of
         * huge ones would overflow. */
        int64_t s = 0;
        for (int g = 0; g < ngpus && s < k; g++) {
            int64_t f = tot[g] - used[g], want = q__share_mib(r->milli, r->gmem, tot[g]);
            if (!((ex >> g) & 1u) && f >= want) {
                int64_t add = f / want;
                s = add >= k - s ? k : s + add;
            }
        }
        if (s < k) k = (int)s;
    }
    if (r->cpu > 0) {
        int64_t q = cpu < 0 ? 0 : cpu / r->cpu;
        if (q < k) k = (int)q;
    }
    if (r->mem > 0) {
        int64_t q = mem < 0 ? 0 : mem / r->mem;
        if (q < k) k = (int)q;
    }
    return k;
}

int q__node_fit(const q__node *n, const q__req *r, bool avoid) {
    if (!n->sched) return 0;
    if (r->model >= 0 && n->model != r->model) return 0;
    /* Claims of preempting jobs are never available; the backfill
     * reservation only when avoided. */
    if (avoid)
        return fit_on(n->tot, n->used, n->ngpus, n->res_mask | n->cl_mask,
                      n->cpu_free - n->res_cpu - n->cl_cpu,
                      n->mem_free - n->res_mem - n->cl_mem, r);
    return fit_on(n->tot, n->used, n->ngpus, n->cl_mask, n->cpu_free - n->cl_cpu,
                  n->mem_free - n->cl_mem, r);
}

/* Takes one replica of r on node i (the caller checked the fit). */
static void take(q__nodeset *ns, int i, const q__req *r, bool avoid,
                 bool spread, struct q_place *p) {
    q__node *n = &ns->n[i];
    uint64_t ex = (avoid ? n->res_mask : 0) | n->cl_mask;
    p->node = i;
    p->gpu_mask = 0;
    p->gpu_mem_mib = r->gmem;
    if (r->gpus > 0) {
        for (int k = 0; k < r->gpus; k++) {
            int best = -1;
            for (int g = 0; g < n->ngpus; g++) {
                if (((ex | p->gpu_mask) >> g) & 1u) continue;
                if (n->used[g] != 0 || n->tot[g] < r->gmem) continue;
                /* binpack: the smallest GPU that is big enough */
                if (best < 0 || (!spread && n->tot[g] < n->tot[best])) best = g;
            }
            if (best < 0) break; /* cannot happen: the caller checked the fit */
            p->gpu_mask |= 1ull << best;
            n->used[best] = n->tot[best];
            if (r->gmem == 0 && k == 0) p->gpu_mem_mib = n->tot[best];
        }
    } else if (q__is_share(r->gpus, r->gmem, r->milli)) {
        int best = -1;
        for (int g = 0; g < n->ngpus; g++) {
            if ((ex >> g) & 1u) continue;
            int64_t f = n->tot[g] - n->used[g];
            if (f < q__share_mib(r->milli, r->gmem, n->tot[g])) continue;
            int64_t bf = best < 0 ? 0 : n->tot[best] - n->used[best];
            /* binpack: least free GPU that holds it; spread: most free
             * (in MiB; for fractions too, so binpack stays best fit) */
            if (best < 0 || (spread ? f > bf : f < bf)) best = g;
        }
        if (best >= 0) { /* always: the caller checked the fit */
            p->gpu_mask = 1ull << best;
            p->gpu_mem_mib = q__share_mib(r->milli, r->gmem, n->tot[best]);
            n->used[best] += p->gpu_mem_mib;
        }
    }
    n->cpu_free -= r->cpu;
    n->mem_free -= r->mem;
    rebucket(ns, i);
}

void q__release(q__nodeset *ns, const struct q_place *p, const q__req *r) {
    q__node *n = &ns->n[p->node];
    for (int g = 0; g < n->ngpus; g++) {
        if (!((p->gpu_mask >> g) & 1u)) continue;
        if (r->gpus > 0) {
            n->used[g] = 0;
        } else {
            n->used[g] -= p->gpu_mem_mib;
            if (n->used[g] < 0) n->used[g] = 0;
        }
    }
    n->cpu_free += r->cpu;
    n->mem_free += r->mem;
    rebucket(ns, (int)(n - ns->n));
}

void q__occupy(q__nodeset *ns, const struct q_place *p, const q__req *r) {
    q__node *n = &ns->n[p->node];
    for (int g = 0; g < n->ngpus; g++) {
        if (!((p->gpu_mask >> g) & 1u)) continue;
        if (r->gpus > 0) n->used[g] = n->tot[g];
        else if ((n->used[g] += p->gpu_mem_mib) > n->tot[g]) n->used[g] = n->tot[g];
    }
    n->cpu_free -= r->cpu;
    n->mem_free -= r->mem;
    rebucket(ns, (int)(n - ns->n));
}

/* First node of domain d, scanning buckets from `from` towards `to`
 * (inclusive), that fits at least `need` replicas. -1 if none. */
static int scan(q__nodeset *ns, int d, const q__req *r, bool avoid, int from,
                int to, int need, int *fit) {
    int step = from <= to ? 1 : -1;
    for (int b = from;; b += step) {
        for (int i = ns->head[d * Q__NBUCKET + b]; i >= 0; i = ns->n[i].next) {
            int f = q__node_fit(&ns->n[i], r, avoid);
            if (f >= need) {
                *fit = f;
                return i;
            }
        }
        if (b == to) return -1;
    }
}

/* ---- scored placement: FGD or a placement score ---------------------- */

/* One candidate: a node and the GPUs one replica takes there. */
typedef struct {
    int node;
    uint64_t mask;
    double cost;        /* lower is better: FGD's delta, or -score */
    int64_t tie;        /* free GPU memory of the chosen GPUs (binpack) */
} q__cand1;

/* n's FGD measure, recomputed only when n changed since it was cached. */
static double node_frag(const q_state *st, q__node *n) {
    if (!n->frag_ok) {
        n->frag = q__frag(st, n->tot, n->used, n->ngpus, n->cpu_free, n->mem_free);
        n->frag_ok = true;
    }
    return n->frag;
}

/* Whole GPUs of one replica of r on n as binpack takes them (the smallest
 * free ones big enough), or 0 when n has too few. */
static uint64_t whole_mask(const q__node *n, const q__req *r, uint64_t ex) {
    uint64_t m = 0;
    for (int k = 0; k < r->gpus; k++) {
        int best = -1;
        for (int g = 0; g < n->ngpus; g++) {
            if (((ex | m) >> g) & 1u) continue;
            if (n->used[g] != 0 || n->tot[g] < r->gmem) continue;
            if (best < 0 || n->tot[g] < n->tot[best]) best = g;
        }
        if (best < 0) return 0;
        m |= 1ull << best;
    }
    return m;
}

/* used[] of n once one replica of r takes the GPUs in mask. */
static void used_after(const q__node *n, const q__req *r, uint64_t mask, int64_t *used) {
    for (int g = 0; g < n->ngpus; g++) {
        used[g] = n->used[g];
        if ((mask >> g) & 1u)
            used[g] = r->gpus > 0 ? n->tot[g]
                                  : used[g] + q__share_mib(r->milli, r->gmem, n->tot[g]);
    }
}

static double sum_free(const int64_t *tot, const int64_t *used, int ngpus, uint64_t only) {
    double s = 0;
    for (int g = 0; g < ngpus; g++)
        if ((only >> g) & 1u) s += (double)(tot[g] - used[g]);
    return s / 1024.0;
}

/* Is some replica of the gang being placed (st->places[off..]) on node i,
 * or (topo) on a node with node i's topology label? */
static double gang_near(const q_state *st, int i, int off, bool topo) {
    const char *t = st->innodes ? st->innodes[i].topology : NULL;
    if (topo && (!t || !*t)) return 0;
    for (int k = off; k < st->nplaces; k++) {
        int j = st->places[k].node;
        if (!topo && j == i) return 1;
        const char *u = topo ? st->innodes[j].topology : NULL;
        if (topo && u && strcmp(t, u) == 0) return 1;
    }
    return 0;
}

/* The placement factors of one candidate (see fx_place_factors.def). */
static void place_factors(const q_state *st, const q__node *n, int i, const q__req *r,
                          uint64_t mask, const int64_t *after, double dfrag, double frag,
                          int off, double *pf) {
    uint64_t all = n->ngpus >= 64 ? ~0ull : (1ull << n->ngpus) - 1;
    int freeafter = 0;
    int64_t mintot = 0;
    double tot = 0, util = 0, nutil = 0;
    const struct q_node *src = st->innodes ? &st->innodes[i] : NULL;
    bool uk = src && src->util_known;
    for (int g = 0; g < n->ngpus; g++) {
        freeafter += after[g] == 0;
        tot += (double)n->tot[g];
        if (uk) nutil += src->gpu_util[g];
        if (!((mask >> g) & 1u)) continue;
        if (mintot == 0 || n->tot[g] < mintot) mintot = n->tot[g];
        if (uk) util += src->gpu_util[g];
    }
    int nm = __builtin_popcountll(mask);
    pf[Q_PF_NODE_GPUS] = n->ngpus;
    pf[Q_PF_NODE_FREE_GPUS] = n->nfree;
    pf[Q_PF_NODE_FREE_GPUS_AFTER] = freeafter;
    pf[Q_PF_NODE_GPU_MEM_TOTAL] = tot / 1024.0;
    pf[Q_PF_NODE_GPU_MEM_FREE] = sum_free(n->tot, n->used, n->ngpus, all);
    pf[Q_PF_NODE_GPU_MEM_FREE_AFTER] = sum_free(n->tot, after, n->ngpus, all);
    pf[Q_PF_NODE_CPU_FREE] = (double)n->cpu_free / 1000.0;
    pf[Q_PF_GPU_MEM_TOTAL] = (double)mintot / 1024.0;
    pf[Q_PF_GPU_MEM_FREE] = sum_free(n->tot, n->used, n->ngpus, mask);
    pf[Q_PF_GPU_MEM_FREE_AFTER] = sum_free(n->tot, after, n->ngpus, mask);
    pf[Q_PF_FRAG_DELTA] = dfrag;
    pf[Q_PF_FRAG_NODE] = frag;
    pf[Q_PF_GANG_SAME_NODE] = gang_near(st, i, off, false);
    pf[Q_PF_UTIL_KNOWN] = uk;
    pf[Q_PF_GPU_UTIL] = uk && nm ? util / nm : 0;
    pf[Q_PF_NODE_GPU_UTIL] = uk && n->ngpus ? nutil / n->ngpus : 0;
    pf[Q_PF_GANG_SAME_TOPOLOGY] = gang_near(st, i, off, true);
}

/* Costs the candidate (node i, mask) and keeps it in *best when better. */
static void consider(q_state *st, q__nodeset *ns, int i, const q__req *r, uint64_t mask,
                     int off, q__cand1 *best) {
    q__node *n = &ns->n[i];
    int64_t after[Q_MAX_GPUS];
    used_after(n, r, mask, after);
    double before = node_frag(st, n);
    double fa = q__frag(st, n->tot, after, n->ngpus, n->cpu_free - r->cpu, n->mem_free - r->mem);
    double cost = fa - before;
    if (st->pmode == Q__PM_SCORE) {
        double pf[Q_NPFACTORS], s = 0;
        place_factors(st, n, i, r, mask, after, fa - before, before, off, pf);
        if (st->placer->score(st->placer->ctx, pf, &s) != 0 || !isfinite(s)) {
            st->nplace_err++;
            cost = HUGE_VAL; /* ranks below every scored candidate */
        } else {
            cost = -s;
        }
    }
    int64_t tie = (int64_t)(sum_free(n->tot, n->used, n->ngpus, mask) * 1024.0);
    if (best->node < 0 || cost < best->cost - 1e-12 ||
        (cost <= best->cost + 1e-12 && tie < best->tie)) {
        best->node = i;
        best->mask = mask;
        best->cost = cost;
        best->tie = tie;
    }
}

/* Every way one replica of r can go on node i (whole GPUs: binpack's
 * choice; a share: each GPU that holds it; CPU-only: no GPU). */
static void node_cands(q_state *st, q__nodeset *ns, int i, const q__req *r, bool avoid,
                       int off, q__cand1 *best) {
    const q__node *n = &ns->n[i];
    uint64_t ex = (avoid ? n->res_mask : 0) | n->cl_mask;
    if (r->gpus > 0) {
        uint64_t m = whole_mask(n, r, ex);
        if (m) consider(st, ns, i, r, m, off, best);
    } else if (q__is_share(r->gpus, r->gmem, r->milli)) {
        for (int g = 0; g < n->ngpus; g++)
            if (!((ex >> g) & 1u) &&
                n->tot[g] - n->used[g] >= q__share_mib(r->milli, r->gmem, n->tot[g]))
                consider(st, ns, i, r, 1ull << g, off, best);
    } else {
        consider(st, ns, i, r, 0, off, best);
    }
}

/* Takes one replica of r on node i with the GPUs in mask. */
static void take_mask(q__nodeset *ns, int i, const q__req *r, uint64_t mask, struct q_place *p) {
    q__node *n = &ns->n[i];
    p->node = i;
    p->gpu_mask = mask;
    p->gpu_mem_mib = r->gmem;
    for (int g = 0; g < n->ngpus; g++) {
        if (!((mask >> g) & 1u)) continue;
        if (r->gpus > 0) {
            if (r->gmem == 0 && (p->gpu_mem_mib == 0 || n->tot[g] < p->gpu_mem_mib))
                p->gpu_mem_mib = n->tot[g];
            n->used[g] = n->tot[g];
        } else {
            p->gpu_mem_mib = q__share_mib(r->milli, r->gmem, n->tot[g]);
            n->used[g] += p->gpu_mem_mib;
        }
    }
    n->cpu_free -= r->cpu;
    n->mem_free -= r->mem;
    rebucket(ns, i);
}

/* Places r's replicas one at a time, each on the best candidate of
 * domain d (all or none). Returns 1 or 0. */
static int place_scored(q_state *st, q__nodeset *ns, int d, const q__req *r, bool avoid) {
    int off = st->nplaces;
    int lo = r->gpus > 0 ? r->gpus : 0;
    for (int left = r->replicas; left > 0; left--) {
        q__cand1 best = {-1, 0, 0, 0};
        for (int b = lo; b <= Q_MAX_GPUS; b++)
            for (int i = ns->head[d * Q__NBUCKET + b]; i >= 0; i = ns->n[i].next)
                if (q__node_fit(&ns->n[i], r, avoid) >= 1)
                    node_cands(st, ns, i, r, avoid, off, &best);
        if (best.node < 0) {
            while (st->nplaces > off) q__release(ns, &st->places[--st->nplaces], r);
            return 0;
        }
        take_mask(ns, best.node, r, best.mask, &st->places[st->nplaces++]);
    }
    return 1;
}

static int place_in_domain(q_state *st, q__nodeset *ns, int d, const q__req *r,
                           bool avoid, bool spread) {
    if (st->pmode != Q__PM_LEGACY) return place_scored(st, ns, d, r, avoid);
    int left = r->replicas;
    int off = st->nplaces;
    int lo = r->gpus > 0 ? r->gpus : 0;
    while (left > 0) {
        int i = -1, k = 0, fit = 0;
        if (!spread) {
            /* Fewest nodes: the best-fitting node that holds the rest of
             * the gang, else the node with the most room. */
            int64_t want = (int64_t)r->gpus * left;
            if (want <= Q_MAX_GPUS) {
                int from = r->gpus > 0 ? (int)want : 0;
                i = scan(ns, d, r, avoid, from, Q_MAX_GPUS, left, &fit);
                if (i >= 0) k = left;
            }
            if (i < 0) {
                i = scan(ns, d, r, avoid, Q_MAX_GPUS, lo, 1, &fit);
                k = fit < left ? fit : left;
            }
        } else if (!q__is_share(r->gpus, r->gmem, r->milli) && r->gpus == 0) {
            /* CPU-only: fewest free GPUs first even when spreading, so
             * they keep off the GPU nodes GPU jobs need. */
            i = scan(ns, d, r, avoid, 0, Q_MAX_GPUS, 1, &fit);
            k = 1;
        } else {
            i = scan(ns, d, r, avoid, Q_MAX_GPUS, lo, 1, &fit);
            k = 1;
        }
        if (i < 0) {
            while (st->nplaces > off) q__release(ns, &st->places[--st->nplaces], r);
            return 0;
        }
        for (int t = 0; t < k; t++) take(ns, i, r, avoid, spread, &st->places[st->nplaces++]);
        left -= k;
    }
    return 1;
}

static uint32_t memo_hash(const q__req *r, int avoid) {
    uint64_t h = (uint64_t)(uint32_t)r->dom * 0x9e3779b97f4a7c15ull;
    h = (h ^ ((uint64_t)(uint32_t)r->model << 32 | (uint32_t)r->replicas)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ ((uint64_t)(uint32_t)r->gpus << 1 | (uint64_t)avoid)) * 0x94d049bb133111ebull;
    h = (h ^ (uint64_t)r->gmem) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (uint64_t)r->cpu) * 0x94d049bb133111ebull;
    h = (h ^ (uint64_t)r->mem) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (uint64_t)(uint32_t)r->milli) * 0x94d049bb133111ebull;
    return (uint32_t)(h ^ (h >> 29));
}

static bool req_eq(const q__req *a, const q__req *b) {
    return a->dom == b->dom && a->model == b->model && a->replicas == b->replicas &&
           a->gpus == b->gpus && a->gmem == b->gmem && a->cpu == b->cpu && a->mem == b->mem &&
           a->milli == b->milli;
}

void q__memo_clear(q_state *st) {
    if (st->memo) memset(st->memo, 0, st->cap_memo * sizeof *st->memo);
    st->nmemo = 0;
}

/* Finds the memo slot of (r, avoid): the entry, or the empty slot where it
 * would go (NULL when the memo is full or cannot be allocated). */
static q__memo_key *memo_slot(q_state *st, const q__req *r, bool avoid) {
    if (!st->memo) {
        if (Q_GROW_P2(st, st->memo, st->cap_memo, Q__MEMO_SLOTS)) return NULL;
        q__memo_clear(st);
    }
    size_t m = st->cap_memo - 1;
    for (size_t i = memo_hash(r, avoid) & m;; i = (i + 1) & m) {
        q__memo_key *e = &st->memo[i];
        if (!e->used) {
            if ((size_t)st->nmemo * 2 >= st->cap_memo) return NULL;
            e->r = *r;
            e->avoid = avoid;
            return e;
        }
        if (e->avoid == (int32_t)avoid && req_eq(&e->r, r)) return e;
    }
}

static void memo_set(q_state *st, q__memo_key *e, int state) {
    if (!e) return;
    if (!e->used) st->nmemo++;
    e->used = state;
    e->epoch = st->epoch;
}

int q__place(q_state *st, q__nodeset *ns, const q__req *r, bool avoid,
             bool spread) {
    bool use_memo = ns == &st->ns;
    if (r->gpus > Q_MAX_GPUS || r->replicas < 1) return 0;
    q__memo_key *e = use_memo ? memo_slot(st, r, avoid) : NULL;
    if (e && e->used == 1) return 0;
    if (Q_GROW(st, st->places, st->cap_places,
               (size_t)st->nplaces + (size_t)r->replicas))
        return -1;
    if (Q_GROW(st, st->doms_try, st->cap_doms_try, (size_t)ns->ndom + 1))
        return -1;
    int nd = 0;
    if (r->dom >= 0) {
        if (r->dom < ns->ndom) st->doms_try[nd++] = r->dom;
    } else {
        /* binpack: fullest domain first; spread: emptiest first */
        for (int d = 0; d < ns->ndom; d++) {
            int k = nd++;
            while (k > 0) {
                int64_t a = ns->dom_free[st->doms_try[k - 1]], b = ns->dom_free[d];
                if (spread ? a >= b : a <= b) break;
                st->doms_try[k] = st->doms_try[k - 1];
                k--;
            }
            st->doms_try[k] = d;
        }
    }
    for (int t = 0; t < nd; t++) {
        int d = st->doms_try[t];
        if (r->gpus > 0 && ns->dom_free[d] < (int64_t)r->gpus * r->replicas)
            continue;
        if (place_in_domain(st, ns, d, r, avoid, spread)) return 1;
    }
    memo_set(st, e, 1);
    return 0;
}

/* One replica fits somewhere (any allowed domain)? Scans only. */
static int fits_one(q__nodeset *ns, const q__req *r, bool avoid) {
    int lo = r->gpus > 0 ? r->gpus : 0, fit;
    for (int d = 0; d < ns->ndom; d++) {
        if (r->dom >= 0 && d != r->dom) continue;
        if (r->gpus > 0 && ns->dom_free[d] < r->gpus) continue;
        if (scan(ns, d, r, avoid, lo, Q_MAX_GPUS, 1, &fit) >= 0) return 1;
    }
    return 0;
}

int q__probe(q_state *st, const q__req *r, bool avoid, bool spread) {
    q__memo_key *e = memo_slot(st, r, avoid);
    if (e && e->used == 1) return 0;
    if (e && e->used == 2 && e->epoch == st->epoch) return 1;
    int rc;
    if (r->replicas == 1 && r->gpus <= Q_MAX_GPUS) {
        rc = fits_one(&st->ns, r, avoid);
    } else {
        int off = st->nplaces;
        rc = q__place(st, &st->ns, r, avoid, spread);
        if (rc == 1)
            while (st->nplaces > off) q__release(&st->ns, &st->places[--st->nplaces], r);
    }
    if (rc >= 0) memo_set(st, memo_slot(st, r, avoid), rc == 1 ? 2 : 1);
    return rc;
}

int q__reject_check(q_state *st, const q__req *r, struct q_result *res) {
    int ndom = st->doms.n;
    if (r->dom == Q__UNKNOWN || r->model == Q__UNKNOWN) {
        /* No node has that domain (res 0) or model (res 1), or a known
         * domain lacks a known-elsewhere model (res 2, found below). */
        res->reason = Q_R_NO_NODE;
        res->need = res->limit = 0;
        res->res = r->dom == Q__UNKNOWN ? 0 : (r->dom >= 0 ? 2 : 1);
        return 1;
    }
    if (Q_GROW(st, st->dsum, st->cap_dsum, (size_t)ndom + 1)) return 0;
    memset(st->dsum, 0, (size_t)ndom * sizeof *st->dsum);
    bool any = false, any_dom = false, any_fit = false;
    int maxg = 0, maxbig = 0;
    int64_t maxtot = 0, maxcpu = 0, maxmem = 0;
    int64_t big_gpus = 0;
    for (int s = 0; s < st->nshapes; s++) {
        const q__shape *sh = &st->shapes[s];
        if (r->dom >= 0 && sh->dom != r->dom) continue;
        any_dom = true;
        if (r->model >= 0 && sh->model != r->model) continue;
        any = true;
        if (sh->ngpus > maxg) maxg = sh->ngpus;
        if (sh->ngpus && sh->tot[0] > maxtot) maxtot = sh->tot[0];
        if (sh->cpu > maxcpu) maxcpu = sh->cpu;
        if (sh->mem > maxmem) maxmem = sh->mem;
        int c = 0;
        for (int g = 0; g < sh->ngpus; g++) c += sh->tot[g] >= r->gmem;
        if (c > maxbig) maxbig = c;
        int64_t zero[Q_MAX_GPUS] = {0};
        int k = fit_on(sh->tot, zero, sh->ngpus, 0, sh->cpu, sh->mem, r);
        if (k > 0) {
            any_fit = true;
            int64_t add = (int64_t)k * sh->count;
            st->dsum[sh->dom] += add;
            if (st->dsum[sh->dom] > big_gpus) big_gpus = st->dsum[sh->dom];
        }
    }
    res->need = res->limit = 0;
    if (!any) {
        res->reason = Q_R_NO_NODE;
        res->res = (r->dom >= 0 && !any_dom) ? 0 : (r->dom >= 0 ? 2 : 1);
        return 1;
    }
    if (!any_fit) {
        res->reason = Q_R_NODE_TOO_SMALL;
        if (r->gpus > maxg) {
            res->res = Q_TOO_GPUS; res->need = r->gpus; res->limit = maxg;
        } else if ((r->gpus > 0 && maxbig < r->gpus) ||
                   (r->gpus == 0 && r->gmem > maxtot)) {
            res->res = Q_TOO_GPU_MEM; res->need = r->gmem; res->limit = maxtot;
        } else if (r->cpu > maxcpu) {
            res->res = Q_TOO_CPU; res->need = r->cpu; res->limit = maxcpu;
        } else if (r->mem > maxmem) {
            res->res = Q_TOO_MEM; res->need = r->mem; res->limit = maxmem;
        } else {
            res->res = Q_TOO_COMBINED;
        }
        return 1;
    }
    if (big_gpus < r->replicas) {
        res->reason = Q_R_GANG_TOO_BIG;
        res->need = r->replicas;
        res->limit = big_gpus;
        return 1;
    }
    return 0;
}
