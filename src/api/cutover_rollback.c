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
 * (src/cutover/steps.c).  The cutover row, read, checked and written
 * rolled back, is cutover_rollback_row.c's; the new table's old place,
 * checked free and taken back, cutover_rollback_put_back.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "api/cutover.h"
#include "catalog/catalog_access.h"
#include "cutover/queries.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_rollback_cutover);

/* the arguments, in the order of the SQL signature */
enum
{
	ARG_JOB_ID, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS
};

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
	RollbackRow row;
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
	cutover_rollback_read_row(&job, &row);
	cutover_rollback_check_reversible(&job, &row);

	/* the job is turned around: its upstream has the name, its downstream is the old table */
	cutover_check_swap(&job);
	cutover_rollback_check_name_free(&row);
	up_text = backfill_regclass_text(job.upstream);
	down_text = backfill_regclass_text(job.downstream);
	new_name = cutover_rollback_row_text(&row, ROLLBACK_ROW_NEW_NAME);
	cutover_swap_attempts(&job, new_name, fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS, &swapped);
	cutover_rollback_put_back(&job, &row);
	/* as _cutover_turn, STRICT, did: nothing for a NULL into_existing */
	if (!row.nulls[ROLLBACK_ROW_INTO_EXISTING - 1])
	{
		cutover_statement_begin();
		cutover_turn_job(job.job_id,
						 DatumGetBool(row.values[ROLLBACK_ROW_INTO_EXISTING - 1]));
		cutover_statement_end();
	}
	cutover_rollback_record(&job, &row, &swapped);
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
