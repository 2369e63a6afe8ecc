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
 * fetched (remote_last_commit).  The kind (kinds/remote/kind_remote.c) decides
 * what they hold; this file reads and writes them.
 *
 * A sharded job (an upstream partitioned over foreign partitions of
 * several servers) has its partitions in remote_partitions, in the order
 * of its splits' parts, and an offset per server in backfill.job_source
 * (source: the server's index among the job's, in the order its first
 * partition comes; server: its name, for the views), with the same
 * columns as the job's; a job of one foreign table keeps its offset in
 * backfill.job.
 *
 * The offset is read two ways: backfill_job_remote_offset as committed
 * (a catalog scan with a fresh snapshot), backfill_job_remote_offset_seen
 * as the caller's transaction snapshot sees it; a fetch compares the two to
 * learn whether another actor's fetch committed since its snapshot.
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
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"

#include "catalog/catalog_access.h"
#include "catalog/remote_rows.h"
#include "lib/lib.h"

/*
 * backfill_job_split_bounds
 *		The inner bounds of job_id's splits, as text, in the current memory
 *		context (*nbounds of them), or NULL and none when the job has no
 *		bounds stored: split j holds the keys in [bound j-1, bound j).  A
 *		NULL bound, in a sharded job's, ends a partition's splits.
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
		bool	   *nulls;

		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
						  &elems, &nulls, &n);
		bounds = palloc(sizeof(char *) * Max(n, 1));
		for (int i = 0; i < n; i++)
			bounds[i] = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
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
 * backfill_job_set_partitions
 *		Store the foreign partitions of job_id's sharded upstream (an oid[]
 *		Datum, in the order of its splits' parts) and a row per server they
 *		are on in backfill.job_source (servers, their names in order of
 *		their first partition).  Caller is connected to SPI, in the
 *		catalog's context.
 */
void
backfill_job_set_partitions(int64 job_id, Datum partitions, Datum servers)
{
	Datum		values[3];
	Oid			types[3] = {INT8OID, OIDARRAYOID, TEXTARRAYOID};

	values[0] = Int64GetDatum(job_id);
	values[1] = partitions;
	values[2] = servers;
	backfill_spi_exec_args("UPDATE backfill.job SET remote_partitions = $2::pg_catalog.regclass[] "
						   "WHERE job_id = $1", 3, types, values, NULL, SPI_OK_UPDATE);
	backfill_spi_exec_args("INSERT INTO backfill.job_source (job_id, source, server) "
						   "SELECT $1, s.o::pg_catalog.int4 - 1, s.name FROM pg_catalog.unnest($3) "
						   "WITH ORDINALITY s(name, o)", 3, types, values, NULL, SPI_OK_INSERT);
}

/*
 * backfill_job_remote_partitions
 *		The foreign partitions of job_id's sharded upstream, in the order of
 *		its splits' parts (*npartitions of them), in the current memory
 *		context.
 */
Oid *
backfill_job_remote_partitions(int64 job_id, int *npartitions)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "remote_partitions", &isnull);
	Datum	   *elems;
	Oid		   *oids;
	int			n = 0;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("backfill job %lld has no partitions recorded", (long long) job_id)));
	deconstruct_array(DatumGetArrayTypeP(d), REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT,
					  &elems, NULL, &n);
	oids = palloc(sizeof(Oid) * Max(n, 1));
	for (int i = 0; i < n; i++)
		oids[i] = DatumGetObjectId(elems[i]);
	*npartitions = n;
	return oids;
}

/*
 * The row of job_id's source in backfill.job_source as committed (a scan of
 * its primary key with the catalog snapshot): its remote_lsn, or false
 * when it has none.
 */
static bool
source_offset_committed(int64 job_id, int source, XLogRecPtr *offset)
{
	Oid			relid = get_relname_relid("job_source", get_namespace_oid(BACKFILL_SCHEMA, false));
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData keys[2];
	HeapTuple	tup;
	bool		isnull = true;

	*offset = InvalidXLogRecPtr;
	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	(void) RelationGetIndexList(rel);	/* sets rd_pkindex */
	ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(job_id));
	ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(source));
	scan = systable_beginscan(rel, rel->rd_pkindex, true, NULL, 2, keys);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Datum		d = heap_getattr(tup, get_attnum(relid, "remote_lsn"),
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			*offset = DatumGetLSN(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return !isnull;
}

/*
 * backfill_job_remote_offset
 *		The offset on source job_id's last fetch there committed, into
 *		*offset; false (and InvalidXLogRecPtr) when it has none yet.
 *		source -1: the job's one server (backfill.job), else the source of
 *		that index of a sharded job (backfill.job_source).
 */
bool
backfill_job_remote_offset(int64 job_id, int source, XLogRecPtr *offset)
{
	bool		isnull;
	Datum		d;

	if (source >= 0)
		return source_offset_committed(job_id, source, offset);
	d = backfill_job_column(job_id, "remote_lsn", &isnull);
	*offset = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	return !isnull;
}

/*
 * backfill_job_remote_offset_seen
 *		The offset of job_id on source (as above) as the transaction's
 *		snapshot sees it, into *offset; false (and InvalidXLogRecPtr) when it
 *		sees none.  Caller is connected to SPI.
 */
bool
backfill_job_remote_offset_seen(int64 job_id, int source, XLogRecPtr *offset)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(job_id), Int32GetDatum(source)};
	bool		isnull = true;
	Datum		d = (Datum) 0;

	backfill_spi_exec_args(source < 0 ?
						   "SELECT remote_lsn FROM backfill.job WHERE job_id = $1 AND $2 < 0" :
						   "SELECT remote_lsn FROM backfill.job_source WHERE job_id = $1 AND source = $2",
						   2, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
						  SPI_fnumber(SPI_tuptable->tupdesc, "remote_lsn"), &isnull);
	*offset = isnull ? InvalidXLogRecPtr : DatumGetLSN(d);
	return !isnull;
}

/*
 * backfill_job_record_remote_offset
 *		Record the offset of job_id's fetch on source (as above), the end of
 *		the source's WAL it saw (source_end: caught up when the offset
 *		reaches it) and the commit time of the last transaction it fetched
 *		(0: none).  Caller is connected to SPI.
 */
void
backfill_job_record_remote_offset(int64 job_id, int source, XLogRecPtr offset,
								  XLogRecPtr source_end, TimestampTz commit_time)
{
	Oid			types[5] = {INT8OID, PG_LSNOID, PG_LSNOID, TIMESTAMPTZOID, INT4OID};
	Datum		values[5] = {Int64GetDatum(job_id), LSNGetDatum(offset),
		LSNGetDatum(source_end), TimestampTzGetDatum(commit_time), Int32GetDatum(source)};
	char		nulls[5] = {' ', ' ', ' ', commit_time == 0 ? 'n' : ' ', ' '};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args(source < 0 ?
						   "UPDATE backfill.job SET remote_lsn = $2, remote_source_lsn = $3, "
						   "remote_caught_up_at = CASE WHEN $2 >= $3 THEN pg_catalog.now() "
						   "ELSE remote_caught_up_at END, "
						   "remote_last_commit = coalesce($4, remote_last_commit) WHERE job_id = $1 AND $5 < 0" :
						   "UPDATE backfill.job_source SET remote_lsn = $2, remote_source_lsn = $3, "
						   "remote_caught_up_at = CASE WHEN $2 >= $3 THEN pg_catalog.now() "
						   "ELSE remote_caught_up_at END, "
						   "remote_last_commit = coalesce($4, remote_last_commit) "
						   "WHERE job_id = $1 AND source = $5",
						   5, types, values, nulls, SPI_OK_UPDATE);
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
