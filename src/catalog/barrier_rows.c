/*-------------------------------------------------------------------------
 *
 * barrier_rows.c
 *	  What a barrier records in backfill.actor and backfill.job: an actor's
 *	  epoch and rows, its pace, its log store phase (the snapshot kind), and
 *	  the job's finish.
 *
 * Each statement runs once per actor and barrier, so it is planned once per
 * executor: backfill_prepare_* keeps its plan among the executor's
 * (KeptPlans, sql.c), backfill_run_* runs it under the catalog's role.
 * Callers are connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "catalog/barrier_rows.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/* run a kept plan that updates a catalog row, under the catalog's role */
static void
run_update(SPIPlanPtr plan, Datum *values, const char *nulls, const char *table)
{
	RoleContext rc;

	backfill_catalog_enter(&rc);
	if (SPI_execute_plan(plan, values, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update %s", table);
	backfill_role_leave(&rc);
}

/* an actor's epoch and rows, after a barrier */
SPIPlanPtr
backfill_prepare_record_actor(KeptPlans *plans)
{
	return backfill_keep_plan(plans,
							  "UPDATE backfill.actor SET epoch = $2, row_count = $3 "
							  "WHERE actor_id = $1", 3, (Oid[]) {INT4OID, INT8OID, INT8OID});
}

void
backfill_run_record_actor(SPIPlanPtr plan, int32 actor_id, int64 epoch, int64 rows)
{
	Datum		values[3];

	values[0] = Int32GetDatum(actor_id);
	values[1] = Int64GetDatum(epoch);
	values[2] = Int64GetDatum(rows);
	run_update(plan, values, NULL, "backfill.actor");
}

/*
 * An actor's pace: what held it back (NULL: nothing) and its rows per
 * second (negative: unknown).  NULL, and nothing to record, on a catalog
 * older than the columns: a library newer than the catalog, until ALTER
 * EXTENSION UPDATE.
 */
SPIPlanPtr
backfill_prepare_record_pace(KeptPlans *plans)
{
	if (!backfill_catalog_caps()->actor_throttled_by)
		return NULL;
	return backfill_keep_plan(plans,
							  "UPDATE backfill.actor SET throttled_by = $2, rows_per_second = $3 "
							  "WHERE actor_id = $1", 3, (Oid[]) {INT4OID, TEXTOID, FLOAT8OID});
}

void
backfill_run_record_pace(SPIPlanPtr plan, int32 actor_id, const char *throttled_by,
						 double rows_per_second)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	values[0] = Int32GetDatum(actor_id);
	values[1] = throttled_by ? CStringGetTextDatum(throttled_by) : (Datum) 0;
	values[2] = Float8GetDatum(rows_per_second);
	if (throttled_by == NULL)
		nulls[1] = 'n';
	if (rows_per_second < 0)
		nulls[2] = 'n';
	run_update(plan, values, nulls, "backfill.actor");
}

/* a snapshot job's actor in the log store: its epoch, lag and whether it caught up */
SPIPlanPtr
backfill_prepare_record_log_store(KeptPlans *plans)
{
	return backfill_keep_plan(plans,
							  "UPDATE backfill.actor SET epoch = $2, log_store_lag_ms = $3, "
							  "log_store_caught_up = $4 WHERE actor_id = $1",
							  4, (Oid[]) {INT4OID, INT8OID, INT8OID, BOOLOID});
}

void
backfill_run_record_log_store(SPIPlanPtr plan, int32 actor_id, int64 epoch, int64 lag_ms,
							  bool caught_up)
{
	Datum		values[4];

	values[0] = Int32GetDatum(actor_id);
	values[1] = Int64GetDatum(epoch);
	values[2] = Int64GetDatum(lag_ms);
	values[3] = BoolGetDatum(caught_up);
	run_update(plan, values, NULL, "backfill.actor");
}

/* the final barrier: every actor at its epoch, the job finished */
SPIPlanPtr
backfill_prepare_finish_job(KeptPlans *plans)
{
	return backfill_keep_plan(plans,
							  "WITH a AS (UPDATE backfill.actor SET epoch = $2 WHERE job_id = $1) "
							  "UPDATE backfill.job SET status = 'finished', "
							  "finished_at = pg_catalog.now() "
							  "WHERE job_id = $1 AND status <> 'finished'",
							  2, (Oid[]) {INT8OID, INT8OID});
}

void
backfill_run_finish_job(SPIPlanPtr plan, int64 job_id, int64 epoch)
{
	Datum		values[2];

	values[0] = Int64GetDatum(job_id);
	values[1] = Int64GetDatum(epoch);
	run_update(plan, values, NULL, "backfill.job");
}

/*
 * backfill_job_has_finished
 *		Whether the job's row says finished, as the current role sees it (the
 *		final barrier asks as the job's owner, when every actor finishes at
 *		once and the first one finishes the job).
 */
bool
backfill_job_has_finished(int64 job_id)
{
	bool		isnull;

	if (SPI_execute_with_args("SELECT status = 'finished' FROM backfill.job WHERE job_id = $1",
							  1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)},
							  NULL, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read backfill job %lld", (long long) job_id);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}
