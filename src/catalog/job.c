/*-------------------------------------------------------------------------
 *
 * job.c
 *	  A job's row of backfill.job, by its id: its columns read without SQL
 *	  (a writer's trigger finds whom to act as), and the writes of a run
 *	  and of the control functions (its start, a failure, cancel, drop, the
 *	  run mode, the rate limit, its names).
 *
 * Only the extension's owner writes the catalogs; the writes here run in a
 * catalog context (privilege.c) on behalf of a caller whose right to the job
 * was checked first.  Nothing here commits: a failure recorded here stays
 * when the caller commits it (state.c, worker.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/*
 * backfill_job_owner
 *		The owner of a job, read from backfill.job directly rather than with
 *		SPI, so that a writer who may not read the catalog can still find
 *		whom to act as.  InvalidOid if the job does not exist.
 */
Oid
backfill_job_owner(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "owner", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_upstream
 *		The upstream of a job, read as backfill_job_owner() reads the owner.
 *		InvalidOid if the job does not exist.
 */
Oid
backfill_job_upstream(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "upstream", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_downstream
 *		The downstream of a job, read as backfill_job_owner() reads the
 *		owner.  InvalidOid if the job does not exist or has none (cancelled).
 */
Oid
backfill_job_downstream(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "downstream", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_column
 *		One column of a job's row in backfill.job, read by its primary key
 *		without SQL, so without privileges or row-level security: a writer's
 *		trigger uses it to find whom to act as and what it serves.  A copy in
 *		the current memory context; *isnull when the job does not exist, or
 *		the value is NULL.
 */
Datum
backfill_job_column(int64 job_id, const char *column, bool *isnull)
{
	Oid			nsp = get_namespace_oid(BACKFILL_SCHEMA, false);
	Oid			relid = get_relname_relid("job", nsp);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	AttrNumber	attnum;
	Datum		result = (Datum) 0;

	*isnull = true;
	if (!OidIsValid(relid))
		return result;
	attnum = get_attnum(relid, column);
	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("catalog table %s.job has no column \"%s\"", BACKFILL_SCHEMA, column),
				 errdetail("The catalog is not the one this version of the extension made."),
				 errhint("Run ALTER EXTENSION backfill UPDATE, or reinstall the extension.")));
	rel = table_open(relid, AccessShareLock);
	(void) RelationGetIndexList(rel);	/* sets rd_pkindex */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(job_id));
	scan = systable_beginscan(rel, rel->rd_pkindex, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		Datum		d = heap_getattr(tup, attnum, RelationGetDescr(rel), isnull);

		/* the tuple goes with the scan */
		if (!*isnull)
			result = datumCopy(d, att->attbyval, att->attlen);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

/*
 * backfill_record_failure
 *		Record a failure on the job: status failed, the error's message,
 *		detail and SQLSTATE, one more failure counted.  With only_if_backfilling, a job that is neither
 *		pending nor backfilling (a failure recorded already, a cancel) is
 *		left alone, except that a finished job gets the error without
 *		changing its status (the worker that follows its upstream failed).
 *		Caller is connected to SPI and commits.
 */
void
backfill_record_failure(int64 job_id, int sqlerrcode, const char *message,
						const char *detail, bool only_if_backfilling)
{
	Oid			argtypes[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', detail ? ' ' : 'n', ' '};
	RoleContext rc;

	values[0] = Int64GetDatum(job_id);
	values[1] = CStringGetTextDatum(message);
	values[2] = detail ? CStringGetTextDatum(detail) : (Datum) 0;
	values[3] = CStringGetTextDatum(unpack_sql_state(sqlerrcode));
	backfill_catalog_enter(&rc);
	/* failures counts them, for monitoring, once the catalog has it (1.3) */
	backfill_spi_exec_args(psprintf("UPDATE backfill.job SET status = %s, last_error = $2, "
									"last_error_detail = $3, last_sqlstate = $4%s WHERE job_id = $1%s",
									only_if_backfilling ?
									"CASE status WHEN 'finished' THEN status ELSE 'failed' END" :
									"'failed'",
									backfill_catalog_caps()->job_failures ?
									", failures = failures + 1" : "",
									only_if_backfilling ?
									" AND status IN ('pending', 'backfilling', 'finished')" : ""),
						   4, argtypes, values, nulls, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/*
 * backfill_record_start
 *		Mark the start of a run: one more run, backfilling unless finished,
 *		the mode, and the upstream's size when total_rows >= 0 (RisingWave
 *		re-reads it on recovery too).
 */
void
backfill_record_start(BackfillJob *job, bool background, int64 total_rows)
{
	Oid			argtypes[3] = {INT8OID, BOOLOID, INT8OID};
	Datum		values[3] = {Int64GetDatum(job->job_id), BoolGetDatum(background),
	Int64GetDatum(total_rows)};
	char		nulls[3] = {' ', ' ', total_rows < 0 ? 'n' : ' '};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("UPDATE backfill.job SET runs = runs + 1, last_error = NULL, "
						   "last_error_detail = NULL, last_sqlstate = NULL, "
						   "status = CASE status WHEN 'finished' THEN 'finished' ELSE 'backfilling' END, "
						   "run_mode = CASE WHEN $2 THEN 'background' ELSE 'foreground' END, "
						   "total_rows = coalesce($3, total_rows) "
						   "WHERE job_id = $1",
						   3, argtypes, values, nulls, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/*
 * A catalog write of one job, made as the extension's owner once the caller's
 * right was checked: $1 the job id, $2 an optional bigint argument.  The
 * control functions' (cancel_job, drop_job, stop_job, alter_rate_limit,
 * reschedule, recreate_job) below, and the other catalog files'.
 */
void
backfill_catalog_write(const char *sql, int64 job_id, bool arg_null, int64 arg, int expected)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2] = {Int64GetDatum(job_id), Int64GetDatum(arg)};
	char		nulls[2] = {' ', arg_null ? 'n' : ' '};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args(sql, 2, types, values, nulls, expected);
	backfill_role_leave(&rc);
}

/* status cancelled, with no downstream, state or change table */
void
backfill_mark_cancelled(int64 job_id)
{
	backfill_catalog_write("UPDATE backfill.job SET status = 'cancelled', downstream = NULL, "
				  "state_table = NULL, change_table = NULL WHERE job_id = $1",
				  job_id, true, 0, SPI_OK_UPDATE);
}

/* the job's rows (its actors go with it) */
void
backfill_delete_job_rows(int64 job_id)
{
	backfill_catalog_write("DELETE FROM backfill.job WHERE job_id = $1", job_id, true, 0, SPI_OK_DELETE);
}

/* run_mode foreground: the launcher leaves it alone */
void
backfill_set_foreground(int64 job_id)
{
	backfill_catalog_write("UPDATE backfill.job SET run_mode = 'foreground' "
				  "WHERE job_id = $1 AND run_mode = 'background'",
				  job_id, true, 0, SPI_OK_UPDATE);
}

/* rate_limit, or none */
void
backfill_set_rate_limit(int64 job_id, bool none, int64 rows_per_second)
{
	backfill_catalog_write("UPDATE backfill.job SET rate_limit = $2::pg_catalog.int4 WHERE job_id = $1",
				  job_id, none, rows_per_second, SPI_OK_UPDATE);
}

/* job_name and ddl_statement of another job */
void
backfill_copy_names(int64 job_id, int64 from_job_id)
{
	backfill_catalog_write("UPDATE backfill.job j SET job_name = o.job_name, ddl_statement = o.ddl_statement "
				  "FROM backfill.job o WHERE j.job_id = $1 AND o.job_id = $2",
				  job_id, false, from_job_id, SPI_OK_UPDATE);
}
