/*-------------------------------------------------------------------------
 *
 * cutover_rows.c
 *	  A job's row of backfill.job_cutover, and its row of backfill.job as a
 *	  cutover turns it around (src/api/cutover.c).
 *
 * Only the extension's owner writes the catalogs: the callers act in a
 * catalog context (privilege.c) on behalf of a caller who owns the job.
 * The caller is connected to SPI; nothing here commits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "backfill.h"
#include "catalog/cutover_rows.h"
#include "lib/lib.h"

/*
 * The job's cutover row, inserted or replaced: values and nulls in the
 * order of backfill._cutover_record's arguments (job_id, state, attempts,
 * old_table, new_table, old_name, new_schema, new_name, reversible,
 * into_existing, lock_held_ms, to_validate, finished).
 */
void
backfill_record_cutover(Datum *values, const char *nulls)
{
	Oid			types[CUTOVER_RECORD_ARGS] = {INT8OID, TEXTOID, INT4OID, OIDOID, OIDOID,
		TEXTOID, OIDOID, TEXTOID, BOOLOID, BOOLOID, FLOAT8OID, OIDARRAYOID, BOOLOID};

	backfill_spi_exec_args("INSERT INTO backfill.job_cutover AS c "
						   "(job_id, state, attempts, old_table, new_table, old_name, "
						   " new_schema, new_name, reversible, into_existing, lock_held_ms, "
						   " to_validate, swapped_at, finished_at) "
						   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
						   " pg_catalog.now(), CASE WHEN $13 THEN pg_catalog.now() END) "
						   "ON CONFLICT (job_id) DO UPDATE SET state = $2, attempts = $3, "
						   " old_table = $4, new_table = $5, old_name = $6, new_schema = $7, "
						   " new_name = $8, reversible = $9, into_existing = $10, "
						   " lock_held_ms = $11, to_validate = $12, "
						   " swapped_at = CASE WHEN $13 THEN c.swapped_at ELSE pg_catalog.now() END, "
						   " finished_at = CASE WHEN $13 THEN pg_catalog.now() END",
						   CUTOVER_RECORD_ARGS, types, values, nulls, SPI_OK_INSERT);
}

/*
 * The job out of the DDL guard's sight for the moment its triggers leave
 * the old table, inside the caller's transaction (status cancelled, which
 * backfill_turn_job_row sets back): no one else ever sees it.
 */
void
backfill_hide_job_status(int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};

	backfill_spi_exec_args("UPDATE backfill.job SET status = 'cancelled' WHERE job_id = $1",
						   1, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * The job turned around: its downstream is its upstream and the other way
 * round, finished; into_existing says whether its new downstream is a
 * table of the user's.
 */
void
backfill_turn_job_row(int64 job_id, bool into_existing)
{
	Oid			types[2] = {INT8OID, BOOLOID};
	Datum		values[2] = {Int64GetDatum(job_id), BoolGetDatum(into_existing)};

	backfill_spi_exec_args("UPDATE backfill.job SET status = 'finished', "
						   "upstream = downstream, downstream = upstream, "
						   "downstream_name = (SELECT c.relname FROM pg_catalog.pg_class c "
						   "                    WHERE c.oid OPERATOR(pg_catalog.=) upstream), "
						   "into_existing = $2 "
						   "WHERE job_id = $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
}

/*
 * backfill_cutover_row_into_existing
 *		Whether the job's cutover row says its downstream was, before the
 *		cutover, a table of the user's (into_existing); false when the job
 *		has no row.  Caller is connected to SPI.
 */
bool
backfill_cutover_row_into_existing(int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;
	bool		into_existing;

	if (SPI_execute_with_args("SELECT into_existing FROM backfill.job_cutover "
							  "WHERE job_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the cutover row of backfill job %lld", (long long) job_id);
	if (SPI_processed == 0)
		return false;
	into_existing = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	return !isnull && into_existing;
}

/*
 * backfill_cutover_row_tables
 *		The tables of the job's cutover row into *old_table and *new_table;
 *		false, and both invalid, when the job has none.  *swapped says
 *		whether the row's state is cut_over (the swap is in place).
 */
bool
backfill_cutover_row_tables(int64 job_id, Oid *old_table, Oid *new_table, bool *swapped)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;

	*old_table = *new_table = InvalidOid;
	*swapped = false;
	if (SPI_execute_with_args("SELECT old_table, new_table, state OPERATOR(pg_catalog.=) 'cut_over' "
							  "FROM backfill.job_cutover WHERE job_id OPERATOR(pg_catalog.=) $1",
							  1, types, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the cutover row of backfill job %lld", (long long) job_id);
	if (SPI_processed == 0)
		return false;
	*old_table = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*new_table = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	*swapped = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	return true;
}
