/*-------------------------------------------------------------------------
 *
 * cutover_start.c
 *	  backfill.cutover(): gives a finished job's downstream its upstream's
 *	  name and what names it, under the upstream's lock taken in bounded
 *	  attempts; the old table then follows the new one until
 *	  finish_cutover.  For a job whose upstream is on another server, the
 *	  switchover instead.
 *
 * The order is the one doc/cutover.md describes: the arguments; the
 * cutover's advisory lock on the job, after which the job and its cutover
 * row are read again (a rollback that held the lock meanwhile has turned
 * the job back); then the local cutover (cutover_local.c: the checks, the
 * verify gate, the attempts and the swap, the job turned around) or the
 * switchover (cutover_switchover.c); the result row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/catalog_access.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "api/cutover_start.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover);

/*
 * backfill.cutover(job_id bigint, old_name text, lock_timeout interval,
 *					attempts integer, fence boolean, accept text[],
 *					verify boolean, OUT state text, OUT attempts_made integer,
 *					OUT lock_held_ms double precision, OUT old_table regclass,
 *					OUT rollback_possible boolean, OUT source_lsn pg_lsn)
 *		Cut a finished job over (see the file header).
 */
Datum
backfill_cutover(PG_FUNCTION_ARGS)
{
	CutoverJobRow job;
	CutoverResult		result;
	TupleDesc	desc;
	bool		fence;
	bool		verify;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(&job, 0, sizeof(CutoverJobRow));
	for (int i = 0; i < OUT_COLUMNS; i++)
	{
		result.values[i] = (Datum) 0;
		result.nulls[i] = true;
	}
	job.job_id = PG_ARGISNULL(ARG_JOB_ID) ? 0 : PG_GETARG_INT64(ARG_JOB_ID);

	backfill_spi_enter();
	cutover_read_job(&job, PG_ARGISNULL(ARG_JOB_ID));
	cutover_require_read_committed("cutover");
	cutover_check_arguments(fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS);
	cutover_refuse_null(fcinfo, ARG_FENCE, "fence");
	cutover_refuse_null(fcinfo, ARG_VERIFY, "verify");
	fence = PG_GETARG_BOOL(ARG_FENCE);
	verify = PG_GETARG_BOOL(ARG_VERIFY);

	/*
	 * One cutover of a job at a time; rollback and finish take it too.  The
	 * job is read again once it is held: a rollback that held it meanwhile
	 * has turned the job back
	 */
	backfill_lock_job_cutover(job.job_id);
	cutover_read_job(&job, false);
	cutover_check_not_cut_over(&job);
	if (job.remote)
		cutover_switch_over(fcinfo, &job, verify, &result);
	else
	{
		if (fence)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("fence applies only to a job whose upstream is on another server"),
					 errdetail("A local cutover locks the upstream itself.")));
		cutover_local(fcinfo, &job, verify, &result);
	}
	backfill_spi_leave();
	result.values[OUT_STATE] = CStringGetTextDatum(result.state);
	result.nulls[OUT_STATE] = false;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, result.values, result.nulls)));
}
