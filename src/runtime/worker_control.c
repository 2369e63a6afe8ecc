/*-------------------------------------------------------------------------
 *
 * worker_control.c
 *	  The SQL functions that start a job's background workers, stop them,
 *	  and tell whether they run: start_job and the helpers of stop_job,
 *	  cancel_job, drop_job and reschedule.  The registry they act on is
 *	  registry.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/job_run_rows.h"
#include "lib/lib.h"
#include "runtime/driver.h"
#include "runtime/registry_internal.h"

PG_FUNCTION_INFO_V1(backfill_start_job);
PG_FUNCTION_INFO_V1(backfill_stop_job_workers);
PG_FUNCTION_INFO_V1(backfill_stop_and_lock_job);
PG_FUNCTION_INFO_V1(backfill_job_is_running);
PG_FUNCTION_INFO_V1(backfill_check_workers_1_3);

/*
 * backfill_start_workers
 *		Run job_id in background workers, one per actor; return at once.
 *
 * A finished job has nothing to start, unless it follows its upstream in a
 * worker (job->follows): then one worker does, until stop_job.  Holds the
 * job lock until the caller commits, so the workers, which wait for it,
 * start from what the caller's transaction committed.
 */
void
backfill_start_workers(int64 job_id)
{
	BackfillJob *job;

	SPI_connect();
	job = backfill_load_job_to_run(job_id, CurrentMemoryContext);
	/* the slots of cdc jobs a crash kept from dropping theirs, any job's */
	backfill_drop_leftover_slots();
	/* a job that follows its upstream without a trigger needs a worker */
	if (job->status == BACKFILL_STATUS_FINISHED && !job->follows)
	{
		ereport(NOTICE,
				(errmsg("backfill job %lld has already finished", (long long) job_id),
				 errdetail("Its downstream table follows the upstream without workers.")));
		SPI_finish();
		return;
	}
	/* not run by a session now; held until commit */
	backfill_lock_job(job_id, false);
	/* the launcher relaunches it after a crash, even one right after this */
	backfill_set_background(job_id);
	backfill_launch_job(job);
	SPI_finish();
}

/* backfill.start_job(job_id bigint) RETURNS void */
Datum
backfill_start_job(PG_FUNCTION_ARGS)
{
	backfill_require_preloaded("backfill.start_job()");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	backfill_start_workers(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}

/*
 * backfill._stop_workers(job_id bigint, immediate boolean) RETURNS boolean
 */
Datum
backfill_stop_job_workers(PG_FUNCTION_ARGS)
{
	(void) backfill_require_job_owner(PG_GETARG_INT64(0));
	PG_RETURN_BOOL(backfill_stop_workers(PG_GETARG_INT64(0), PG_GETARG_BOOL(1)));
}

/*
 * backfill._stop_and_lock_job(job_id bigint) RETURNS boolean
 *		For cancel_job, drop_job and reschedule: stop the job's background
 *		workers at once, then take the job lock for this transaction; fail if
 *		a session runs the job.  Returns whether workers were running.
 */
Datum
backfill_stop_and_lock_job(PG_FUNCTION_ARGS)
{
	int64		job_id = PG_GETARG_INT64(0);

	(void) backfill_require_job_owner(job_id);
	PG_RETURN_BOOL(backfill_stop_and_lock(job_id));
}

/*
 * backfill_stop_and_lock
 *		Stop the job's background workers at once, then take the job lock
 *		for this transaction; fail if a session runs the job.  Returns
 *		whether workers were running.  The caller has checked that the
 *		current user has the privileges of the job's owner.
 */
bool
backfill_stop_and_lock(int64 job_id)
{
	bool		stopped = backfill_stop_workers(job_id, true);

	/* the stopped workers let go of the lock as they exit */
	if (stopped)
		backfill_wait_job_lock(job_id);
	else
		backfill_lock_job(job_id, false);
	return stopped;
}

/*
 * backfill._job_is_running(job_id bigint) RETURNS boolean
 *		Whether workers or a session run the job now.
 */
Datum
backfill_job_is_running(PG_FUNCTION_ARGS)
{
	int64		job_id = PG_GETARG_INT64(0);
	bool		running;

	/*
	 * for the jobs the caller sees: its own, and every one for a member of
	 * pg_read_all_stats (monitoring.c), which backfill.jobs shows
	 */
	if (!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS) ||
		!OidIsValid(backfill_job_owner(job_id)))
		(void) backfill_require_job_owner(job_id);
	running = backfill_job_runs_in_background(job_id);

	PG_RETURN_BOOL(running || backfill_job_lock_held(job_id));
}

/*
 * backfill_check_workers
 *		For reschedule, before it stops the workers of job_id, which the
 *		caller owns: refuse, as a launch would, a parallelism whose workers
 *		the caps do not allow, so that a refused reschedule leaves the job
 *		running as it was.  Nothing to check when the job does not run in
 *		the background.
 */
void
backfill_check_workers(int64 job_id, int parallelism)
{
	BackfillJob job;
	bool		capped;
	bool		isnull;
	Datum		status;
	int			nworkers;

	memset(&job, 0, sizeof(job));
	job.job_id = job_id;
	job.owner = backfill_require_job_owner(job_id);
	if (!backfill_registry_attached())
		return;
	status = backfill_job_column(job_id, "status", &isnull);
	/* a finished job runs one worker, which follows its upstream */
	nworkers = (!isnull && backfill_parse_status(TextDatumGetCString(status)) == BACKFILL_STATUS_FINISHED) ? 1 : parallelism;
	capped = !superuser_arg(job.owner);

	backfill_check_worker_caps(&job, nworkers, capped);
}

/*
 * backfill._check_workers(job_id bigint, parallelism integer) RETURNS void,
 * in a 1.3 catalog
 */
Datum
backfill_check_workers_1_3(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_VOID();
	backfill_check_workers(PG_GETARG_INT64(0), PG_GETARG_INT32(1));
	PG_RETURN_VOID();
}
