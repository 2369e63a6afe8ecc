/*-------------------------------------------------------------------------
 *
 * switchover.c
 *	  The switchover of a job that follows another server, for cutover()
 *	  and backfill._remote_switchover().
 *
 * The job's kind checks the job and switches it over (kind.h:
 * check_switchover, switchover; the remote kind's are in
 * src/kinds/remote/switchover.c); in between, the job's workers are
 * stopped and its lock taken here, by the layer that knows the workers,
 * in the order _remote_switchover has always taken these steps.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "api/job_ops.h"
#include "catalog/catalog_access.h"
#include "kinds/kind.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PG_FUNCTION_INFO_V1(backfill_remote_switchover_1_3);

/* an interval in milliseconds, a month 30 days */
static int64
interval_ms(const Interval *interval)
{
	return (interval->time / 1000) +
		((int64) interval->day + (int64) interval->month * DAYS_PER_MONTH) * (USECS_PER_DAY / 1000);
}

/*
 * backfill_switch_over
 *		Switch job_id over from the server it follows and return the
 *		source's LSN it switched at (InvalidXLogRecPtr over several
 *		servers): its kind refuses a job that cannot switch over, before any
 *		worker is stopped; then the job's workers are stopped and the job
 *		lock taken for the transaction; then the kind switches it over.
 *		lock_timeout is between 1 ms and INT_MAX ms, attempts at least 1.
 *		The caller records the switchover.
 */
XLogRecPtr
backfill_switch_over(int64 job_id, bool fence, const Interval *lock_timeout, int attempts)
{
	const KindRoutine *kind;
	BackfillJob *job;
	XLogRecPtr	lsn;

	Assert(interval_ms(lock_timeout) >= 1 && interval_ms(lock_timeout) <= INT_MAX);
	backfill_spi_enter();
	/* the owner's check of run_job, and the job's, before any worker is stopped */
	job = backfill_load_job_to_run(job_id, CurrentMemoryContext);
	kind = backfill_kind_routine(job->kind);
	backfill_kind_check_switchover(kind, job);
	(void) backfill_require_job_owner(job_id);
	(void) backfill_stop_and_lock(job_id);
	lsn = backfill_kind_switchover(kind, job_id, fence, (int) interval_ms(lock_timeout), attempts);
	backfill_spi_leave();
	return lsn;
}

/*
 * backfill._remote_switchover(job_id bigint, fence boolean, lock_timeout
 * interval, attempts int) RETURNS pg_lsn
 *		Stop the job's workers, take the job lock, switch over.
 */
Datum
backfill_remote_switchover_1_3(PG_FUNCTION_ARGS)
{
	int64		timeout_ms;
	XLogRecPtr	lsn;
	const char *names[4] = {"job_id", "fence", "lock_timeout", "attempts"};

	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" must not be null", names[i])));
	timeout_ms = interval_ms(PG_GETARG_INTERVAL_P(2));
	if (timeout_ms < 1 || timeout_ms > INT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_timeout must be between 1 ms and %d ms", INT_MAX),
				 errdetail("It is how long each attempt at the fence's lock waits, and how long writers queued behind it wait at most.")));
	if (PG_GETARG_INT32(3) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("attempts must be at least 1")));

	lsn = backfill_switch_over(PG_GETARG_INT64(0), PG_GETARG_BOOL(1), PG_GETARG_INTERVAL_P(2),
							   PG_GETARG_INT32(3));
	/* a job of several servers switched at an offset on each */
	if (XLogRecPtrIsInvalid(lsn))
		PG_RETURN_NULL();
	PG_RETURN_LSN(lsn);
}
