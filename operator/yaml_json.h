/* yaml_json.h -- YAML text (multi-document) to json-c objects, the way
 * kubectl turns a manifest into JSON (sigs.k8s.io/yaml, i.e. YAML 1.1 as
 * go-yaml v2 resolves it):
 *   - quoted, literal and folded scalars, and plain scalars tagged !!str or
 *     "!", are strings;
 *   - plain null, Null, NULL, ~ and the empty value are null;
 *   - plain y/Y/yes/Yes/YES/true/True/TRUE/on/On/ON are true, and
 *     n/N/no/No/NO/false/False/FALSE/off/Off/OFF are false (YAML 1.1,
 *     as kubectl does: quote such words when you mean a string);
 *   - plain integers: decimal, 0x hex, 0o or leading-0 octal, 0b binary,
 *     with '_' separators ignored; too large for int64 -> uint64 -> float;
 *   - plain floats ([-+]?(.d+|d+(.d*)?)([eE][-+]?d+)?) are doubles;
 *     .inf and .nan are errors (JSON cannot carry them);
 *   - everything else is a string (timestamps stay as written).
 * Mapping keys must be scalars; duplicate keys and merge keys (<<) are
 * errors. Anchors and aliases work, with the expansion counted so an alias
 * bomb (billion laughs) fails fast. Empty documents are skipped.
 *
 * Limits: text <= AIQ_MAX_FILE bytes, each document <= AIQ_MAX_MANIFEST
 * bytes, nesting <= AIQ_MAX_DEPTH, documents <= AIQ_MAX_DOCS, and the
 * expanded size of a document (nodes plus scalar bytes, aliases counted
 * each time they are used) <= AIQ_MAX_EXPANDED. */
#ifndef AIQ_YAML_JSON_H
#define AIQ_YAML_JSON_H

#include <stddef.h>

#include <json-c/json.h>

#include "common/aiq_err.h"
#include "common/model.h"

#define AIQ_MAX_FILE (16 << 20)          /* bytes in one manifest file */
#define AIQ_MAX_DOCS 4096                /* documents in one file */
#define AIQ_MAX_EXPANDED (4 * AIQ_MAX_MANIFEST) /* see above */

/* Converts YAML text (len bytes, need not be NUL-terminated) into one
 * json_object per non-empty document. On success *docs is a new array of
 * *ndocs owned references (free with aiq_json_docs_free) and, if lines is
 * non-NULL, *lines a new array (free()) of the 1-based line where each
 * document starts. On error returns AIQ_EPARSE (syntax, with err->line,
 * col and offset), AIQ_ETOOBIG (a limit) or AIQ_ENOMEM, and sets *docs to
 * NULL, *ndocs to 0 and *lines to NULL. */
aiq_rc aiq_yaml_to_json_lines(const char *text, size_t len,
                              json_object ***docs, int *ndocs, int **lines,
                              aiq_err *err);

/* aiq_yaml_to_json_lines without the line numbers. */
aiq_rc aiq_yaml_to_json(const char *text, size_t len, json_object ***docs,
                        int *ndocs, aiq_err *err);

/* Drops the n references in docs and frees the array; NULL is a no-op. */
void aiq_json_docs_free(json_object **docs, int n);

#endif
