/*-------------------------------------------------------------------------
 *
 * executor.h
 *	  One barrier of a run: the executor the driver creates, runs and frees
 *	  (executor.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_RUNTIME_EXECUTOR_H
#define BACKFILL_RUNTIME_EXECUTOR_H

#include "barrier.h"

/* executor.c */
extern BarrierExecutor *backfill_executor_create(BackfillJob *job);
extern BarrierExecutor *backfill_executor_refresh(BarrierExecutor *exec);
extern void backfill_executor_free(BarrierExecutor *exec);
extern int64 backfill_run_barrier(BarrierExecutor *exec, int actor, int interval_ms,
								  int rate_limit);
extern bool backfill_run_finish_barrier(BarrierExecutor *exec);
extern bool backfill_run_fetch(BarrierExecutor *exec);
extern bool backfill_actor_finished(BackfillJob *job, int actor);
extern bool backfill_all_finished(BackfillJob *job);

#endif							/* BACKFILL_RUNTIME_EXECUTOR_H */
