/* sim_html.h -- aiq-sim's self-contained HTML report (sim_html.c): runs
 * and inflation curves are added one by one (each run's result can be
 * freed right after), then the report is written as one HTML file with
 * inline SVG charts (sim_svg.h): no script, no network.
 *
 * Charts (docs/simulator.md, "HTML report"): JCT CDF per policy, GPU
 * utilisation over time, jobs waiting over time, mean and p95 wait by
 * group and by user; for the inflation protocol the unallocated GPU %
 * against the GPU demand arrived, one curve per placement. */
#ifndef AIQ_SIM_HTML_H
#define AIQ_SIM_HTML_H

#include <stdio.h>

#include "common/aiq_err.h"
#include "simulator/sim.h"

/* Points kept per series: longer series are binned (utilisation: mean
 * per bin; jobs waiting: maximum per bin; JCT CDF: evenly spaced
 * quantiles), so a 20k-job report stays small. */
#define SIM_HTML_MAX_POINTS 400
/* Categories in a bar chart: the groups or users with the longest mean
 * wait under any policy (the report says how many are left out). */
#define SIM_HTML_MAX_BARS 30
#define SIM_HTML_MAX_RUNS 16

struct sim_html;

/* Creates an empty report titled title (copied; "" allowed). NULL on
 * ENOMEM. */
struct sim_html *sim_html_create(const char *title);

/* Frees h and everything it copied; NULL is a no-op. */
void sim_html_free(struct sim_html *h);

/* A line of context under the title (copied), e.g. the trace and cluster. */
aiq_rc sim_html_set_note(struct sim_html *h, const char *note, aiq_err *err);

/* Adds one policy's run: copies what the charts need from res (tr is
 * the run's trace, m its metrics for the summary table; all borrowed,
 * free them after). Every run of one report must use the same trace.
 * Returns AIQ_OK; AIQ_ETOOBIG past SIM_HTML_MAX_RUNS; AIQ_EINVAL when tr
 * and res disagree on the number of jobs; AIQ_ENOMEM. h is unchanged on
 * error. */
aiq_rc sim_html_add_run(struct sim_html *h, const char *policy, const struct sim_trace *tr,
                        const struct sim_result *res, const struct sim_metrics *m,
                        aiq_err *err);

/* Adds one placement's inflation curve: n points (arrived_pct[i],
 * unalloc_pct[i]), both percentages of the cluster's GPUs (NAN = the
 * step was not reached). AIQ_ETOOBIG past SIM_HTML_MAX_RUNS or
 * SIM_INFLATE_MAX_POINTS points; AIQ_ENOMEM. */
aiq_rc sim_html_add_inflate(struct sim_html *h, const char *placement, const double *arrived_pct,
                            const double *unalloc_pct, int n, aiq_err *err);

/* Writes the report. Sections without runs (or without curves) are left
 * out; a chart without data is a "no data" panel. Write errors are left
 * in out for the caller (ferror). */
void sim_html_write(FILE *out, const struct sim_html *h);

#endif
