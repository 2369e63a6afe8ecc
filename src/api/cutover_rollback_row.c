/*-------------------------------------------------------------------------
 *
 * cutover_rollback_row.c
 *	  The cutover row as backfill.rollback_cutover() (cutover_rollback.c)
 *	  reads it, checks it and writes it rolled back.
 *
 * Only a cutover that has been cut over, and whose old table has followed
 * the new one since, is rolled back.  The row is read as the caller
 * through SPI, and written by cutover_record (src/cutover/record.c) as a
 * statement of the caller's; the caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"

#include "api/cutover.h"
#include "catalog/cutover_rows.h"
#include "cutover/queries.h"

/* the cutover row, the fields the rollback reads, in this order */
#define CUTOVER_ROW \
	"SELECT c.state, c.reversible, c.new_name, c.new_schema, c.old_table, c.new_table," \
	"       c.old_name, c.into_existing, c.to_validate" \
	"  FROM backfill.job_cutover c WHERE c.job_id = $1"

/* the cutover row, or none (row->found) */
void
cutover_rollback_read_row(CutoverJobRow *job, RollbackRow *row)
{
	cutover_job_query(CUTOVER_ROW, job, InvalidOid, (Datum) 0, false);
	row->found = SPI_processed > 0;
	for (int i = 0; row->found && i < ROLLBACK_ROW_FIELDS; i++)
	{
		row->values[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1,
									   &row->nulls[i]);
		row->types[i] = SPI_gettypeid(SPI_tuptable->tupdesc, i + 1);
	}
}

/* a text field of the row, or NULL */
char *
cutover_rollback_row_text(RollbackRow *row, int field)
{
	return row->nulls[field - 1] ? NULL : TextDatumGetCString(row->values[field - 1]);
}

/* an oid field of the row, or InvalidOid */
Oid
cutover_rollback_row_oid(RollbackRow *row, int field)
{
	return row->nulls[field - 1] ? InvalidOid : DatumGetObjectId(row->values[field - 1]);
}

/* a cutover to roll back: cut over, and the old table follows the new one */
void
cutover_rollback_check_reversible(CutoverJobRow *job, RollbackRow *row)
{
	char	   *state = row->found ? cutover_rollback_row_text(row, ROLLBACK_ROW_STATE) : NULL;

	if (state == NULL || strcmp(state, "cut_over") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has not been cut over", job->job_id),
				 state == NULL ? errdetail("It has no cutover to roll back.") :
				 errdetail("Its cutover is %s.", cutover_state_words(state))));
	if (!row->nulls[ROLLBACK_ROW_REVERSIBLE - 1] &&
		!DatumGetBool(row->values[ROLLBACK_ROW_REVERSIBLE - 1]))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot roll back the cutover of backfill job " INT64_FORMAT, job->job_id),
				 errdetail("The old table has not followed the new one since the cutover: the job's shape does not map back (the cutover said why)."),
				 errhint("Use backfill.finish_cutover(" INT64_FORMAT ", keep => true) and copy the table back with a new job.",
						 job->job_id)));
}

/* the cutover row says rolled back */
void
cutover_rollback_record(CutoverJobRow *job, RollbackRow *row, CutoverSwapped *swapped)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};
	/* the row's own fields, into old_table to new_name and into_existing */
	int			fields[6] = {ROLLBACK_ROW_OLD_TABLE, ROLLBACK_ROW_NEW_TABLE, ROLLBACK_ROW_OLD_NAME,
		ROLLBACK_ROW_NEW_SCHEMA, ROLLBACK_ROW_NEW_NAME, ROLLBACK_ROW_INTO_EXISTING};
	int			args[6] = {3, 4, 5, 6, 7, 9};

	cutover_statement_begin();
	values[0] = Int64GetDatum(job->job_id);
	values[1] = CStringGetTextDatum("rolled_back");
	for (int i = 0; i < 6; i++)
	{
		values[args[i]] = row->values[fields[i] - 1];
		nulls[args[i]] = row->nulls[fields[i] - 1];
	}
	values[8] = BoolGetDatum(true);
	values[12] = BoolGetDatum(false);
	cutover_record_attempts(values, nulls, swapped);
	cutover_record(values, nulls);
	cutover_statement_end();
}
