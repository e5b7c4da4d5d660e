/* fuzz_status.c -- libFuzzer target for the AIJob status encoding
 * (operator/status.c): no status is ever unwritable.
 *
 * The first byte picks the input's shape:
 *   even  the rest is a status as JSON (what a restart reads back from
 *         the API server, possibly edited by hand): opstatus_from_json
 *         never crashes, and what it read encodes, re-parses and reads back
 *         the same (phase, attempts, counts, group, placement, the
 *         preemption conditions; times to the second the encoder keeps);
 *   odd   the rest fills a struct opstatus field by field, any double
 *         included (NaN, infinities, 1e308: what a policy formula may
 *         score): opstatus_to_json always gives an object whose text
 *         json-c parses again, and opstatus_from_json reads it back.
 * Seeds: fuzz/corpus/status/. */
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "operator/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A byte reader over the input; reads past the end give zeros. */
struct rd {
    const uint8_t *p;
    size_t n;
};

static void rd_bytes(struct rd *r, void *out, size_t k) {
    size_t m = k < r->n ? k : r->n;
    memset(out, 0, k);
    memcpy(out, r->p, m);
    r->p += m;
    r->n -= m;
}

static int rd_int(struct rd *r, int lo, int hi) {
    uint32_t v;
    rd_bytes(r, &v, sizeof v);
    return lo + (int)(v % (uint32_t)(hi - lo + 1));
}

static double rd_double(struct rd *r) {
    double d;
    rd_bytes(r, &d, sizeof d);
    return d;
}

/* A string of up to cap-1 bytes (any byte but NUL: the encoder must cope
 * with control characters, quotes and invalid UTF-8). */
static void rd_str(struct rd *r, char *out, size_t cap) {
    size_t len = (size_t)rd_int(r, 0, (int)cap - 1);
    rd_bytes(r, out, len);
    out[len] = '\0';
}

/* Text -> JSON -> text must hold: a status json-c cannot read back is one
 * the API server would refuse (or that a restart cannot read). */
static json_object *reparse(json_object *st) {
    const char *text = json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN);
    if (!text)
        abort();
    json_object *back = json_tokener_parse(text);
    if (!back || !json_object_is_type(back, json_type_object))
        abort();
    return back;
}

/* What opstatus_from_json reads must survive an encode and a read. */
static void same_read(const struct opstatus *a, const struct opstatus *b) {
    if (a->phase != b->phase || a->attempts != b->attempts ||
        a->preemptions != b->preemptions || a->node_failures != b->node_failures ||
        strcmp(opstatus_group(a), opstatus_group(b)) != 0 || a->nplacement != b->nplacement)
        abort();
    /* Times are written to the second (RFC 3339 without a fraction). */
    const double ta[] = {a->queued_at, a->admitted_at, a->started_at, a->finished_at};
    const double tb[] = {b->queued_at, b->admitted_at, b->started_at, b->finished_at};
    for (int i = 0; i < 4; i++)
        if (fabs(ta[i] - tb[i]) >= 1.0 && !(ta[i] <= 0 && tb[i] == 0))
            abort();
    for (int i = 0; i < a->nplacement; i++) {
        const struct opst_place *p = &a->placement[i], *q = &b->placement[i];
        if (p->replica != q->replica || strcmp(p->node, q->node) != 0 || p->ngpus != q->ngpus ||
            p->gpu_memory_mib != q->gpu_memory_mib)
            abort();
        for (int k = 0; k < p->ngpus; k++)
            if (p->gpus[k] != q->gpus[k])
                abort();
    }
    for (int i = 0; i < OPST_NXC; i++)
        if (strcmp(opstatus_xc_reason(a, i), opstatus_xc_reason(b, i)) != 0 ||
            (a->xc && a->xc[i].reason[0] && strcmp(a->xc[i].message, b->xc[i].message) != 0))
            abort();
}

static void from_json_text(const uint8_t *data, size_t size) {
    static struct opst_place pa[AIQ_MAX_REPLICAS], pb[AIQ_MAX_REPLICAS];
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    json_object *in = json_tokener_parse(text);
    free(text);
    struct opstatus a, b;
    opstatus_from_json(in, &a, pa, AIQ_MAX_REPLICAS); /* any JSON, even none */
    json_object *out = opstatus_to_json(&a, in, 1.8e9);
    if (out) { /* NULL only when out of memory */
        json_object *back = reparse(out);
        opstatus_from_json(back, &b, pb, AIQ_MAX_REPLICAS);
        same_read(&a, &b);
        opstatus_release(&b);
        json_object_put(back);
        json_object_put(out);
    }
    opstatus_release(&a);
    json_object_put(in);
}

static void from_struct(const uint8_t *data, size_t size) {
    static struct opst_place pl[4], pb[AIQ_MAX_REPLICAS];
    struct rd r = {data, size};
    static struct opst_term terms[OPST_MAX_TERMS];
    static char tnames[OPST_MAX_TERMS][12]; /* the terms' names (a policy's labels) */
    struct opstatus st, b;
    char txt[AIQ_MAX_NAME + 1];
    memset(&st, 0, sizeof st);
    st.phase = (aiq_phase)rd_int(&r, AIQ_PHASE_NONE, AIQ_PHASE_SUSPENDED);
    rd_str(&r, txt, sizeof txt);
    if (opstatus_set_group(&st, txt) != 0)
        return; /* out of memory only */
    rd_str(&r, st.level, sizeof st.level);
    st.position = rd_int(&r, -5, 1000000);
    st.has_score = rd_int(&r, 0, 1);
    st.score = rd_double(&r);
    st.nterms = rd_int(&r, 0, OPST_MAX_TERMS);
    for (int i = 0; i < st.nterms; i++) {
        rd_str(&r, tnames[i], sizeof tnames[i]);
        terms[i].name = tnames[i];
        terms[i].value = rd_double(&r);
    }
    st.terms = terms;
    rd_bytes(&r, &st.total_gpus, sizeof st.total_gpus);
    st.predicted_runtime_s = rd_double(&r);
    st.estimated_start = rd_double(&r);
    int np = rd_int(&r, 0, 4);
    for (int i = 0; i < np; i++) {
        memset(&pl[i], 0, sizeof pl[i]);
        pl[i].replica = rd_int(&r, 0, AIQ_MAX_REPLICAS - 1);
        rd_str(&r, pl[i].node, 16);
        pl[i].ngpus = rd_int(&r, 0, AIQ_MAX_GPUS_PER_REPLICA);
        for (int k = 0; k < pl[i].ngpus; k++)
            pl[i].gpus[k] = rd_int(&r, 0, 127);
        rd_bytes(&r, &pl[i].gpu_memory_mib, sizeof pl[i].gpu_memory_mib);
    }
    st.placement = pl;
    st.nplacement = np;
    st.queued_at = rd_double(&r);
    st.admitted_at = rd_double(&r);
    st.started_at = rd_double(&r);
    st.finished_at = rd_double(&r);
    st.attempts = rd_int(&r, 0, 1000);
    st.current_replicas = rd_int(&r, 0, 1000);
    st.preemptions = rd_int(&r, 0, 1000);
    st.node_failures = rd_int(&r, 0, 1000);
    st.attained_gpu_hours = rd_double(&r);
    struct opst_xcond *xp = opstatus_xc(&st, OPST_XC_PREEMPTED);
    if (!xp) {
        opstatus_release(&st);
        return; /* out of memory only */
    }
    rd_str(&r, xp->reason, 16);
    rd_str(&r, xp->message, 40);
    rd_str(&r, st.xc[OPST_XC_RESIZED].reason, 16);
    rd_str(&r, st.reason, sizeof st.reason);
    rd_str(&r, txt, 64);
    if (opstatus_set_message(&st, txt) != 0) {
        opstatus_release(&st);
        return; /* out of memory only */
    }
    rd_bytes(&r, &st.observed_generation, sizeof st.observed_generation);
    (void)opstatus_hash(&st); /* reads every field: ASan sees any overrun */
    json_object *out = opstatus_to_json(&st, NULL, 1.8e9);
    if (!out) {
        opstatus_release(&st);
        return; /* out of memory only */
    }
    json_object *back = reparse(out);
    opstatus_from_json(back, &b, pb, AIQ_MAX_REPLICAS);
    if (b.phase != st.phase || b.attempts != st.attempts || b.preemptions != st.preemptions ||
        b.node_failures != st.node_failures)
        abort();
    opstatus_release(&st);
    opstatus_release(&b);
    json_object_put(back);
    json_object_put(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    if (data[0] % 2 == 0)
        from_json_text(data + 1, size - 1);
    else
        from_struct(data + 1, size - 1);
    return 0;
}
