/* json.h -- reading members of parsed JSON (json-c objects) without
 * repeating the type checks at every call: a member of an object, a
 * string, number, integer or boolean member, and a dotted path; and
 * building JSON without dropping a member when memory runs out.
 *
 * Every getter takes a borrowed object that may be NULL or of any type,
 * and returns something borrowed from it (valid while it lives) or the
 * caller's default: a missing member and a member of the wrong type read
 * alike. Callers that must tell them apart (manifest.c, which names the
 * field and the bad value) check the type themselves.
 *
 * This is the only module of common/ that includes json-c; policy/ and
 * queue/ include none of it (make lint). */
#ifndef AIQ_JSON_H
#define AIQ_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

/* Member k of object o, or NULL (o NULL or not an object, k absent). */
json_object *aiq_jget(json_object *o, const char *k);

/* Member k when it is a string, else NULL. */
const char *aiq_jstr(json_object *o, const char *k);

/* Member k when it is a number (int or double), else dflt. */
double aiq_jnum(json_object *o, const char *k, double dflt);

/* Member k when it is a number, as int64 (a double is truncated by
 * json-c's rules), else dflt. */
int64_t aiq_jint(json_object *o, const char *k, int64_t dflt);

/* GPU memory in MiB from member k, a quantity string ("40Gi") that is a
 * whole MiB, or else from member legacy_k, an integer count of MiB (a name
 * an older writer used; NULL for none). 0 when neither reads, and for a
 * legacy count below 0 or above AIQ_QUANTITY_MIB_MAX. */
int64_t aiq_jmib(json_object *o, const char *k, const char *legacy_k);

/* True when member k is the boolean true. */
bool aiq_jtrue(json_object *o, const char *k);

/* The value at a dotted path of object members ("status.phase"), or NULL
 * when a step is missing, not an object, or a segment is 256 bytes or
 * longer. An empty path is o itself. Keys that hold a dot (annotation
 * names) need aiq_jget. */
json_object *aiq_jpath(json_object *o, const char *dotted);

/* aiq_jpath when the value is a string, else NULL. */
const char *aiq_jpath_str(json_object *o, const char *dotted);

/* Building. json-c's adds take the value only when they succeed, and
 * take a NULL value (a constructor out of memory) as JSON null, so an
 * unchecked add can leave a member out or null. These take ownership of
 * v on every path: on success o holds it, on failure it is freed.
 *
 * *failed is sticky: a failure sets it (v NULL, o NULL, or the add
 * fails), and once it is set a call only frees v and leaves o alone, so a
 * builder can add many members in a row and check *failed once, then
 * free the partial object. failed may be NULL for a caller that checks
 * each return. Each returns 0, or -1 when nothing was added. */

/* Adds v as member k of object o (replacing one of that name). */
int aiq_jset(json_object *o, const char *k, json_object *v, bool *failed);

/* Adds member k of o with the value JSON null, on purpose (a merge
 * patch's removal, an SQL NULL). */
int aiq_jset_null(json_object *o, const char *k, bool *failed);

/* Appends v to the array arr. */
int aiq_jpush(json_object *arr, json_object *v, bool *failed);

#endif
