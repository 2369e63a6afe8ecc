/*-------------------------------------------------------------------------
 *
 * finish_steps.c
 *	  The steps of backfill.finish_cutover() around its lock that act on
 *	  the old table: the old table checked to be the job's own, the foreign
 *	  keys the swap added NOT VALID validated, and the old table dropped.
 *	  The cutover row, read, checked and written finished, is finish_row.c's.
 *
 * Only the job's own old table is dropped (its downstream since the swap,
 * or its upstream still when the cutover could not be rolled back and let
 * the job go), owned by the owner of the new one, whatever the cutover row
 * says.  Every statement runs as the caller through SPI; the caller is
 * connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "cutover/finish.h"
#include "lib/lib.h"

/* whether the old table is one finish_cutover must not drop */
#define NOT_OURS \
	"SELECT EXISTS (SELECT FROM pg_class WHERE oid = $1)" \
	"   AND ($1 IS DISTINCT FROM $2 AND $1 IS DISTINCT FROM $3" \
	"        OR (SELECT o.relowner FROM pg_class o WHERE o.oid = $1)" \
	"           IS DISTINCT FROM (SELECT n.relowner FROM pg_class n WHERE n.oid = $4))"

/* the foreign keys the swap added NOT VALID, not valid yet */
#define TO_VALIDATE \
	"SELECT k.conrelid::regclass, k.conname FROM pg_constraint k" \
	" WHERE k.oid = ANY ($1) AND NOT k.convalidated"

/* a query with $1.. of the given types, its rows in SPI_tuptable */
static void
query(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	backfill_spi_exec_args(sql, nargs, types, values, nulls, SPI_OK_SELECT);
}

/* the old table, if it exists, is the job's own and its owner the new one's */
void
cutover_finish_check_old_table(CutoverFinish *f)
{
	Oid			types[4] = {OIDOID, OIDOID, OIDOID, OIDOID};
	Datum		values[4] = {
		ObjectIdGetDatum(cutover_finish_row_oid(f, FINISH_ROW_OLD_TABLE)),
		ObjectIdGetDatum(f->job.upstream), ObjectIdGetDatum(f->job.downstream),
		ObjectIdGetDatum(cutover_finish_row_oid(f, FINISH_ROW_NEW_TABLE))};
	char		nulls[4];
	bool		isnull;
	Datum		refuse;

	for (int i = 0; i < 4; i++)
		nulls[i] = OidIsValid(DatumGetObjectId(values[i])) ? ' ' : 'n';
	query(NOT_OURS, 4, types, values, nulls);
	refuse = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull && DatumGetBool(refuse))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot drop table %s at the end of the cutover of backfill job " INT64_FORMAT,
						backfill_regclass_text(cutover_finish_row_oid(f, FINISH_ROW_OLD_TABLE)),
						f->job.job_id),
				 errdetail("The old table of a cutover must be a table of the job, owned by the owner of the new table."),
				 errhint("Drop the table yourself if it is the one to drop, then use backfill.finish_cutover(" INT64_FORMAT ", keep => true).",
						 f->job.job_id)));
}

/* whether the old table exists */
bool
cutover_finish_old_table_exists(CutoverFinish *f)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(cutover_finish_row_oid(f, FINISH_ROW_OLD_TABLE))};
	bool		isnull;

	query("SELECT EXISTS (SELECT FROM pg_class WHERE oid = $1)", 1, types, values, NULL);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* the foreign keys the swap added NOT VALID are validated, as the caller */
void
cutover_finish_validate_keys(CutoverFinish *f)
{
	Oid			types[1] = {OIDARRAYOID};
	bool		isnull;
	Datum		values[1] = {cutover_finish_row_field(f, FINISH_ROW_TO_VALIDATE, &isnull)};
	char		nulls[1] = {isnull ? 'n' : ' '};
	int			n;
	Oid		   *children;
	char	  **names;

	query(TO_VALIDATE, 1, types, values, nulls);
	n = (int) SPI_processed;
	children = palloc(sizeof(Oid) * Max(n, 1));
	names = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		children[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
													 1, &isnull));
		names[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
	for (int i = 0; i < n; i++)
		backfill_spi_exec(psprintf("ALTER TABLE %s VALIDATE CONSTRAINT %s",
								   backfill_regclass_text(children[i]), quote_identifier(names[i])),
						  SPI_OK_UTILITY);
}

/* the old table dropped, as the caller, unless keep or it is gone */
void
cutover_finish_drop_old_table(CutoverFinish *f)
{
	if (!f->keep && cutover_finish_old_table_exists(f))
		backfill_spi_exec(psprintf("DROP TABLE %s",
								   backfill_regclass_text(cutover_finish_row_oid(f, FINISH_ROW_OLD_TABLE))),
						  SPI_OK_UTILITY);
}
