/* schema.h -- validation of custom resources against a CRD's
 * openAPIV3Schema, with the real API server's defaulting, pruning and
 * error wording.
 *
 * Supported keywords: type (object, array, string, integer, number,
 * boolean), properties, required, additionalProperties (bool or schema),
 * items, minimum/maximum (+exclusiveMinimum/exclusiveMaximum as booleans),
 * minLength/maxLength, minItems/maxItems, enum, pattern, format date-time,
 * nullable, default, x-kubernetes-preserve-unknown-fields,
 * x-kubernetes-int-or-string. The top-level apiVersion, kind and metadata
 * are never defaulted or pruned; of metadata only name and generateName
 * are validated, against metadata.properties.name/generateName (a CRD may
 * restrict them, e.g. maxLength 63: `metadata.name: Too long: ...`).
 *
 * x-kubernetes-validations: rules are evaluated by the small CEL subset
 * of cel.h once the structural checks are done, and only when no cause in
 * the causes array (including those the caller put there before, e.g.
 * ObjectMeta's) is blocking (NotSupported, Required, TooLong, TooMany,
 * TypeInvalid): otherwise, as the real server does, one cause
 * {"FieldValueInvalid", "<nil>", "Invalid value: null: some validation
 * rules were not checked because the object was invalid; correct the
 * existing errors to complete validation"} stands for them. A false rule is a
 * cause `Invalid value: "object": <message>` (or `failed rule: <rule>`)
 * at the path plus the rule's fieldPath, reason the rule's reason or
 * FieldValueInvalid. Rules using CEL the subset lacks (oldSelf transition
 * rules, messageExpression, other functions) are skipped, i.e. accepted.
 *
 * Not supported: anyOf/oneOf/allOf/not, uniqueItems, multipleOf, other
 * formats. `pattern` is an ECMA regex in Kubernetes; here it is
 * compiled with POSIX regcomp(REG_EXTENDED) after translating \d \D \w \W
 * \s \S outside brackets and (?: to (; lookaround, lazy quantifiers and
 * backreferences are not available (such a pattern gives an
 * "InternalError" cause naming the pattern).
 *
 * Causes are json objects {"reason","field","message"} as in a Status's
 * details.causes, e.g.
 *   {"reason":"FieldValueInvalid","field":"spec.replicas",
 *    "message":"Invalid value: 0: spec.replicas in body should be greater than or equal to 1"}
 *   {"reason":"FieldValueRequired","field":"spec.user","message":"Required value"}
 *   {"reason":"FieldValueNotSupported","field":"spec.placement",
 *    "message":"Unsupported value: \"x\": supported values: \"binpack\", \"spread\""}
 *   {"reason":"FieldValueTypeInvalid","field":"spec.replicas",
 *    "message":"Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""}
 *   {"reason":"FieldValueTooLong", ..."Too long: may not be more than 5 bytes"}
 *   {"reason":"FieldValueTooMany", ..."Too many: 4: must have at most 3 items"}
 * With strict, unknown fields give causes with reason "UnknownField"
 * (ours, not a Kubernetes cause type), field the path and message
 * `unknown field "spec.foo"`: the real server answers those with
 * 400 BadRequest `strict decoding error: unknown field "spec.foo"` and no
 * causes; sv_status_message builds exactly that. */
#ifndef AIQ_SCHEMA_H
#define AIQ_SCHEMA_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Deepest schema/object nesting followed; deeper values get a cause. */
#define SV_MAX_DEPTH 64

/* Validates obj (modified in place: defaults applied, unknown fields
 * pruned when !strict, non-nullable nulls dropped) against schema, both
 * borrowed. Appends one cause per problem to the json array causes.
 * Returns the number of causes appended (0: valid). */
int sv_validate(json_object *schema, json_object *obj, bool strict, json_object *causes);

/* Builds the Status message for causes and returns the HTTP status:
 *  400 when any cause is an UnknownField: `strict decoding error: unknown
 *      field "spec.foo", unknown field "spec.bar"` (send without causes);
 *  422 otherwise when causes is non-empty: `AIJob.aiq.dev "job1" is
 *      invalid: spec.replicas: Invalid value: ...` (one cause, no
 *      brackets) or `...is invalid: [spec.a: ..., spec.b: ...]`
 *      (duplicates dropped, like Go's ErrorList.ToAggregate);
 *  200 with buf "" when there are no causes.
 * kind e.g. "AIJob", group e.g. "aiq.dev" ("" for the core group). */
int sv_status_message(const char *kind, const char *group, const char *name,
                      json_object *causes, char *buf, size_t cap);

#endif
