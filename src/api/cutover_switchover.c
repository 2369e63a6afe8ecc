/*-------------------------------------------------------------------------
 *
 * cutover_switchover.c
 *	  backfill.cutover() of a job whose upstream is on another server
 *	  (cutover_start.c): the verify gate, then the switchover (switchover.c
 *	  and the remote kind's), then the job let go and its cutover row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"

#include "api/cutover.h"
#include "api/cutover_start.h"
#include "api/job_ops.h"
#include "catalog/cutover_rows.h"
#include "cutover/queries.h"
#include "lib/lib.h"

/*
 * The cutover row of a switchover: finished at once, not reversible, the
 * names and schema as the catalog has them now
 */
static void
record_switchover(CutoverJobRow *job)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};

	cutover_statement_begin();
	values[0] = Int64GetDatum(job->job_id);
	values[1] = CStringGetTextDatum("finished");
	values[2] = Int32GetDatum(1);
	values[3] = cutover_oid_or_null(job->upstream, &nulls[3]);
	values[4] = cutover_oid_or_null(job->downstream, &nulls[4]);
	values[5] = cutover_text_or_null(OidIsValid(job->upstream) ?
									 get_rel_name(job->upstream) : NULL, &nulls[5]);
	values[6] = cutover_oid_or_null(OidIsValid(job->downstream) ?
									get_rel_namespace(job->downstream) : InvalidOid, &nulls[6]);
	values[7] = cutover_text_or_null(OidIsValid(job->downstream) ?
									 get_rel_name(job->downstream) : NULL, &nulls[7]);
	values[8] = BoolGetDatum(false);
	values[9] = BoolGetDatum(job->into_existing);
	nulls[10] = nulls[11] = true;
	values[10] = values[11] = (Datum) 0;
	values[12] = BoolGetDatum(true);
	cutover_record(values, nulls);
	cutover_statement_end();
}

/*
 * cutover_switch_over
 *		Switch the job over, into *result.  The source stops being followed,
 *		so the job lets go of the local table at once, as finish_cutover
 *		does; there is no rollback to keep it for.
 */
void
cutover_switch_over(FunctionCallInfo fcinfo, CutoverJobRow *job, bool verify,
					CutoverResult *result)
{
	XLogRecPtr	lsn;

	if (verify)
		cutover_verify_gate(job->job_id);
	cutover_statement_begin();
	lsn = backfill_switch_over(job->job_id, PG_GETARG_BOOL(ARG_FENCE),
							   PG_GETARG_INTERVAL_P(ARG_LOCK_TIMEOUT), PG_GETARG_INT32(ARG_ATTEMPTS));
	cutover_statement_end();
	result->values[OUT_SOURCE_LSN] = LSNGetDatum(lsn);
	result->nulls[OUT_SOURCE_LSN] = XLogRecPtrIsInvalid(lsn);
	backfill_let_job_go(job->job_id, job->job);
	record_switchover(job);
	result->state = "finished";
	result->values[OUT_ATTEMPTS_MADE] = Int32GetDatum(1);
	result->nulls[OUT_ATTEMPTS_MADE] = false;
}
