/* jpatch_int.h -- helpers shared by jpatch.c and jpatch_smp.c. */
#ifndef AIQ_JPATCH_INT_H
#define AIQ_JPATCH_INT_H

#include <json-c/json.h>

/* Returns a deep copy of o (NULL when o is NULL or memory runs out). */
json_object *jp__copy(json_object *o);

/* Inserts val (takes ownership) at idx (0..len) of array arr; returns 0 or
 * -1 (val freed). */
int jp__array_insert(json_object *arr, size_t idx, json_object *val);

#endif
