/* fuzz_manifest.c -- libFuzzer target for the manifest parsers: the input
 * as manifest text (YAML, or a JSON stream when it starts with '{'), and
 * as one JSON object fed to each kind's decoder. Checks the promise that a
 * failed decode leaves the struct zeroed. Seeds: fuzz/corpus/manifest/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "operator/manifest.h"

static void must_be_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) abort(); /* half-filled struct after an error */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    struct aiq_manifest *m = NULL;
    int n = 0;
    aiq_err err;

    aiq_err_clear(&err);
    if (aiq_manifest_parse_text((const char *)data, size, &m, &n, &err) == AIQ_OK) {
        for (int i = 0; i < n; i++)
            if (m[i].rc != AIQ_OK) must_be_zero(&m[i].u, sizeof m[i].u);
        aiq_manifests_free(m, n);
    } else if (m || n || !err.message[0]) {
        abort(); /* an error must leave no output and say something */
    }

    json_tokener *tok = json_tokener_new_ex(AIQ_MAX_DEPTH);
    if (!tok) return 0;
    json_object *o = json_tokener_parse_ex(tok, (const char *)data,
                                           size > INT32_MAX ? INT32_MAX : (int)size);
    json_tokener_free(tok);
    if (!o) return 0;
    (void)aiq_manifest_kind(o);
    struct aiq_aijob j;
    struct aiq_policy p;
    struct aiq_group g;
    struct aiq_userquota u;
    if (aiq_aijob_from_json(o, &j, NULL) != AIQ_OK) must_be_zero(&j, sizeof j);
    aiq_aijob_deinit(&j);
    if (aiq_policy_from_json(o, &p, NULL) != AIQ_OK) must_be_zero(&p, sizeof p);
    aiq_policy_deinit(&p);
    if (aiq_group_from_json(o, &g, NULL) != AIQ_OK) must_be_zero(&g, sizeof g);
    aiq_group_deinit(&g);
    if (aiq_userquota_from_json(o, &u, NULL) != AIQ_OK) must_be_zero(&u, sizeof u);
    aiq_userquota_deinit(&u);
    json_object_put(o);
    return 0;
}
