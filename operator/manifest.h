/* manifest.h -- aiq.dev/v1alpha1 objects from JSON (json-c) and YAML text
 * into the structs of common/model.h.
 *
 * Decoding is strict, like the API server's strict field validation: a
 * wrong type names the field and what was expected
 * (`spec.replicas: must be an integer, got "eight"`), an unknown field
 * under spec is an error (`spec.gpu: unknown field`), JSON null counts as
 * "not set", and the CRD defaults are applied (replicas 1, backoffLimit 3,
 * fairShare.halfLife 7d, budget window 30d, quotas unlimited). Every
 * decoded object is then validated (aiq_*_validate), so a successful
 * *_from_json returns an object the API server would also accept. Unknown
 * fields in metadata are ignored (labels, annotations, managedFields...),
 * and status is not read here (the operator owns it). */
#ifndef AIQ_MANIFEST_H
#define AIQ_MANIFEST_H

#include <stddef.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "common/model.h"
#include "operator/yaml_json.h"

/* One document of a manifest file: its kind and filled struct, or its own
 * error (rc != AIQ_OK, err set, the struct zeroed). */
struct aiq_manifest {
    aiq_kind kind;   /* AIQ_KIND_UNKNOWN when apiVersion/kind are not ours */
    int line;        /* 1-based line where the document starts */
    aiq_rc rc;
    aiq_err err;
    union {
        struct aiq_aijob job;
        struct aiq_policy policy;
        struct aiq_group group;
        struct aiq_userquota userquota;
    } u;
};

/* The kind of obj from its apiVersion (must be aiq.dev/v1alpha1) and kind;
 * AIQ_KIND_UNKNOWN for anything else, including a non-object. */
aiq_kind aiq_manifest_kind(json_object *obj);

/* Decode and validate one object of the given kind. obj is borrowed; *out
 * must not hold owned data (it is overwritten). On success *out owns its
 * strings (release with aiq_*_deinit). On error returns AIQ_EINVAL (or
 * AIQ_ENOMEM) with err naming the field, and leaves *out zeroed. */
aiq_rc aiq_aijob_from_json(json_object *obj, struct aiq_aijob *out, aiq_err *err);
aiq_rc aiq_policy_from_json(json_object *obj, struct aiq_policy *out, aiq_err *err);
aiq_rc aiq_group_from_json(json_object *obj, struct aiq_group *out, aiq_err *err);
aiq_rc aiq_userquota_from_json(json_object *obj, struct aiq_userquota *out,
                               aiq_err *err);

/* Decodes obj into m by its kind: m->kind, m->u and m->rc/m->err (an
 * apiVersion or kind that is not ours is an error naming the field).
 * m->line is left as is. Returns m->rc. */
aiq_rc aiq_manifest_from_json(json_object *obj, struct aiq_manifest *m);

/* Parses manifest text: YAML (multi-document, "---"), or a stream of JSON
 * objects when the first non-blank character is '{'. A `kind: List`
 * (apiVersion v1) document is expanded into its items. On success *out is
 * a new array of *n manifests (free with aiq_manifests_free), each with
 * its own rc; the call itself fails only for text that is not YAML/JSON
 * at all or passes a size limit (AIQ_EPARSE, AIQ_ETOOBIG with err->line),
 * and then *out is NULL and *n 0. */
aiq_rc aiq_manifest_parse_text(const char *text, size_t len,
                               struct aiq_manifest **out, int *n, aiq_err *err);

/* aiq_manifest_parse_text on the contents of the file at path (at most
 * AIQ_MAX_FILE bytes; AIQ_EIO names the path when it cannot be read). */
aiq_rc aiq_manifest_parse_file(const char *path, struct aiq_manifest **out,
                               int *n, aiq_err *err);

/* Releases n manifests and the array; NULL is a no-op. */
void aiq_manifests_free(struct aiq_manifest *m, int n);

#endif
