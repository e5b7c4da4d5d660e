/* jpatch.h -- the three patch formats of the Kubernetes API:
 *  - JSON merge patch (RFC 7386, application/merge-patch+json);
 *  - JSON patch (RFC 6902, application/json-patch+json);
 *  - strategic merge patch (application/strategic-merge-patch+json) for
 *    the built-in kinds the local server serves (Pod, Node, Lease,
 *    Namespace): lists merged by their patchMergeKey as in k8s.io/api,
 *    directives $patch, $retainKeys, $setElementOrder/<f>,
 *    $deleteFromPrimitiveList/<f>.
 * All three borrow their inputs and return a new document the caller owns
 * (json_object_put). On failure they return NULL and fill err with
 * AIQ_EINVAL (bad patch, message naming the op index / path) or
 * AIQ_ENOMEM; a failed JSON patch "test" op gives AIQ_ECONFLICT. */
#ifndef AIQ_JPATCH_H
#define AIQ_JPATCH_H

#include <json-c/json.h>

#include "common/aiq_err.h"

/* Most ops in one JSON patch, and deepest nesting followed. */
#define JP_MAX_OPS 10000
#define JP_MAX_DEPTH 64

/* RFC 7386: null deletes, objects merge recursively, anything else
 * replaces. target may be NULL (treated as absent). */
json_object *jp_merge_patch(json_object *target, json_object *patch, aiq_err *err);

/* RFC 6902: applies the ops array (add, remove, replace, move, copy, test)
 * in order, all or nothing. JSON pointers use ~0/~1 escapes, "-" appends
 * to an array. err->message reads e.g.
 * `json patch op 2 (replace): path "/spec/x": missing key "x"`. */
json_object *jp_json_patch(json_object *target, json_object *ops, aiq_err *err);

/* Strategic merge patch of a built-in object. The kind (target's "kind",
 * else patch's) selects the merge keys; unknown kinds get metadata rules
 * only, every other list is replaced. */
json_object *jp_strategic_merge(json_object *target, json_object *patch, aiq_err *err);

/* Deep JSON equality: numbers compare by value (1 == 1.0), objects by key
 * set, arrays in order. */
int jp_equal(json_object *a, json_object *b);

#endif
