/*-------------------------------------------------------------------------
 *
 * job_holdings.c
 *	  The jobs that hold a table, a key or a role's objects: what the checks
 *	  of DDL (src/api/event_trigger.c and its ddl_*.c) read of backfill.job.
 *
 * Each function here runs one statement on backfill.job and hands back its
 * rows as values, their columns read by name.  The checks read every job,
 * whoever runs the DDL, so their callers act as the extension's owner
 * (privilege.c); nothing here writes.  The caller is connected to SPI, and
 * the values read live as long as that connection.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/partition.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "catalog/job_holdings.h"
#include "lib/lib.h"

/*
 * backfill_spi_column
 *		Column name of row of an SPI result, as pg_cron reads its catalog's
 *		columns: by name, so that a statement's select list may change.
 */
Datum
backfill_spi_column(SPITupleTable *tuptable, uint64 row, const char *name, bool *isnull)
{
	int			fnumber = SPI_fnumber(tuptable->tupdesc, name);

	if (fnumber <= 0)
		elog(ERROR, "no column \"%s\" in the result", name);
	return SPI_getbinval(tuptable->vals[row], tuptable->tupdesc, fnumber, isnull);
}

/* the same, as text (NULL for a null) */
char *
backfill_spi_column_text(SPITupleTable *tuptable, uint64 row, const char *name)
{
	int			fnumber = SPI_fnumber(tuptable->tupdesc, name);

	if (fnumber <= 0)
		elog(ERROR, "no column \"%s\" in the result", name);
	return SPI_getvalue(tuptable->vals[row], tuptable->tupdesc, fnumber);
}

/* the jobs of an SPI result, as far as it has their columns */
static JobHolding *
holdings_of(SPITupleTable *tuptable, uint64 n)
{
	JobHolding *jobs = palloc0(sizeof(JobHolding) * Max(n, 1));
	static const char *const table_columns[JOB_TABLE_COUNT] = {
		[JOB_TABLE_UPSTREAM] = "upstream",
		[JOB_TABLE_DOWNSTREAM] = "downstream",
		[JOB_TABLE_STATE] = "state_table",
		[JOB_TABLE_CHANGE] = "change_table",
	};
	TupleDesc	desc = tuptable->tupdesc;

	for (uint64 i = 0; i < n; i++)
	{
		JobHolding *job = &jobs[i];
		bool		isnull;

		job->job_id = DatumGetInt64(backfill_spi_column(tuptable, i, "job_id", &isnull));
		for (int t = 0; t < JOB_TABLE_COUNT; t++)
		{
			if (SPI_fnumber(desc, table_columns[t]) <= 0)
				continue;
			job->tables[t] = DatumGetObjectId(backfill_spi_column(tuptable, i, table_columns[t],
																  &isnull));
			if (isnull)
				job->tables[t] = InvalidOid;
		}
		job->pk_columns = backfill_spi_column(tuptable, i, "pk_columns", &job->pk_columns_null);
		if (SPI_fnumber(desc, "columns") <= 0)
			continue;			/* a job's key and upstream only */
		job->columns = backfill_spi_column(tuptable, i, "columns", &job->columns_null);
		job->source_columns = backfill_spi_column(tuptable, i, "source_columns",
												  &job->source_columns_null);
		job->expressions = backfill_spi_column(tuptable, i, "expressions",
											   &job->expressions_null);
		job->filter = backfill_spi_column_text(tuptable, i, "filter");
		job->into_existing = DatumGetBool(backfill_spi_column(tuptable, i, "into_existing",
															  &isnull));
	}
	return jobs;
}

/*
 * backfill_jobs_holding
 *		The jobs that are not cancelled and have relid as one of their
 *		tables (upstream or downstream; every job when relid is InvalidOid),
 *		in job order, and what they hold: the tables, then the columns, the
 *		key, the upstream columns read, the computed columns' expressions,
 *		the filter and whether the downstream is a table the user made (a
 *		catalog older than 1.2 has no such thing: the columns it copies are
 *		all it reads).  Returns their number.
 */
int
backfill_jobs_holding(Oid relid, JobHolding **jobs)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *sql;

	sql = psprintf("SELECT j.job_id, j.upstream::pg_catalog.oid AS upstream, "
				   "       j.downstream::pg_catalog.oid AS downstream, "
				   "       j.state_table::pg_catalog.oid AS state_table, "
				   "       j.change_table::pg_catalog.oid AS change_table, "
				   "       j.columns, j.pk_columns, %s "
				   "  FROM backfill.job j WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled'%s "
				   " ORDER BY j.job_id",
				   backfill_job_catalog_has("source_columns") ?
				   "coalesce(j.source_columns, j.columns) AS source_columns, j.expressions, "
				   "j.filter, j.into_existing" :
				   "j.columns AS source_columns, NULL::pg_catalog.text[] AS expressions, "
				   "NULL::pg_catalog.text AS filter, false AS into_existing",
				   OidIsValid(relid) ?
				   " AND (j.upstream OPERATOR(pg_catalog.=) $1 "
				   "OR j.downstream OPERATOR(pg_catalog.=) $1)" : "");
	if (SPI_execute_with_args(sql, OidIsValid(relid) ? 1 : 0, argtypes, values, NULL,
							  true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	*jobs = holdings_of(SPI_tuptable, SPI_processed);
	return (int) SPI_processed;
}

/*
 * backfill_jobs_over
 *		The jobs, not cancelled, whose upstream is relid or, when relid is a
 *		partition, one of its ancestors: their ids into *ids, their number
 *		returned.  With unfinished_cdc, only those of kind cdc that have not
 *		finished.
 */
int
backfill_jobs_over(Oid relid, bool unfinished_cdc, int64 **ids)
{
	List	   *tables = list_make1_oid(relid);
	Datum	   *oids;
	Oid			argtypes[1] = {OIDARRAYOID};
	Datum		values[1];
	ListCell   *lc;
	int			n = 0;

	if (get_rel_relispartition(relid))
		tables = list_concat(tables, get_partition_ancestors(relid));
	oids = palloc(sizeof(Datum) * list_length(tables));
	foreach(lc, tables)
		oids[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	values[0] = PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	backfill_spi_exec_args(psprintf("SELECT job_id FROM backfill.job "
									"WHERE status OPERATOR(pg_catalog.<>) 'cancelled' "
									"AND upstream::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1)%s "
									"ORDER BY job_id",
									unfinished_cdc ?
									" AND kind OPERATOR(pg_catalog.=) 'cdc' "
									"AND status OPERATOR(pg_catalog.<>) 'finished'" : ""),
						   1, argtypes, values, NULL, SPI_OK_SELECT);
	*ids = palloc(sizeof(int64) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		(*ids)[i] = DatumGetInt64(backfill_spi_column(SPI_tuptable, i, "job_id", &isnull));
	}
	return (int) SPI_processed;
}

/*
 * backfill_jobs_with_key_bounds
 *		The jobs with range vnodes, whose bounds hold keys as text, that have
 *		not finished and are not cancelled: their ids, upstreams and keys
 *		(JobHolding's job_id, tables[JOB_TABLE_UPSTREAM] and pk_columns).
 */
int
backfill_jobs_with_key_bounds(JobHolding **jobs)
{
	backfill_spi_exec("SELECT job_id, upstream::pg_catalog.oid AS upstream, pk_columns "
					  "FROM backfill.job "
					  "WHERE vnode_bounds IS NOT NULL "
					  "AND status OPERATOR(pg_catalog.<>) ALL (ARRAY['finished', 'cancelled']) "
					  "ORDER BY job_id", SPI_OK_SELECT);
	*jobs = holdings_of(SPI_tuptable, SPI_processed);
	return (int) SPI_processed;
}

/* whether job_id is a job that is not cancelled */
bool
backfill_job_not_cancelled(int64 job_id)
{
	backfill_spi_exec_args("SELECT FROM backfill.job WHERE job_id OPERATOR(pg_catalog.=) $1 "
						   "AND status OPERATOR(pg_catalog.<>) 'cancelled'",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_SELECT);
	return SPI_processed > 0;
}

/*
 * backfill_jobs_given_away
 *		The jobs of roles (an oid[] Datum) whose state table another role
 *		owns now (REASSIGN OWNED gave it away): their ids, state tables and
 *		the state tables' owners, in job order; their number returned.
 */
int
backfill_jobs_given_away(Datum roles, int64 **ids, Oid **state_tables, Oid **owners)
{
	Oid			argtypes[1] = {OIDARRAYOID};

	backfill_spi_exec_args("SELECT j.job_id, c.oid AS state_table, c.relowner FROM backfill.job j "
						   "JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) j.state_table::pg_catalog.oid "
						   "WHERE j.owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
						   "AND c.relowner OPERATOR(pg_catalog.<>) j.owner::pg_catalog.oid "
						   "ORDER BY j.job_id",
						   1, argtypes, &roles, NULL, SPI_OK_SELECT);
	*ids = palloc(sizeof(int64) * Max(SPI_processed, 1));
	*state_tables = palloc(sizeof(Oid) * Max(SPI_processed, 1));
	*owners = palloc(sizeof(Oid) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		(*ids)[i] = DatumGetInt64(backfill_spi_column(SPI_tuptable, i, "job_id", &isnull));
		(*state_tables)[i] = DatumGetObjectId(backfill_spi_column(SPI_tuptable, i, "state_table",
																  &isnull));
		(*owners)[i] = DatumGetObjectId(backfill_spi_column(SPI_tuptable, i, "relowner",
															&isnull));
	}
	return (int) SPI_processed;
}

/*
 * backfill_jobs_owned
 *		The jobs, cancelled ones too, that roles (an oid[] Datum) own: their
 *		ids, in job order; their number returned.
 */
int
backfill_jobs_owned(Datum roles, int64 **ids)
{
	Oid			argtypes[1] = {OIDARRAYOID};

	backfill_spi_exec_args("SELECT job_id FROM backfill.job "
						   "WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) ORDER BY job_id",
						   1, argtypes, &roles, NULL, SPI_OK_SELECT);
	*ids = palloc(sizeof(int64) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		(*ids)[i] = DatumGetInt64(backfill_spi_column(SPI_tuptable, i, "job_id", &isnull));
	}
	return (int) SPI_processed;
}

/*
 * backfill_other_job_over
 *		The first job other than job_id, not cancelled, whose upstream or
 *		downstream is a or b, whoever owns it; 0 if none.
 */
int64
backfill_other_job_over(int64 job_id, Oid a, Oid b)
{
	Oid			argtypes[3] = {INT8OID, OIDOID, OIDOID};
	Datum		values[3] = {Int64GetDatum(job_id), ObjectIdGetDatum(a), ObjectIdGetDatum(b)};
	bool		isnull;

	backfill_spi_exec_args("SELECT job_id FROM backfill.job "
						   "WHERE job_id OPERATOR(pg_catalog.<>) $1 "
						   "AND status OPERATOR(pg_catalog.<>) 'cancelled' "
						   "AND (upstream::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY[$2, $3]) "
						   "OR downstream::pg_catalog.oid OPERATOR(pg_catalog.=) ANY (ARRAY[$2, $3])) "
						   "ORDER BY job_id LIMIT 1",
						   3, argtypes, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt64(backfill_spi_column(SPI_tuptable, 0, "job_id", &isnull));
}
