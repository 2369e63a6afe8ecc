/*-------------------------------------------------------------------------
 *
 * finish_row.c
 *	  The cutover row as backfill.finish_cutover() reads it, checks it and
 *	  writes it finished, with its line in pg_stat_activity.
 *
 * The row is read as the caller through SPI, and written finished by
 * cutover_record (record.c), its line by cutover_report (report.c); the
 * caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog/cutover_rows.h"
#include "cutover/finish.h"
#include "cutover/queries.h"

/* the cutover row, the fields _cutover_record is given again, in its order */
#define CUTOVER_ROW \
	"SELECT c.attempts, c.old_table, c.new_table, c.old_name, c.new_schema, c.new_name," \
	"       c.into_existing, c.lock_held_ms, c.state, c.to_validate" \
	"  FROM backfill.job_cutover c WHERE c.job_id = $1"

/* a field of the cutover row (FINISH_ROW_*); isnull set */
Datum
cutover_finish_row_field(CutoverFinish *f, int field, bool *isnull)
{
	return heap_getattr(f->row, field, f->row_desc, isnull);
}

/* a field of the cutover row as an OID, InvalidOid for NULL */
Oid
cutover_finish_row_oid(CutoverFinish *f, int field)
{
	bool		isnull;
	Datum		d = cutover_finish_row_field(f, field, &isnull);

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
	return cutover_finish_row_oid(f, FINISH_ROW_OLD_TABLE);
}

/* a cutover to finish: the job has been cut over, and not rolled back or finished */
void
cutover_finish_check_cut_over(CutoverFinish *f)
{
	char	   *state = f->row ? SPI_getvalue(f->row, f->row_desc, FINISH_ROW_STATE) : NULL;

	if (state == NULL || strcmp(state, "cut_over") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has not been cut over", f->job.job_id),
				 state == NULL ? errdetail("It has no cutover to finish.") :
				 errdetail("Its cutover is %s.", cutover_state_words(state))));
}

/* the cutover row says finished, and pg_stat_activity too */
void
cutover_finish_record(CutoverFinish *f)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};
	/* the row's own fields, into attempts to new_name, into_existing, lock_held_ms */
	int			fields[8] = {FINISH_ROW_ATTEMPTS, FINISH_ROW_OLD_TABLE, FINISH_ROW_NEW_TABLE,
		FINISH_ROW_OLD_NAME, FINISH_ROW_NEW_SCHEMA, FINISH_ROW_NEW_NAME, FINISH_ROW_INTO_EXISTING,
		FINISH_ROW_LOCK_HELD_MS};
	int			args[8] = {2, 3, 4, 5, 6, 7, 9, 10};

	cutover_statement_begin();
	values[0] = Int64GetDatum(f->job.job_id);
	values[1] = CStringGetTextDatum("finished");
	for (int i = 0; i < 8; i++)
		values[args[i]] = cutover_finish_row_field(f, fields[i], &nulls[args[i]]);
	values[8] = BoolGetDatum(false);
	values[11] = (Datum) 0;
	nulls[11] = true;
	values[12] = BoolGetDatum(true);
	cutover_record(values, nulls);
	cutover_statement_end();
	cutover_report(f->job.job_id, "finished");
}
