/* cache.h -- in-memory views of watched objects of one kind (AIJobs,
 * QueuePolicies, Groups, UserQuotas, Nodes, Pods), keyed by "ns/name"
 * (or "name" for cluster-scoped kinds), holding the raw JSON as the API
 * server sent it, a parsed struct and per-object operator state.
 *
 * Updated from watch events: put on ADDED/MODIFIED, del on DELETED, and a
 * relist (RELIST_BEGIN ... ADDED* ... RELIST_END) drops every object that
 * the new list did not contain. Used by the daemon thread only (no lock).
 *
 * The parsed struct and the operator state are opaque here: the kind's
 * free callbacks (given at create) release them. */
#ifndef AIQ_OPERATOR_CACHE_H
#define AIQ_OPERATOR_CACHE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/aiq_err.h"
#include "common/model.h"

#define OPCACHE_KEY_MAX (2 * AIQ_MAX_NAME + 2)
#define OPCACHE_RV_NONE (-1)
/* opcache_obj.rv of a resourceVersion that is not a decimal number is
 * at most this: a negative identity of its text (equal texts, equal
 * values), so that == still tells two versions apart without the tree;
 * only decimal ones (>= 0) are ordered. */
#define OPCACHE_RV_OPAQUE (-2)

/* One entry. Its key is allocated to size at the end (a key is
 * usually a few dozen bytes, OPCACHE_KEY_MAX is 508, and there are three
 * entries per pending job), and the parse error is allocated only when
 * there is one: read it with opcache_perr. */
struct opcache_obj {
    /* The object as a json-c tree (owned reference), or NULL while the
     * entry is frozen: read it through opcache_raw, never directly. */
    json_object *tree;
    /* While frozen: the tree as compact JSON text (owned), which
     * opcache_raw parses back; NULL while the tree is kept. */
    char *frozen;
    void *parsed;      /* owned, freed by free_parsed; NULL = not parsed */
    bool parse_ok;     /* parsed holds a valid object */
    bool warm;         /* read or put since the freeze sweep last passed */
    /* metadata.resourceVersion of the last put as a number
     * (opcache_rv_num), readable without the tree: OPCACHE_RV_NONE when
     * it has none (an object of ours not yet on the server; "" counts as
     * none), <= OPCACHE_RV_OPAQUE when it is not a decimal number (an
     * identity of its text: see OPCACHE_RV_OPAQUE). */
    int64_t rv;
    /* The cache's facts function's digest of the last put
     * (opcache_set_facts), readable without the tree; 0 without one. */
    uint64_t facts;
    uint32_t idx;      /* its index in the cache's order (opcache_at) */
    aiq_err *perr;     /* owned; why parsing failed, NULL when no error */
    void *ext;         /* owned operator state, freed by free_ext; kept across puts */
    uint32_t epoch;    /* relist epoch of the last put */
    /* Bumped by the owner whenever its state in ext changes
     * (opcache_state_changed): with changed, a reader's copy of what it
     * derives from raw and ext is current while both are as it saw them.
     * A pass over every entry reads both from the cache's dense copy
     * (opcache_stamp) instead of the entry. */
    uint32_t state_seq;
    uint64_t changed;  /* bumped on every put (callers compare) */
    /* A reader's memo of what it derives from raw: valid while
     * memo_changed == changed (changed is unique per put, so a put makes
     * it stale). memo_str is borrowed from raw; memo_blob is malloc'd by
     * the reader and freed with the entry. Zero when the entry is made.
     * capacity.c keeps a pod's spec.nodeName and a node's q_node here. */
    uint64_t memo_changed;
    const char *memo_str;
    void *memo_blob;
    /* Top-level members of raw that no per-cycle reader needs, moved out
     * as compact JSON text (owned; NULL when nothing was moved): each
     * member as its name, NUL, its text, NUL; one more NUL ends them.
     * opcache_stash moves them, opcache_member gives one back. A put
     * frees it. */
    char *cold_txt;
    struct opcache *owner; /* the cache holding it (its stamps) */
    char key[];        /* "ns/name" or "name", NUL-terminated */
};

typedef struct opcache opcache;

/* An entry's put and state counts (changed, state_seq), which a reader
 * compares with its copy to tell the entry unchanged. The cache keeps
 * them densely in its order too (opcache_stamp), so a pass over every
 * entry that finds most unchanged reads a few bytes a job instead of a
 * cache line of each scattered entry. */
struct opcache_stamp {
    uint64_t changed;
    uint32_t state_seq;
};

/* Says that o's state in ext changed (see state_seq). */
void opcache_state_changed(struct opcache_obj *o);

/* Creates an empty cache. free_parsed/free_ext (may be NULL) release an
 * entry's parsed struct and state. NULL on ENOMEM. */
opcache *opcache_create(void (*free_parsed)(void *), void (*free_ext)(void *));

/* Makes every later put keep lean(raw, ctx) instead of raw: lean
 * (borrows raw; ctx is the caller's, passed through) returns a new
 * object holding what the operator reads of it, or NULL on ENOMEM (the
 * put then fails with AIQ_ENOMEM). raw itself is never changed, so a
 * caller may put a reference to an object it still uses (see pod_lean.h
 * for the pods'). */
void opcache_set_lean(opcache *c, json_object *(*lean)(json_object *raw, void *ctx),
                      void *ctx);

/* Frozen entries. A json-c tree costs far more than its text (every
 * JSON object, even {}, is a hash table of 784 bytes), and most cached
 * AIJobs and pods are read only when an event about them comes or the
 * job moves: a waiting job's are read by nothing for minutes. With
 * freezing on, opcache_freeze_sweep keeps an entry that nobody put or
 * read for two passes of the sweep as its compact JSON text only, and
 * opcache_raw parses it back when someone reads it again (a few
 * microseconds for a pod). An entry whose memo_str is current (it
 * points into the tree) is never frozen. A stashed member
 * (opcache_member, opcache_member_part) and the entry's rv are read
 * without parsing a frozen entry back. */
void opcache_set_freeze(opcache *c, bool on);
/* Makes every later put keep facts(obj) in the entry's facts: what a
 * frequent reader needs of the object, packed, so that reading it leaves
 * a frozen entry frozen (pods.h's pods_facts for pods). */
void opcache_set_facts(opcache *c, uint64_t (*facts)(json_object *obj));
/* Called (from opcache_raw) when a frozen entry cannot be parsed back,
 * out of memory: opcache_raw then returns NULL, which readers take for
 * an object without any field. The operator's handler logs and aborts. */
void opcache_set_thaw_failed(opcache *c, void (*fn)(void *ud, const char *key), void *ud);
/* The entry's object as a tree (borrowed: valid until the next put of
 * o, its deletion, or the next opcache_freeze_sweep), parsed back from
 * its text when it was frozen; marks the entry warm. NULL only when a
 * frozen entry cannot be parsed back (see opcache_set_thaw_failed). */
json_object *opcache_raw(struct opcache_obj *o);
/* One step of the freeze sweep (a clock hand over the entries): visits
 * at most visits entries from where the last step stopped; a warm entry
 * is made cold, a cold one that holds a tree is frozen. Once a whole
 * pass froze nothing and nothing was put or thawed during it, steps do
 * nothing until the next put or thaw. Returns the entries visited; adds
 * those frozen to *frozen. Out of memory an entry is left as it is. */
size_t opcache_freeze_sweep(opcache *c, size_t visits, size_t *frozen);
/* The entries frozen now, and the thaws and freezes so far. */
struct opcache_freeze_stats {
    size_t frozen;
    uint64_t thaws, freezes;
};
struct opcache_freeze_stats opcache_freeze_stats(const opcache *c);
/* Frees c and every entry. NULL is a no-op. */
void opcache_free(opcache *c);

/* Writes the key of obj ("ns/name", or "name" without a namespace) into
 * buf. Returns 0, or -1 when metadata.name is missing or the key passes
 * OPCACHE_KEY_MAX. */
int opcache_key(char *buf, size_t cap, json_object *obj);

/* A resourceVersion as a number: -1 for NULL, "" or anything but a
 * non-negative decimal (opaque to clients by the API's rules; both
 * kube-apiserver's and the test server's are etcd-style counters). */
int64_t opcache_rv_num(const char *rv);
/* Returns the entry of key, or NULL. */
struct opcache_obj *opcache_get(opcache *c, const char *key);

/* Inserts or replaces the object under its key; takes ownership of raw
 * (also on failure) and keeps its lean copy when the cache has a lean
 * function, else raw without metadata.managedFields, which nothing in
 * the operator reads. A replaced entry's parsed struct is freed (the
 * caller re-parses) and its ext state kept. Returns the entry, or NULL
 * with err set (AIQ_EINVAL for an object without a usable name,
 * AIQ_ENOMEM, also when the lean copy fails). */
struct opcache_obj *opcache_put(opcache *c, json_object *raw, aiq_err *err);

/* Returns o's parse error, or an empty error (code AIQ_OK, "" message)
 * when it has none. Borrowed: valid until the next put of o or
 * opcache_set_perr on it. */
const aiq_err *opcache_perr(const struct opcache_obj *o);

/* Keeps a copy of e as o's parse error, replacing any earlier one;
 * e NULL clears it. Returns 0, or -1 on ENOMEM (o then keeps its earlier error, or
 * none). */
int opcache_set_perr(struct opcache_obj *o, const aiq_err *e);

/* Moves the members of raw named in names (NULL-terminated, at most
 * OPCACHE_STASH_MAX are taken; those that are JSON objects) out of the
 * tree into o->cold_txt as compact JSON text, each on its own: for parts
 * nobody reads on every cycle, text costs a fraction of json-c's tree (a
 * hash table of some 700 bytes for every JSON object in it). Once per
 * put: a second call changes nothing. Only the cache's own raw may be
 * changed so (a put took it). Returns 0, also when there is nothing to
 * move, or -1 on ENOMEM (raw then keeps all). */
#define OPCACHE_STASH_MAX 4
int opcache_stash(struct opcache_obj *o, const char *const *names);

/* Returns raw's member name as a new reference the caller puts: raw's
 * own (a reference to it: read, do not change) or, when it was stashed,
 * parsed back from its own text in o->cold_txt (the other stashed
 * members are not parsed). NULL when there is none, or on ENOMEM. */
json_object *opcache_member(struct opcache_obj *o, const char *name);

/* A new object holding only member part of raw's member name (none
 * when there is no such part): raw's own part (a reference: read, do not
 * change) or, when name was stashed, that part alone parsed from the
 * stashed text (the rest of the text is skipped, not parsed). For a
 * reader of one part of a large member: a published status needs only
 * the live status's conditions. NULL on ENOMEM or unreadable text. */
json_object *opcache_member_part(struct opcache_obj *o, const char *name,
                                 const char *part);

/* The compact JSON text of member name when it was stashed (borrowed:
 * valid until the next put of o), else NULL. */
const char *opcache_stashed(const struct opcache_obj *o, const char *name);

/* Removes and frees the entry of key. Returns 1 if it existed, else 0. */
int opcache_del(opcache *c, const char *key);

/* Number of entries, and the i-th entry (0 <= i < count) for iteration.
 * Indexes change on del, so do not delete while iterating by index. */
size_t opcache_count(const opcache *c);

/* A number that changes whenever an entry is put or deleted (and only
 * then): a reader's list of entries holds while it is the same. */
uint64_t opcache_version(const opcache *c);
/* The two parts of it: the last put's count (every entry put since a
 * given count has a stamp's changed above it) and the deletions so far. */
uint64_t opcache_puts(const opcache *c);
uint64_t opcache_deletions(const opcache *c);
struct opcache_obj *opcache_at(opcache *c, size_t i);

/* The stamp of the i-th entry (0 <= i < count): always the same as its
 * changed and state_seq. */
struct opcache_stamp opcache_stamp(const opcache *c, size_t i);

/* Marks o as seen in the current relist without replacing it (an event
 * older than what the cache holds still proves the object exists). */
void opcache_touch(opcache *c, struct opcache_obj *o);

/* Starts a relist: entries put from now on belong to the new list. */
void opcache_relist_begin(opcache *c);

/* Ends a relist: calls on_drop (may be NULL) for every entry not put since
 * opcache_relist_begin, then removes it. Returns how many were dropped. */
size_t opcache_relist_end(opcache *c,
                          void (*on_drop)(void *ud, struct opcache_obj *o),
                          void *ud);

#endif
