/*-------------------------------------------------------------------------
 *
 * wait.c
 *	  Waiting for a job to finish: the check that wait_job and wait_for_job
 *	  share, and the procedure wait_for_job, which waits without holding a
 *	  snapshot.
 *
 * A job's workers take the job lock before their first barrier; start_job,
 * reschedule, cancel_job and drop_job hold it exclusively until their
 * transaction ends.  A wait in that same transaction would watch workers
 * that cannot start until it returns: it is refused, as stop_job refuses
 * to stop them there (registry.c).
 *
 * backfill.wait_job() is a function: the statement that calls it holds its
 * snapshot until it returns, so the session's xmin stays where it was when
 * the wait began and VACUUM keeps every row deleted since.  CALL
 * backfill.wait_for_job() is a procedure: outside a transaction block its
 * SPI connection is non-atomic, and it commits after each look at the job
 * (backfill._wait_job_poll, the same body as wait_job's loop).  Between two
 * looks it sleeps on its latch with no transaction snapshot, no active
 * snapshot and no catalog snapshot, so pg_stat_activity.backend_xmin is
 * NULL for it and the xmin horizon moves on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_check_wait);
PG_FUNCTION_INFO_V1(backfill_wait_for_job);
PG_FUNCTION_INFO_V1(backfill_wait_for_job_by_name);

/* how long a wait sleeps between two looks at the job, as wait_job does */
#define BACKFILL_WAIT_POLL_MS 100

/*
 * refuse_own_lock
 *		Refuse to wait for a job whose lock this transaction holds: its
 *		workers wait for the lock, and would start only after the wait.
 */
static void
refuse_own_lock(int64 job_id, const char *funcname)
{
	if (backfill_job_lock_mine(job_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot wait for backfill job %lld in the transaction that holds its lock",
						(long long) job_id),
				 errdetail("The job's workers wait until this transaction ends: start_job, reschedule, cancel_job and drop_job lock the job until then."),
				 errhint("Commit first, then call %s(%lld).", funcname, (long long) job_id)));
}

/*
 * backfill._check_wait(job_id bigint) RETURNS void
 *		For wait_job, before it waits: the job is the caller's (the job's
 *		owner's privileges) and this transaction does not hold its lock.
 */
Datum
backfill_check_wait(PG_FUNCTION_ARGS)
{
	int64		job_id;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	job_id = PG_GETARG_INT64(0);
	(void) backfill_require_job_owner(job_id);
	refuse_own_lock(job_id, "backfill.wait_job");
	PG_RETURN_VOID();
}

/*
 * poll_job
 *		One look at the job (backfill._wait_job_poll): raises its error if it
 *		failed, was cancelled or dropped, or is not running; sends its line
 *		of progress when it is time.  Returns false once it has finished,
 *		with *reported the time of the last line sent.
 */
static bool
poll_job(int64 job_id, TimestampTz *reported)
{
	Oid			types[2] = {INT8OID, TIMESTAMPTZOID};
	Datum		values[2] = {Int64GetDatum(job_id), TimestampTzGetDatum(*reported)};
	bool		isnull;
	Datum		next;

	if (SPI_execute_with_args("SELECT backfill._wait_job_poll($1, $2)",
							  2, types, values, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read the state of backfill job %lld", (long long) job_id);
	next = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		return false;
	*reported = DatumGetTimestampTz(next);
	return true;
}

/*
 * backfill.wait_for_job(job_id bigint) procedure
 *		Wait until the job has finished, as wait_job does, committing after
 *		each look at it so that no snapshot is held while it sleeps.  Only
 *		with CALL outside a transaction block: inside one, it could not
 *		commit, and wait_job is the way to wait there.
 */
Datum
backfill_wait_for_job(PG_FUNCTION_ARGS)
{
	CallContext *callcxt = (CallContext *) fcinfo->context;
	int64		job_id;
	TimestampTz reported = GetCurrentTimestamp();

	if (callcxt == NULL || !IsA(callcxt, CallContext) || callcxt->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("backfill.wait_for_job() cannot run inside a transaction block"),
				 errdetail("It commits after each look at the job, so as to hold no snapshot while it waits."),
				 errhint("Call it with CALL outside of BEGIN ... COMMIT, or wait with SELECT backfill.wait_job() there.")));
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	job_id = PG_GETARG_INT64(0);

	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the caller's search_path plans none of the statements below */
	backfill_xact_pin_path();
	(void) backfill_require_job_owner(job_id);
	refuse_own_lock(job_id, "backfill.wait_for_job");

	while (poll_job(job_id, &reported))
	{
		/* lets go of the CALL's snapshot and the poll's */
		backfill_commit();
		Assert(!ActiveSnapshotSet());
		InvalidateCatalogSnapshot();
		backfill_sleep_ms(BACKFILL_WAIT_POLL_MS);
	}
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * backfill.wait_for_job(job_name text) procedure
 *		The job the caller sees by that name, waited for as by its id.
 */
Datum
backfill_wait_for_job_by_name(PG_FUNCTION_ARGS)
{
	fcinfo->args[0].value = Int64GetDatum(backfill_job_name_arg(fcinfo, 0));
	return backfill_wait_for_job(fcinfo);
}
