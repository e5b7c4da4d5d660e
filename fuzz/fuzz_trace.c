/* fuzz_trace.c -- libFuzzer target for the simulator's readers: the first
 * byte picks our CSV, Tiresias, Alibaba nodes, Alibaba pods or a journal
 * in JSON lines; the rest is the file. Aborts when a reader fails without
 * a message, a parse error has no line, or a successful read yields a job
 * outside the ranges the readers promise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulator/sim.h"

#define FUZZ_MAX_INPUT (64 * 1024)

static void check(int ok) {
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > FUZZ_MAX_INPUT)
        return 0;
    int which = data[0] % 5;
    FILE *f = fmemopen((void *)(data + 1), size - 1 ? size - 1 : 1, "r");
    if (!f)
        return 0;
    if (size == 1) { /* fmemopen needs a size: read nothing */
        fclose(f);
        f = fopen("/dev/null", "r");
        if (!f)
            return 0;
    }
    aiq_err e;
    aiq_err_clear(&e);
    if (which == 4) {
        struct sim_journal j;
        aiq_rc rc = sim_journal_read_jsonl(f, "fuzz", &j, &e);
        if (rc == AIQ_OK) {
            for (int k = 0; k < j.ndec; k++)
                check(j.dec[k].job >= 0 && j.dec[k].job < j.trace->njobs);
            sim_journal_deinit(&j);
        } else {
            check(e.message[0] != '\0');
        }
        fclose(f);
        return 0;
    }
    struct sim_trace *tr = sim_trace_create();
    if (!tr) {
        fclose(f);
        return 0;
    }
    aiq_rc rc;
    switch (which) {
    case 0: rc = sim_read_csv(f, "fuzz", tr, &e); break;
    case 1: rc = sim_read_tiresias(f, "fuzz", tr, &e); break;
    case 2: rc = sim_read_alibaba_nodes(f, "fuzz", tr, &e); break;
    default: rc = sim_read_alibaba_pods(f, "fuzz", tr, &e); break;
    }
    if (rc != AIQ_OK) {
        check(e.message[0] != '\0');
        if (rc == AIQ_EPARSE && which == 0) check(e.line >= 1);
    }
    for (int i = 0; i < tr->njobs; i++) {
        const struct sim_job *j = &tr->jobs[i];
        check(j->id && j->user && j->group);
        check(j->replicas >= 1 && j->replicas <= 1024);
        check(j->gpus >= 0 && j->gpus <= 16);
        check(j->duration_s >= 0 && j->submit >= 0);
    }
    /* CPU-only nodes (0 GPUs) are kept: CPU-only tasks run there. */
    for (int i = 0; i < tr->nnodes; i++)
        check(tr->nodes[i].gpus >= 0 && tr->nodes[i].gpus <= 16);
    sim_trace_free(tr);
    fclose(f);
    return 0;
}
