/*-------------------------------------------------------------------------
 *
 * job_run_rows.h
 *	  The job rows as the runtime and the kinds read and write them
 *	  (job_run_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_JOB_RUN_ROWS_H
#define BACKFILL_CATALOG_JOB_RUN_ROWS_H

#include "backfill.h"

extern void backfill_set_background(int64 job_id);
extern Oid *backfill_live_job_upstreams(uint64 *n);
extern void backfill_recount_actor_rows(int64 job_id, const char *rows_sql);
extern int	backfill_jobs_reading(Datum upstreams, int64 **job_ids, Oid **downstreams);
extern int64 backfill_job_filling(Oid downstream);
extern void backfill_job_progress_text(int64 job_id, bool with_eta, char **progress, char **eta);
extern char *backfill_job_summary_text(int64 job_id);
extern bool backfill_job_rows_left(int64 job_id, char **progress, double *left);
extern int64 *backfill_jobs_to_relaunch(int *njobs, MemoryContext cxt);
extern bool backfill_record_lost_worker(int64 job_id, int32 actor_id, int exit_code);
extern int64 backfill_job_snapshot_epoch(int64 job_id);
extern void backfill_set_snapshot_epoch(int64 job_id, int64 epoch);
extern void backfill_actors_caught_up(BackfillJob *job, bool *caught_up);

#endif							/* BACKFILL_CATALOG_JOB_RUN_ROWS_H */
