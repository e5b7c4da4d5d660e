/* state.c -- the queue's cross-cycle state: counting allocator, grow-only
 * scratch arrays, string interning, a stable merge sort and a min-heap of
 * timed events. Every byte the queue holds goes through q__alloc so that
 * q_state_bytes() measures it exactly. */
#include "queue/q_int.h"

#include <stdlib.h>
#include <string.h>

/* Each allocation carries its size in front of it (16 bytes keep the
 * payload aligned for any type). */
#define Q_HDR 16

static void *libc_alloc(void *ctx, size_t size) {
    (void)ctx;
    return malloc(size);
}

static void libc_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    (void)size;
    free(p);
}

/* Allocates size bytes through the state's allocator and counts them.
 * Returns NULL when out of memory. */
void *q__alloc(q_state *st, size_t size) {
    if (size > SIZE_MAX - Q_HDR) return NULL;
    unsigned char *p = st->a.alloc(st->a.ctx, size + Q_HDR);
    if (!p) return NULL;
    memcpy(p, &size, sizeof size);
    st->bytes += size + Q_HDR;
    if (st->bytes > st->peak) st->peak = st->bytes;
    return p + Q_HDR;
}

/* Frees a block from q__alloc; NULL does nothing. */
void q__free(q_state *st, void *p) {
    if (!p) return;
    unsigned char *b = (unsigned char *)p - Q_HDR;
    size_t size;
    memcpy(&size, b, sizeof size);
    st->bytes -= size + Q_HDR;
    st->a.free(st->a.ctx, b, size + Q_HDR);
}

/* Grows the array *arr (a pointer to a pointer) to hold need elements:
 * exactly need when exact, else need and a quarter more (at least 16),
 * so that an array that grows one cycle at a time is copied a bounded
 * number of times per element while at most a fifth of its slots sit
 * idle (doubling left up to half: at 100k jobs, 131,072 slots of every
 * per-job array). */
int q__grow(q_state *st, void *arr, size_t *cap, size_t need, size_t elem, bool exact) {
    void **pp = arr;
    if (need <= *cap) return 0;
    if (need > SIZE_MAX / 2) return -1;
    size_t ncap = exact ? need : need + need / 4;
    if (ncap < 16 && !exact) ncap = 16;
    if (ncap > SIZE_MAX / elem) return -1;
    void *np = q__alloc(st, ncap * elem);
    if (!np) return -1;
    if (*pp && *cap) memcpy(np, *pp, *cap * elem);
    q__free(st, *pp);
    *pp = np;
    *cap = ncap;
    return 0;
}

/* FNV-1a, 32 bits. */
uint32_t q__hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

int32_t q__intern_find(const q__intern *t, const char *s) {
    if (!s) s = "";
    if (!t->tcap) return -1;
    size_t m = t->tcap - 1;
    for (size_t i = q__hash(s) & m;; i = (i + 1) & m) {
        int32_t id = t->tab[i];
        if (id < 0) return -1;
        if (strcmp(t->s[id], s) == 0) return id;
    }
}

int32_t q__intern_id(q_state *st, q__intern *t, const char *s) {
    if (!s) s = "";
    int32_t id = q__intern_find(t, s);
    if (id >= 0) return id;
    if ((size_t)(t->n + 1) * 2 > t->tcap) {
        size_t ncap = t->tcap ? t->tcap * 2 : 64;
        int32_t *nt = q__alloc(st, ncap * sizeof *nt);
        if (!nt) return -1;
        for (size_t i = 0; i < ncap; i++) nt[i] = -1;
        for (int k = 0; k < t->n; k++) {
            size_t i = q__hash(t->s[k]) & (ncap - 1);
            while (nt[i] >= 0) i = (i + 1) & (ncap - 1);
            nt[i] = k;
        }
        q__free(st, t->tab);
        t->tab = nt;
        t->tcap = ncap;
    }
    if (Q_GROW(st, t->s, t->cap, (size_t)t->n + 1)) return -1;
    size_t len = strlen(s);
    char *c = q__alloc(st, len + 1);
    if (!c) return -1;
    memcpy(c, s, len + 1);
    size_t i = q__hash(s) & (t->tcap - 1);
    while (t->tab[i] >= 0) i = (i + 1) & (t->tcap - 1);
    t->tab[i] = t->n;
    t->s[t->n] = c;
    return t->n++;
}

int32_t q__resolve(const q__intern *t, const char *s) {
    if (!s || !*s) return -1;
    int32_t id = q__intern_find(t, s);
    return id >= 0 ? id : Q__UNKNOWN;
}

void q__intern_free(q_state *st, q__intern *t) {
    for (int k = 0; k < t->n; k++) q__free(st, t->s[k]);
    q__free(st, t->s);
    q__free(st, t->tab);
    memset(t, 0, sizeof *t);
}

/* Bottom-up merge sort; tmp holds n elements. Stable. */
void q__msort(int32_t *a, int n, int32_t *tmp,
              int (*cmp)(const void *ctx, int32_t x, int32_t y),
              const void *ctx) {
    /* Short runs by insertion sort first: fewer passes. */
    const int run = 16;
    for (int lo = 0; lo < n; lo += run) {
        int hi = lo + run < n ? lo + run : n;
        for (int i = lo + 1; i < hi; i++) {
            int32_t x = a[i];
            int k = i - 1;
            while (k >= lo && cmp(ctx, x, a[k]) < 0) {
                a[k + 1] = a[k];
                k--;
            }
            a[k + 1] = x;
        }
    }
    int32_t *src = a, *dst = tmp;
    for (int w = run; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n;
            int hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, k = mid, o = lo;
            while (i < mid && k < hi)
                dst[o++] = cmp(ctx, src[k], src[i]) < 0 ? src[k++] : src[i++];
            while (i < mid) dst[o++] = src[i++];
            while (k < hi) dst[o++] = src[k++];
        }
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

/* ---- min-heap of events by time ----------------------------------------
 * 4-ary: half the levels of a binary heap and children in one cache line,
 * which matters when the estimate pushes and pops ~100k events a cycle. */

static int ev_less(const q__ev *x, const q__ev *y) {
    if (x->t != y->t) return x->t < y->t;
    return x->job < y->job; /* deterministic among equal times */
}

static void sift_down(q__ev *h, int n, int i) {
    q__ev x = h[i];
    for (;;) {
        int c = 4 * i + 1;
        if (c >= n) break;
        int m = c, end = c + 4 < n ? c + 4 : n;
        for (int k = c + 1; k < end; k++)
            if (ev_less(&h[k], &h[m])) m = k;
        if (!ev_less(&h[m], &x)) break;
        h[i] = h[m];
        i = m;
    }
    h[i] = x;
}

void q__heapify(q__ev *h, int n) {
    for (int i = (n - 2) / 4; i >= 0; i--) sift_down(h, n, i);
}

q__ev q__heap_pop(q__ev *h, int *n) {
    q__ev top = h[0];
    h[0] = h[--(*n)];
    if (*n > 0) sift_down(h, *n, 0);
    return top;
}

/* ---- public ------------------------------------------------------------- */

q_state *q_state_create(const struct q_alloc *alloc) {
    struct q_alloc a = {NULL, libc_alloc, libc_free};
    if (alloc && alloc->alloc && alloc->free) a = *alloc;
    unsigned char *b = a.alloc(a.ctx, sizeof(q_state) + Q_HDR);
    if (!b) return NULL;
    q_state *st = (q_state *)(b + Q_HDR);
    memset(st, 0, sizeof *st);
    size_t sz = sizeof *st;
    memcpy(b, &sz, sizeof sz);
    st->a = a;
    st->bytes = st->peak = sizeof *st + Q_HDR;
    return st;
}

void q_state_free(q_state *st) {
    if (!st) return;
    q__cache_clear(st);
    q__intern_free(st, &st->doms);
    q__intern_free(st, &st->models);
    q__free(st, st->jc);
    q__free(st, st->ojc);
    q__free(st, st->order);
    q__free(st, st->ord);
    q__free(st, st->ord2);
    q__nodeset *sets[3] = {&st->ns, &st->fut, &st->soon};
    for (int i = 0; i < 3; i++) {
        q__free(st, sets[i]->n);
        q__free(st, sets[i]->head);
        q__free(st, sets[i]->dom_free);
    }
    void *arrs[] = {st->shapes, st->shape_tab, st->uin, st->gin, st->ubud,
                    st->gbud, st->res_raw, st->places, st->tmp1, st->tmp2,
                    st->tmp3, st->otab, st->kfit, st->touched, st->dsum,
                    st->doms_try, st->heap, st->admitted, st->rseq, st->runl, st->memo, st->einu[0], st->einu[1],
                    st->ebud[0], st->ebud[1], st->eclk[0], st->eclk[1],
                    st->elim[0], st->elim[1], st->elimv[0], st->elimv[1], st->kof, st->dw, st->uopen, st->gopen, st->dgmax, st->dgfree,
                    st->ugpu0, st->ggpu0, st->ubud0, st->gbud0, st->rinf, st->uadj,
                    st->gadj, st->ccap, st->cnow, st->csoon, st->gguar, st->cand,
                    st->cidx, st->acts, st->gcand, st->gnp, st->gnpadj, st->gpend, st->wl,
                    st->gblk, st->cblk, st->en, st->ec, st->edc, st->edoff, st->edl,
                    st->epl, st->etab, st->ebres, st->ela, st->eundo,
                    st->ebsav, st->edef, st->edef2};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++)
        q__free(st, arrs[i]);
    for (int b = 0; b < 65; b++) q__free(st, st->rb[b]);
    for (int s = 0; s < 2; s++) {
        for (int o = 0; o < st->neh[s]; o++) q__free(st, st->eh[s][o].h);
        q__free(st, st->eh[s]);
    }
    struct q_alloc a = st->a;
    a.free(a.ctx, (unsigned char *)st - Q_HDR, sizeof *st + Q_HDR);
}

size_t q_state_bytes(const q_state *st) { return st ? st->bytes : 0; }

size_t q_state_peak_bytes(const q_state *st) { return st ? st->peak : 0; }

void q_state_invalidate(q_state *st) {
    if (st) st->warm = false;
}
