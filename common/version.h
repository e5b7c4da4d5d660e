/* version.h -- the release and build every binary reports (--version) and
 * the operator exports (aiq_build_info). */
#ifndef AIQ_COMMON_VERSION_H
#define AIQ_COMMON_VERSION_H

#define AIQ_RELEASE "0.2.0"

/* The git commit the binary was built from ("git describe --always
 * --dirty" at build time; "unknown" outside a checkout). */
const char *aiq_git(void);

/* Prints "PROGRAM RELEASE (git COMMIT)" on stdout; for --version. */
void aiq_print_version(const char *program);

#endif
