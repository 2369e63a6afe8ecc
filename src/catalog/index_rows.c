/*-------------------------------------------------------------------------
 *
 * index_rows.c
 *	  The rows of backfill.job_index, the indexes of a job's downstream
 *	  still to build once its snapshot is copied (src/copy/index_build.c),
 *	  and the job's indexes flag in backfill.job (NULL: as a migration
 *	  needs), which also says whether the job gives its downstream the
 *	  upstream's foreign keys once it follows (src/copy/foreign_keys.c).
 *
 * Only the extension's owner writes the catalogs: each function here acts
 * in a catalog context (privilege.c) on behalf of a caller whose right was
 * checked first.  The caller is connected to SPI; nothing here commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "catalog/index_rows.h"
#include "lib/lib.h"

/* an index of the job's downstream to build after its snapshot */
void
backfill_record_pending_index(int64 job_id, int position, const char *name,
							  const char *head, const char *tail)
{
	Oid			argtypes[5] = {INT8OID, INT4OID, NAMEOID, TEXTOID, TEXTOID};
	Datum		values[5];
	RoleContext rc;

	values[0] = Int64GetDatum(job_id);
	values[1] = Int32GetDatum(position);
	values[2] = CStringGetDatum(name);
	values[3] = CStringGetTextDatum(head);
	values[4] = CStringGetTextDatum(tail);
	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("INSERT INTO backfill.job_index (job_id, position, index_name, head, tail) "
						   "VALUES ($1, $2, $3, $4, $5)", 5, argtypes, values, NULL, SPI_OK_INSERT);
	backfill_role_leave(&rc);
}

/*
 * The indexes the job is still to build, in their order, in the caller's
 * memory context; their number.
 */
int
backfill_pending_indexes(int64 job_id, PendingIndex **pending)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	RoleContext rc;
	int			npending;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("SELECT index_name::pg_catalog.text AS index_name, head, tail "
						   "FROM backfill.job_index WHERE job_id = $1 ORDER BY position",
						   1, argtypes, values, NULL, SPI_OK_SELECT);
	backfill_role_leave(&rc);
	npending = (int) SPI_processed;
	*pending = palloc(sizeof(PendingIndex) * Max(npending, 1));
	for (int i = 0; i < npending; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		(*pending)[i].name = SPI_getvalue(tup, desc, SPI_fnumber(desc, "index_name"));
		(*pending)[i].head = SPI_getvalue(tup, desc, SPI_fnumber(desc, "head"));
		(*pending)[i].tail = SPI_getvalue(tup, desc, SPI_fnumber(desc, "tail"));
	}
	SPI_freetuptable(SPI_tuptable);
	return npending;
}

/* the job's indexes are built: none is pending any more */
void
backfill_forget_pending_indexes(int64 job_id)
{
	backfill_catalog_write("DELETE FROM backfill.job_index WHERE job_id = $1",
						   job_id, true, 0, SPI_OK_DELETE);
}

/* the job gave its downstream the upstream's other indexes */
void
backfill_mark_job_indexes(int64 job_id)
{
	backfill_catalog_write("UPDATE backfill.job SET indexes = true WHERE job_id = $1",
						   job_id, true, 0, SPI_OK_UPDATE);
}

/*
 * The job was made with "indexes" NULL, as a migration needs: recorded as
 * NULL, so that recreate_job makes it so again.  A catalog before 1.4,
 * whose column takes no NULL, keeps false.
 */
void
backfill_mark_job_indexes_default(int64 job_id)
{
	backfill_catalog_write("UPDATE backfill.job SET indexes = NULL WHERE job_id = $1 "
						   "AND NOT (SELECT a.attnotnull FROM pg_catalog.pg_attribute a "
						   "WHERE a.attrelid OPERATOR(pg_catalog.=) 'backfill.job'::pg_catalog.regclass "
						   "AND a.attname OPERATOR(pg_catalog.=) 'indexes')",
						   job_id, true, 0, SPI_OK_UPDATE);
}

/*
 * Whether the job was made as a migration's whole-table copy (its indexes
 * flag NULL, no filter, no expressions, not into a table of the user's)
 * and has not been cut over: its downstream is its own copy, to stand in
 * for the upstream, which gets the upstream's foreign keys once it follows.
 */
bool
backfill_job_gives_foreign_keys(int64 job_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	RoleContext rc;
	bool		gives;

	backfill_catalog_enter(&rc);
	gives = backfill_spi_true_args("SELECT EXISTS (SELECT FROM backfill.job j "
								   "WHERE j.job_id OPERATOR(pg_catalog.=) $1 "
								   "AND j.indexes IS NULL AND NOT j.into_existing "
								   "AND j.filter IS NULL AND j.expressions IS NULL "
								   "AND NOT EXISTS (SELECT FROM backfill.job_cutover c "
								   "WHERE c.job_id OPERATOR(pg_catalog.=) j.job_id))",
								   1, argtypes, values);
	backfill_role_leave(&rc);
	return gives;
}
