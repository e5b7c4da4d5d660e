/* eta_nodes.c -- the estimate's per-node capacity (eta.c runs the
 * simulation): every schedulable node's free whole GPUs as simulated jobs
 * start and end, so that a gang of 8 GPUs per replica starts when a node
 * has 8 free, not when 8 are free anywhere. Nodes are grouped in cells
 * (one domain, one GPU model) and, in a cell, listed by their count of
 * free GPUs with a mask of the counts that have nodes: the best-fitting
 * node for a replica (fewest free GPUs that still hold it) is one mask
 * lookup per cell the job may use, not a scan of the nodes. What a job
 * holds is kept as (node, GPUs) entries in st->epl, which its end gives
 * back. A GPU share counts as one whole GPU (taken from the free ones, one
 * given back per share that ends, at most the node's GPUs): GPU memory,
 * CPU and host memory are not simulated. */
#include "queue/q_int.h"

#include <string.h>

/* ---- lists -------------------------------------------------------------- */

static void en_unlink(q_state *st, int32_t i) {
    q__enode *n = &st->en[i];
    if (n->free < 1) return;
    q__ecell *c = &st->ec[n->cell];
    int b = n->free;
    if (n->prev >= 0) st->en[n->prev].next = n->next;
    else c->head[b] = n->next;
    if (n->next >= 0) st->en[n->next].prev = n->prev;
    if (--c->cnt[b] == 0) c->mask &= ~(1ull << (b - 1));
}

static void en_link(q_state *st, int32_t i) {
    q__enode *n = &st->en[i];
    if (n->free < 1) return;
    q__ecell *c = &st->ec[n->cell];
    int b = n->free;
    n->prev = -1;
    n->next = c->head[b];
    if (n->next >= 0) st->en[n->next].prev = i;
    c->head[b] = i;
    c->cnt[b]++;
    c->mask |= 1ull << (b - 1);
}

/* Node i gains d free GPUs (loses them when d < 0); never more than it
 * has. Nodes outside the simulation are left alone. */
static void en_move(q_state *st, int32_t i, int d) {
    q__enode *n = &st->en[i];
    if (n->cell < 0) return;
    en_unlink(st, i);
    n->free += d;
    if (n->free > n->ngpus) n->free = n->ngpus;
    en_link(st, i);
}

/* ---- cells -------------------------------------------------------------- */

static uint32_t cell_hash(int32_t dom, int32_t model) {
    uint32_t h = (uint32_t)dom * 0x9e3779b1u ^ (uint32_t)model * 0x85ebca6bu;
    return h ^ (h >> 15);
}

/* The cell of (dom, model), added when new; -1 out of memory. */
static int32_t cell_of(q_state *st, int32_t dom, int32_t model) {
    size_t m = st->cap_etab - 1;
    size_t i = cell_hash(dom, model) & m;
    for (;; i = (i + 1) & m) {
        int32_t id = st->etab[i];
        if (id < 0) break;
        if (st->ec[id].dom == dom && st->ec[id].model == model) return id;
    }
    if (Q_GROW(st, st->ec, st->cap_ec, (size_t)st->nec + 1)) return -1;
    q__ecell *c = &st->ec[st->nec];
    memset(c, 0, sizeof *c);
    c->dom = dom;
    c->model = model;
    c->first = -1;
    for (int b = 0; b < Q__NBUCKET; b++) c->head[b] = -1;
    st->etab[i] = st->nec;
    return st->nec++;
}

/* Groups the cells by domain (edc, edoff) and lists the domains that have
 * any (edl). Returns 0, or -1 out of memory. */
static int cells_group(q_state *st) {
    int nd = st->endom;
    if (Q_GROW(st, st->edoff, st->cap_edoff, (size_t)nd + 2) ||
        Q_GROW(st, st->edc, st->cap_edc, (size_t)st->nec + 1) ||
        Q_GROW(st, st->edl, st->cap_edl, (size_t)nd + 1))
        return -1;
    memset(st->edoff, 0, ((size_t)nd + 2) * sizeof *st->edoff);
    for (int c = 0; c < st->nec; c++) st->edoff[st->ec[c].dom + 2]++;
    st->nedl = 0;
    for (int d = 0; d < nd; d++) {
        if (st->edoff[d + 2] > 0) st->edl[st->nedl++] = d;
        st->edoff[d + 2] += st->edoff[d + 1];
    }
    for (int c = 0; c < st->nec; c++) st->edc[st->edoff[st->ec[c].dom + 1]++] = c;
    return 0;
}

int q__en_begin(q_state *st) {
    const q__nodeset *ns = &st->ns;
    size_t tcap = 64;
    while (tcap < (size_t)ns->nn * 2) tcap *= 2;
    if (Q_GROW(st, st->en, st->cap_en, (size_t)ns->nn + 1) ||
        Q_GROW_P2(st, st->etab, st->cap_etab, tcap))
        return -1;
    for (size_t k = 0; k < st->cap_etab; k++) st->etab[k] = -1;
    st->nec = 0;
    st->nepl = 0;
    st->endom = ns->ndom;
    /* In reverse, so that every list holds its nodes in input order. */
    for (int i = ns->nn - 1; i >= 0; i--) {
        const q__node *n = &ns->n[i];
        q__enode *e = &st->en[i];
        *e = (q__enode){0, n->ngpus, -1, -1, -1};
        if (!n->sched || n->ngpus <= 0 || n->dom < 0 || n->dom >= ns->ndom) continue;
        e->cell = cell_of(st, n->dom, n->model);
        if (e->cell < 0) return -1;
        q__ecell *c = &st->ec[e->cell];
        c->size[n->ngpus]++;
        c->smask |= 1ull << (n->ngpus - 1);
        c->first = i;
        e->free = n->nfree;
        en_link(st, i);
    }
    return cells_group(st);
}

/* ---- fits --------------------------------------------------------------- */

/* Replicas of g GPUs that nodes counted by cnt (per count of GPUs, with
 * mask of the non-empty counts) hold, counted up to want. */
static int64_t cell_count(const int32_t *cnt, uint64_t mask, int g, int64_t want) {
    int64_t k = 0;
    uint64_t m = mask >> (g - 1);
    while (m && k < want) {
        int b = g + __builtin_ctzll(m);
        m &= m - 1;
        k += (int64_t)cnt[b] * (b / g);
    }
    return k;
}

/* Replicas of g GPUs the cells of domain d with the job's model hold,
 * free now or (ever) when every node is empty, counted up to want. */
static int64_t dom_count(const q_state *st, int d, int32_t model, int g, int64_t want, bool ever) {
    int64_t k = 0;
    for (int x = st->edoff[d]; x < st->edoff[d + 1] && k < want; x++) {
        const q__ecell *c = &st->ec[st->edc[x]];
        if (model >= 0 && c->model != model) continue;
        k += ever ? cell_count(c->size, c->smask, g, want - k)
                  : cell_count(c->cnt, c->mask, g, want - k);
    }
    return k;
}

/* The domain of a cell o may use with a node of at least g GPUs free
 * (ever: at least g GPUs); -1 none. One replica needs nothing more: the
 * masks answer without counting. */
static int one_dom(const q_state *st, const q__orec *o, int g, bool ever) {
    int d = o->dom;
    int x0 = d >= 0 ? st->edoff[d] : 0, x1 = d >= 0 ? st->edoff[d + 1] : st->nec;
    for (int x = x0; x < x1; x++) {
        const q__ecell *c = &st->ec[d >= 0 ? st->edc[x] : x];
        if (o->model >= 0 && c->model != o->model) continue;
        if ((ever ? c->smask : c->mask) >> (g - 1)) return c->dom;
    }
    return -1;
}

/* The first domain o may use that holds its whole gang of g GPUs per
 * replica (now, or ever); -1 none. */
static int gang_dom(const q_state *st, const q__orec *o, int g, bool ever) {
    int64_t want = o->replicas;
    if (o->model < -1 || o->dom < -1 || o->dom >= st->endom) return -1; /* unknown name */
    if (want == 1) return one_dom(st, o, g, ever);
    if (o->dom >= 0)
        return dom_count(st, o->dom, o->model, g, want, ever) >= want ? o->dom : -1;
    for (int x = 0; x < st->nedl; x++)
        if (dom_count(st, st->edl[x], o->model, g, want, ever) >= want) return st->edl[x];
    return -1;
}

bool q__en_fits(const q_state *st, const q__orec *o, bool ever) {
    int g = (int)q__units(o->gpus, o->gmem, o->milli);
    if (g <= 0) return true;
    return g <= Q_MAX_GPUS && gang_dom(st, o, g, ever) >= 0;
}

/* ---- taking and giving back ---------------------------------------------- */

/* Of the cells of domain d (all cells when d < 0) with model (any when
 * < 0): the node with the fewest free GPUs that are at least g; with
 * most, the node with the most free GPUs, else any node of them. -1 when
 * there is none. */
static int32_t pick(const q_state *st, int d, int32_t model, int g, bool most) {
    int x0 = d >= 0 ? st->edoff[d] : 0, x1 = d >= 0 ? st->edoff[d + 1] : st->nec;
    int bb = most ? 0 : Q__NBUCKET;
    int32_t node = -1;
    for (int x = x0; x < x1; x++) {
        const q__ecell *c = &st->ec[d >= 0 ? st->edc[x] : x];
        if (model >= 0 && c->model != model) continue;
        if (most) {
            int b = c->mask ? 64 - __builtin_clzll(c->mask) : 0;
            if (b > bb || node < 0) node = b > 0 ? c->head[b] : c->first;
            if (b > bb) bb = b;
            continue;
        }
        uint64_t m = c->mask >> (g - 1);
        if (!m) continue;
        int b = g + __builtin_ctzll(m);
        if (b < bb) {
            bb = b;
            node = c->head[b];
        }
    }
    return node;
}

/* Appends (node, gpus) to st->epl, adding to the last entry when it is
 * the same node of the same job (entries from first on); the caller made
 * room. */
static void epl_add(q_state *st, int32_t first, int32_t node, int32_t gpus) {
    if (st->nepl > first && st->epl[st->nepl - 1].node == node) {
        st->epl[st->nepl - 1].gpus += gpus;
        return;
    }
    st->epl[st->nepl++] = (q__epl){node, gpus};
}

static int epl_room(q_state *st, int n) {
    if ((int64_t)st->nepl + n > INT32_MAX) return -1;
    return Q_GROW(st, st->epl, st->cap_epl, (size_t)st->nepl + (size_t)n);
}

int q__en_take(q_state *st, const q__orec *o, bool force, int32_t *off, int32_t *cnt) {
    int g = (int)q__units(o->gpus, o->gmem, o->milli);
    *off = st->nepl;
    *cnt = 0;
    if (g <= 0 || g > Q_MAX_GPUS || o->model < -1 || o->dom < -1 || o->dom >= st->endom) return 0;
    if (epl_room(st, o->replicas)) return -1;
    /* one replica: the best fit over every domain it may use; a gang:
     * the first domain that holds it (forced and none does: any) */
    int d = o->dom;
    if (o->replicas > 1) {
        int gd = gang_dom(st, o, g, false);
        if (gd < 0 && !force) return 0;
        if (gd >= 0) d = gd;
    }
    for (int r = 0; r < o->replicas; r++) {
        int32_t i = pick(st, d, o->model, g, false);
        if (i < 0 && force) i = pick(st, d, o->model, g, true);
        if (i < 0) break; /* no node at all */
        en_move(st, i, -g);
        epl_add(st, *off, i, g);
    }
    *cnt = st->nepl - *off;
    return 0;
}

int q__en_hold(q_state *st, const struct q_job *j, const struct q_place *pl, int n,
               int32_t *off, int32_t *cnt) {
    *off = st->nepl;
    *cnt = 0;
    bool share = q__is_share(j->gpus, j->gpu_memory_mib, j->gpu_milli);
    if ((j->gpus <= 0 && !share) || n <= 0) return 0;
    if (epl_room(st, n)) return -1;
    for (int k = 0; k < n; k++) {
        int32_t node = pl[k].node;
        if (node < 0 || node >= st->ns.nn || st->en[node].cell < 0) continue;
        int gpus = share ? 1 : __builtin_popcountll(pl[k].gpu_mask);
        if (gpus > 0) epl_add(st, *off, node, gpus);
    }
    *cnt = st->nepl - *off;
    return 0;
}

void q__en_give(q_state *st, int32_t off, int32_t cnt) {
    for (int32_t k = off; k < off + cnt; k++) en_move(st, st->epl[k].node, st->epl[k].gpus);
}

void q__en_set(q_state *st, int32_t i, int32_t free) {
    en_move(st, i, free - st->en[i].free);
}
