/* cli_args.h -- `kubectl aiq`'s command line: the flags every command
 * shares, parsed into struct cli_opts, and the help text. */
#ifndef AIQ_TOOLS_CLI_ARGS_H
#define AIQ_TOOLS_CLI_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#include "operator/kube_http.h"
#include "operator/kubeconfig.h"

enum cli_out_fmt { CLI_OUT_TABLE = 0, CLI_OUT_JSON, CLI_OUT_YAML };

struct cli_opts {
    const char *kubeconfig, *context, *ns, *operator_url;
    const struct kube_config *kcfg; /* the loaded kubeconfig (credentials) */
    struct kube_client *kc;         /* the API server's client: its credentials are
                                       got once (an exec plugin runs once) */
    const char *level, *user, *group;
    bool all_ns, color;
    enum cli_out_fmt out;
    const char *args[4];
    int nargs;
};

/* Writes the help text to out. */
void cli_usage(FILE *out);

/* Parses argv into *o (zeroed by the caller; o->color preset): flags
 * anywhere, the rest into o->args. -h / --help / help print the help and
 * --version / version the version, and exit 0. Returns 0, or 1 after
 * printing what is wrong. The strings in *o are borrowed from argv. */
int cli_parse_flags(int argc, char **argv, struct cli_opts *o);

#endif
