/*-------------------------------------------------------------------------
 *
 * job_view.c
 *	  A job's row as the caller sees it: what the functions that show a
 *	  job (job_state, job_splits) and reschedule read first.
 *
 * The row is read from backfill.job as the caller, so row-level security
 * shows it only the jobs of the roles whose privileges it has (a
 * superuser, every job): another role's job is as absent as one that was
 * never created, as the SQL versions of those functions found it with
 * backfill._get_job().  Only the columns they need are read; the job is not
 * loaded as a run loads it (job_load.c), which would check its upstream's
 * key, a thing a look at its state has no need of.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/*
 * backfill_read_job_view
 *		Read the row of job_id that the caller sees into *view, in the
 *		current memory context.  When it sees none: false if missing_ok,
 *		else the error (undefined_object) that says the job does not exist.
 *		Caller is connected to SPI; read_only as the calling function's
 *		volatility asks (a STABLE one reads with its statement's snapshot).
 */
bool
backfill_read_job_view(int64 job_id, bool read_only, bool missing_ok, JobView *view)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	MemoryContext cxt = CurrentMemoryContext;
	MemoryContext spicxt;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	if (SPI_execute_with_args("SELECT j.kind, j.status, coalesce(j.remote, false), "
							  "       j.upstream::pg_catalog.oid, j.state_table::pg_catalog.oid, "
							  "       j.pk_columns, j.remote_splits, "
							  "       j.remote_partitions::pg_catalog.oid[] "
							  "  FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, read_only, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	if (SPI_processed == 0 && missing_ok)
		return false;
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));

	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	spicxt = MemoryContextSwitchTo(cxt);
	memset(view, 0, sizeof(*view));
	view->job_id = job_id;
	view->catalog_kind = backfill_parse_kind(SPI_getvalue(tup, desc, 1));
	view->status = SPI_getvalue(tup, desc, 2);
	view->remote = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
	view->kind = view->remote ? backfill_remote_kind(view->catalog_kind) : view->catalog_kind;
	view->upstream = DatumGetObjectId(SPI_getbinval(tup, desc, 4, &isnull));
	d = SPI_getbinval(tup, desc, 5, &isnull);
	view->state_table = isnull ? InvalidOid : DatumGetObjectId(d);
	d = SPI_getbinval(tup, desc, 6, &isnull);
	if (isnull)
		view->npk = 0;
	else
		(void) backfill_text_array_sql(d, &view->pk_names, &view->npk);
	d = SPI_getbinval(tup, desc, 7, &isnull);
	view->splits_null = isnull;
	view->splits = isnull ? (Datum) 0 : PointerGetDatum(DatumGetArrayTypePCopy(d));
	d = SPI_getbinval(tup, desc, 8, &isnull);
	view->partitions_null = isnull;
	view->partitions = isnull ? (Datum) 0 : PointerGetDatum(DatumGetArrayTypePCopy(d));
	MemoryContextSwitchTo(spicxt);
	return true;
}
