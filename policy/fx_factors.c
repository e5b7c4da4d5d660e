/* fx_factors.c -- names, units and docs of the expression language's
 * factors, from the X-macro list in fx_factors.def. */
#include <string.h>

#include "policy/fx.h"

static const struct {
    const char *name, *unit, *doc;
} fx_factor_tab[FX_NFACTORS] = {
#define FX_FACTOR(id, name, unit, doc) [FX_F_##id] = {name, unit, doc},
#include "policy/fx_factors.def"
#undef FX_FACTOR
};

/* Returns the FX_F_ index of name, or -1 (also for NULL). */
int fx_factor_index(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < FX_NFACTORS; i++)
        if (strcmp(fx_factor_tab[i].name, name) == 0) return i;
    return -1;
}

/* Static name of factor i ("wait.hours"), NULL when out of range. */
const char *fx_factor_name(int i) {
    return i >= 0 && i < FX_NFACTORS ? fx_factor_tab[i].name : NULL;
}

/* Static unit of factor i ("hours"), NULL when out of range. */
const char *fx_factor_unit(int i) {
    return i >= 0 && i < FX_NFACTORS ? fx_factor_tab[i].unit : NULL;
}

/* Static one-line description of factor i, NULL when out of range. */
const char *fx_factor_doc(int i) {
    return i >= 0 && i < FX_NFACTORS ? fx_factor_tab[i].doc : NULL;
}
