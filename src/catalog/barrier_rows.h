/*-------------------------------------------------------------------------
 *
 * barrier_rows.h
 *	  What a barrier records in backfill.actor and backfill.job: plans kept
 *	  for a run's executor, and the statements that run them
 *	  (barrier_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_BARRIER_ROWS_H
#define BACKFILL_CATALOG_BARRIER_ROWS_H

#include "executor/spi.h"

#include "backfill.h"

extern SPIPlanPtr backfill_prepare_record_actor(KeptPlans *plans);
extern void backfill_run_record_actor(SPIPlanPtr plan, int32 actor_id, int64 epoch, int64 rows);
extern SPIPlanPtr backfill_prepare_record_pace(KeptPlans *plans);
extern void backfill_run_record_pace(SPIPlanPtr plan, int32 actor_id, const char *throttled_by,
									 double rows_per_second);
extern SPIPlanPtr backfill_prepare_record_log_store(KeptPlans *plans);
extern void backfill_run_record_log_store(SPIPlanPtr plan, int32 actor_id, int64 epoch,
										  int64 lag_ms, bool caught_up);
extern SPIPlanPtr backfill_prepare_finish_job(KeptPlans *plans);
extern void backfill_run_finish_job(SPIPlanPtr plan, int64 job_id, int64 epoch);
extern bool backfill_job_has_finished(int64 job_id);

#endif							/* BACKFILL_CATALOG_BARRIER_ROWS_H */
