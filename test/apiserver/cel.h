/* cel.h -- a tiny evaluator for the CEL rules of CRD
 * x-kubernetes-validations, enough for the rule shapes aiq's CRDs use:
 * self, field selection, has(), indexing, size() (function and method),
 * ! && || ?:, comparisons, + - * / %, int/double/string/bool/null
 * literals, `in`, the macros filter/exists/all/exists_one/map, and the
 * string methods startsWith/endsWith/contains. Rules using anything else
 * (oldSelf, other functions, messageExpression) are reported as
 * unsupported so the caller can skip them. */
#ifndef AIQ_CEL_H
#define AIQ_CEL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Longest rule text accepted. */
#define CEL_MAX_RULE 4096

enum cel_result {
    CEL_FALSE = 0,
    CEL_TRUE = 1,
    CEL_ERROR = -1,       /* evaluation error (no such key, bad overload); msg says which */
    CEL_UNSUPPORTED = -2, /* syntax we do not evaluate; msg says which */
};

/* Evaluates rule with `self` bound to self (borrowed). msg (cap bytes)
 * receives the error text for CEL_ERROR / CEL_UNSUPPORTED. A rule whose
 * result is not a boolean is CEL_ERROR. */
enum cel_result cel_eval_bool(const char *rule, json_object *self, char *msg, size_t cap);

/* As cel_eval_bool, for ValidatingAdmissionPolicy expressions: each key of
 * the JSON object vars (borrowed; e.g. object, oldObject, request) is a
 * top-level name; `self` is null. A JSON null value (oldObject on CREATE)
 * is CEL null, so `request.operation == 'CREATE' || oldObject.x == ...`
 * short-circuits as in the real evaluator. */
enum cel_result cel_eval_bool_vars(const char *rule, json_object *vars, char *msg, size_t cap);

/* An authorization check of the admission `authorizer` variable:
 * req holds "group", "resource", "subresource", "namespace", "name" and
 * "verb" (strings, absent = ""). Returns true when allowed. */
typedef bool (*cel_authz_fn)(void *ctx, json_object *req);

/* As cel_eval_bool_vars, with `authorizer` bound: the chain
 * authorizer.group(G).resource(R)[.subresource(S)][.namespace(N)][.name(X)]
 * .check(VERB).allowed() asks authz(ctx, ...) about the requester, as the
 * real ValidatingAdmissionPolicy's authorizer does. */
enum cel_result cel_eval_bool_vars_authz(const char *rule, json_object *vars, cel_authz_fn authz,
                                         void *ctx, char *msg, size_t cap);

/* A string expression (a validation's messageExpression) over vars:
 * CEL_TRUE with the string in out (ocap bytes, cut), CEL_ERROR when the
 * result is not a string or evaluation fails (msg says why). */
enum cel_result cel_eval_string_vars(const char *rule, json_object *vars, char *out, size_t ocap,
                                     char *msg, size_t cap);

#endif
