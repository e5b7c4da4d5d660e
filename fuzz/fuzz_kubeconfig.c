/* fuzz_kubeconfig.c -- libFuzzer target for the kubeconfig reader: YAML
 * text -> struct kube_config, with and without a context override, plus
 * the base64 decoder on the raw input. No file I/O happens in
 * kube_config_parse, so relative paths are only joined, never opened. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "operator/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    struct kube_config *c = NULL;
    aiq_err e;

    aiq_err_clear(&e);
    aiq_rc rc = kube_config_parse(text, size, "/kube", NULL, &c, &e);
    if (rc == AIQ_OK) {
        if (!c || !c->server) abort(); /* success always has a server */
    } else if (c || e.code == AIQ_OK) {
        abort(); /* an error leaves no config and says what */
    }
    kube_config_free(c);
    c = NULL;
    aiq_err_clear(&e);
    if (kube_config_parse(text, size, NULL, "dev", &c, &e) == AIQ_OK && !c) abort();
    kube_config_free(c);

    struct kube_blob b;
    aiq_err_clear(&e);
    if (kube_base64_decode(text, size, &b, &e) == AIQ_OK) {
        if (b.len > size) abort();
        free(b.data);
    }
    return 0;
}
