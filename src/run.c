/*-------------------------------------------------------------------------
 *
 * run.c
 *	  CALL backfill.run_job(job_id, max_barriers): run a job's executors in
 *	  this session, one committed transaction per barrier.
 *
 * The procedure holds the job lock (catalog.c) at session level for the
 * whole run, so a second session fails at once, and a session that dies
 * releases it.  Each barrier runs in a transaction of its own, started
 * REPEATABLE READ before it takes its snapshot (executor.c explains why one
 * snapshot per barrier is what makes forwarding exact).  A kill at any
 * moment loses only the barrier in flight.
 *
 * Every call after the first is a restart, as when RisingWave recovers a
 * streaming job: the state is decoded and the recovery check runs before
 * anything else.
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

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_run_job);

/*
 * backfill_commit
 *		Commit in a non-atomic SPI connection; SPI starts the next
 *		transaction.  Within CALL the portal owns the active snapshot and
 *		SPI_commit lets go of it; a background worker has no portal and
 *		pushed its own, which it must pop first.
 */
void
backfill_commit(void)
{
	if (ActivePortal == NULL)
		while (ActiveSnapshotSet())
			PopActiveSnapshot();
	SPI_commit();
}

/*
 * backfill_next_barrier
 *		Commit, and start the next barrier's transaction REPEATABLE READ,
 *		before it has taken a snapshot.  Without a portal to provide one, the
 *		transaction's snapshot is pushed when with_snapshot; the final
 *		barrier wants none yet, as it locks the upstream first.
 */
void
backfill_next_barrier(bool with_snapshot)
{
	backfill_commit();
	Assert(!FirstSnapshotSet);
	XactIsoLevel = XACT_REPEATABLE_READ;
	if (with_snapshot && ActivePortal == NULL)
		PushActiveSnapshot(GetTransactionSnapshot());
}

/* mark the run: one more start, backfilling unless finished, the mode */
static void
start_run(BackfillJob *job, bool background)
{
	Oid			argtypes[2] = {INT8OID, BOOLOID};
	Datum		values[2] = {Int64GetDatum(job->job_id), BoolGetDatum(background)};
	char	   *sql;
	RoleContext rc;

	/*
	 * RisingWave re-reads the upstream's size on recovery too; a snapshot
	 * job's total is that of its snapshot, counted by create_job.
	 */
	sql = psprintf("UPDATE backfill.job SET runs = runs + 1, last_error = NULL, "
				   "last_error_detail = NULL, last_sqlstate = NULL, "
				   "status = CASE status WHEN 'finished' THEN 'finished' ELSE 'backfilling' END, "
				   "run_mode = CASE WHEN $2 THEN 'background' ELSE 'foreground' END, "
				   "total_rows = CASE kind WHEN 'snapshot' THEN total_rows "
				   "ELSE (SELECT pg_catalog.count(*) FROM ONLY %s) END "
				   "WHERE job_id = $1", job->upstream_sql);
	backfill_catalog_enter(&rc);
	if (SPI_execute_with_args(sql, 2, argtypes, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update backfill.job");
	backfill_role_leave(&rc);
}

/*
 * backfill_prepare_run
 *		What a run does before its first barrier: decode the state, run the
 *		recovery check if this is a restart, and record the start.  Caller is
 *		connected to SPI in a non-atomic context; a failed check is committed
 *		on the job, then raised.  Returns false when the job has finished
 *		already, so there is nothing to run.
 */
bool
backfill_prepare_run(BackfillJob *job, bool background)
{
	/* the slots of cdc jobs a crash kept from dropping theirs, any job's */
	backfill_cdc_drop_leftover_slots();
	backfill_load_state(job);
	if (job->runs > 0)
		backfill_recovery_check(job);
	start_run(job, background);
	backfill_assert_triggers(job);
	if (strcmp(job->status, "finished") == 0)
	{
		/* a crash may have come between the finish and the slot's drop */
		backfill_after_finish(job);
		return false;
	}
	return true;
}

static void
run_locked(BackfillJob *job, int max_barriers)
{
	BarrierExecutor *exec;
	int			barriers = 0;

	if (!backfill_prepare_run(job, false))
		return;

	exec = backfill_executor_create(job);
	while (max_barriers <= 0 || barriers < max_barriers)
	{
		if (backfill_needs_fetch(job))
		{
			backfill_next_barrier(false);
			exec = backfill_executor_refresh(exec);
			backfill_run_fetch(exec);
		}
		backfill_next_barrier(false);	/* the CALL's portal provides it */
		exec = backfill_executor_refresh(exec);
		barriers++;
		if (backfill_all_finished(job))
		{
			if (backfill_run_finish_barrier(exec))
			{
				backfill_commit();
				backfill_after_finish(job);
			}
			break;
		}
		backfill_reload_settings(job);
		backfill_run_barrier(exec, -1, backfill_barrier_interval_ms, job->rate_limit);
		/* paused with no interval to wait out: do not spin */
		if (job->rate_limit == 0 && backfill_barrier_interval_ms == 0)
			backfill_sleep_ms(100);
	}
	backfill_commit();
	backfill_executor_free(exec);
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

	backfill_lock_job(job_id, true);
	PG_TRY();
	{
		job = backfill_load_job_to_run(job_id, run_cxt);
		run_locked(job, max_barriers);
	}
	PG_FINALLY();
	{
		/* this session's later transactions are not the job's */
		backfill_cdc_origin_leave();
		backfill_unlock_job(job_id);
	}
	PG_END_TRY();

	SPI_finish();
	MemoryContextDelete(run_cxt);
	PG_RETURN_VOID();
}
