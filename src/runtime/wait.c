/*-------------------------------------------------------------------------
 *
 * wait.c
 *	  Waiting for a job to finish: wait_job, and the procedure wait_for_job,
 *	  which waits without holding a snapshot; one look at the job serves
 *	  both.
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
 * (poll_job, the same look as wait_job's).  Between two
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
#include "runtime/driver.h"
#include "runtime/registry_internal.h"

PG_FUNCTION_INFO_V1(backfill_wait_job);
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

/* the SQLSTATE a failed job recorded, XX000 when it recorded none or a bad one */
static int
recorded_sqlstate(const char *code)
{
	if (code == NULL || strlen(code) != 5 ||
		strspn(code, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 5)
		return ERRCODE_INTERNAL_ERROR;
	return MAKE_SQLSTATE(code[0], code[1], code[2], code[3], code[4]);
}

/*
 * raise_job_status
 *		The error of a job that will not finish while it is waited for: its
 *		own error if it failed, cancelled, or not running anywhere.  Returns
 *		if it may still finish.  The job's row is SPI's last result.
 */
static void
raise_job_status(int64 job_id, const char *status, bool running)
{
	HeapTuple	tup = SPI_tuptable->vals[0];
	TupleDesc	desc = SPI_tuptable->tupdesc;

	if (strcmp(status, "failed") == 0)
	{
		char	   *message = SPI_getvalue(tup, desc, 2);
		char	   *detail = SPI_getvalue(tup, desc, 4);

		ereport(ERROR,
				(errcode(recorded_sqlstate(SPI_getvalue(tup, desc, 3))),
				 message ? errmsg_internal("%s", message) :
				 errmsg("backfill job %lld failed", (long long) job_id),
				 errdetail_internal("%s", detail ? detail : "")));
	}
	if (strcmp(status, "cancelled") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has been cancelled", (long long) job_id)));
	if (!running)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld is not running", (long long) job_id),
				 errhint("Start it with backfill.start_job(%lld), or run it here with CALL backfill.run_job(%lld).",
						 (long long) job_id, (long long) job_id)));
}

/*
 * poll_job
 *		One look at a job the caller owns: raises its error if it failed,
 *		was cancelled or dropped, or is not running; sends its line of
 *		progress when it is time.  Returns false once it has finished, with
 *		*reported the time of the last line sent.  Caller is connected to
 *		SPI; the job's row is read in a snapshot of its own.
 */
static bool
poll_job(int64 job_id, TimestampTz *reported)
{
	bool		running = backfill_job_runs_in_background(job_id) ||
		backfill_job_lock_held(job_id);
	char	   *status;

	/* read after the check: a worker commits the final status, then exits */
	backfill_spi_exec_args("SELECT status, last_error, last_sqlstate, last_error_detail "
						   "FROM backfill.job WHERE job_id OPERATOR(pg_catalog.=) $1",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_SELECT);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld was dropped", (long long) job_id)));
	status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (strcmp(status, "finished") == 0)
		return false;
	raise_job_status(job_id, status, running);
	*reported = backfill_report_progress_since(job_id, *reported);
	return true;
}

/*
 * backfill.wait_job(job_id bigint) RETURNS void
 *		Wait until the job has finished, in the statement's transaction:
 *		each look at it reads the job's row in a new snapshot, as READ
 *		COMMITTED takes one for each statement, so it must run at that
 *		isolation level.
 */
Datum
backfill_wait_job(PG_FUNCTION_ARGS)
{
	TimestampTz reported = GetCurrentTimestamp();
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");

	if (XactIsoLevel != XACT_READ_COMMITTED)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("backfill.wait_job() must run at isolation level READ COMMITTED"),
				 errdetail("It watches the job's status as the workers commit it.")));
	/* the workers of a job started in this transaction wait for its end */
	refuse_own_lock(job_id, "backfill.wait_job");

	backfill_spi_enter();
	while (poll_job(job_id, &reported))
		backfill_sleep_ms(BACKFILL_WAIT_POLL_MS);
	backfill_spi_leave();
	PG_RETURN_VOID();
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
