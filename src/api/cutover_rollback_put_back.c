/*-------------------------------------------------------------------------
 *
 * cutover_rollback_put_back.c
 *	  The new table of a cutover put back where it was before it, by
 *	  backfill.rollback_cutover() (cutover_rollback.c): its old name checked
 *	  free in its old schema before anything is locked, then, after the
 *	  swap, the table moved back to that schema and the foreign keys to
 *	  itself that the cutover added dropped.
 *
 * The table is the job's downstream again, as it was.  Each statement
 * runs as the caller through SPI; the caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "api/cutover.h"
#include "lib/lib.h"

/* the foreign keys of the new table to itself that the cutover added */
#define OWN_KEYS \
	"SELECT k.conrelid::regclass::text, k.conname::text FROM pg_constraint k" \
	" WHERE k.oid = ANY ($5) AND k.conrelid = $3 AND k.confrelid = $3" \
	" ORDER BY k.conname"

/* the new table's old name is free in its old schema */
void
cutover_rollback_check_name_free(RollbackRow *row)
{
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		values[2] = {row->values[ROLLBACK_ROW_NEW_NAME - 1],
	row->values[ROLLBACK_ROW_NEW_SCHEMA - 1]};
	bool		isnull;

	backfill_spi_exec_args("SELECT EXISTS (SELECT FROM pg_class WHERE relname = $1 AND relnamespace = $2),"
						   "       $2::regnamespace::text",
						   2, types, values, NULL, SPI_OK_SELECT);
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists in schema %s",
						cutover_rollback_row_text(row, ROLLBACK_ROW_NEW_NAME),
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
				 errdetail("The rollback gives the new table back the name it had before the cutover.")));
}

/*
 * After the swap: the new table goes back to its schema, and the foreign
 * keys of the new table to itself that the cutover added go with it: the
 * table is the job's downstream again, as it was
 */
void
cutover_rollback_put_back(CutoverJobRow *job, RollbackRow *row)
{
	Oid			new_schema = cutover_rollback_row_oid(row, ROLLBACK_ROW_NEW_SCHEMA);
	int			n;
	char	  **tables;
	char	  **keys;

	if (new_schema != get_rel_namespace(job->upstream))
		backfill_spi_exec(psprintf("ALTER TABLE %s SET SCHEMA %s",
								   backfill_regclass_text(job->upstream),
								   quote_identifier(get_namespace_name(new_schema))),
						  SPI_OK_UTILITY);
	n = cutover_job_query(OWN_KEYS, job, OIDARRAYOID, row->values[ROLLBACK_ROW_TO_VALIDATE - 1],
						  row->nulls[ROLLBACK_ROW_TO_VALIDATE - 1]);
	tables = palloc(sizeof(char *) * Max(n, 1));
	keys = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		tables[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		keys[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
	for (int i = 0; i < n; i++)
		backfill_spi_exec(psprintf("ALTER TABLE %s DROP CONSTRAINT %s", tables[i],
								   quote_identifier(keys[i])),
						  SPI_OK_UTILITY);
}
