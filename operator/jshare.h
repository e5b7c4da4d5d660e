/* jshare.h -- one copy of each distinct JSON subtree, for caches that
 * hold thousands of objects whose parts are equal: every gated pod of
 * aiq's has the same lean spec ({"schedulingGates":[{"name":
 * "aiq.dev/admission"}]}), the same status and mostly the same aiq.dev/
 * annotations, and json-c spends some 700 bytes on every JSON object, even
 * a small one (a hash table of 16 entries).
 *
 * jshare_intern(p, v) returns a reference to the pool's subtree equal to
 * v (json_object_equal), or keeps v as that subtree when there is none.
 * Whoever takes a shared subtree must never change it in place: it is
 * every holder's.
 *
 * Bounded: a pool holds at most the capacity it was made with; when a
 * new subtree would pass it, the pool lets go of everything it holds
 * (holders keep their references, so nothing they read is freed) and
 * starts again, so its own memory never grows past the bound whatever
 * the objects are. Not thread-safe (json-c's reference counts are not
 * either): one thread per pool. */
#ifndef AIQ_OPERATOR_JSHARE_H
#define AIQ_OPERATOR_JSHARE_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

struct jshare;

/* A pool of at most cap subtrees (cap >= 1). NULL on ENOMEM. */
struct jshare *jshare_new(size_t cap);

/* Drops the pool's references and frees it. NULL is a no-op. */
void jshare_free(struct jshare *p);

/* Takes v (owned; NULL returns NULL) and returns an owned reference to
 * the pool's subtree equal to it: v itself when the pool had none (the
 * pool then keeps a reference too), else the earlier one (v is put).
 * Allocates nothing: the table is made at jshare_new. p NULL returns v. */
json_object *jshare_intern(struct jshare *p, json_object *v);

/* What the pool has done since it was made. */
struct jshare_stats {
    uint64_t hits;    /* subtrees given out that were already held */
    uint64_t misses;  /* subtrees taken in as new */
    uint64_t resets;  /* times the pool let go of everything at its bound */
    size_t held;      /* subtrees held now */
};
void jshare_stats(const struct jshare *p, struct jshare_stats *out);

/* A structural hash of v, equal for json_object_equal trees (an object's
 * members in any order). Exposed for the tests. */
uint64_t jshare_hash(json_object *v);

#endif
