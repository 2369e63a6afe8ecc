/*-------------------------------------------------------------------------
 *
 * job_rows.c
 *	  A new job's rows in backfill.job and backfill.actor, as create_job
 *	  (src/api/create.c) writes them; the count of jobs its caps read; the
 *	  kind and state table rebuild_actors (src/api/control.c) reads.
 *
 * Only the extension's owner writes the catalogs: the callers act in a
 * catalog context (privilege.c) on behalf of a caller whose right was
 * checked first.  Nothing here commits; an error rolls the whole of
 * create_job back.  The caller is connected to SPI.
 *
 * The caps on jobs (create.c) hold whatever the creators' isolation level:
 * the jobs are counted with a snapshot taken at the count, not the
 * transaction's, and two creators count in turn, each after the other's
 * job is committed or rolled back.  On one upstream the lock create_job
 * holds on it, SHARE ROW EXCLUSIVE, makes them wait for each other; for
 * one role an advisory lock of the role's does, field4
 * BACKFILL_CAPS_LOCK_FIELD4, which pg_advisory_lock() never uses, held to
 * the end of the transaction (backfill_lock_role_jobs).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "catalog/job_holdings.h"
#include "catalog/job_rows.h"
#include "lib/lib.h"

/* the columns of backfill.job that every catalog has, $5 unused */
#define JOB_COLUMNS_1_0 \
	"job_id, job_name, kind, upstream, downstream_name, downstream, state_table, " \
	"change_table, columns, pk_columns, fragment_id, parallelism, chunk_size, " \
	"total_rows, ddl_statement, rate_limit, owner"
#define JOB_VALUES_1_0 \
	"$1, $2, $3, $4, $6, $6::pg_catalog.regclass, $7::pg_catalog.regclass, " \
	"$8::pg_catalog.regclass, $9, $10, $11, $12, $13, $14, $15, $16, " \
	"$17::pg_catalog.regrole"
/* those of a catalog of version 1.2 */
#define JOB_COLUMNS_1_2 ", filter, expressions, source_columns, into_existing"
#define JOB_VALUES_1_2 ", $18, $19, $20, $21"

/*
 * backfill_insert_job_rows
 *		The catalog rows of a new job: the job's, its range vnodes' bounds,
 *		and its actors', parallelism of them over even contiguous ranges of
 *		vnodes.  Caller acts as the extension's owner.
 */
void
backfill_insert_job_rows(const NewJobRow *row)
{
	Datum		actor_ids[BACKFILL_MAX_PARALLELISM];
	Datum		vnode_starts[BACKFILL_MAX_PARALLELISM];
	Datum		vnode_ends[BACKFILL_MAX_PARALLELISM];
	int64		job_id = row->job_id;

	{
		Oid			argtypes[21] = {INT8OID, TEXTOID, TEXTOID, OIDOID, OIDOID,
		TEXTOID, TEXTOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID, INT4OID, INT4OID,
		INT4OID, INT8OID, TEXTOID, INT4OID, OIDOID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID,
		BOOLOID};
		Datum		values[21];
		char		nulls[21];
		int			nargs = 17;

		values[0] = Int64GetDatum(job_id);
		values[1] = CStringGetTextDatum(row->name);
		values[2] = CStringGetTextDatum(row->kind);
		values[3] = ObjectIdGetDatum(row->upstream);
		values[4] = ObjectIdGetDatum(row->upstream);
		values[5] = CStringGetTextDatum(row->downstream_sql);
		values[6] = CStringGetTextDatum(row->state_sql);
		values[7] = CStringGetTextDatum(row->changes_sql);
		values[8] = PointerGetDatum(row->columns);
		values[9] = PointerGetDatum(row->pk_columns);
		values[10] = Int32GetDatum(row->fragment_id);
		values[11] = Int32GetDatum(row->parallelism);
		values[12] = Int32GetDatum(row->chunk_size);
		values[13] = Int64GetDatum(row->total_rows);
		values[14] = CStringGetTextDatum(row->ddl_statement);
		values[15] = Int32GetDatum(row->rate_limit);
		values[16] = ObjectIdGetDatum(row->owner);
		memset(nulls, ' ', sizeof(nulls));
		if (row->rate_limit < 0)
			nulls[15] = 'n';
		/* what a catalog of version 1.2 has: checked by create_job first */
		if (backfill_job_catalog_has("expressions"))
		{
			values[17] = row->filter ? CStringGetTextDatum(row->filter) : (Datum) 0;
			nulls[17] = row->filter ? ' ' : 'n';
			values[18] = PointerGetDatum(row->expressions);
			nulls[18] = row->expressions ? ' ' : 'n';
			values[19] = PointerGetDatum(row->source_columns);
			values[20] = BoolGetDatum(row->into_existing);
			nargs = 21;
		}

		/* $5 is unused: relations are stored as regclass, which dumps by name */
		if (SPI_execute_with_args(psprintf("INSERT INTO backfill.job (" JOB_COLUMNS_1_0 "%s) "
										   "VALUES (" JOB_VALUES_1_0 "%s)",
										   nargs > 17 ? JOB_COLUMNS_1_2 : "",
										   nargs > 17 ? JOB_VALUES_1_2 : ""),
								  nargs, argtypes, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into backfill.job");
	}

	/* range vnodes: the mapping and its bounds */
	if (row->vnode_bounds)
		backfill_spi_exec_args("UPDATE backfill.job SET vnode_mapping = 'range', vnode_bounds = $2 "
							   "WHERE job_id = $1", 2, (Oid[]) {INT8OID, TEXTARRAYOID},
							   (Datum[]) {Int64GetDatum(job_id), PointerGetDatum(row->vnode_bounds)},
							   NULL, SPI_OK_UPDATE);

	/* its actors: even contiguous ranges of vnodes */
	for (int i = 0; i < row->parallelism; i++)
	{
		actor_ids[i] = Int32GetDatum((int32) backfill_next_id("actor_id_seq"));
		vnode_starts[i] = Int16GetDatum((int16) (i * BACKFILL_VNODE_COUNT / row->parallelism));
		vnode_ends[i] = Int16GetDatum((int16) ((i + 1) * BACKFILL_VNODE_COUNT / row->parallelism - 1));
	}
	{
		Oid			argtypes[5] = {INT4ARRAYOID, INT8OID, INT4OID, INT2ARRAYOID, INT2ARRAYOID};
		Datum		values[5];

		values[0] = PointerGetDatum(construct_array(actor_ids, row->parallelism, INT4OID,
													4, true, TYPALIGN_INT));
		values[1] = Int64GetDatum(job_id);
		values[2] = Int32GetDatum(row->fragment_id);
		values[3] = PointerGetDatum(construct_array(vnode_starts, row->parallelism, INT2OID,
													2, true, TYPALIGN_SHORT));
		values[4] = PointerGetDatum(construct_array(vnode_ends, row->parallelism, INT2OID,
													2, true, TYPALIGN_SHORT));
		if (SPI_execute_with_args("INSERT INTO backfill.actor (actor_id, job_id, fragment_id, "
								  "vnode_start, vnode_end) "
								  "SELECT a, $2, $3, s, e FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($4), pg_catalog.unnest($5)) AS u(a, s, e)",
								  5, argtypes, values, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into backfill.actor");
	}
}

/*
 * backfill_lock_role_jobs
 *		Until the transaction ends, the lock under which the jobs of role
 *		owner are counted and a new one created: a second creator of the
 *		role's waits for the first one's commit, then counts its job.
 */
void
backfill_lock_role_jobs(Oid owner)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) owner, 0, BACKFILL_CAPS_LOCK_FIELD4);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * backfill_count_live_jobs
 *		The jobs that are not cancelled on table upstream, and those of role
 *		owner, into *on_upstream and *of_role, as committed now: with a
 *		snapshot of its own, not the transaction's, which in REPEATABLE READ
 *		or SERIALIZABLE was taken before the caller's locks were granted.
 *		Reads every role's jobs, so the caller acts as the extension's owner.
 */
void
backfill_count_live_jobs(Oid upstream, Oid owner, int64 *on_upstream, int64 *of_role)
{
	bool		isnull;
	int			rc;

	PushActiveSnapshot(GetLatestSnapshot());
	rc = SPI_execute_with_args("SELECT pg_catalog.count(*) FILTER (WHERE upstream::pg_catalog.oid OPERATOR(pg_catalog.=) $1) AS on_upstream, "
							   "       pg_catalog.count(*) FILTER (WHERE owner::pg_catalog.oid OPERATOR(pg_catalog.=) $2) AS of_role "
							   "  FROM backfill.job WHERE status OPERATOR(pg_catalog.<>) 'cancelled'",
							   2, (Oid[]) {OIDOID, OIDOID},
							   (Datum[]) {ObjectIdGetDatum(upstream), ObjectIdGetDatum(owner)},
							   NULL, true, 1);
	PopActiveSnapshot();
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read backfill.job");
	*on_upstream = DatumGetInt64(backfill_spi_column(SPI_tuptable, 0, "on_upstream", &isnull));
	*of_role = DatumGetInt64(backfill_spi_column(SPI_tuptable, 0, "of_role", &isnull));
}

/*
 * backfill_job_kind_state
 *		A job's kind, by its name in the catalog, and its state table's SQL
 *		name (NULL when it has none).
 */
void
backfill_job_kind_state(int64 job_id, char **kind, char **state_table)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};

	backfill_spi_exec_args("SELECT kind, state_table::pg_catalog.text AS state_table "
						   "FROM backfill.job WHERE job_id = $1",
						   1, types, values, NULL, SPI_OK_SELECT);
	*kind = backfill_spi_column_text(SPI_tuptable, 0, "kind");
	*state_table = backfill_spi_column_text(SPI_tuptable, 0, "state_table");
}
