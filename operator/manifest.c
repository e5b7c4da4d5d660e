/* manifest.c -- strict decoding of AIJob, QueuePolicy, Group and UserQuota
 * from json-c objects into common/model.h structs, and manifest files
 * (YAML or JSON streams) into lists of decoded documents (see manifest.h).
 *
 * Each kind is decoded into a zeroed local struct; on any error that struct
 * is deinit'ed, so callers never see a half-filled one. */
#include "operator/manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/aiq_time.h"
#include "common/field_err.h"
#include "common/quote.h"
#include "common/units.h"

#define PATH_CAP 160                   /* field paths we build */
#define SHOW_CAP (AIQ_QUOTE_SHOW * 4 + 8)
#define DEFAULT_BACKOFF 3
#define DEFAULT_HALF_LIFE_S (7 * 86400.0)
#define DEFAULT_WINDOW_S (30 * 86400.0)
#define DEFAULT_MAX_JOB_MIN_RUNTIME_S 3600.0  /* preemption.maxJobMinRuntime */

/* ---- small helpers ---------------------------------------------------- */

/* A value for an error message: strings quoted and escaped, anything else
 * as compact JSON, both cut at AIQ_QUOTE_SHOW characters. */
static const char *show(json_object *v, char *buf, size_t cap) {
    char num[40];
    if (json_object_is_type(v, json_type_string))
        return aiq_quote(buf, cap, json_object_get_string(v),
                         (size_t)json_object_get_string_len(v));
    if (json_object_is_type(v, json_type_double)) {
        /* Shortest text that reads back as the same double (1e+23, not
         * 9.9999999999999992e+22). */
        double d = json_object_get_double(v);
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(num, sizeof num, "%.*g", prec, d);
            if (strtod(num, NULL) == d) break;
        }
        snprintf(buf, cap, "%s", num);
        return buf;
    }
    const char *t = json_object_to_json_string_ext(
        v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t n = 0, i = 0;
    for (; t && t[i] && i < AIQ_QUOTE_SHOW && n + 8 < cap; i++) {
        unsigned char c = (unsigned char)t[i];
        if (c >= 0x20 && c < 0x7f) {
            buf[n++] = (char)c;
        } else {
            static const char hex[] = "0123456789abcdef";
            buf[n++] = '\\'; buf[n++] = 'x';
            buf[n++] = hex[c >> 4]; buf[n++] = hex[c & 15];
        }
    }
    if (t && t[i] && n + 4 < cap) { memcpy(buf + n, "...", 3); n += 3; }
    buf[n] = '\0';
    return buf;
}

/* The member key of obj, or NULL when absent or JSON null. */
static json_object *field(json_object *obj, const char *key) {
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v)) return NULL;
    return v;
}

static bool simple_key(const char *k) {
    size_t n = strnlen(k, 65);
    if (n == 0 || n > 64) return false;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* path = base + "." + key (or base["odd key"]); base "" gives the key. */
static void join(char *path, const char *base, const char *key) {
    if (simple_key(key)) {
        snprintf(path, PATH_CAP, "%s%s%s", base, *base ? "." : "", key);
    } else {
        char q[SHOW_CAP];
        snprintf(path, PATH_CAP, "%s[%s]", base, aiq_quotes(q, sizeof q, key));
    }
}

static aiq_rc no_mem(aiq_err *err) {
    return aiq_err_set(err, AIQ_ENOMEM, "out of memory");
}

/* Every key of obj must be in allowed (NULL-terminated). */
static aiq_rc check_fields(json_object *obj, const char *base,
                           const char *const *allowed, aiq_err *err) {
    json_object_object_foreach(obj, key, val) {
        (void)val;
        const char *const *a = allowed;
        while (*a && strcmp(*a, key) != 0) a++;
        if (!*a) {
            char path[PATH_CAP];
            join(path, base, key);
            return aiq_field_err(err, path, "unknown field");
        }
    }
    return AIQ_OK;
}

static aiq_rc want_object(json_object *v, const char *path, aiq_err *err) {
    char s[SHOW_CAP];
    if (json_object_is_type(v, json_type_object)) return AIQ_OK;
    return aiq_field_err(err, path, "must be an object, got %s", show(v, s, sizeof s));
}

static aiq_rc get_str(json_object *v, const char *path, size_t max, char **out,
                      aiq_err *err) {
    char s[SHOW_CAP];
    if (!json_object_is_type(v, json_type_string))
        return aiq_field_err(err, path, "must be a string, got %s", show(v, s, sizeof s));
    const char *str = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (memchr(str, '\0', n))
        return aiq_field_err(err, path, "must not contain NUL characters, got %s",
                             show(v, s, sizeof s));
    if (n > max)
        return aiq_field_err(err, path, "must be at most %zu characters, got %zu",
                             max, n);
    *out = strndup(str, n);
    return *out ? AIQ_OK : no_mem(err);
}

/* An optional string member: absent/null leaves *out NULL. */
static aiq_rc opt_str(json_object *obj, const char *base, const char *key,
                      size_t max, char **out, aiq_err *err) {
    char path[PATH_CAP];
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, base, key);
    return get_str(v, path, max, out, err);
}

static aiq_rc get_i64(json_object *v, const char *path, int64_t lo, int64_t hi,
                      int64_t *out, aiq_err *err) {
    char s[SHOW_CAP];
    int64_t x;
    if (json_object_is_type(v, json_type_int)) {
        x = json_object_get_int64(v);
        if (x == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
            return aiq_field_err(err, path, "must be <= %lld, got %s", (long long)hi,
                                 show(v, s, sizeof s));
    } else if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d) || d != floor(d) || d < -9.2e18 || d > 9.2e18)
            return aiq_field_err(err, path, "must be an integer, got %s",
                                 show(v, s, sizeof s));
        x = (int64_t)d;
    } else {
        return aiq_field_err(err, path, "must be an integer, got %s", show(v, s, sizeof s));
    }
    if (x < lo)
        return aiq_field_err(err, path, "must be >= %lld, got %lld", (long long)lo,
                             (long long)x);
    if (x > hi)
        return aiq_field_err(err, path, "must be <= %lld, got %lld", (long long)hi,
                             (long long)x);
    *out = x;
    return AIQ_OK;
}

static aiq_rc opt_i64(json_object *obj, const char *base, const char *key,
                      int64_t lo, int64_t hi, int64_t *out, aiq_err *err) {
    char path[PATH_CAP];
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, base, key);
    return get_i64(v, path, lo, hi, out, err);
}

static aiq_rc opt_i32(json_object *obj, const char *base, const char *key,
                      int32_t lo, int32_t hi, int32_t *out, aiq_err *err) {
    int64_t x = *out;
    aiq_rc rc = opt_i64(obj, base, key, lo, hi, &x, err);
    if (rc == AIQ_OK) *out = (int32_t)x;
    return rc;
}

static aiq_rc opt_bool(json_object *obj, const char *base, const char *key,
                       bool *out, aiq_err *err) {
    char path[PATH_CAP], s[SHOW_CAP];
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, base, key);
    if (!json_object_is_type(v, json_type_boolean))
        return aiq_field_err(err, path, "must be a boolean (true or false), got %s",
                             show(v, s, sizeof s));
    *out = json_object_get_boolean(v);
    return AIQ_OK;
}

/* A number >= 0 (integer or decimal). */
static aiq_rc opt_num(json_object *obj, const char *base, const char *key,
                      double *out, aiq_err *err) {
    char path[PATH_CAP], s[SHOW_CAP];
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, base, key);
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return aiq_field_err(err, path, "must be a number, got %s", show(v, s, sizeof s));
    double d = json_object_get_double(v);
    if (!isfinite(d) || d < 0)
        return aiq_field_err(err, path, "must be >= 0, got %s", show(v, s, sizeof s));
    *out = d;
    return AIQ_OK;
}

/* A quantity: integer, or a string in Kubernetes quantity syntax, scaled to
 * 10^scale10 units. */
/* The text of quantity v (a string, or an integer printed into num), or
 * an error naming path. */
static aiq_rc quantity_text(json_object *v, const char *path, char *num, size_t cap,
                            const char **text, aiq_err *err) {
    char s[SHOW_CAP];
    if (json_object_is_type(v, json_type_string)) {
        *text = json_object_get_string(v);
        if (strlen(*text) != (size_t)json_object_get_string_len(v))
            return aiq_field_err(err, path, "must not contain NUL characters, got %s",
                                 show(v, s, sizeof s));
        return AIQ_OK;
    }
    if (json_object_is_type(v, json_type_int)) {
        snprintf(num, cap, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        *text = num;
        return AIQ_OK;
    }
    return aiq_field_err(err, path,
                         "must be a quantity (an integer or a string like "
                         "\"500m\" or \"64Gi\"), got %s",
                         show(v, s, sizeof s));
}

static aiq_rc opt_quantity(json_object *obj, const char *base, const char *key,
                           int scale10, int64_t *out, aiq_err *err) {
    char path[PATH_CAP], num[32];
    const char *text = NULL;
    aiq_err qe;
    aiq_rc rc = AIQ_OK;
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, base, key);
    if ((rc = quantity_text(v, path, num, sizeof num, &text, err))) return rc;
    aiq_err_clear(&qe);
    if (aiq_quantity_scaled(text, scale10, out, &qe) != AIQ_OK)
        return aiq_field_err(err, path, "%s", qe.message);
    return AIQ_OK;
}

/* GPU memory, given as the quantity gpuMemory ("40Gi", "81920Mi") or as
 * the deprecated integer gpuMemoryMiB; never both. The result is in MiB
 * and must be a whole MiB within 0..hi. Absent leaves *mib untouched. */
static aiq_rc opt_gpu_memory(json_object *obj, const char *base, int64_t hi,
                             int64_t *mib, aiq_err *err) {
    char path[PATH_CAP], s[SHOW_CAP], s2[SHOW_CAP], num[32];
    json_object *q = field(obj, "gpuMemory"), *old = field(obj, "gpuMemoryMiB");
    const char *text = NULL;
    int64_t v = 0;
    aiq_err qe;
    aiq_rc rc = AIQ_OK;
    if (!q) return opt_i64(obj, base, "gpuMemoryMiB", 0, hi, mib, err);
    join(path, base, "gpuMemory");
    if (old)
        return aiq_field_err(err, path,
                             "give gpuMemory or the deprecated gpuMemoryMiB, not "
                             "both; got gpuMemory %s and gpuMemoryMiB %s",
                             show(q, s, sizeof s), show(old, s2, sizeof s2));
    if ((rc = quantity_text(q, path, num, sizeof num, &text, err))) return rc;
    aiq_err_clear(&qe);
    if (aiq_quantity_mib(text, &v, &qe) != AIQ_OK)
        return aiq_field_err(err, path, "%s", qe.message);
    if (v > hi)
        return aiq_field_err(err, path, "must be at most %" PRId64 "Mi, got %s", hi,
                             show(q, s, sizeof s));
    *mib = v;
    return AIQ_OK;
}

static aiq_rc opt_duration(json_object *obj, const char *base, const char *key,
                           double *out, aiq_err *err) {
    char path[PATH_CAP], s[SHOW_CAP];
    aiq_err de;
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, base, key);
    if (!json_object_is_type(v, json_type_string))
        return aiq_field_err(err, path,
                             "must be a duration string like \"2h30m\", got %s",
                             show(v, s, sizeof s));
    aiq_err_clear(&de);
    if (aiq_duration_parse(json_object_get_string(v), out, &de) != AIQ_OK)
        return aiq_field_err(err, path, "%s", de.message);
    return AIQ_OK;
}

/* An optional object member: *out NULL when absent; error if not an
 * object or it has fields outside allowed. */
static aiq_rc opt_object(json_object *obj, const char *base, const char *key,
                         const char *const *allowed, json_object **out,
                         char *path, aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    *out = field(obj, key);
    join(path, base, key);
    if (!*out) return AIQ_OK;
    if ((rc = want_object(*out, path, err))) return rc;
    return check_fields(*out, path, allowed, err);
}

/* A list member with at most max items; *out NULL when absent. */
static aiq_rc opt_list(json_object *obj, const char *base, const char *key,
                       int max, const char *noun, json_object **out, int *n,
                       aiq_err *err) {
    char path[PATH_CAP], s[SHOW_CAP];
    *out = field(obj, key);
    *n = 0;
    if (!*out) return AIQ_OK;
    join(path, base, key);
    if (!json_object_is_type(*out, json_type_array))
        return aiq_field_err(err, path, "must be a list, got %s", show(*out, s, sizeof s));
    size_t len = json_object_array_length(*out);
    if (len > (size_t)max)
        return aiq_field_err(err, path, "must have at most %d %s, got %zu", max,
                             noun, len);
    *n = (int)len;
    return AIQ_OK;
}

/* ---- shared parts ----------------------------------------------------- */

static const char *const top_fields[] = {"apiVersion", "kind", "metadata",
                                         "spec", "status", NULL};

/* Top level: fields, apiVersion and kind (when present) must match. */
static aiq_rc decode_top(json_object *obj, aiq_kind want, json_object **spec,
                         aiq_err *err) {
    char s[SHOW_CAP];
    aiq_rc rc = AIQ_OK;
    json_object *v;
    *spec = NULL;
    if (!json_object_is_type(obj, json_type_object))
        return aiq_err_set(err, AIQ_EINVAL, "the document must be an object, got %s",
                           show(obj, s, sizeof s));
    if ((rc = check_fields(obj, "", top_fields, err))) return rc;
    if ((v = field(obj, "apiVersion")) &&
        (!json_object_is_type(v, json_type_string) ||
         strcmp(json_object_get_string(v), AIQ_API_VERSION) != 0))
        return aiq_field_err(err, "apiVersion", "must be %s, got %s", AIQ_API_VERSION,
                             show(v, s, sizeof s));
    if ((v = field(obj, "kind")) &&
        (!json_object_is_type(v, json_type_string) ||
         strcmp(json_object_get_string(v), aiq_kind_name(want)) != 0))
        return aiq_field_err(err, "kind", "must be %s, got %s", aiq_kind_name(want),
                             show(v, s, sizeof s));
    if ((*spec = field(obj, "spec")) && (rc = want_object(*spec, "spec", err)))
        return rc;
    return AIQ_OK;
}

static aiq_rc opt_time(json_object *obj, const char *key, double *out, aiq_err *err) {
    char path[PATH_CAP], s[SHOW_CAP];
    aiq_err te;
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, "metadata", key);
    if (!json_object_is_type(v, json_type_string))
        return aiq_field_err(err, path, "must be a string, got %s", show(v, s, sizeof s));
    aiq_err_clear(&te);
    if (aiq_time_parse(json_object_get_string(v), out, &te) != AIQ_OK)
        return aiq_field_err(err, path, "%s", te.message);
    return AIQ_OK;
}

static aiq_rc decode_meta(json_object *obj, bool namespaced, struct aiq_meta *m,
                          aiq_err *err) {
    aiq_rc rc = AIQ_OK;
    json_object *md = field(obj, "metadata");
    if (!md) return AIQ_OK; /* validation reports the missing name */
    if ((rc = want_object(md, "metadata", err))) return rc;
    if ((rc = opt_str(md, "metadata", "name", AIQ_MAX_NAME, &m->name, err))) return rc;
    if (namespaced &&
        (rc = opt_str(md, "metadata", "namespace", AIQ_MAX_NAME, &m->namespace_, err)))
        return rc;
    if ((rc = opt_str(md, "metadata", "uid", AIQ_MAX_NAME, &m->uid, err))) return rc;
    if ((rc = opt_str(md, "metadata", "resourceVersion", AIQ_MAX_NAME,
                      &m->resource_version, err)))
        return rc;
    if ((rc = opt_i64(md, "metadata", "generation", 0, INT64_MAX, &m->generation, err)))
        return rc;
    if ((rc = opt_time(md, "creationTimestamp", &m->creation_time, err))) return rc;
    if ((rc = opt_time(md, "deletionTimestamp", &m->deletion_time, err))) return rc;
    return AIQ_OK;
}

static const char *const quota_fields[] = {"gpus", "gpuMemory", "gpuMemoryMiB", "cpu",
                                           "memory", "jobs", NULL};

/* A quota-shaped object spec.<key> (quota, borrowingLimit, lendingLimit):
 * an omitted field is -1. */
static aiq_rc decode_quota_key(json_object *spec, const char *key, struct aiq_quota *q,
                               aiq_err *err) {
    char path[PATH_CAP], v[32], f[PATH_CAP + 16];
    json_object *o;
    aiq_rc rc = AIQ_OK;
    aiq_quota_unlimited(q);
    if (!spec) return AIQ_OK;
    if ((rc = opt_object(spec, "spec", key, quota_fields, &o, path, err)) || !o)
        return rc;
    if ((rc = opt_i64(o, path, "gpus", 0, INT64_MAX, &q->gpus, err))) return rc;
    if ((rc = opt_gpu_memory(o, path, INT64_MAX, &q->gpu_memory_mib, err))) return rc;
    if ((rc = opt_quantity(o, path, "cpu", -3, &q->cpu_milli, err))) return rc;
    snprintf(f, sizeof f, "%s.cpu", path);
    if (q->cpu_milli < -1 || (q->cpu_milli == -1 && field(o, "cpu")))
        return aiq_field_err(err, f, "must be >= 0, got %s",
                             aiq_quantity_format_milli(q->cpu_milli, v, sizeof v));
    if ((rc = opt_quantity(o, path, "memory", 0, &q->memory_bytes, err))) return rc;
    snprintf(f, sizeof f, "%s.memory", path);
    if (q->memory_bytes < -1 || (q->memory_bytes == -1 && field(o, "memory")))
        return aiq_field_err(err, f, "must be >= 0, got %s",
                             aiq_quantity_format_bytes(q->memory_bytes, v, sizeof v));
    if ((rc = opt_i64(o, path, "jobs", 0, INT64_MAX, &q->jobs, err))) return rc;
    return AIQ_OK;
}

static aiq_rc decode_quota(json_object *spec, struct aiq_quota *q, aiq_err *err) {
    return decode_quota_key(spec, "quota", q, err);
}

static const char *const budget_fields[] = {"gpuHours", "window", NULL};

static aiq_rc decode_budget(json_object *spec, struct aiq_budget *b, aiq_err *err) {
    char path[PATH_CAP];
    json_object *o;
    aiq_rc rc = AIQ_OK;
    b->gpu_hours = -1;
    b->window_s = DEFAULT_WINDOW_S;
    if (!spec) return AIQ_OK;
    if ((rc = opt_object(spec, "spec", "budget", budget_fields, &o, path, err)) || !o)
        return rc;
    if (!field(o, "gpuHours")) return aiq_field_err(err, "spec.budget.gpuHours", "is required");
    if ((rc = opt_num(o, path, "gpuHours", &b->gpu_hours, err))) return rc;
    return opt_duration(o, path, "window", &b->window_s, err);
}

/* ---- AIJob ------------------------------------------------------------ */

static const char *const job_fields[] = {
    "user", "priority", "replicas", "resources", "domain", "estimatedRuntime",
    "taskType", "model", "suspend", "backoffLimit", "template", "minReplicas",
    "maxReplicas", "checkpointable", "checkpointInterval", "minRuntime", "nonPreemptible",
    NULL};
static const char *const resource_fields[] = {"gpus", "gpuMemory", "gpuMemoryMiB",
                                              "cpu", "memory", "gpuModel", NULL};
static const char *const model_fields[] = {"name", "parameters", NULL};

static aiq_rc decode_job_spec(json_object *spec, struct aiq_aijob_spec *s,
                              aiq_err *err) {
    char path[PATH_CAP], sh[SHOW_CAP];
    json_object *o;
    aiq_rc rc = AIQ_OK;
    if ((rc = check_fields(spec, "spec", job_fields, err))) return rc;
    if ((rc = opt_str(spec, "spec", "user", AIQ_MAX_NAME, &s->user, err))) return rc;
    if ((rc = opt_i32(spec, "spec", "priority", 0, 1000000, &s->priority, err))) return rc;
    if ((rc = opt_i32(spec, "spec", "replicas", 1, AIQ_MAX_REPLICAS, &s->replicas, err)))
        return rc;
    if ((rc = opt_object(spec, "spec", "resources", resource_fields, &o, path, err)))
        return rc;
    if (o) {
        struct aiq_resources *r = &s->resources;
        if ((rc = opt_i32(o, path, "gpus", 0, AIQ_MAX_GPUS_PER_REPLICA, &r->gpus, err)))
            return rc;
        if ((rc = opt_gpu_memory(o, path, 1 << 20, &r->gpu_memory_mib, err)))
            return rc;
        if ((rc = opt_quantity(o, path, "cpu", -3, &r->cpu_milli, err))) return rc;
        if ((rc = opt_quantity(o, path, "memory", 0, &r->memory_bytes, err))) return rc;
        if ((rc = opt_str(o, path, "gpuModel", AIQ_MAX_NAME, &r->gpu_model, err)))
            return rc;
    }
    if ((rc = opt_str(spec, "spec", "domain", AIQ_MAX_NAME, &s->domain, err))) return rc;
    if ((rc = opt_duration(spec, "spec", "estimatedRuntime", &s->estimated_runtime_s, err)))
        return rc;
    if ((rc = opt_str(spec, "spec", "taskType", AIQ_MAX_NAME, &s->task_type, err)))
        return rc;
    if ((rc = opt_object(spec, "spec", "model", model_fields, &o, path, err))) return rc;
    if (o) {
        if ((rc = opt_str(o, path, "name", AIQ_MAX_NAME, &s->model_name, err))) return rc;
        if ((rc = opt_quantity(o, path, "parameters", 0, &s->model_parameters, err)))
            return rc;
    }
    if ((rc = opt_bool(spec, "spec", "suspend", &s->suspend, err))) return rc;
    if ((rc = opt_i32(spec, "spec", "backoffLimit", 0, 100, &s->backoff_limit, err)))
        return rc;
    /* Elastic: both ends or neither; the gang starts at its minimum. */
    if ((rc = opt_i32(spec, "spec", "minReplicas", 1, AIQ_MAX_REPLICAS, &s->min_replicas, err)))
        return rc;
    if ((rc = opt_i32(spec, "spec", "maxReplicas", 1, AIQ_MAX_REPLICAS, &s->max_replicas, err)))
        return rc;
    if (!s->min_replicas != !s->max_replicas)
        return aiq_field_err(err, s->min_replicas ? "spec.maxReplicas" : "spec.minReplicas",
                             "is required with spec.%s (an elastic job needs both)",
                             s->min_replicas ? "minReplicas" : "maxReplicas");
    if (s->min_replicas) s->replicas = s->min_replicas;
    if ((rc = opt_bool(spec, "spec", "checkpointable", &s->checkpointable, err))) return rc;
    if ((rc = opt_duration(spec, "spec", "checkpointInterval", &s->checkpoint_interval_s, err)))
        return rc;
    if ((rc = opt_duration(spec, "spec", "minRuntime", &s->min_runtime_s, err))) return rc;
    if ((rc = opt_bool(spec, "spec", "nonPreemptible", &s->non_preemptible, err))) return rc;
    if ((o = field(spec, "template"))) {
        if (!json_object_is_type(o, json_type_object))
            return aiq_field_err(err, "spec.template",
                                 "must be an object (a pod template), got %s",
                                 show(o, sh, sizeof sh));
        size_t n = 0;
        const char *t = json_object_to_json_string_length(
            o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        if (!t) return no_mem(err);
        if (n > AIQ_MAX_MANIFEST)
            return aiq_field_err(err, "spec.template",
                                 "must be at most %d bytes as JSON, got %zu",
                                 AIQ_MAX_MANIFEST, n);
        if (!(s->template_json = strndup(t, n))) return no_mem(err);
    }
    return AIQ_OK;
}

aiq_rc aiq_aijob_from_json(json_object *obj, struct aiq_aijob *out, aiq_err *err) {
    struct aiq_aijob j;
    json_object *spec;
    aiq_rc rc = AIQ_OK;
    memset(out, 0, sizeof *out);
    memset(&j, 0, sizeof j);
    j.spec.replicas = 1;
    j.spec.backoff_limit = DEFAULT_BACKOFF;
    if ((rc = decode_top(obj, AIQ_KIND_AIJOB, &spec, err))) goto out_deinit;
    if ((rc = decode_meta(obj, true, &j.meta, err))) goto out_deinit;
    if (spec && (rc = decode_job_spec(spec, &j.spec, err))) goto out_deinit;
    if ((rc = aiq_aijob_validate(&j, err))) goto out_deinit;
    *out = j;
    return AIQ_OK;
out_deinit:
    aiq_aijob_deinit(&j);
    return rc;
}

/* ---- QueuePolicy ------------------------------------------------------ */

static const char *const policy_fields[] = {"formula", "levels", "backfill",
                                            "placement", "placementScore", "starvation", "fairShare",
                                            "active", "preemption", "elastic",
                                            "rescoreInterval", NULL};
static const char *const preemption_fields[] = {"lowerLevels", "withinLevel", "reclaimBorrowed",
                                                "minRuntime", "maxJobMinRuntime",
                                                "maxPerJobPerHour", NULL};
static const char *const within_fields[] = {"scoreMargin", NULL};
static const char *const elastic_fields[] = {"grow", NULL};
static const char *const level_fields[] = {"name", "when", NULL};
static const char *const starvation_fields[] = {"after", "promoteTo", NULL};
static const char *const fairshare_fields[] = {"halfLife", NULL};

/* An optional enum string: *out = index into names. */
static aiq_rc opt_enum(json_object *obj, const char *key, const char *const *names,
                       int *out, aiq_err *err) {
    char path[PATH_CAP], s[SHOW_CAP], list[96] = "";
    json_object *v = field(obj, key);
    if (!v) return AIQ_OK;
    join(path, "spec", key);
    if (json_object_is_type(v, json_type_string))
        for (int i = 0; names[i]; i++)
            if (strcmp(json_object_get_string(v), names[i]) == 0) {
                *out = i;
                return AIQ_OK;
            }
    for (int i = 0; names[i]; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s\"%s\"", i ? ", " : "", names[i]);
    }
    return aiq_field_err(err, path, "must be one of %s, got %s", list,
                         show(v, s, sizeof s));
}

/* spec.levels: each level's name and its when predicate ("" counts as
 * none). */
static aiq_rc decode_policy_levels(json_object *spec, struct aiq_policy_spec *s, aiq_err *err) {
    char lp[PATH_CAP];
    json_object *list;
    int n = 0;
    aiq_rc rc = AIQ_OK;
    if ((rc = opt_list(spec, "spec", "levels", AIQ_MAX_LEVELS, "levels", &list, &n, err)))
        return rc;
    if (n <= 0) return AIQ_OK;
    if (!(s->levels = calloc((size_t)n, sizeof *s->levels))) return no_mem(err);
    s->nlevels = n;
    for (int i = 0; i < n; i++) {
        json_object *l = json_object_array_get_idx(list, (size_t)i);
        snprintf(lp, sizeof lp, "spec.levels[%d]", i);
        if (!l) return aiq_field_err(err, lp, "must be an object, got null");
        if ((rc = want_object(l, lp, err))) return rc;
        if ((rc = check_fields(l, lp, level_fields, err))) return rc;
        if ((rc = opt_str(l, lp, "name", 63, &s->levels[i].name, err))) return rc;
        if ((rc = opt_str(l, lp, "when", AIQ_MAX_FORMULA, &s->levels[i].when, err)))
            return rc;
        if (s->levels[i].when && !*s->levels[i].when) {
            free(s->levels[i].when); /* "" is the same as no predicate */
            s->levels[i].when = NULL;
        }
    }
    return AIQ_OK;
}

/* spec.preemption: lowerLevels, withinLevel (present means on),
 * reclaimBorrowed (on by default), and the runtime and rate limits. */
static aiq_rc decode_policy_preemption(json_object *spec, struct aiq_policy_spec *s,
                                       aiq_err *err) {
    char path[PATH_CAP], wp[PATH_CAP];
    json_object *o, *w;
    aiq_rc rc = AIQ_OK;
    if ((rc = opt_object(spec, "spec", "preemption", preemption_fields, &o, path, err)))
        return rc;
    if (!o) return AIQ_OK;
    if ((rc = opt_bool(o, path, "lowerLevels", &s->preempt_lower_levels, err))) return rc;
    if ((rc = opt_object(o, path, "withinLevel", within_fields, &w, wp, err))) return rc;
    if (w) {
        s->preempt_within_level = true;
        if ((rc = opt_num(w, wp, "scoreMargin", &s->preempt_score_margin, err))) return rc;
    }
    bool reclaim = true;
    if ((rc = opt_bool(o, path, "reclaimBorrowed", &reclaim, err))) return rc;
    s->preempt_no_reclaim = !reclaim;
    if ((rc = opt_duration(o, path, "minRuntime", &s->preempt_min_runtime_s, err))) return rc;
    if ((rc = opt_duration(o, path, "maxJobMinRuntime", &s->preempt_max_job_min_runtime_s,
                           err)))
        return rc;
    return opt_i32(o, path, "maxPerJobPerHour", 0, 1000, &s->preempt_max_per_hour, err);
}

static aiq_rc decode_policy_spec(json_object *spec, struct aiq_policy_spec *s,
                                 aiq_err *err) {
    static const char *const backfills[] = {"None", "Easy", NULL};
    static const char *const placements[] = {"binpack", "spread", "fgd", NULL};
    char path[PATH_CAP];
    json_object *o;
    int e = 0;
    aiq_rc rc = AIQ_OK;
    if ((rc = check_fields(spec, "spec", policy_fields, err))) return rc;
    if ((rc = opt_str(spec, "spec", "formula", AIQ_MAX_FORMULA, &s->formula, err)))
        return rc;
    if ((rc = decode_policy_levels(spec, s, err))) return rc;
    e = (int)s->backfill;
    if ((rc = opt_enum(spec, "backfill", backfills, &e, err))) return rc;
    s->backfill = (aiq_backfill)e;
    e = (int)s->placement;
    if ((rc = opt_enum(spec, "placement", placements, &e, err))) return rc;
    s->placement = (aiq_placement)e;
    if ((rc = opt_str(spec, "spec", "placementScore", AIQ_MAX_FORMULA, &s->placement_score, err)))
        return rc;
    if (s->placement_score && !*s->placement_score) {
        free(s->placement_score); /* "" is the same as none */
        s->placement_score = NULL;
    }
    if ((rc = opt_object(spec, "spec", "starvation", starvation_fields, &o, path, err)))
        return rc;
    if (o) {
        if ((rc = opt_duration(o, path, "after", &s->starvation_after_s, err))) return rc;
        if ((rc = opt_str(o, path, "promoteTo", 63, &s->starvation_promote_to, err)))
            return rc;
    }
    if ((rc = opt_object(spec, "spec", "fairShare", fairshare_fields, &o, path, err)))
        return rc;
    if (o && (rc = opt_duration(o, path, "halfLife", &s->fairshare_half_life_s, err)))
        return rc;
    if ((rc = opt_duration(spec, "spec", "rescoreInterval", &s->rescore_interval_s, err)))
        return rc;
    if ((rc = decode_policy_preemption(spec, s, err))) return rc;
    if ((rc = opt_object(spec, "spec", "elastic", elastic_fields, &o, path, err))) return rc;
    if (o) {
        bool grow = true;
        if ((rc = opt_bool(o, path, "grow", &grow, err))) return rc;
        s->elastic_no_grow = !grow;
    }
    return opt_bool(spec, "spec", "active", &s->active, err);
}

aiq_rc aiq_policy_from_json(json_object *obj, struct aiq_policy *out, aiq_err *err) {
    struct aiq_policy p;
    json_object *spec;
    aiq_rc rc = AIQ_OK;
    memset(out, 0, sizeof *out);
    memset(&p, 0, sizeof p);
    p.spec.fairshare_half_life_s = DEFAULT_HALF_LIFE_S;
    p.spec.preempt_max_job_min_runtime_s = DEFAULT_MAX_JOB_MIN_RUNTIME_S;
    if ((rc = decode_top(obj, AIQ_KIND_QUEUEPOLICY, &spec, err))) goto out_deinit;
    if ((rc = decode_meta(obj, false, &p.meta, err))) goto out_deinit;
    if (spec && (rc = decode_policy_spec(spec, &p.spec, err))) goto out_deinit;
    if ((rc = aiq_policy_validate(&p, err))) goto out_deinit;
    *out = p;
    return AIQ_OK;
out_deinit:
    aiq_policy_deinit(&p);
    return rc;
}

/* ---- Group ------------------------------------------------------------ */

static const char *const group_fields[] = {"level", "namespaces", "quota", "budget",
                                           "members", "shares", "cohort", "borrowingLimit",
                                           "lendingLimit", NULL};
static const char *const member_fields[] = {"user", "level", NULL};

static aiq_rc decode_group_spec(json_object *spec, struct aiq_group_spec *s,
                                aiq_err *err) {
    char p[PATH_CAP];
    json_object *list;
    int n = 0;
    aiq_rc rc = AIQ_OK;
    if ((rc = check_fields(spec, "spec", group_fields, err))) return rc;
    if ((rc = opt_i32(spec, "spec", "level", 0, 1000, &s->level, err))) return rc;
    if ((rc = opt_list(spec, "spec", "namespaces", AIQ_MAX_LIST, "items", &list, &n, err)))
        return rc;
    if (n > 0) {
        if (!(s->namespaces = calloc((size_t)n, sizeof *s->namespaces))) return no_mem(err);
        s->nnamespaces = n;
        for (int i = 0; i < n; i++) {
            json_object *v = json_object_array_get_idx(list, (size_t)i);
            snprintf(p, sizeof p, "spec.namespaces[%d]", i);
            if (!v) return aiq_field_err(err, p, "must be a string, got null");
            if ((rc = get_str(v, p, 63, &s->namespaces[i], err))) return rc;
        }
    }
    if ((rc = decode_quota(spec, &s->quota, err))) return rc;
    if ((rc = decode_budget(spec, &s->budget, err))) return rc;
    if ((rc = opt_list(spec, "spec", "members", AIQ_MAX_LIST, "items", &list, &n, err)))
        return rc;
    if (n > 0) {
        if (!(s->members = calloc((size_t)n, sizeof *s->members))) return no_mem(err);
        s->nmembers = n;
        for (int i = 0; i < n; i++) {
            json_object *m = json_object_array_get_idx(list, (size_t)i);
            snprintf(p, sizeof p, "spec.members[%d]", i);
            if (!m) return aiq_field_err(err, p, "must be an object, got null");
            if ((rc = want_object(m, p, err))) return rc;
            if ((rc = check_fields(m, p, member_fields, err))) return rc;
            if ((rc = opt_str(m, p, "user", AIQ_MAX_NAME, &s->members[i].user, err)))
                return rc;
            if ((rc = opt_i32(m, p, "level", 0, 1000, &s->members[i].level, err)))
                return rc;
        }
    }
    if ((rc = opt_num(spec, "spec", "shares", &s->shares, err))) return rc;
    if ((rc = opt_str(spec, "spec", "cohort", 63, &s->cohort, err))) return rc;
    if ((rc = decode_quota_key(spec, "borrowingLimit", &s->borrowing_limit, err))) return rc;
    return decode_quota_key(spec, "lendingLimit", &s->lending_limit, err);
}

aiq_rc aiq_group_from_json(json_object *obj, struct aiq_group *out, aiq_err *err) {
    struct aiq_group g;
    json_object *spec;
    aiq_rc rc = AIQ_OK;
    memset(out, 0, sizeof *out);
    memset(&g, 0, sizeof g);
    aiq_quota_unlimited(&g.spec.quota);
    aiq_quota_unlimited(&g.spec.borrowing_limit);
    aiq_quota_unlimited(&g.spec.lending_limit);
    g.spec.budget.gpu_hours = -1;
    g.spec.budget.window_s = DEFAULT_WINDOW_S;
    if ((rc = decode_top(obj, AIQ_KIND_GROUP, &spec, err))) goto out_deinit;
    if ((rc = decode_meta(obj, false, &g.meta, err))) goto out_deinit;
    if (spec && (rc = decode_group_spec(spec, &g.spec, err))) goto out_deinit;
    if ((rc = aiq_group_validate(&g, err))) goto out_deinit;
    *out = g;
    return AIQ_OK;
out_deinit:
    aiq_group_deinit(&g);
    return rc;
}

/* ---- UserQuota -------------------------------------------------------- */

static const char *const userquota_fields[] = {"user", "quota", "budget", NULL};

aiq_rc aiq_userquota_from_json(json_object *obj, struct aiq_userquota *out,
                               aiq_err *err) {
    struct aiq_userquota u;
    json_object *spec;
    aiq_rc rc = AIQ_OK;
    memset(out, 0, sizeof *out);
    memset(&u, 0, sizeof u);
    aiq_quota_unlimited(&u.spec.quota);
    u.spec.budget.gpu_hours = -1;
    u.spec.budget.window_s = DEFAULT_WINDOW_S;
    if ((rc = decode_top(obj, AIQ_KIND_USERQUOTA, &spec, err))) goto out_deinit;
    if ((rc = decode_meta(obj, true, &u.meta, err))) goto out_deinit;
    if (spec) {
        if ((rc = check_fields(spec, "spec", userquota_fields, err))) goto out_deinit;
        if ((rc = opt_str(spec, "spec", "user", AIQ_MAX_NAME, &u.spec.user, err)))
            goto out_deinit;
        if ((rc = decode_quota(spec, &u.spec.quota, err))) goto out_deinit;
        if ((rc = decode_budget(spec, &u.spec.budget, err))) goto out_deinit;
    }
    if ((rc = aiq_userquota_validate(&u, err))) goto out_deinit;
    *out = u;
    return AIQ_OK;
out_deinit:
    aiq_userquota_deinit(&u);
    return rc;
}

/* ---- dispatch and files ----------------------------------------------- */

aiq_kind aiq_manifest_kind(json_object *obj) {
    json_object *v;
    if (!json_object_is_type(obj, json_type_object)) return AIQ_KIND_UNKNOWN;
    if (!(v = field(obj, "apiVersion")) || !json_object_is_type(v, json_type_string) ||
        strcmp(json_object_get_string(v), AIQ_API_VERSION) != 0)
        return AIQ_KIND_UNKNOWN;
    if (!(v = field(obj, "kind")) || !json_object_is_type(v, json_type_string))
        return AIQ_KIND_UNKNOWN;
    return aiq_kind_parse(json_object_get_string(v));
}

aiq_rc aiq_manifest_from_json(json_object *obj, struct aiq_manifest *m) {
    char s[SHOW_CAP];
    json_object *v;
    aiq_err *err = &m->err;
    aiq_err_clear(err);
    memset(&m->u, 0, sizeof m->u);
    m->kind = aiq_manifest_kind(obj);
    switch (m->kind) {
    case AIQ_KIND_AIJOB: m->rc = aiq_aijob_from_json(obj, &m->u.job, err); break;
    case AIQ_KIND_QUEUEPOLICY: m->rc = aiq_policy_from_json(obj, &m->u.policy, err); break;
    case AIQ_KIND_GROUP: m->rc = aiq_group_from_json(obj, &m->u.group, err); break;
    case AIQ_KIND_USERQUOTA:
        m->rc = aiq_userquota_from_json(obj, &m->u.userquota, err);
        break;
    default:
        if (!json_object_is_type(obj, json_type_object))
            m->rc = aiq_err_set(err, AIQ_EINVAL, "the document must be an object, got %s",
                                show(obj, s, sizeof s));
        else if (!(v = field(obj, "apiVersion")))
            m->rc = aiq_field_err(err, "apiVersion", "is required");
        else if (!json_object_is_type(v, json_type_string) ||
                 strcmp(json_object_get_string(v), AIQ_API_VERSION) != 0)
            m->rc = aiq_field_err(err, "apiVersion", "must be %s, got %s",
                                  AIQ_API_VERSION, show(v, s, sizeof s));
        else if (!(v = field(obj, "kind")))
            m->rc = aiq_field_err(err, "kind", "is required");
        else
            m->rc = aiq_field_err(err, "kind",
                                  "must be one of AIJob, QueuePolicy, Group, "
                                  "UserQuota, got %s",
                                  show(v, s, sizeof s));
        break;
    }
    return m->rc;
}

/* JSON stream: one or more objects, whitespace between. */
static aiq_rc json_stream(const char *text, size_t len, json_object ***docs, int *ndocs,
                          int **lines, aiq_err *err) {
    json_tokener *tok = NULL;
    json_object **d = NULL;
    int *l = NULL, n = 0, line = 1;
    size_t off = 0, counted = 0;
    aiq_rc rc = AIQ_OK;

    if (len > AIQ_MAX_FILE)
        return aiq_err_set(err, AIQ_ETOOBIG, "manifest is %zu bytes, more than "
                           "the limit of %d", len, AIQ_MAX_FILE);
    if (!(tok = json_tokener_new_ex(AIQ_MAX_DEPTH))) return no_mem(err);
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
                                    JSON_TOKENER_VALIDATE_UTF8);
    for (;;) {
        while (off < len && strchr(" \t\r\n", text[off]) && text[off]) off++;
        if (off >= len) break;
        for (; counted < off; counted++)
            if (text[counted] == '\n') line++;
        if (n == AIQ_MAX_DOCS) {
            rc = aiq_err_set(err, AIQ_ETOOBIG, "more than %d documents", AIQ_MAX_DOCS);
            goto out_free;
        }
        size_t chunk = len - off > AIQ_MAX_MANIFEST ? AIQ_MAX_MANIFEST + 1 : len - off;
        json_tokener_reset(tok);
        json_object *o = json_tokener_parse_ex(tok, text + off, (int)chunk);
        enum json_tokener_error je = json_tokener_get_error(tok);
        size_t end = json_tokener_get_parse_end(tok);
        if (je != json_tokener_success) {
            if (je == json_tokener_continue && chunk > AIQ_MAX_MANIFEST)
                rc = aiq_err_set(err, AIQ_ETOOBIG, "line %d: JSON document is over %d "
                                 "bytes", line, AIQ_MAX_MANIFEST);
            else
                rc = aiq_err_set(err, AIQ_EPARSE, "JSON syntax error at byte %zu: %s",
                                 off + end,
                                 je == json_tokener_continue ? "unexpected end of input"
                                                             : json_tokener_error_desc(je));
            if (err) { err->offset = off + end; err->line = line; }
            json_object_put(o);
            goto out_free;
        }
        if (end > AIQ_MAX_MANIFEST) {
            json_object_put(o);
            rc = aiq_err_set(err, AIQ_ETOOBIG, "line %d: JSON document is over %d bytes",
                             line, AIQ_MAX_MANIFEST);
            goto out_free;
        }
        json_object **nd = realloc(d, (size_t)(n + 1) * sizeof *nd);
        if (nd) d = nd;
        int *nl = nd ? realloc(l, (size_t)(n + 1) * sizeof *nl) : NULL;
        if (nl) l = nl;
        if (!nd || !nl) {
            json_object_put(o);
            rc = no_mem(err);
            goto out_free;
        }
        d[n] = o;
        l[n] = line;
        n++;
        off += end ? end : 1;
    }
    *docs = d;
    *ndocs = n;
    *lines = l;
    json_tokener_free(tok);
    return AIQ_OK;
out_free:
    aiq_json_docs_free(d, n);
    free(l);
    json_tokener_free(tok);
    return rc;
}

/* Appends the manifest decoded from obj to *out. */
static aiq_rc push_manifest(json_object *obj, int line, struct aiq_manifest **out,
                            int *n, int *cap, aiq_err *err) {
    if (*n == AIQ_MAX_DOCS)
        return aiq_err_set(err, AIQ_ETOOBIG, "more than %d documents", AIQ_MAX_DOCS);
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 4;
        struct aiq_manifest *m = realloc(*out, (size_t)nc * sizeof *m);
        if (!m) return no_mem(err);
        *out = m;
        *cap = nc;
    }
    struct aiq_manifest *m = &(*out)[*n];
    memset(m, 0, sizeof *m);
    m->line = line;
    aiq_manifest_from_json(obj, m);
    (*n)++;
    if (m->rc == AIQ_ENOMEM) return no_mem(err);
    return AIQ_OK;
}

static bool is_v1_list(json_object *o) {
    json_object *k = field(o, "kind"), *a = field(o, "apiVersion");
    return json_object_is_type(o, json_type_object) && k && a &&
           json_object_is_type(k, json_type_string) &&
           json_object_is_type(a, json_type_string) &&
           strcmp(json_object_get_string(k), "List") == 0 &&
           strcmp(json_object_get_string(a), "v1") == 0 &&
           json_object_is_type(field(o, "items"), json_type_array);
}

aiq_rc aiq_manifest_parse_text(const char *text, size_t len, struct aiq_manifest **out,
                               int *n, aiq_err *err) {
    json_object **docs = NULL;
    int *lines = NULL, ndocs = 0, cap = 0;
    size_t i = 0;
    aiq_rc rc = AIQ_OK;

    *out = NULL;
    *n = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' ||
                       text[i] == '\n'))
        i++;
    if (i < len && text[i] == '{')
        rc = json_stream(text, len, &docs, &ndocs, &lines, err);
    else
        rc = aiq_yaml_to_json_lines(text, len, &docs, &ndocs, &lines, err);
    if (rc) return rc;
    for (int d = 0; d < ndocs && rc == AIQ_OK; d++) {
        if (is_v1_list(docs[d])) {
            json_object *items = field(docs[d], "items");
            size_t k = json_object_array_length(items);
            for (size_t j = 0; j < k && rc == AIQ_OK; j++)
                rc = push_manifest(json_object_array_get_idx(items, j), lines[d], out,
                                   n, &cap, err);
        } else {
            rc = push_manifest(docs[d], lines[d], out, n, &cap, err);
        }
    }
    aiq_json_docs_free(docs, ndocs);
    free(lines);
    if (rc) {
        aiq_manifests_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

aiq_rc aiq_manifest_parse_file(const char *path, struct aiq_manifest **out, int *n,
                               aiq_err *err) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    aiq_rc rc = AIQ_OK;
    *out = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return aiq_err_set(err, AIQ_EIO, "%s: %s", path, strerror(errno));
    for (;;) {
        if (len == cap) {
            /* Grow 64 KiB, 128 KiB, ... up to one byte past the cap. */
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > (size_t)AIQ_MAX_FILE + 1) ncap = (size_t)AIQ_MAX_FILE + 1;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = no_mem(err);
                goto out_free;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = aiq_err_set(err, AIQ_EIO, "%s: %s", path, strerror(errno));
            goto out_free;
        }
        if (r == 0) break;
        len += (size_t)r;
        if (len > AIQ_MAX_FILE) {
            rc = aiq_err_set(err, AIQ_ETOOBIG, "%s: larger than %d bytes", path,
                             AIQ_MAX_FILE);
            goto out_free;
        }
    }
    rc = aiq_manifest_parse_text(buf ? buf : "", len, out, n, err);
out_free:
    free(buf);
    close(fd);
    return rc;
}

void aiq_manifests_free(struct aiq_manifest *m, int n) {
    if (!m) return;
    for (int i = 0; i < n; i++) {
        switch (m[i].kind) {
        case AIQ_KIND_AIJOB: aiq_aijob_deinit(&m[i].u.job); break;
        case AIQ_KIND_QUEUEPOLICY: aiq_policy_deinit(&m[i].u.policy); break;
        case AIQ_KIND_GROUP: aiq_group_deinit(&m[i].u.group); break;
        case AIQ_KIND_USERQUOTA: aiq_userquota_deinit(&m[i].u.userquota); break;
        default: break;
        }
    }
    free(m);
}
