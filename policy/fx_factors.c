/* fx_factors.c -- names, units and docs of the expression language's
 * factors, from the X-macro lists in fx_factors.def (job factors) and
 * fx_place_factors.def (placement factors). */
#include <string.h>

#include "policy/fx.h"

static const struct {
    const char *name, *unit, *doc;
    int moves;
} fx_factor_tab[FX_NFACTORS] = {
#define FX_FACTOR(id, name, unit, moves, doc) [FX_F_##id] = {name, unit, doc, moves},
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

/* 1 when factor i can change between cycles while the job, its levels and
 * the clock do not (fx_factors.def's moves column); 0 otherwise and when
 * out of range. */
int fx_factor_moves(int i) {
    return i >= 0 && i < FX_NFACTORS ? fx_factor_tab[i].moves : 0;
}

static const struct {
    const char *name, *unit, *doc;
} fx_pfactor_tab[FX_NPFACTORS] = {
#define FX_PFACTOR(id, name, unit, doc) [FX_PF_##id] = {name, unit, doc},
#include "policy/fx_place_factors.def"
#undef FX_PFACTOR
};

/* Returns the FX_PF_ index of name, or -1 (also for NULL). */
int fx_pfactor_index(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < FX_NPFACTORS; i++)
        if (strcmp(fx_pfactor_tab[i].name, name) == 0) return i;
    return -1;
}

/* Static name of placement factor i, NULL when out of range. */
const char *fx_pfactor_name(int i) {
    return i >= 0 && i < FX_NPFACTORS ? fx_pfactor_tab[i].name : NULL;
}

/* Static unit of placement factor i, NULL when out of range. */
const char *fx_pfactor_unit(int i) {
    return i >= 0 && i < FX_NPFACTORS ? fx_pfactor_tab[i].unit : NULL;
}

/* Static description of placement factor i, NULL when out of range. */
const char *fx_pfactor_doc(int i) {
    return i >= 0 && i < FX_NPFACTORS ? fx_pfactor_tab[i].doc : NULL;
}
