/* status.c -- AIJob status JSON, its diff as a merge patch, restart
 * recovery of the fields we own, and core/v1 Events (see status.h). */
#include "operator/status.h"

#include "common/aiq_time.h"
#include "common/fnv.h"
#include "common/json.h"
#include "common/units.h"
#include "queue/queue.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Formats t as RFC 3339 UTC; see status.h. */
const char *opst_time(char *buf, size_t cap, double t) {
    aiq_rfc3339(buf, cap, t, 0); /* clamped to 1970..9999 */
    return buf;
}

/* Parses RFC 3339; see status.h. */
double opst_parse_time(const char *s) {
    double t = 0;
    if (!s || aiq_time_parse(s, &t, NULL) != AIQ_OK)
        return 0; /* absent or malformed: "unknown", as status.h says */
    return t;
}

/* Adds key -> value to obj (value ownership taken, also on failure). */
static int opst_add(json_object *obj, const char *key, json_object *value) {
    if (!value)
        return -1;
    if (json_object_object_add(obj, key, value) != 0) {
        json_object_put(value);
        return -1;
    }
    return 0;
}

static int opst_add_str(json_object *obj, const char *key, const char *s) {
    return opst_add(obj, key, json_object_new_string(s));
}

static int opst_add_time(json_object *obj, const char *key, double t) {
    char b[40];
    if (t <= 0)
        return 0;
    return opst_add_str(obj, key, opst_time(b, sizeof b, t));
}

/* Rounds to 4 decimals, so a status does not churn on float noise, and
 * writes the short form ("10", "2.5"), made as json-c parses that text
 * (an integral one is an int), so the value and type match what the API
 * server hands back and a comparison with the live status is exact. Never
 * writes inf or nan, which are not JSON (a status holding one could
 * never be written): NaN becomes 0 and an infinity the largest double,
 * as fx_eval clamps. Magnitudes of OPST_NUM_EXACT and more are whole
 * numbers already, so they are written exactly ("%.17g", e.g.
 * 1.7976931348623157e+308) instead of rounded: v * 10000 would overflow. */
#define OPST_NUM_EXACT 1e15

/* The number json-c's parser makes of text b, one opst_num wrote (an
 * optional '-', digits, and a fraction or exponent or neither): an int
 * when it has neither, else a double that keeps b as its text, as the
 * parser's does. Made directly: json_tokener_parse allocates a tokener
 * and a locale per call, and a status has a dozen numbers. The operator
 * never sets a locale, so strtod reads b as the C locale writes it.
 * NULL only out of memory. */
static json_object *opst_num_text(const char *b) {
    if (!strpbrk(b, ".eE"))
        return json_object_new_int64(strtoll(b, NULL, 10));
    return json_object_new_double_s(strtod(b, NULL), b);
}

json_object *opst_num(double v) {
    char b[48];
    if (v != v)
        v = 0;
    else if (v > DBL_MAX)
        v = DBL_MAX;
    else if (v < -DBL_MAX)
        v = -DBL_MAX;
    if (fabs(v) >= OPST_NUM_EXACT) {
        snprintf(b, sizeof b, "%.17g", v);
        return opst_num_text(b);
    }
    v = round(v * 10000.0) / 10000.0;
    if (v == 0)
        v = 0; /* no "-0" */
    int n = snprintf(b, sizeof b, "%.4f", v);
    while (n > 0 && b[n - 1] == '0')
        b[--n] = '\0';
    if (n > 0 && b[n - 1] == '.')
        b[--n] = '\0';
    return opst_num_text(b);
}

/* The condition types, in the order they are written. */
static const char *const opst_cond_types[] = {
    "Queued", "Admitted", "Running", "Succeeded", "Failed", "Rejected",
    "Suspended"};
#define OPST_NCOND (int)(sizeof opst_cond_types / sizeof opst_cond_types[0])

/* Tells whether condition type i is True in phase p. */
static bool opst_cond_true(int i, aiq_phase p) {
    switch (i) {
    case 0: return p == AIQ_PHASE_QUEUED;
    case 1: return p == AIQ_PHASE_ADMITTED || p == AIQ_PHASE_RUNNING ||
                   p == AIQ_PHASE_SUCCEEDED;
    case 2: return p == AIQ_PHASE_RUNNING;
    case 3: return p == AIQ_PHASE_SUCCEEDED;
    case 4: return p == AIQ_PHASE_FAILED;
    case 5: return p == AIQ_PHASE_REJECTED;
    case 6: return p == AIQ_PHASE_SUSPENDED;
    default: return false;
    }
}

/* See status.h. */
struct opst_xcond *opstatus_xc(struct opstatus *st, int which) {
    if (which < 0 || which >= OPST_NXC)
        return NULL;
    if (!st->xc && !(st->xc = calloc(OPST_NXC, sizeof *st->xc)))
        return NULL;
    return &st->xc[which];
}

/* See status.h. */
const char *opstatus_xc_reason(const struct opstatus *st, int which) {
    return st->xc && which >= 0 && which < OPST_NXC ? st->xc[which].reason : "";
}

/* See status.h. */
void opstatus_release(struct opstatus *st) {
    free(st->xc);
    st->xc = NULL;
    free(st->group_);
    st->group_ = NULL;
    free(st->message_);
    st->message_ = NULL;
}

/* Makes *dst (owned, NULL = "") hold src's first cap - 1 bytes at most
 * (src NULL = ""). Returns 0, or -1 on ENOMEM (*dst unchanged). */
static int opst_set_text(char **dst, const char *src, size_t cap) {
    size_t n = src ? strnlen(src, cap - 1) : 0;
    if (n == 0) {
        free(*dst);
        *dst = NULL;
        return 0;
    }
    if (*dst && strncmp(*dst, src, n) == 0 && (*dst)[n] == '\0')
        return 0;
    char *t = malloc(n + 1);
    if (!t)
        return -1;
    memcpy(t, src, n);
    t[n] = '\0';
    free(*dst);
    *dst = t;
    return 0;
}

/* See status.h. */
int opstatus_set_group(struct opstatus *st, const char *g) {
    return opst_set_text(&st->group_, g, AIQ_MAX_NAME + 1);
}

/* See status.h. */
int opstatus_set_message(struct opstatus *st, const char *m) {
    return opst_set_text(&st->message_, m, OPST_MESSAGE_MAX);
}

/* See status.h. */
int opstatus_set_messagef(struct opstatus *st, const char *fmt, ...) {
    char buf[OPST_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        buf[0] = '\0'; /* an encoding error: no message rather than half one */
    return opstatus_set_message(st, buf);
}

/* Finds the condition of type t in old_status.conditions (or NULL). */
static json_object *opst_old_cond(json_object *old_status, const char *t) {
    json_object *cs = NULL;
    if (!old_status ||
        !json_object_object_get_ex(old_status, "conditions", &cs) ||
        !json_object_is_type(cs, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i), *ty = NULL;
        if (json_object_object_get_ex(c, "type", &ty) &&
            strcmp(json_object_get_string(ty), t) == 0)
            return c;
    }
    return NULL;
}

static const char *const opst_xcond_types[OPST_NXC] = {"Preempted", "Preempting", "Resized"};

/* Adds the extra condition `type` from x (status True while x->reason is
 * set; kept with status False once cleared if the live status has it).
 * lastTransitionTime is kept while status, reason and message stay.
 * Returns 0 or -1 (ENOMEM). */
static int opst__xcond(json_object *arr, const char *type, const struct opst_xcond *x,
                       json_object *old_status, int64_t gen, const char *nowbuf) {
    json_object *old = opst_old_cond(old_status, type);
    bool on = x->reason[0] != '\0';
    if (!on && !old)
        return 0;
    const char *status = on ? "True" : "False";
    char reason[OPST_NAME];
    snprintf(reason, sizeof reason, "%s%s", on ? "" : "Not", on ? x->reason : type);
    const char *msg = on ? x->message : "";
    const char *ost = aiq_jstr(old, "status"), *orea = aiq_jstr(old, "reason"),
               *omsg = aiq_jstr(old, "message");
    const char *ltt = (ost && orea && omsg && !strcmp(ost, status) && !strcmp(orea, reason) &&
                       !strcmp(omsg, msg))
                          ? aiq_jstr(old, "lastTransitionTime")
                          : NULL;
    json_object *c = json_object_new_object();
    if (!c || json_object_array_add(arr, c) != 0) {
        json_object_put(c);
        return -1;
    }
    if (opst_add_str(c, "type", type) || opst_add_str(c, "status", status) ||
        opst_add_str(c, "reason", reason) || opst_add_str(c, "message", msg) ||
        opst_add_str(c, "lastTransitionTime", ltt ? ltt : nowbuf) ||
        opst_add(c, "observedGeneration", json_object_new_int64(gen)))
        return -1;
    return 0;
}

/* Builds the conditions array; see opstatus_to_json. */
static json_object *opst_conditions(const struct opstatus *st,
                                    json_object *old_status, double now) {
    json_object *arr = json_object_new_array();
    char nowbuf[40];
    if (!arr)
        return NULL;
    opst_time(nowbuf, sizeof nowbuf, now);
    for (int i = 0; i < OPST_NCOND; i++) {
        const char *type = opst_cond_types[i];
        bool on = opst_cond_true(i, st->phase);
        json_object *old = opst_old_cond(old_status, type);
        if (!on && !old)
            continue;
        const char *oldst = aiq_jstr(old, "status");
        const char *status = on ? "True" : "False";
        const char *ltt = (oldst && strcmp(oldst, status) == 0)
                              ? aiq_jstr(old, "lastTransitionTime")
                              : NULL;
        /* The condition of the current phase carries the job's reason and
         * message; Admitted carries them while it is the newest fact. */
        bool current = on && (i == 1 ? st->phase == AIQ_PHASE_ADMITTED : true);
        char reason[OPST_NAME];
        const char *msg;
        if (current) {
            snprintf(reason, sizeof reason, "%s",
                     st->reason[0] ? st->reason : type);
            msg = opstatus_message(st);
        } else if (on) {
            snprintf(reason, sizeof reason, "%s", type);
            msg = "";
        } else {
            snprintf(reason, sizeof reason, "Not%s", type);
            msg = "";
        }
        json_object *c = json_object_new_object();
        if (!c || json_object_array_add(arr, c) != 0) {
            json_object_put(c);
            goto fail;
        }
        if (opst_add_str(c, "type", type) || opst_add_str(c, "status", status) ||
            opst_add_str(c, "reason", reason) || opst_add_str(c, "message", msg) ||
            opst_add_str(c, "lastTransitionTime", ltt ? ltt : nowbuf) ||
            opst_add(c, "observedGeneration",
                     json_object_new_int64(st->observed_generation)))
            goto fail;
    }
    static const struct opst_xcond none;
    for (int i = 0; i < OPST_NXC; i++)
        if (opst__xcond(arr, opst_xcond_types[i], st->xc ? &st->xc[i] : &none, old_status,
                        st->observed_generation, nowbuf))
            goto fail;
    return arr;
fail:
    json_object_put(arr);
    return NULL;
}

/* ---- fingerprint --------------------------------------------------------- */

/* struct opstatus as opstatus_hash knows it (LP64 layout: x86-64, aarch64).
 * When this fails, a field was added or changed: hash it below, then
 * update the size. */
_Static_assert(sizeof(struct opstatus) == 296 && sizeof(struct opst_place) == 528,
               "struct opstatus changed: update opstatus_hash and this size");


/* In-memory fingerprints only (status economy): the word-wise FNV step. */
#define OPST_FNV(h, v) ((h) = aiq_fnv_w((h), &(v), sizeof(v)))

/* The fields a user acts on (opstatus_material_hash), continuing h. */
static uint64_t opst_material(uint64_t h, const struct opstatus *st) {
    int phase = (int)st->phase;
    OPST_FNV(h, phase);
    h = aiq_fnv_wstr(h, opstatus_group(st));
    h = aiq_fnv_wstr(h, st->level);
    OPST_FNV(h, st->total_gpus);
    int np = st->placement ? st->nplacement : 0;
    OPST_FNV(h, np);
    for (int i = 0; i < np; i++) {
        const struct opst_place *p = &st->placement[i];
        OPST_FNV(h, p->replica);
        h = aiq_fnv_wstr(h, p->node);
        OPST_FNV(h, p->ngpus);
        for (int k = 0; k < p->ngpus && k < AIQ_MAX_GPUS_PER_REPLICA; k++)
            OPST_FNV(h, p->gpus[k]);
        OPST_FNV(h, p->gpu_memory_mib);
    }
    OPST_FNV(h, st->queued_at);
    OPST_FNV(h, st->admitted_at);
    OPST_FNV(h, st->started_at);
    OPST_FNV(h, st->finished_at);
    OPST_FNV(h, st->attempts);
    OPST_FNV(h, st->current_replicas);
    OPST_FNV(h, st->preemptions);
    OPST_FNV(h, st->node_failures);
    OPST_FNV(h, st->suspensions);
    OPST_FNV(h, st->attained_gpu_hours);
    /* An extra condition's message is written only with its reason. */
    for (int i = 0; st->xc && i < OPST_NXC; i++) {
        if (!st->xc[i].reason[0])
            continue;
        OPST_FNV(h, i);
        h = aiq_fnv_wstr(h, st->xc[i].reason);
        h = aiq_fnv_wstr(h, st->xc[i].message);
    }
    h = aiq_fnv_wstr(h, st->reason);
    h = aiq_fnv_wstr(h, opstatus_message(st));
    OPST_FNV(h, st->observed_generation);
    return h;
}

/* See status.h. */
uint64_t opstatus_material_hash(const struct opstatus *st) {
    return opst_material(AIQ_FNV_OFFSET, st);
}

/* See status.h. Numbers are hashed by value (doubles by their bits). */
uint64_t opstatus_hash(const struct opstatus *st) {
    uint64_t h = opst_material(AIQ_FNV_OFFSET, st);
    int has_score = st->has_score ? 1 : 0;
    OPST_FNV(h, st->position);
    OPST_FNV(h, has_score);
    OPST_FNV(h, st->score);
    OPST_FNV(h, st->nterms);
    for (int i = 0; i < st->nterms && i < OPST_MAX_TERMS; i++) {
        h = aiq_fnv_wstr(h, st->terms[i].name);
        OPST_FNV(h, st->terms[i].value);
    }
    OPST_FNV(h, st->predicted_runtime_s);
    OPST_FNV(h, st->estimated_start);
    return h;
}

/* See status.h. */
bool opstatus_moved(int was_pos, double was_eta, int pos, double eta, double now) {
    if (q_pos_moved(was_pos, pos) || (was_eta > 0) != (eta > 0))
        return true;
    if (eta > 0) {
        double left = was_eta - now, band = left > 600 ? left / 10 : 60;
        if (fabs(eta - was_eta) > band)
            return true;
    }
    return false;
}

/* status.scoreTerms: each term's name and value. Returns 0, or -1 when
 * out of memory. */
static int opst_score_terms(json_object *s, const struct opstatus *st) {
    json_object *terms = json_object_new_array();
    if (opst_add(s, "scoreTerms", terms))
        return -1;
    for (int i = 0; i < st->nterms && i < OPST_MAX_TERMS; i++) {
        json_object *t = json_object_new_object();
        if (!t || json_object_array_add(terms, t) != 0) {
            json_object_put(t);
            return -1;
        }
        if (opst_add_str(t, "name", st->terms[i].name) ||
            opst_add(t, "value", opst_num(st->terms[i].value)))
            return -1;
    }
    return 0;
}

/* status.placement: each replica's node, GPU indexes and GPU memory.
 * Returns 0, or -1 when out of memory. */
static int opst_placement(json_object *s, const struct opstatus *st) {
    json_object *pl = json_object_new_array();
    if (opst_add(s, "placement", pl))
        return -1;
    for (int i = 0; i < st->nplacement; i++) {
        const struct opst_place *p = &st->placement[i];
        json_object *o = json_object_new_object();
        json_object *g = json_object_new_array();
        if (!o || json_object_array_add(pl, o) != 0) {
            json_object_put(o);
            json_object_put(g);
            return -1;
        }
        if (opst_add(o, "replica", json_object_new_int(p->replica)) ||
            opst_add_str(o, "node", p->node) || opst_add(o, "gpuIndexes", g))
            return -1;
        for (int k = 0; k < p->ngpus && k < AIQ_MAX_GPUS_PER_REPLICA; k++)
            if (aiq_jpush(g, json_object_new_int(p->gpus[k]), NULL) != 0)
                return -1;
        char q[32];
        if (opst_add_str(o, "gpuMemory", aiq_quantity_format_mib(p->gpu_memory_mib, q, sizeof q)))
            return -1;
    }
    return 0;
}

/* Builds the status JSON; see status.h. */
json_object *opstatus_to_json(const struct opstatus *st,
                              json_object *old_status, double now) {
    json_object *s = json_object_new_object();
    if (!s)
        return NULL;
    if (opst_add_str(s, "phase", aiq_phase_name(st->phase)))
        goto fail;
    if (st->group_ && opst_add_str(s, "group", st->group_))
        goto fail;
    if (st->level[0] && opst_add_str(s, "level", st->level))
        goto fail;
    if (st->position > 0 &&
        opst_add(s, "position", json_object_new_int(st->position)))
        goto fail;
    if (st->has_score && opst_add(s, "score", opst_num(st->score)))
        goto fail;
    if (st->nterms > 0 && opst_score_terms(s, st) != 0)
        goto fail;
    if (st->total_gpus > 0 &&
        opst_add(s, "totalGpus", json_object_new_int64(st->total_gpus)))
        goto fail;
    if (st->predicted_runtime_s > 0 &&
        opst_add(s, "predictedRuntime",
                 json_object_new_int64((int64_t)llround(st->predicted_runtime_s))))
        goto fail;
    if (opst_add_time(s, "estimatedStartTime", st->estimated_start))
        goto fail;
    if (st->nplacement > 0 && st->placement && opst_placement(s, st) != 0)
        goto fail;
    if (opst_add_time(s, "queuedTime", st->queued_at) ||
        opst_add_time(s, "admittedTime", st->admitted_at) ||
        opst_add_time(s, "startTime", st->started_at) ||
        opst_add_time(s, "completionTime", st->finished_at))
        goto fail;
    if (opst_add(s, "attempts", json_object_new_int(st->attempts)))
        goto fail;
    if (st->current_replicas > 0 &&
        opst_add(s, "currentReplicas", json_object_new_int(st->current_replicas)))
        goto fail;
    if (st->preemptions > 0 &&
        opst_add(s, "preemptions", json_object_new_int(st->preemptions)))
        goto fail;
    if (st->node_failures > 0 &&
        opst_add(s, "nodeFailures", json_object_new_int(st->node_failures)))
        goto fail;
    if (st->suspensions > 0 &&
        opst_add(s, "suspensions", json_object_new_int(st->suspensions)))
        goto fail;
    if (st->attained_gpu_hours > 0 &&
        opst_add(s, "attainedGPUHours", opst_num(st->attained_gpu_hours)))
        goto fail;
    if (st->message_ && opst_add_str(s, "message", st->message_))
        goto fail;
    if (opst_add(s, "observedGeneration",
                 json_object_new_int64(st->observed_generation)))
        goto fail;
    json_object *conds = opst_conditions(st, old_status, now);
    if (opst_add(s, "conditions", conds))
        goto fail;
    /* Every member is made as it reads back from the server (numbers by
     * opst_num), so the status is compared with the live one as it is:
     * no round trip through text (a status's text parsed again was most
     * of a published status's cost). The selfcheck build makes the round
     * trip and compares. */
#ifdef AIQ_SELFCHECK
    json_object *rt = json_tokener_parse(json_object_to_json_string_ext(
        s, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    if (rt && !json_object_equal(rt, s)) {
        fprintf(stderr, "selfcheck_failed what=status_round_trip\n");
        abort();
    }
    json_object_put(rt);
#endif
    return s;
fail:
    json_object_put(s);
    return NULL;
}

/* The patch value that turns ov into v: v itself, except that an object
 * replacing an object also sends null for each member v no longer has (a
 * merge patch merges nested objects, so a renamed member such as a Group's
 * usage.gpuMemoryMiB would otherwise stay). New reference; NULL on ENOMEM. */
static json_object *opst_patch_value(json_object *ov, json_object *v) {
    if (!ov || !json_object_is_type(ov, json_type_object) ||
        !json_object_is_type(v, json_type_object))
        return json_object_get(v);
    json_object *out = json_object_new_object();
    if (!out)
        return NULL;
    json_object_object_foreach(v, k, sub) {
        if (json_object_object_add(out, k, json_object_get(sub)) != 0) {
            json_object_put(sub); /* the reference just taken */
            goto fail;
        }
    }
    json_object_object_foreach(ov, k2, old) {
        (void)old;
        if (!json_object_object_get_ex(v, k2, NULL) &&
            json_object_object_add(out, k2, NULL) != 0)
            goto fail;
    }
    return out;
fail:
    json_object_put(out);
    return NULL;
}

/* Computes the status merge patch; see status.h. */
json_object *opstatus_patch(json_object *old_status, json_object *new_status,
                            bool *changed) {
    json_object *patch = NULL, *body = NULL;
    bool diff = false;
    if (changed)
        *changed = false;
    if (old_status && !json_object_is_type(old_status, json_type_object))
        old_status = NULL;
    body = json_object_new_object();
    if (!body)
        return NULL;
    json_object_object_foreach(new_status, k, v) {
        json_object *ov = NULL;
        if (old_status && json_object_object_get_ex(old_status, k, &ov) &&
            json_object_equal(ov, v))
            continue;
        diff = true;
        if (opst_add(body, k, opst_patch_value(ov, v)))
            goto fail;
    }
    if (old_status) {
        json_object_object_foreach(old_status, k2, v2) {
            (void)v2;
            json_object *nv = NULL;
            if (json_object_object_get_ex(new_status, k2, &nv))
                continue;
            diff = true;
            if (json_object_object_add(body, k2, NULL) != 0)
                goto fail;
        }
    }
    if (!diff) {
        json_object_put(body);
        return NULL;
    }
    patch = json_object_new_object();
    if (opst_add(patch, "status", body)) {
        body = NULL;
        goto fail;
    }
    if (changed)
        *changed = true;
    return patch;
fail:
    json_object_put(body);
    json_object_put(patch);
    return NULL;
}

/* st->reason from the condition that carries it (opst_conditions: the
 * current phase's; "Admitted" while the phase is Admitted). A reason
 * equal to the condition's type may have been "" when written: read as
 * the type, which at worst makes the status look changed once. */
static void opst_reason_from(json_object *status, struct opstatus *st) {
    for (int i = 0; i < OPST_NCOND; i++) {
        if (!opst_cond_true(i, st->phase) || (i == 1 && st->phase != AIQ_PHASE_ADMITTED))
            continue;
        const char *r = aiq_jstr(opst_old_cond(status, opst_cond_types[i]), "reason");
        if (r)
            snprintf(st->reason, sizeof st->reason, "%s", r);
        return;
    }
}

/* The members opstatus_to_json writes, at the top and in a placement. */
static const char *const opst_members[] = {
    "phase", "group", "level", "position", "score", "scoreTerms", "totalGpus",
    "predictedRuntime", "estimatedStartTime", "placement", "queuedTime", "admittedTime",
    "startTime", "completionTime", "attempts", "currentReplicas", "preemptions",
    "nodeFailures", "suspensions", "attainedGPUHours", "message", "observedGeneration",
    "conditions"};
static const char *const opst_place_members[] = {"replica", "node", "gpuIndexes", "gpuMemory"};

static bool opst_known(const char *k, const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(k, names[i]) == 0)
            return true;
    return false;
}

/* See status.h. */
bool opstatus_current_form(json_object *status) {
    if (!status || !json_object_is_type(status, json_type_object))
        return false;
    json_object_object_foreach(status, k, v) {
        if (!opst_known(k, opst_members, sizeof opst_members / sizeof opst_members[0]))
            return false;
        if (strcmp(k, "placement") != 0 || !json_object_is_type(v, json_type_array))
            continue;
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *p = json_object_array_get_idx(v, i);
            if (!json_object_is_type(p, json_type_object))
                return false;
            json_object_object_foreach(p, pk, pv) {
                (void)pv;
                if (!opst_known(pk, opst_place_members,
                                sizeof opst_place_members / sizeof opst_place_members[0]))
                    return false;
            }
        }
    }
    return true;
}

/* The placement of a live status into places (max entries); returns how
 * many were read (malformed entries are skipped). */
static int opst_places_from(json_object *status, struct opst_place *places, int max) {
    json_object *pl = NULL;
    int n = 0;
    if (!json_object_object_get_ex(status, "placement", &pl) ||
        !json_object_is_type(pl, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(pl) && n < max; i++) {
        json_object *o = json_object_array_get_idx(pl, i), *gi = NULL;
        const char *node = aiq_jstr(o, "node");
        int64_t rep = aiq_jint(o, "replica", -1);
        if (!node || rep < 0 || rep >= AIQ_MAX_REPLICAS || strlen(node) > AIQ_MAX_NAME)
            continue;
        struct opst_place *p = &places[n];
        memset(p, 0, sizeof *p);
        p->replica = (int)rep;
        snprintf(p->node, sizeof p->node, "%s", node);
        /* gpuMemoryMiB: a status written before the rename (read once
         * after an upgrade; the next write replaces it). */
        p->gpu_memory_mib = aiq_jmib(o, "gpuMemory", "gpuMemoryMiB");
        if (json_object_object_get_ex(o, "gpuIndexes", &gi) &&
            json_object_is_type(gi, json_type_array)) {
            for (size_t k = 0; k < json_object_array_length(gi) &&
                               p->ngpus < AIQ_MAX_GPUS_PER_REPLICA; k++)
                p->gpus[p->ngpus++] =
                    json_object_get_int(json_object_array_get_idx(gi, k));
        }
        n++;
    }
    return n;
}

/* See status.h. */
int opstatus_places_text(const char *text, struct opst_place *places, int max) {
    json_object *arr = text ? json_tokener_parse(text) : NULL;
    json_object *wrap = NULL;
    int n = -1;
    if (arr && json_object_is_type(arr, json_type_array) && (wrap = json_object_new_object()) &&
        json_object_object_add(wrap, "placement", arr) == 0) {
        arr = NULL; /* wrap owns it */
        n = opst_places_from(wrap, places, max);
    }
    json_object_put(arr);
    json_object_put(wrap);
    return n;
}

/* Reads what survives a restart; see status.h. */
int opstatus_from_json(json_object *status, struct opstatus *st,
                       struct opst_place *places, int max) {
    memset(st, 0, sizeof *st);
    if (!status || !json_object_is_type(status, json_type_object))
        return 0;
    st->phase = aiq_phase_parse(aiq_jstr(status, "phase"));
    int64_t att = aiq_jint(status, "attempts", 0);
    st->attempts = (att < 0 || att > 1000000) ? 0 : (int)att;
    st->queued_at = opst_parse_time(aiq_jstr(status, "queuedTime"));
    st->admitted_at = opst_parse_time(aiq_jstr(status, "admittedTime"));
    st->started_at = opst_parse_time(aiq_jstr(status, "startTime"));
    st->finished_at = opst_parse_time(aiq_jstr(status, "completionTime"));
    st->observed_generation = aiq_jint(status, "observedGeneration", 0);
    int64_t pre = aiq_jint(status, "preemptions", 0);
    st->preemptions = (pre < 0 || pre > 1000000) ? 0 : (int)pre;
    int64_t nf = aiq_jint(status, "nodeFailures", 0);
    st->node_failures = (nf < 0 || nf > 1000000) ? 0 : (int)nf;
    int64_t su = aiq_jint(status, "suspensions", 0);
    st->suspensions = (su < 0 || su > 1000000) ? 0 : (int)su;
    for (int i = 0; i < OPST_NXC; i++) {
        json_object *c = opst_old_cond(status, opst_xcond_types[i]);
        const char *cs = aiq_jstr(c, "status"), *cr = aiq_jstr(c, "reason"),
                   *cm = aiq_jstr(c, "message");
        struct opst_xcond *x;
        /* Out of memory, the condition is not read: the next status
         * shows it False (what a cleared one shows). */
        if (cs && strcmp(cs, "True") == 0 && cr && (x = opstatus_xc(st, i)) != NULL) {
            snprintf(x->reason, sizeof x->reason, "%s", cr);
            snprintf(x->message, sizeof x->message, "%s", cm ? cm : "");
        }
    }
    /* Out of memory the group or message is not read: the next sync
     * sets both again, and a status compared meanwhile is written anew. */
    (void)opstatus_set_group(st, aiq_jstr(status, "group"));
    /* What the last run showed, until the next sync and cycle recompute
     * it; read back whole so that an unchanged job's status is not
     * taken for a changed one (the status economy compares them). */
    const char *lv = aiq_jstr(status, "level"), *msg = aiq_jstr(status, "message");
    if (lv)
        snprintf(st->level, sizeof st->level, "%s", lv);
    (void)opstatus_set_message(st, msg);
    opst_reason_from(status, st);
    int64_t pos = aiq_jint(status, "position", 0);
    st->position = (pos < 0 || pos > INT32_MAX) ? 0 : (int)pos;
    st->estimated_start = opst_parse_time(aiq_jstr(status, "estimatedStartTime"));
    int64_t tg = aiq_jint(status, "totalGpus", 0);
    st->total_gpus = tg < 0 ? 0 : tg;
    int64_t cr = aiq_jint(status, "currentReplicas", 0);
    st->current_replicas = (cr < 0 || cr > AIQ_MAX_REPLICAS) ? 0 : (int)cr;
    double ah = aiq_jnum(status, "attainedGPUHours", 0);
    st->attained_gpu_hours = ah > 0 ? ah : 0;
    int n = opst_places_from(status, places, max);
    if (n > 0) {
        st->placement = places;
        st->nplacement = n;
    }
    return n;
}

/* Builds a core/v1 Event; see status.h. */
json_object *opevent_build(const struct opevent_obj *obj, const char *type,
                           const char *reason, const char *message,
                           double now, uint64_t seq) {
    char name[AIQ_MAX_NAME + 1], ts[40], msg[1024];
    json_object *ev = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *inv = json_object_new_object();
    json_object *src = json_object_new_object();
    const char *ns = obj->ns ? obj->ns : "default";

    if (!ev || opst_add(ev, "metadata", meta)) {
        meta = NULL;
        goto fail;
    }
    meta = NULL;
    if (opst_add(ev, "involvedObject", inv)) {
        inv = NULL;
        goto fail;
    }
    json_object *inv_b = inv;
    inv = NULL;
    if (opst_add(ev, "source", src)) {
        src = NULL;
        goto fail;
    }
    json_object *src_b = src;
    src = NULL;
    json_object *meta_b = NULL;
    json_object_object_get_ex(ev, "metadata", &meta_b);

    /* Name: <object>.<hex>, cut so it stays a valid name. */
    uint64_t stamp = (uint64_t)(now * 1e6) ^ (seq * 0x9e3779b97f4a7c15ULL);
    snprintf(name, sizeof name, "%.200s.%016llx", obj->name ? obj->name : "x",
             (unsigned long long)stamp);
    snprintf(msg, sizeof msg, "%s", message ? message : "");
    opst_time(ts, sizeof ts, now);
    if (opst_add_str(ev, "apiVersion", "v1") || opst_add_str(ev, "kind", "Event") ||
        opst_add_str(meta_b, "name", name) || opst_add_str(meta_b, "namespace", ns) ||
        opst_add_str(inv_b, "apiVersion", obj->api_version ? obj->api_version : AIQ_API_VERSION) ||
        opst_add_str(inv_b, "kind", obj->kind ? obj->kind : "AIJob") ||
        opst_add_str(inv_b, "name", obj->name ? obj->name : "") ||
        (obj->ns && opst_add_str(inv_b, "namespace", obj->ns)) ||
        (obj->uid && opst_add_str(inv_b, "uid", obj->uid)) ||
        (obj->resource_version &&
         opst_add_str(inv_b, "resourceVersion", obj->resource_version)) ||
        opst_add_str(ev, "type", type ? type : "Normal") ||
        opst_add_str(ev, "reason", reason ? reason : "") ||
        opst_add_str(ev, "message", msg) ||
        opst_add(ev, "count", json_object_new_int(1)) ||
        opst_add_str(ev, "firstTimestamp", ts) ||
        opst_add_str(ev, "lastTimestamp", ts) ||
        opst_add_str(src_b, "component", "aiq-operator") ||
        opst_add_str(ev, "reportingComponent", "aiq-operator"))
        goto fail;
    return ev;
fail:
    json_object_put(ev);
    json_object_put(meta);
    json_object_put(inv);
    json_object_put(src);
    return NULL;
}

/* See status.h. */
size_t opst_budget_allow(struct opst_budget *b, double rate, double now, bool short_turn,
                         size_t want) {
    if (rate <= 0)
        return want;
    double burst = rate / 4 + 1;
    if (b->at > 0) {
        if (b->tokens > burst)
            b->tokens = burst;
        if (now > b->at)
            b->tokens += rate * (now - b->at < 1 ? now - b->at : 1);
    } else {
        b->tokens = burst; /* the first turn */
    }
    if (now > b->at)
        b->at = now;
    double may = short_turn && b->tokens > burst ? burst : b->tokens;
    size_t can = may >= 1 ? (size_t)may : 0;
    return can < want ? can : want;
}

/* See status.h. */
void opst_budget_spend(struct opst_budget *b, size_t n) {
    b->tokens -= (double)n;
}
