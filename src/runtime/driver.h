/*-------------------------------------------------------------------------
 *
 * driver.h
 *	  The barrier loop of a run (driver.c), the worker registry (registry.c)
 *	  and the live actors (live_actors.c), the guard of DROP / ALTER
 *	  EXTENSION (extension_ddl.c), the lines of progress sent to the client
 *	  (progress.c), starting and stopping a job's workers (worker_control.c)
 *	  and the workers (worker.c).
 *	  _PG_init calls each file's init.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_DRIVER_H
#define BACKFILL_DRIVER_H

#include "backfill.h"

/* driver.c */
extern int	backfill_barrier_interval_ms;
extern void backfill_driver_init(void);
extern bool backfill_prepare_run(BackfillJob *job, bool background);
extern void backfill_drive(BackfillJob *job, int actor, int max_barriers);
extern bool backfill_following;
extern void backfill_follow(BackfillJob *job, int32 actor_id);

/* registry.c: the registry of background workers */
extern bool backfill_preloaded;
extern void backfill_shmem_init(void);
extern void backfill_worker_caps_init(void);
extern void backfill_launch_job(BackfillJob *job);
extern bool backfill_stop_workers(int64 job_id, bool immediate);
extern bool backfill_stop_requested(int64 job_id);
extern TimestampTz backfill_run_pace_clock(int64 job_id, TimestampTz from, int64 usecs);
extern bool backfill_claim_prepare(int64 job_id);
extern void backfill_finish_prepare(int64 job_id, bool ok);
extern void backfill_unclaim_prepare(int64 job_id);
extern bool backfill_wait_prepared(int64 job_id);
extern void backfill_attach_worker(int64 job_id, int32 actor_id);
extern void backfill_worker_locked_job(void);
extern void backfill_worker_exit_expected(void);
extern int64 backfill_take_lost_worker(int32 *actor_id, int *exit_code);
extern int	backfill_lost_worker_databases(Oid *dboids, int max);

/* live_actors.c: the live actors that backfill.progress shows */
#define BACKFILL_PHASE_LEN 24
#define BACKFILL_THROTTLED_LEN 96
#define BACKFILL_POSITION_LEN 128

typedef struct BackfillLiveReport
{
	const char *phase;
	bool		barrier;		/* after a barrier: the fields below are set */
	int64		rows;			/* the actor's snapshot rows */
	int64		epoch;
	double		rows_per_second;	/* -1: unknown */
	const char *throttled_by;	/* NULL: nothing */
	const char *position;		/* NULL: none */
} BackfillLiveReport;

extern void backfill_live_begin(BackfillJob *job, int actor, const char *phase);
extern void backfill_live_report(int64 job_id, int32 actor_id, const BackfillLiveReport *report);
extern void backfill_live_end(void);

/* extension_ddl.c: the guard of DROP / ALTER EXTENSION, installed with the registry */
extern void backfill_extension_ddl_init(void);

/* progress.c: the lines of progress sent to the client */
extern void backfill_progress_init(void);
extern bool backfill_progress_due(TimestampTz since);
extern TimestampTz backfill_report_progress_since(int64 job_id, TimestampTz since);
extern void backfill_progress_run_begin(int64 job_id, int32 actor_id, int log_interval_ms);
extern void backfill_progress_run_end(int64 job_id, const char *how);
extern int	backfill_log_progress_interval_ms(void);
extern void backfill_progress_send(int64 job_id, const char *progress, double rows_per_second,
								   double eta_seconds, const char *throttled_by);

/* worker_control.c: starting and stopping a job's workers */
extern void backfill_start_workers(int64 job_id);
extern bool backfill_stop_and_lock(int64 job_id);
extern void backfill_check_workers(int64 job_id, int parallelism);

/* worker.c */
extern void backfill_worker_init(void);

#endif							/* BACKFILL_DRIVER_H */
