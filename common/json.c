/* json.c -- typed member getters over json-c objects and the checked
 * adds of the builders; see json.h. */
#include "common/json.h"

#include <string.h>

#include "common/units.h"

static bool is_num(json_object *v) {
    return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

/* See json.h. */
json_object *aiq_jget(json_object *o, const char *k) {
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v))
        return NULL;
    return v;
}

/* See json.h. */
const char *aiq_jstr(json_object *o, const char *k) {
    json_object *v = aiq_jget(o, k);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* See json.h. */
double aiq_jnum(json_object *o, const char *k, double dflt) {
    json_object *v = aiq_jget(o, k);
    return is_num(v) ? json_object_get_double(v) : dflt;
}

/* See json.h. */
int64_t aiq_jint(json_object *o, const char *k, int64_t dflt) {
    json_object *v = aiq_jget(o, k);
    return is_num(v) ? json_object_get_int64(v) : dflt;
}

/* See json.h. */
int64_t aiq_jmib(json_object *o, const char *k, const char *legacy_k) {
    const char *q = aiq_jstr(o, k);
    int64_t mib = 0;
    aiq_err e;
    if (!q) {
        /* The legacy integer is held to what the quantity form reads, so
         * a status read, written as "gpuMemory" and read again agrees
         * (fuzz_status found 8e1920 and 4096111...1 read as INT64_MAX and
         * then back as 0). Out of range is unreadable: absent. */
        int64_t v = legacy_k ? aiq_jint(o, legacy_k, 0) : 0;
        return v >= 0 && v <= AIQ_QUANTITY_MIB_MAX ? v : 0;
    }
    aiq_err_clear(&e);
    if (aiq_quantity_mib(q, &mib, &e) != AIQ_OK)
        return 0; /* unreadable reads as absent, like every getter here */
    return mib;
}

/* See json.h. */
bool aiq_jtrue(json_object *o, const char *k) {
    json_object *v = aiq_jget(o, k);
    return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* See json.h. */
json_object *aiq_jpath(json_object *o, const char *dotted) {
    char seg[256];
    const char *p = dotted;
    while (o && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, p, n);
        seg[n] = '\0';
        o = aiq_jget(o, seg);
        p = dot ? dot + 1 : p + n;
    }
    return o;
}

/* See json.h. */
const char *aiq_jpath_str(json_object *o, const char *dotted) {
    json_object *v = aiq_jpath(o, dotted);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* Records a failed add: frees v and sets the sticky flag. Returns -1. */
static int jfail(json_object *v, bool *failed) {
    json_object_put(v);
    if (failed)
        *failed = true;
    return -1;
}

/* See json.h. */
int aiq_jset(json_object *o, const char *k, json_object *v, bool *failed) {
    if ((failed && *failed) || !o || !v || json_object_object_add(o, k, v) != 0)
        return jfail(v, failed);
    return 0;
}

/* See json.h. */
int aiq_jset_null(json_object *o, const char *k, bool *failed) {
    if ((failed && *failed) || !o || json_object_object_add(o, k, NULL) != 0)
        return jfail(NULL, failed);
    return 0;
}

/* See json.h. */
int aiq_jpush(json_object *arr, json_object *v, bool *failed) {
    if ((failed && *failed) || !arr || !v || json_object_array_add(arr, v) != 0)
        return jfail(v, failed);
    return 0;
}
