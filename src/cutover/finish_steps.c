/*-------------------------------------------------------------------------
 *
 * finish_steps.c
 *	  The steps of backfill.finish_cutover() around its lock: the cutover
 *	  row read and checked, the old table checked to be the job's own, the
 *	  foreign keys the swap added NOT VALID validated, the old table
 *	  dropped, and the cutover row written finished.
 *
 * Only the job's own old table is dropped (its downstream since the swap,
 * or its upstream still when the cutover could not be rolled back and let
 * the job go), owned by the owner of the new one, whatever the cutover row
 * says.  Every statement runs as the caller through SPI, with the
 * extension's SQL functions for the cutover row and the line in
 * pg_stat_activity; the caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog/cutover_rows.h"
#include "cutover/finish.h"
#include "cutover/queries.h"
#include "lib/lib.h"

/* the cutover row, the fields _cutover_record is given again, in its order */
#define CUTOVER_ROW \
	"SELECT c.attempts, c.old_table, c.new_table, c.old_name, c.new_schema, c.new_name," \
	"       c.into_existing, c.lock_held_ms, c.state, c.to_validate" \
	"  FROM backfill.job_cutover c WHERE c.job_id = $1"

enum
{
	ROW_ATTEMPTS = 1, ROW_OLD_TABLE, ROW_NEW_TABLE, ROW_OLD_NAME, ROW_NEW_SCHEMA,
	ROW_NEW_NAME, ROW_INTO_EXISTING, ROW_LOCK_HELD_MS, ROW_STATE, ROW_TO_VALIDATE
};

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

/* a field of the cutover row; isnull set */
static Datum
row_field(CutoverFinish *f, int field, bool *isnull)
{
	return heap_getattr(f->row, field, f->row_desc, isnull);
}

static Oid
row_oid(CutoverFinish *f, int field)
{
	bool		isnull;
	Datum		d = row_field(f, field, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/* the cutover row, or NULL */
void
cutover_finish_read_row(CutoverFinish *f)
{
	cutover_job_id_query(CUTOVER_ROW, f->job.job_id);
	f->row_desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	f->row = SPI_processed > 0 ? SPI_copytuple(SPI_tuptable->vals[0]) : NULL;
}

/* the table that had the name before the cutover */
Oid
cutover_finish_old_table(CutoverFinish *f)
{
	return row_oid(f, ROW_OLD_TABLE);
}

/* a cutover to finish: the job has been cut over, and not rolled back or finished */
void
cutover_finish_check_cut_over(CutoverFinish *f)
{
	char	   *state = f->row ? SPI_getvalue(f->row, f->row_desc, ROW_STATE) : NULL;

	if (state == NULL || strcmp(state, "cut_over") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has not been cut over", f->job.job_id),
				 state == NULL ? errdetail("It has no cutover to finish.") :
				 errdetail("Its cutover is %s.", cutover_state_words(state))));
}

/* the old table, if it exists, is the job's own and its owner the new one's */
void
cutover_finish_check_old_table(CutoverFinish *f)
{
	Oid			types[4] = {OIDOID, OIDOID, OIDOID, OIDOID};
	Datum		values[4] = {ObjectIdGetDatum(row_oid(f, ROW_OLD_TABLE)),
		ObjectIdGetDatum(f->job.upstream), ObjectIdGetDatum(f->job.downstream),
	ObjectIdGetDatum(row_oid(f, ROW_NEW_TABLE))};
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
						backfill_regclass_text(row_oid(f, ROW_OLD_TABLE)), f->job.job_id),
				 errdetail("The old table of a cutover must be a table of the job, owned by the owner of the new table."),
				 errhint("Drop the table yourself if it is the one to drop, then use backfill.finish_cutover(" INT64_FORMAT ", keep => true).",
						 f->job.job_id)));
}

/* whether the old table exists */
bool
cutover_finish_old_table_exists(CutoverFinish *f)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(row_oid(f, ROW_OLD_TABLE))};
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
	Datum		values[1] = {row_field(f, ROW_TO_VALIDATE, &isnull)};
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
		backfill_spi_exec(psprintf("DROP TABLE %s", backfill_regclass_text(row_oid(f, ROW_OLD_TABLE))),
						  SPI_OK_UTILITY);
}

/* the cutover row says finished, and pg_stat_activity too */
void
cutover_finish_record(CutoverFinish *f)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};
	/* the row's own fields, into attempts to new_name, into_existing, lock_held_ms */
	int			fields[8] = {ROW_ATTEMPTS, ROW_OLD_TABLE, ROW_NEW_TABLE, ROW_OLD_NAME,
		ROW_NEW_SCHEMA, ROW_NEW_NAME, ROW_INTO_EXISTING, ROW_LOCK_HELD_MS};
	int			args[8] = {2, 3, 4, 5, 6, 7, 9, 10};

	cutover_statement_begin();
	values[0] = Int64GetDatum(f->job.job_id);
	values[1] = CStringGetTextDatum("finished");
	for (int i = 0; i < 8; i++)
		values[args[i]] = row_field(f, fields[i], &nulls[args[i]]);
	values[8] = BoolGetDatum(false);
	values[11] = (Datum) 0;
	nulls[11] = true;
	values[12] = BoolGetDatum(true);
	cutover_record(values, nulls);
	cutover_statement_end();
	cutover_report(f->job.job_id, "finished");
}
