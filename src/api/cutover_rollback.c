/*-------------------------------------------------------------------------
 *
 * cutover_rollback.c
 *	  backfill.rollback_cutover(): the swap of a cutover made again the
 *	  other way, while the old table still follows the new one.  The new
 *	  table gets back the name and schema it had before the cutover, the
 *	  old table its own, and the job is turned around once more.
 *
 * The order is the cutover's (cutover_start.c): the arguments; the
 * cutover's advisory lock on the job, after which the job and its cutover
 * row are read again (a cutover that held the lock meanwhile has turned
 * the job around); the checks; the attempts and the swap
 * (src/cutover/attempts.c, swap.c); the foreign keys the cutover added to
 * the new table's own rows dropped; the turn; the cutover row, the log
 * line and pg_stat_activity.  Each step runs as the caller through SPI
 * (src/cutover/steps.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/catalog_access.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "api/cutover.h"
#include "catalog/cutover_rows.h"
#include "cutover/queries.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_rollback_cutover);

/* the arguments, in the order of the SQL signature */
enum
{
	ARG_JOB_ID, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS
};

/* the cutover row, the fields the rollback reads, in this order */
#define CUTOVER_ROW \
	"SELECT c.state, c.reversible, c.new_name, c.new_schema, c.old_table, c.new_table," \
	"       c.old_name, c.into_existing, c.to_validate" \
	"  FROM backfill.job_cutover c WHERE c.job_id = $1"

enum
{
	ROW_STATE = 1, ROW_REVERSIBLE, ROW_NEW_NAME, ROW_NEW_SCHEMA, ROW_OLD_TABLE, ROW_NEW_TABLE,
	ROW_OLD_NAME, ROW_INTO_EXISTING, ROW_TO_VALIDATE, ROW_FIELDS = ROW_TO_VALIDATE
};

/* the cutover row, or none */
typedef struct CutoverRow
{
	bool		found;
	Datum		values[ROW_FIELDS];
	bool		nulls[ROW_FIELDS];
	Oid			types[ROW_FIELDS];
} CutoverRow;

/* the foreign keys of the new table to itself that the cutover added */
#define OWN_KEYS \
	"SELECT k.conrelid::regclass::text, k.conname::text FROM pg_constraint k" \
	" WHERE k.oid = ANY ($5) AND k.conrelid = $3 AND k.confrelid = $3" \
	" ORDER BY k.conname"

static void
read_cutover_row(CutoverJobRow *job, CutoverRow *row)
{
	cutover_job_query(CUTOVER_ROW, job, InvalidOid, (Datum) 0, false);
	row->found = SPI_processed > 0;
	for (int i = 0; row->found && i < ROW_FIELDS; i++)
	{
		row->values[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1,
									   &row->nulls[i]);
		row->types[i] = SPI_gettypeid(SPI_tuptable->tupdesc, i + 1);
	}
}

static char *
row_text(CutoverRow *row, int field)
{
	return row->nulls[field - 1] ? NULL : TextDatumGetCString(row->values[field - 1]);
}

static Oid
row_oid(CutoverRow *row, int field)
{
	return row->nulls[field - 1] ? InvalidOid : DatumGetObjectId(row->values[field - 1]);
}

/* a cutover to roll back: cut over, and the old table follows the new one */
static void
check_reversible(CutoverJobRow *job, CutoverRow *row)
{
	char	   *state = row->found ? row_text(row, ROW_STATE) : NULL;

	if (state == NULL || strcmp(state, "cut_over") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has not been cut over", job->job_id),
				 state == NULL ? errdetail("It has no cutover to roll back.") :
				 errdetail("Its cutover is %s.", cutover_state_words(state))));
	if (!row->nulls[ROW_REVERSIBLE - 1] && !DatumGetBool(row->values[ROW_REVERSIBLE - 1]))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot roll back the cutover of backfill job " INT64_FORMAT, job->job_id),
				 errdetail("The old table has not followed the new one since the cutover: the job's shape does not map back (the cutover said why)."),
				 errhint("Use backfill.finish_cutover(" INT64_FORMAT ", keep => true) and copy the table back with a new job.",
						 job->job_id)));
}

/* the new table's old name is free in its old schema */
static void
check_name_free(CutoverRow *row)
{
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		values[2] = {row->values[ROW_NEW_NAME - 1], row->values[ROW_NEW_SCHEMA - 1]};
	bool		isnull;

	backfill_spi_exec_args("SELECT EXISTS (SELECT FROM pg_class WHERE relname = $1 AND relnamespace = $2),"
						   "       $2::regnamespace::text",
						   2, types, values, NULL, SPI_OK_SELECT);
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists in schema %s", row_text(row, ROW_NEW_NAME),
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)),
				 errdetail("The rollback gives the new table back the name it had before the cutover.")));
}

/*
 * After the swap: the new table goes back to its schema, and the foreign
 * keys of the new table to itself that the cutover added go with it: the
 * table is the job's downstream again, as it was
 */
static void
put_back(CutoverJobRow *job, CutoverRow *row)
{
	Oid			new_schema = row_oid(row, ROW_NEW_SCHEMA);
	int			n;
	char	  **tables;
	char	  **keys;

	if (new_schema != get_rel_namespace(job->upstream))
		backfill_spi_exec(psprintf("ALTER TABLE %s SET SCHEMA %s",
								   backfill_regclass_text(job->upstream),
								   quote_identifier(get_namespace_name(new_schema))),
						  SPI_OK_UTILITY);
	n = cutover_job_query(OWN_KEYS, job, OIDARRAYOID, row->values[ROW_TO_VALIDATE - 1],
						  row->nulls[ROW_TO_VALIDATE - 1]);
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

/* the cutover row says rolled back */
static void
record(CutoverJobRow *job, CutoverRow *row, CutoverSwapped *swapped)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};
	/* the row's own fields, into old_table to new_name and into_existing */
	int			fields[6] = {ROW_OLD_TABLE, ROW_NEW_TABLE, ROW_OLD_NAME, ROW_NEW_SCHEMA,
	ROW_NEW_NAME, ROW_INTO_EXISTING};
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

/*
 * backfill.rollback_cutover(job_id bigint, lock_timeout interval,
 *							 attempts integer, OUT state text,
 *							 OUT attempts_made integer,
 *							 OUT lock_held_ms double precision)
 *		Swap the tables of a job's cutover back (see the file header).
 */
Datum
backfill_rollback_cutover(PG_FUNCTION_ARGS)
{
	CutoverJobRow job;
	CutoverRow	row;
	CutoverSwapped swapped;
	TupleDesc	desc;
	char	   *up_text;
	char	   *down_text;
	char	   *new_name;
	char	   *ms;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(&job, 0, sizeof(CutoverJobRow));
	job.job_id = PG_ARGISNULL(ARG_JOB_ID) ? 0 : PG_GETARG_INT64(ARG_JOB_ID);

	backfill_spi_enter();
	cutover_read_job(&job, PG_ARGISNULL(ARG_JOB_ID));
	cutover_require_read_committed("rollback_cutover");
	cutover_check_arguments(fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS);

	/*
	 * The job is read again once the lock is held: a cutover that held it
	 * meanwhile has turned the job around
	 */
	backfill_lock_job_cutover(job.job_id);
	cutover_read_job(&job, false);
	read_cutover_row(&job, &row);
	check_reversible(&job, &row);

	/* the job is turned around: its upstream has the name, its downstream is the old table */
	cutover_check_swap(&job);
	check_name_free(&row);
	up_text = backfill_regclass_text(job.upstream);
	down_text = backfill_regclass_text(job.downstream);
	new_name = row_text(&row, ROW_NEW_NAME);
	cutover_swap_attempts(&job, new_name, fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS, &swapped);
	put_back(&job, &row);
	/* as _cutover_turn, STRICT, did: nothing for a NULL into_existing */
	if (!row.nulls[ROW_INTO_EXISTING - 1])
	{
		cutover_statement_begin();
		cutover_turn_job(job.job_id, DatumGetBool(row.values[ROW_INTO_EXISTING - 1]));
		cutover_statement_end();
	}
	record(&job, &row, &swapped);
	ms = cutover_ms_text(&swapped);
	ereport(LOG,
			(errmsg("rollback of the cutover of backfill job " INT64_FORMAT ": table %s swapped back with table %s (renamed %s) after %d attempts, lock held %s ms",
					job.job_id, down_text, up_text, new_name, swapped.tries, ms)));
	cutover_report(job.job_id, "rolled back");
	backfill_spi_leave();

	values[0] = CStringGetTextDatum("rolled_back");
	values[1] = Int32GetDatum(swapped.tries);
	values[2] = Float8GetDatum(swapped.lock_held_ms);
	nulls[2] = swapped.lock_held_null;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
