/*-------------------------------------------------------------------------
 *
 * remote_rows.c
 *	  The statements of the remote cdc kind on the extension's catalogs: a
 *	  remote job's columns of backfill.job and its actors' rows.
 *
 * backfill.job keeps, for a job whose upstream is on another server
 * (remote = true), the inner bounds of its splits (remote_splits, text[],
 * cut once by create_job), the offset its last fetch committed
 * (remote_lsn), the end of the source's WAL that fetch saw
 * (remote_source_lsn), when it last caught up with it
 * (remote_caught_up_at) and the commit time of the last transaction
 * fetched (remote_last_commit).  The kind (kinds/kind_remote.c) decides
 * what they hold; this file reads and writes them.
 *
 * The offset is read two ways: backfill_job_remote_offset as committed
 * (a catalog scan with a fresh snapshot), backfill_job_remote_offset_seen
 * as the caller's transaction snapshot sees it; a fetch compares the two to
 * learn whether another actor's fetch committed since its snapshot.
 *
 * May call: catalog.c and the foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"

#include "lib.h"
#include "catalog_access.h"
#include "remote_rows.h"

/*
 * backfill_job_split_bounds
 *		The inner bounds of job_id's splits, as text, in the current memory
 *		context (*nbounds of them), or NULL and none when the job has no
 *		bounds stored: split j holds the keys in [bound j-1, bound j).
 */
char **
backfill_job_split_bounds(int64 job_id, int *nbounds)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "remote_splits", &isnull);
	Datum	   *elems;
	char	  **bounds = NULL;
	int			n = 0;

	if (!isnull)
	{
		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, NULL, &n);
		bounds = palloc(sizeof(char *) * Max(n, 1));
		for (int i = 0; i < n; i++)
			bounds[i] = TextDatumGetCString(elems[i]);
	}
	*nbounds = n;
	return bounds;
}

/*
 * backfill_job_set_splits
 *		Mark job_id remote and store its splits' inner bounds (a text[]
 *		Datum).  Caller is connected to SPI, in the catalog's context.
 */
void
backfill_job_set_splits(int64 job_id, Datum bounds)
{
	Datum		values[2];
	Oid			types[2] = {INT8OID, TEXTARRAYOID};

	values[0] = Int64GetDatum(job_id);
	values[1] = bounds;
	backfill_spi_exec_args("UPDATE backfill.job SET remote = true, remote_splits = $2 WHERE job_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * backfill_job_remote_offset
 *		The offset on the source job_id's last fetch committed, into
 *		*offset; false (and InvalidXLogRecPtr) when it has none yet.
 */
bool
backfill_job_remote_offset(int64 job_id, XLogRecPtr *offset)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "remote_lsn", &isnull);

	*offset = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	return !isnull;
}

/*
 * backfill_job_remote_offset_seen
 *		The offset of job_id as the transaction's snapshot sees it, into
 *		*offset; false (and InvalidXLogRecPtr) when it sees none.  Caller is
 *		connected to SPI.
 */
bool
backfill_job_remote_offset_seen(int64 job_id, XLogRecPtr *offset)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;
	Datum		d;

	backfill_spi_exec_args("SELECT remote_lsn FROM backfill.job WHERE job_id = $1",
						   1, types, values, NULL, SPI_OK_SELECT);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
					  SPI_fnumber(SPI_tuptable->tupdesc, "remote_lsn"), &isnull);
	*offset = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	return !isnull;
}

/*
 * backfill_job_record_remote_offset
 *		Record the offset of job_id's fetch, the end of the source's WAL it
 *		saw (source_end: caught up when the offset reaches it) and the commit
 *		time of the last transaction it fetched (0: none).  Caller is
 *		connected to SPI.
 */
void
backfill_job_record_remote_offset(int64 job_id, XLogRecPtr offset, XLogRecPtr source_end,
								  TimestampTz commit_time)
{
	Oid			types[4] = {INT8OID, PG_LSNOID, PG_LSNOID, TIMESTAMPTZOID};
	Datum		values[4] = {Int64GetDatum(job_id), LSNGetDatum(offset),
	LSNGetDatum(source_end), TimestampTzGetDatum(commit_time)};
	char		nulls[4] = {' ', ' ', ' ', commit_time == 0 ? 'n' : ' '};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("UPDATE backfill.job SET remote_lsn = $2, remote_source_lsn = $3, "
						   "remote_caught_up_at = CASE WHEN $2 >= $3 THEN pg_catalog.now() "
						   "ELSE remote_caught_up_at END, "
						   "remote_last_commit = coalesce($4, remote_last_commit) WHERE job_id = $1",
						   4, types, values, nulls, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/*
 * backfill_remote_live_jobs
 *		The ids of this database's remote jobs not cancelled, every role's
 *		(row-level security shows each role its own, so read in the catalog's
 *		context), as a text[] literal.  Caller is connected to SPI.
 */
char *
backfill_remote_live_jobs(void)
{
	RoleContext rc;
	char	   *ids;

	backfill_catalog_enter(&rc);
	if (SPI_execute("SELECT pg_catalog.string_agg(job_id::text, ',') AS ids FROM backfill.job "
					"WHERE remote AND status <> 'cancelled'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	backfill_role_leave(&rc);
	ids = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
					   SPI_fnumber(SPI_tuptable->tupdesc, "ids"));
	return psprintf("{%s}", ids ? ids : "");
}

/*
 * backfill_actor_rows_reset
 *		Count job_id's actors' rows from zero again.  Caller is connected to
 *		SPI.
 */
void
backfill_actor_rows_reset(int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("UPDATE backfill.actor SET row_count = 0 WHERE job_id = $1",
						   1, types, values, NULL, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}
