/* fuzz_selector.c -- libFuzzer target for the local API server's small
 * languages: label and field selectors (selector.c), printer-column
 * JSONPath (jsonpath.c) and CEL validation rules (cel.c). Byte 0 picks
 * the parser; the rest is the text.
 * Checks: a parsed selector matches without crashing and an empty one
 * matches everything; a failed parse leaves a message; jpath_get finds
 * nothing in a path jpath_valid rejects; a CEL rule yields one of the
 * four results and an explanation for the two failures.
 *
 * The Makefile links only common/, policy/, queue/ and operator/ objects
 * into fuzz targets, so the two small sources are compiled in here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test/apiserver/cel.c"
#include "test/apiserver/jpatch.c"
#include "test/apiserver/jsonpath.c"
#include "test/apiserver/selector.c"

static json_object *fz_obj;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 8192) return 0;
    if (!fz_obj)
        fz_obj = json_tokener_parse(
            "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"labels\":{\"a\":\"1\",\"b.c/d\":\"x\"},"
            "\"annotations\":{\"k/v\":\"w\"}},\"spec\":{\"nodeName\":\"n\",\"l\":[1,{\"t\":\"R\"}]},"
            "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    aiq_err e;
    aiq_err_clear(&e);
    switch (data[0] % 4) {
    case 0:
    case 1: {
        struct sel *s = data[0] % 4 ? sel_parse_fields(text, &e) : sel_parse_labels(text, &e);
        if (s) {
            bool m = sel_match(s, fz_obj);
            if (sel_empty(s) && !m) abort();
            (void)sel_required_value(s, "metadata.name");
            sel_free(s);
        } else if (e.message[0] == '\0') {
            abort(); /* every failure explains itself */
        }
        break;
    }
    case 2: {
        json_object *v = jpath_get(fz_obj, text);
        if (v && !jpath_valid(text)) abort();
        break;
    }
    default: {
        char msg[128];
        enum cel_result r = cel_eval_bool(text, fz_obj, msg, sizeof msg);
        if (r < CEL_UNSUPPORTED || r > CEL_TRUE) abort();
        if ((r == CEL_ERROR || r == CEL_UNSUPPORTED) && msg[0] == '\0') abort();
        break;
    }
    }
    free(text);
    return 0;
}
