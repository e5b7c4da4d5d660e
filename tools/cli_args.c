/* cli_args.c -- `kubectl aiq`'s flags and help text (see cli_args.h). */
#include "tools/cli_args.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "tools/cli_out.h"

void cli_usage(FILE *out) {
    fputs("kubectl aiq -- the aiq queue from kubectl\n"
          "\n"
          "Commands:\n"
          "  queue [-A] [--level L] [--user U]   pending jobs, level by level, with position,\n"
          "                                      score, wait, ETA and why each one waits\n"
          "  explain JOB                         a job's score term by term, its level and why,\n"
          "                                      quota and budget headroom, what blocks it, ETA\n"
          "                                      and its recent journal entries\n"
          "  usage [--group G]                   per group and user: quota, in use, budget,\n"
          "                                      fair-share factor\n"
          "  policy test FILE                    compile a QueuePolicy locally and show how the\n"
          "                                      current queue would reorder under it\n"
          "  nodes                               every node's GPU facts as aiq reads them, the\n"
          "                                      GPUs aiq's and other pods hold, live GPU\n"
          "                                      utilisation (from the operator), and why a node\n"
          "                                      is left out\n"
          "  rerun JOB                           run a finished job (Succeeded, Failed, Rejected)\n"
          "                                      again as a new run; its history is kept\n"
          "\n"
          "Flags:\n"
          "  --kubeconfig PATH     kubeconfig file (default $KUBECONFIG, ~/.kube/config)\n"
          "  --context NAME        kubeconfig context\n"
          "  -n, --namespace NS    namespace (default: the context's, else default)\n"
          "  -A, --all-namespaces  every namespace\n"
          "  -o, --output FMT      json or yaml instead of a table\n"
          "  --operator-url URL    the operator's HTTP endpoint (e.g. http://127.0.0.1:8080, a\n"
          "                        port-forward; to another host the kubeconfig's credentials are\n"
          "                        sent, and the operator runs with --api-remote). Default: through\n"
          "                        the API server, the aggregated API query.aiq.dev (APIService\n"
          "                        v1alpha1.query.aiq.dev, docs/admin-guide.md)\n"
          "  --no-color            no colours even on a terminal (NO_COLOR does the same)\n",
          out);
}

/* Matches "--name value", "--name=value" and, for a short name, "-n value"
 * / "-nvalue". Returns 1 and sets *val (advancing *i) on a match, 0 for no
 * match, -1 when the value is missing. */
static int flag_value(int argc, char **argv, int *i, const char *lng,
                      const char *shrt, const char **val) {
    const char *a = argv[*i];
    size_t ln = strlen(lng);
    if (strncmp(a, lng, ln) == 0 && (a[ln] == '=' || a[ln] == '\0')) {
        if (a[ln] == '=') {
            *val = a + ln + 1;
            return 1;
        }
    } else if (shrt && strncmp(a, shrt, 2) == 0) {
        if (a[2]) {
            *val = a + 2;
            return 1;
        }
    } else {
        return 0;
    }
    if (*i + 1 >= argc)
        return -1;
    *val = argv[++*i];
    return 1;
}

/* Parses argv into *o. Returns 0, or 1 after printing what is wrong. */
int cli_parse_flags(int argc, char **argv, struct cli_opts *o) {
    static const struct {
        const char *lng, *shrt;
        size_t off;
    } vf[] = {
        {"--kubeconfig", NULL, offsetof(struct cli_opts, kubeconfig)},
        {"--context", NULL, offsetof(struct cli_opts, context)},
        {"--namespace", "-n", offsetof(struct cli_opts, ns)},
        {"--operator-url", NULL, offsetof(struct cli_opts, operator_url)},
        {"--level", NULL, offsetof(struct cli_opts, level)},
        {"--user", NULL, offsetof(struct cli_opts, user)},
        {"--group", NULL, offsetof(struct cli_opts, group)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int m = 0;
        if (strcmp(a, "-A") == 0 || strcmp(a, "--all-namespaces") == 0) {
            o->all_ns = true;
            continue;
        }
        if (strcmp(a, "--no-color") == 0) {
            o->color = false;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "help") == 0) {
            cli_usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "version") == 0) {
            aiq_print_version("kubectl-aiq");
            exit(0);
        }
        if ((m = flag_value(argc, argv, &i, "--output", "-o", &v)) != 0) {
            if (m < 0)
                return cli_fail("flag %s needs a value", a);
            if (strcmp(v, "json") == 0)
                o->out = CLI_OUT_JSON;
            else if (strcmp(v, "yaml") == 0)
                o->out = CLI_OUT_YAML;
            else if (strcmp(v, "table") == 0 || strcmp(v, "wide") == 0)
                o->out = CLI_OUT_TABLE;
            else
                return cli_fail("-o: expected json or yaml, got \"%s\"", v);
            continue;
        }
        for (size_t k = 0; k < sizeof vf / sizeof vf[0] && !m; k++) {
            m = flag_value(argc, argv, &i, vf[k].lng, vf[k].shrt, &v);
            if (m > 0)
                *(const char **)(void *)((char *)o + vf[k].off) = v;
        }
        if (m < 0)
            return cli_fail("flag %s needs a value", a);
        if (m > 0)
            continue;
        if (a[0] == '-' && a[1])
            return cli_fail("unknown flag %s (see kubectl aiq --help)", a);
        if (o->nargs >= (int)(sizeof o->args / sizeof o->args[0]))
            return cli_fail("unexpected argument \"%s\"", a);
        o->args[o->nargs++] = a;
    }
    return 0;
}
