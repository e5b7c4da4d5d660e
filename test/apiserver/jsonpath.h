/* jsonpath.h -- the subset of Kubernetes JSONPath used by CRD
 * additionalPrinterColumns and field lookups:
 *   .status.phase   .metadata.labels.foo   .metadata.annotations['a/b']
 *   .status.conditions[0].type   .items[-1]
 *   .status.conditions[?(@.type=="Ready")].status   (also !=, numbers)
 * An optional surrounding {...} is accepted. A filter selects the first
 * matching element (printer columns show the first result). */
#ifndef AIQ_JSONPATH_H
#define AIQ_JSONPATH_H

#include <json-c/json.h>

/* Longest path accepted; longer paths give NULL. */
#define JPATH_MAX 1024

/* Returns the value at path inside obj as a borrowed reference (valid while
 * obj lives), or NULL when the path is malformed or a step is missing. A
 * JSON null value also yields NULL. */
json_object *jpath_get(json_object *obj, const char *path);

/* Returns 1 when path is well-formed for jpath_get, else 0. */
int jpath_valid(const char *path);

#endif
