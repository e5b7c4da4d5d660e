/* status.h -- AIJob status as the operator writes it: the struct the
 * reconcilers and the cycle fill, its JSON form (with conditions that keep
 * their lastTransitionTime), the merge patch that turns the live status
 * into the new one (NULL when nothing changed, so unchanged statuses are
 * never written), and core/v1 Events for transitions.
 *
 * Pure json-c: no I/O. */
#ifndef AIQ_OPERATOR_STATUS_H
#define AIQ_OPERATOR_STATUS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "policy/policy_adapter.h" /* struct opst_term, OPST_MAX_TERMS */

#define OPST_NAME 64

/* Where one replica goes: node, GPU indexes on it, GPU memory per GPU. */
struct opst_place {
    int replica;
    char node[AIQ_MAX_NAME + 1];
    int gpus[AIQ_MAX_GPUS_PER_REPLICA];
    int ngpus;
    int64_t gpu_memory_mib;
};

/* An extra condition (Preempted, Preempting, Resized), shown with
 * status True while its reason is set. */
struct opst_xcond { char reason[OPST_NAME]; char message[256]; };

/* Which of opstatus.xc. */
enum { OPST_XC_PREEMPTED, OPST_XC_PREEMPTING, OPST_XC_RESIZED, OPST_NXC };

/* The status of one AIJob. Zero means "unset" for every optional field;
 * placement and terms are borrowed (the caller keeps them alive while
 * building); xc is owned (opstatus_xc makes it, opstatus_release frees
 * it). The fields the status economy compares every cycle come first,
 * so that comparing a waiting job's status reads a few cache lines. */
struct opstatus {
    aiq_phase phase;
    int position;               /* 1-based queue position; 0 = none */
    char level[OPST_NAME];
    char reason[OPST_NAME];     /* CamelCase reason of the phase condition */
    int64_t total_gpus;
    const struct opst_place *placement;
    int nplacement;
    int attempts;
    double queued_at, admitted_at, started_at, finished_at; /* unix s */
    int current_replicas;       /* running: replicas placed and not being stopped */
    int preemptions;            /* times preempted (not counted in backoffLimit) */
    int node_failures;          /* attempts ended by a lost node (not counted either) */
    int suspensions;            /* attempts ended by spec.suspend (not counted either) */
    double attained_gpu_hours;  /* over finished runs; 0 = not shown */
    int64_t observed_generation;
    /* Preemption and resizing, OPST_NXC entries (NULL: none ever set),
     * each shown as a condition (status True) when its reason is set:
     * Preempted on a victim (naming the job it made room for), Preempting
     * on the job room was made for (naming its victims), Resized on an
     * elastic job (Grown/Shrunk). */
    struct opst_xcond *xc;
    bool has_score;
    double score;
    const struct opst_term *terms; /* nterms entries */
    int nterms;
    double predicted_runtime_s;
    double estimated_start;     /* unix s */
    /* Owned, allocated to size (a buffer of the longest each would be
     * most of a waiting job's state); NULL = "". Read them with
     * opstatus_group / opstatus_message, set them with the setters, and
     * opstatus_release frees them. */
    char *group_;
    char *message_;             /* one line */
};

/* The longest message kept, with its NUL: a longer one is cut there. */
#define OPST_MESSAGE_MAX 512

/* st's group and message ("" when none). */
static inline const char *opstatus_group(const struct opstatus *st) {
    return st->group_ ? st->group_ : "";
}
static inline const char *opstatus_message(const struct opstatus *st) {
    return st->message_ ? st->message_ : "";
}

/* Sets st's group (g NULL or "" = none; at most AIQ_MAX_NAME bytes kept)
 * or message (NULL or "" = none; cut at OPST_MESSAGE_MAX - 1 bytes), or
 * the message from a printf format. The same text again allocates
 * nothing. Returns 0, or -1 on ENOMEM: st then keeps the text it had. */
int opstatus_set_group(struct opstatus *st, const char *g);
int opstatus_set_message(struct opstatus *st, const char *m);
int opstatus_set_messagef(struct opstatus *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The extra condition `which` (OPST_XC_*) of st to write into, made
 * (empty) on first use. NULL when out of memory. */
struct opst_xcond *opstatus_xc(struct opstatus *st, int which);

/* The reason of extra condition `which`: "" when not set. */
const char *opstatus_xc_reason(const struct opstatus *st, int which);

/* Frees what st owns (the extra conditions, the group and the message)
 * and sets those pointers to NULL; the rest of st is left as it is. */
void opstatus_release(struct opstatus *st);

/* A 64-bit fingerprint of every field of st that opstatus_to_json writes
 * (strings up to their NUL, the first nterms terms and nplacement
 * placement entries), so a caller can skip rebuilding a status that
 * cannot have changed. Equal statuses hash equal; a build-time check in
 * status.c fails when struct opstatus changes, so a new field cannot be
 * left out. */
uint64_t opstatus_hash(const struct opstatus *st);

/* The fingerprint of what a user acts on (status economy, see
 * docs/operator.md "Status writes"): every field opstatus_hash covers but
 * position, score, terms, predicted runtime and the start estimate, which
 * move with every cycle and are written only when opstatus_moved says
 * they moved materially or with a material change. */
uint64_t opstatus_material_hash(const struct opstatus *st);

/* Tells whether a queue position or a start estimate moved materially
 * since it was last written (was_pos, was_eta; 0 = none) at time now:
 * a position appearing or going, any change within the first 10, more
 * than 10% beyond; an estimate appearing or going, or moving by more than
 * max(60 s, 10% of the time left until it). */
bool opstatus_moved(int was_pos, double was_eta, int pos, double eta, double now);

/* The AIJob status write budget (--status-writes-per-s), a token bucket:
 * what earlier turns left unused is kept up to a quarter second's worth,
 * and what accrued since the last take up to a second's worth, so a turn
 * of up to a second (a burst's cycle and pods) may write at the full
 * rate, and a quiet spell saves at most 1.25 s worth. Over any T seconds
 * the takes stay within rate x T plus a quarter second's worth (and one). */
struct opst_budget {
    double tokens; /* writes allowed and not yet taken */
    double at;     /* when it was last refilled (unix s; 0: never) */
};

/* How many of want writes the budget allows at now, at rate a second
 * (<= 0: no limit, all of them); with short_turn (a turn that released
 * pods) at most a quarter second's worth (and one), whatever has
 * accrued. The caller takes what it writes with opst_budget_spend. */
size_t opst_budget_allow(struct opst_budget *b, double rate, double now, bool short_turn,
                         size_t want);

/* Counts n writes made against the budget. */
void opst_budget_spend(struct opst_budget *b, size_t n);

/* Formats unix seconds t as RFC 3339 UTC ("2026-01-02T03:04:05Z"; t
 * clamped to 1970..9999, NaN as 0) into
 * buf (cap >= 21). Returns buf. */
const char *opst_time(char *buf, size_t cap, double t);

/* Parses RFC 3339 ("...Z", optional fraction, or +hh:mm offset). Returns
 * unix seconds, or 0 for NULL/unparsable text. */
double opst_parse_time(const char *s);

/* A status number as json-c: rounded to 4 decimals, never inf or nan
 * (NaN is 0, an infinity +-DBL_MAX; |v| >= 1e15 written exactly with
 * %.17g). Caller owns the result; NULL on ENOMEM. */
json_object *opst_num(double v);

/* Builds the status JSON of st at time now (caller owns the result).
 * old_status (borrowed, may be NULL) is the live status, of which only
 * its conditions are read (a caller may pass them alone): a condition whose
 * status did not change keeps its lastTransitionTime from there, and a
 * condition present there but no longer true is kept with status False.
 * Conditions: Queued, Admitted, Running, Succeeded, Failed, Rejected,
 * Suspended; Admitted stays True through Running and Succeeded; and
 * Preempted, Preempting, Resized while their reason is set. Returns
 * NULL only on allocation failure. */
json_object *opstatus_to_json(const struct opstatus *st,
                              json_object *old_status, double now);

/* Returns the merge patch {"status":{...}} that turns old_status (may be
 * NULL) into new_status: every changed key of new_status, and null for
 * keys that disappeared. Returns NULL when the two are equal (nothing to
 * write) or on allocation failure; *changed (if non-NULL) tells which. */
json_object *opstatus_patch(json_object *old_status, json_object *new_status,
                            bool *changed);

/* Tells whether a live status has only the members opstatus_to_json
 * writes (at the top and in each placement entry): one that an older
 * operator wrote with since-renamed members, or with members of its own,
 * is not in the current form, and its next write must replace it
 * (opstatus_patch sends null for what is gone). */
bool opstatus_current_form(json_object *status);

/* Reads the fields of a live status that survive a restart: phase,
 * attempts, the timestamps, the group, level, position, estimated start,
 * reason and message, the counts (GPUs, current replicas, preemptions,
 * node failures, suspensions, attained GPU hours), the extra conditions
 * and the placement; not the score, its terms or the predicted runtime,
 * which the next due status recomputes. places (max
 * entries, may be NULL when max is 0) receives the placement and
 * st->placement points at it; st is zeroed first. Unknown or malformed
 * fields are skipped. st->xc is made when the status has an extra
 * condition (free it with opstatus_release; st must not own one when
 * called). Returns the number of placement entries read. */
int opstatus_from_json(json_object *status, struct opstatus *st,
                       struct opst_place *places, int max);

/* Reads a placement as job_place_json writes it (the store's attempt
 * row: a JSON array of {replica, node, gpuIndexes, gpuMemory}) into
 * places (max entries). Returns the number read (malformed entries are
 * skipped), or -1 when text is not a JSON array. */
int opstatus_places_text(const char *text, struct opst_place *places, int max);

/* Describes the object an Event is about. All strings borrowed. */
struct opevent_obj {
    const char *api_version; /* "aiq.dev/v1alpha1" */
    const char *kind;        /* "AIJob" */
    const char *ns;          /* may be NULL for cluster-scoped (then "default") */
    const char *name;
    const char *uid;
    const char *resource_version;
};

/* Builds a core/v1 Event (caller owns it) about obj: type "Normal" or
 * "Warning", reason, message (cut to 1 KiB), count 1, firstTimestamp =
 * lastTimestamp = now, source.component and reportingComponent
 * "aiq-operator". The name is "<obj.name>.<16 hex digits>" from now and
 * seq, unique per operator run when seq increases. NULL on ENOMEM. */
json_object *opevent_build(const struct opevent_obj *obj, const char *type,
                           const char *reason, const char *message,
                           double now, uint64_t seq);

#endif
