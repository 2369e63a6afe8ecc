/*-------------------------------------------------------------------------
 *
 * capture_job_rows.c
 *	  The rows of backfill.job that the capture layer reads with SQL: the
 *	  upstream of a job whose triggers are dropped, and the row of a finished
 *	  or cancelled cdc job whose replication slot is left over.
 *
 * Both are read through SPI, under the caller's snapshot and with the
 * caller's rights: the callers act as the extension's owner, who sees every
 * role's jobs.  (A writer's trigger reads the job's row without SQL instead,
 * with backfill_job_column() in job.c.)  Columns are read by name.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "backfill.h"
#include "catalog/capture_job_rows.h"
#include "lib/lib.h"

/* the value of the column named column in the first row SPI returned */
static Datum
first_row_column(const char *column, bool *isnull)
{
	int			fnumber = SPI_fnumber(SPI_tuptable->tupdesc, column);

	if (fnumber <= 0)
		elog(ERROR, "column \"%s\" is missing from the result", column);
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, fnumber, isnull);
}

/*
 * backfill_job_upstream_present
 *		The upstream of a job, if the job exists and its upstream still does;
 *		else InvalidOid.  Caller acts as the extension's owner, connected to
 *		SPI.
 */
Oid
backfill_job_upstream_present(int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;

	backfill_spi_exec_args("SELECT upstream::pg_catalog.oid AS upstream FROM backfill.job j "
						   "WHERE job_id = $1 AND EXISTS (SELECT FROM pg_catalog.pg_class c "
						   "WHERE c.oid OPERATOR(pg_catalog.=) j.upstream)",
						   1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return InvalidOid;
	return DatumGetObjectId(first_row_column("upstream", &isnull));
}

/*
 * backfill_ended_cdc_job
 *		Whether job_id is a cdc job that has finished or been cancelled; if
 *		so, *xmin is the transaction that wrote its row and *status its
 *		status, in the current memory context.  Caller acts as the
 *		extension's owner, connected to SPI.
 */
bool
backfill_ended_cdc_job(int64 job_id, TransactionId *xmin, char **status)
{
	Datum		arg = Int64GetDatum(job_id);
	bool		isnull;
	int			fnumber;

	if (SPI_execute_with_args("SELECT j.xmin, j.status FROM backfill.job j "
							  "WHERE j.job_id OPERATOR(pg_catalog.=) $1 "
							  "AND j.kind OPERATOR(pg_catalog.=) 'cdc' "
							  "AND j.status OPERATOR(pg_catalog.=) ANY (ARRAY['finished', 'cancelled'])",
							  1, (Oid[]) {INT8OID}, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	if (SPI_processed == 0)
		return false;
	*xmin = DatumGetTransactionId(first_row_column("xmin", &isnull));
	fnumber = SPI_fnumber(SPI_tuptable->tupdesc, "status");
	if (fnumber <= 0)
		elog(ERROR, "column \"status\" is missing from the result");
	*status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, fnumber);
	return true;
}
