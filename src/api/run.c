/*-------------------------------------------------------------------------
 *
 * run.c
 *	  CALL backfill.run_job(job_id, max_barriers): run a job's executors in
 *	  this session, one committed transaction per barrier.
 *
 * The procedure holds the job lock (catalog/job_lock.c) at session level
 * for the whole run, so a second session fails at once, and a session that
 * dies releases it.  The barriers are driver.c's, one committed transaction
 * each.  Every call after the first is a restart, as when RisingWave
 * recovers a streaming job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "tcop/pquery.h"
#include "utils/snapmgr.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PG_FUNCTION_INFO_V1(backfill_run_job);
PG_FUNCTION_INFO_V1(backfill_run_job_by_name);

/*
 * record_failure
 *		Record the error a run failed with (edata, flushed) on its job, as a
 *		background worker does (status failed, the message, detail and
 *		SQLSTATE, unless the job has ended or recorded its failure already),
 *		in a transaction of its own: the failed one is rolled back first, so
 *		that what an operator who was not watching reads in backfill.jobs is
 *		why.  Nothing is recorded when the failed transaction cannot be
 *		rolled back here (a failure within a subtransaction).
 */
static void
record_failure(int64 job_id, ErrorData *edata, MemoryContext cxt)
{
	if (!backfill_rollback_after_error())
		return;
	MemoryContextSwitchTo(cxt);
	backfill_record_failure(job_id, edata->sqlerrcode, edata->message, edata->detail, true);
	backfill_commit();
	MemoryContextSwitchTo(cxt);
}

/*
 * The error being handled, flushed, recorded on the job if it can be; the
 * job let go of whatever happens.  The run's own error is the one to raise
 * again: an error while recording it is only a warning.
 */
static ErrorData *
record_failure_and_unlock(int64 job_id, MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	PG_TRY();
	{
		record_failure(job_id, edata, cxt);
	}
	PG_CATCH();
	{
		ErrorData  *failed;

		MemoryContextSwitchTo(cxt);
		failed = CopyErrorData();
		FlushErrorState();
		ereport(WARNING,
				(errmsg("could not record the failure of backfill job %lld: %s",
						(long long) job_id, failed->message)));
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	backfill_unlock_job(job_id);
	return edata;
}

/*
 * backfill.run_job(job_id bigint, max_barriers int DEFAULT NULL) procedure
 */
Datum
backfill_run_job(PG_FUNCTION_ARGS)
{
	CallContext *callcxt = (CallContext *) fcinfo->context;
	int64		job_id;
	volatile int max_barriers = 0;
	volatile bool started = false;
	MemoryContext run_cxt;
	BackfillJob *job;

	if (callcxt == NULL || !IsA(callcxt, CallContext) || callcxt->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("backfill.run_job() cannot run inside a transaction block"),
				 errdetail("It commits one transaction per barrier."),
				 errhint("Call it with CALL outside of BEGIN ... COMMIT.")));
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	job_id = PG_GETARG_INT64(0);
	if (!PG_ARGISNULL(1))
	{
		max_barriers = PG_GETARG_INT32(1);
		if (max_barriers < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_barriers must be at least 1"),
					 errhint("Pass NULL to run the job until it has finished.")));
	}

	/* survives the commits: PortalContext belongs to the CALL */
	run_cxt = AllocSetContextCreate(PortalContext, "backfill run",
									ALLOCSET_DEFAULT_SIZES);
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/* nothing the caller put on its search_path plans the run's SQL */
	backfill_xact_pin_path();
	backfill_lock_job(job_id, true);
	/* its lines, counted from here: the recovery check is part of the run */
	backfill_progress_run_begin(job_id, -1, 0);
	PG_TRY();
	{
		job = backfill_load_job_to_run(job_id, run_cxt);
		/* from here on, the caller may run the job: its errors are the job's */
		started = true;
		/* backfill.progress shows the actors from the recovery check on */
		backfill_live_begin(job, -1, "starting");
		if (backfill_prepare_run(job, false))
			backfill_drive(job, -1, max_barriers);
	}
	PG_CATCH();
	{
		/* this session's later transactions are not the job's */
		backfill_origin_leave();
		backfill_live_end();
		if (!started)
		{
			backfill_lines_end();
			backfill_unlock_job(job_id);
			PG_RE_THROW();
		}
		{
			ErrorData  *edata = record_failure_and_unlock(job_id, run_cxt);

			/* what the run did before it failed, then why it failed */
			backfill_progress_run_end(0, "failed");
			ReThrowError(edata);
		}
	}
	PG_END_TRY();
	backfill_origin_leave();
	backfill_live_end();
	backfill_unlock_job(job_id);
	backfill_progress_run_end(job_id, "ended");

	SPI_finish();
	MemoryContextDelete(run_cxt);
	PG_RETURN_VOID();
}

/*
 * backfill.run_job(job_name text, max_barriers int DEFAULT NULL) procedure
 *		The job the caller sees by that name (job_names.c), run as by its id:
 *		the id takes the name's place among the arguments.
 */
Datum
backfill_run_job_by_name(PG_FUNCTION_ARGS)
{
	fcinfo->args[0].value = Int64GetDatum(backfill_job_name_arg(fcinfo, 0));
	return backfill_run_job(fcinfo);
}
