/* fuzz_jpatch.c -- libFuzzer target for the local API server's patch
 * formats (jpatch.c, jpatch_smp.c) and CRD schema validation (schema.c,
 * with CEL rules from cel.c).
 * Byte 0 picks merge patch, JSON patch, strategic merge patch or
 * validation; the rest is the JSON body. Checks: the target is never
 * modified, a result and an error never come together, and a schema
 * cause count matches the causes appended.
 *
 * The Makefile links only common/, policy/, queue/ and operator/ objects
 * into fuzz targets, so these sources are compiled in here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test/apiserver/cel.c"
#include "test/apiserver/humantime.c"
#include "test/apiserver/jpatch.c"
#include "test/apiserver/jpatch_smp.c"
#include "test/apiserver/schema.c"

static json_object *fz_target, *fz_schema;
static char *fz_before;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 65536) return 0;
    if (!fz_target) {
        fz_target = json_tokener_parse(
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"finalizers\":[\"a\"],"
            "\"labels\":{\"x\":\"y\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\","
            "\"env\":[{\"name\":\"E\",\"value\":\"1\"}],\"ports\":[{\"containerPort\":80}]}],"
            "\"schedulingGates\":[{\"name\":\"g\"}],\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]},"
            "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\"}]}}");
        fz_schema = json_tokener_parse(
            "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"required\":[\"a\"],"
            "\"x-kubernetes-validations\":[{\"rule\":\"!has(self.l) || self.l.all(x, has(x.k)) || "
            "self.l.filter(x, !has(x.k)).size() < size(self.l) && self.a > 1 ? true : self.e == 'x'\"}],"
            "\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":1,\"default\":2},"
            "\"s\":{\"type\":\"string\",\"pattern\":\"^[a-z]+\\\\d*$\",\"maxLength\":8,\"format\":\"date-time\"},"
            "\"e\":{\"type\":\"string\",\"enum\":[\"x\",\"y\"]},\"n\":{\"nullable\":true,\"type\":\"number\"},"
            "\"l\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"type\":\"object\",\"properties\":"
            "{\"k\":{\"x-kubernetes-int-or-string\":true}}}},\"m\":{\"type\":\"object\","
            "\"additionalProperties\":{\"type\":\"boolean\"}},\"p\":{\"type\":\"object\","
            "\"x-kubernetes-preserve-unknown-fields\":true}}}}}");
        fz_before = strdup(json_object_to_json_string(fz_target));
    }
    json_tokener *tok = json_tokener_new_ex(JP_MAX_DEPTH);
    if (!tok) return 0;
    json_object *body = json_tokener_parse_ex(tok, (const char *)data + 1, (int)(size - 1));
    json_tokener_free(tok);
    if (!body) return 0;
    aiq_err e;
    aiq_err_clear(&e);
    json_object *out = NULL;
    switch (data[0] % 4) {
    case 0: out = jp_merge_patch(fz_target, body, &e); break;
    case 1: out = jp_json_patch(fz_target, body, &e); break;
    case 2: out = jp_strategic_merge(fz_target, body, &e); break;
    default: {
        json_object *causes = json_object_new_array();
        int n = sv_validate(fz_schema, body, data[0] & 4, causes);
        if ((size_t)n != json_object_array_length(causes)) abort();
        char msg[256];
        (void)sv_status_message("K", "g", "n", causes, msg, sizeof msg);
        json_object_put(causes);
        break;
    }
    }
    if (out && e.code != AIQ_OK) abort();
    if (strcmp(fz_before, json_object_to_json_string(fz_target)) != 0) abort();
    json_object_put(out);
    json_object_put(body);
    return 0;
}
