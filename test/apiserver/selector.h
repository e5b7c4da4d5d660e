/* selector.h -- Kubernetes label and field selectors.
 *
 * Labels (labels.Parse): requirements joined by ',' (AND):
 *   k=v  k==v  k!=v  k  !k  k in (a,b)  k notin (a,b)  k>1  k<1
 * matched against metadata.labels. Fields (fields.ParseSelector):
 *   path=v  path==v  path!=v   with any dotted path (metadata.name,
 *   involvedObject.uid, spec.nodeName, status.phase) and '\' escaping ',',
 *   '=' and '\' in values; a missing field compares as "" (so
 *   spec.nodeName= matches unbound pods), numbers and booleans compare in
 *   their JSON text form. */
#ifndef AIQ_SELECTOR_H
#define AIQ_SELECTOR_H

#include <json-c/json.h>
#include <stdbool.h>

#include "common/aiq_err.h"

/* Longest selector text accepted and most requirements / values. */
#define SEL_MAX_LEN 4096
#define SEL_MAX_REQS 64
#define SEL_MAX_VALUES 64

struct sel;

/* Parses a label selector; NULL or "" selects everything. Returns a new
 * selector (free with sel_free) or NULL with err set (AIQ_EINVAL, message
 * naming the bad part, or AIQ_ETOOBIG / AIQ_ENOMEM). */
struct sel *sel_parse_labels(const char *text, aiq_err *err);

/* Parses a field selector; NULL or "" selects everything. Same ownership
 * and errors as sel_parse_labels. */
struct sel *sel_parse_fields(const char *text, aiq_err *err);

/* Returns true when obj satisfies every requirement; a NULL selector
 * matches everything. obj is borrowed. */
bool sel_match(const struct sel *s, json_object *obj);

/* Returns true when the selector has no requirements (NULL counts). */
bool sel_empty(const struct sel *s);

/* If s requires path == value (for a field selector, e.g.
 * "metadata.name"), returns that value (borrowed from s), else NULL. Lets
 * the server narrow a list before matching. */
const char *sel_required_value(const struct sel *s, const char *path);

/* Frees s; NULL is a no-op. */
void sel_free(struct sel *s);

#endif
