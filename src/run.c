/*-------------------------------------------------------------------------
 *
 * run.c
 *	  CALL backfill.run_job(job_id, max_barriers): run a job's executors in
 *	  this session, one committed transaction per barrier.
 *
 * The procedure holds the job lock (catalog.c) at session level for the
 * whole run, so a second session fails at once, and a session that dies
 * releases it.  The barriers are driver.c's, one committed transaction
 * each.  Every call after the first is a restart, as when RisingWave
 * recovers a streaming job.
 *
 * May call: driver.c, the services, catalog.c and the foundations.
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

#include "driver.h"

PG_FUNCTION_INFO_V1(backfill_run_job);

/*
 * backfill.run_job(job_id bigint, max_barriers int DEFAULT NULL) procedure
 */
Datum
backfill_run_job(PG_FUNCTION_ARGS)
{
	CallContext *callcxt = (CallContext *) fcinfo->context;
	int64		job_id;
	volatile int max_barriers = 0;
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
	PG_TRY();
	{
		job = backfill_load_job_to_run(job_id, run_cxt);
		if (backfill_prepare_run(job, false))
			backfill_drive(job, -1, max_barriers);
	}
	PG_FINALLY();
	{
		/* this session's later transactions are not the job's */
		backfill_origin_leave();
		backfill_unlock_job(job_id);
	}
	PG_END_TRY();

	SPI_finish();
	MemoryContextDelete(run_cxt);
	PG_RETURN_VOID();
}
