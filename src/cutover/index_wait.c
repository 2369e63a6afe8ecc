/*-------------------------------------------------------------------------
 *
 * index_wait.c
 *	  An index built concurrently on a table of the cutover: found, and the
 *	  cutover refused while it lasts.
 *
 * A CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY on either table (or
 * a partition of either) holds it SHARE UPDATE EXCLUSIVE until it ends, and
 * before it ends waits for every transaction older than its snapshot: the
 * cutover's among them.  The cutover could never take its lock, and would
 * keep the index build waiting through every attempt; it ends at once
 * instead, with nothing changed.  The build is found in what pg_locks and
 * pg_stat_progress_create_index show every role.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "pgstat.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "cutover/lock_step.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_index_build);
PG_FUNCTION_INFO_V1(backfill_cutover_refuse_index_build);

/* the first process building an index concurrently on src, dst or a partition */
static const char *const index_build_sql =
"SELECT l.pid, l.relation::regclass"
"  FROM pg_stat_progress_create_index p"
"  JOIN pg_locks l ON l.pid = p.pid"
" WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database())"
"   AND p.pid <> pg_backend_pid()"
"   AND l.locktype = 'relation' AND l.granted AND l.mode = 'ShareUpdateExclusiveLock'"
"   AND l.database = p.datid"
"   AND l.relation IN (SELECT $1 UNION ALL SELECT $2"
"                      UNION ALL SELECT relid FROM pg_partition_tree($1)"
"                      UNION ALL SELECT relid FROM pg_partition_tree($2))"
" ORDER BY l.pid"
" LIMIT 1";

/*
 * backfill_cutover_find_build
 *		Whether a process builds an index concurrently on src, dst or one of
 *		their partitions; if so its pid and the table.
 */
bool
backfill_cutover_find_build(Oid src, Oid dst, int32 *pid, Oid *rel)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	bool		found;

	/*
	 * the activity of other processes is read once per transaction unless
	 * this discards it: the cutover's retries run in one, and must see a
	 * build that started after its first look
	 */
	pgstat_clear_snapshot();
	backfill_spi_enter();
	backfill_spi_exec_args(index_build_sql, 2, types, values, NULL, SPI_OK_SELECT);
	found = SPI_processed > 0;
	if (found)
	{
		bool		isnull;

		*pid = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		*rel = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	}
	backfill_spi_leave();
	return found;
}

/*
 * backfill_cutover_refuse_build
 *		For a caller who owns job job_id, fail with 55P03 when a process
 *		builds an index concurrently on src, dst or one of their partitions,
 *		after showing that the cutover gave up.
 */
void
backfill_cutover_refuse_build(int64 job_id, Oid src, Oid dst)
{
	int32		pid;
	Oid			rel;
	Oid			job_type;

	/* the caller's job, or the error that says why there is none */
	backfill_spi_enter();
	(void) cutover_get_job(job_id, false, &job_type);
	backfill_spi_leave();
	if (!backfill_cutover_find_build(src, dst, &pid, &rel))
		return;
	cutover_report(job_id, "gave up");
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("cannot cut over backfill job %lld while an index is being built concurrently on table %s",
					(long long) job_id, backfill_regclass_text(rel)),
			 errdetail("Process %d runs CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY on table %s, which waits for the cutover's transaction to end before it ends; the cutover could not lock the table until then. Nothing was changed.",
					   pid, backfill_regclass_text(rel)),
			 errhint("Run the cutover again once the index is built.")));
}

/*
 * backfill._cutover_index_build(src regclass, dst regclass)
 *		RETURNS TABLE (pid integer, rel regclass)
 *		The process building an index concurrently on src, dst or one of
 *		their partitions, and that table; no row if none.
 */
Datum
backfill_cutover_index_build(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[2];
	bool		nulls[2] = {false, false};
	int32		pid;
	Oid			rel;

	InitMaterializedSRF(fcinfo, 0);
	if (backfill_cutover_find_build(PG_GETARG_OID(0), PG_GETARG_OID(1), &pid, &rel))
	{
		values[0] = Int32GetDatum(pid);
		values[1] = ObjectIdGetDatum(rel);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * backfill._cutover_refuse_index_build(job_id bigint, src regclass,
 *										 dst regclass) RETURNS void
 *		backfill_cutover_refuse_build, for the job's owner.
 */
Datum
backfill_cutover_refuse_index_build(PG_FUNCTION_ARGS)
{
	backfill_cutover_refuse_build(PG_GETARG_INT64(0), PG_GETARG_OID(1), PG_GETARG_OID(2));
	PG_RETURN_VOID();
}
