/* version.c -- see version.h. AIQ_GIT comes from the Makefile, for this
 * file only, so a new commit recompiles nothing else. */
#include "common/version.h"

#include <stdio.h>

#ifndef AIQ_GIT
#define AIQ_GIT "unknown"
#endif

const char *aiq_git(void) {
    return AIQ_GIT;
}

void aiq_print_version(const char *program) {
    printf("%s %s (git %s)\n", program, AIQ_RELEASE, AIQ_GIT);
}
