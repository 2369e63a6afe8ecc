/*-------------------------------------------------------------------------
 *
 * start_checks.c
 *	  What backfill.cutover() checks of a job before anything is locked,
 *	  once the job is read again under the cutover's advisory lock: not cut
 *	  over yet, row-level security on the upstream, the swap's checks
 *	  (check.c), the losses accepted (accepts.c), and whether the job can
 *	  follow the new table back (irreversible.c).  The old table's name is
 *	  old_name.c's.
 *
 * Each check runs as the caller through SPI, as steps.c's do; the caller
 * is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/regproc.h"

#include "cutover/check.h"
#include "cutover/queries.h"
#include "cutover/steps.h"
#include "lib/lib.h"

/*
 * cutover_check_not_cut_over
 *		The job has not been cut over yet, nor its cutover finished.
 */
void
cutover_check_not_cut_over(CutoverJobRow *job)
{
	char	   *state;

	cutover_job_query("SELECT c.state FROM backfill.job_cutover c WHERE c.job_id = $1",
					  job, InvalidOid, (Datum) 0, false);
	state = SPI_processed > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
	if (state != NULL && strcmp(state, "cut_over") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has already been cut over", job->job_id),
				 errhint("Use backfill.rollback_cutover(" INT64_FORMAT ") or backfill.finish_cutover(" INT64_FORMAT ").",
						 job->job_id, job->job_id)));
	if (state != NULL && strcmp(state, "finished") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has already been cut over", job->job_id),
				 errdetail("Its cutover has been finished: the job no longer follows any table.")));
}

/*
 * A copy made through row-level security holds only the rows its owner
 * was let see, and would replace every row of the table
 */
static void
check_rls(CutoverJobRow *job, CutoverJob *checked)
{
	bool		isnull;
	bool		filtered = cutover_filtered_by_rls(checked, &isnull);

	if (!isnull && filtered)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot cut over backfill job " INT64_FORMAT " because row-level security on table %s applies to its owner",
						job->job_id, backfill_regclass_text(job->upstream)),
				 errdetail("Its downstream holds only the rows of table %s that the policies let role %s see, and would take the place of all of them.",
						   backfill_regclass_text(job->upstream),
						   DatumGetCString(DirectFunctionCall1(regroleout,
															   ObjectIdGetDatum(job->owner)))),
				 errhint("Copy the table as its owner (without FORCE ROW LEVEL SECURITY), as a superuser or as a role with BYPASSRLS.")));
}

/*
 * cutover_check_swap
 *		The swap's checks (check.c) of the job's upstream and downstream,
 *		as a statement of the caller's with a snapshot of its own: before
 *		the lock, and under it (attempt_once.c), and before a rollback.
 */
void
cutover_check_swap(CutoverJobRow *job)
{
	CutoverJob	checked;

	cutover_job_from_row(DatumGetHeapTupleHeader(job->job), &checked);
	cutover_statement_begin();
	cutover_check(&checked, job->upstream, job->downstream);
	cutover_statement_end();
}

/*
 * cutover_check_local
 *		The checks of a local cutover before anything is locked, accept
 *		the losses the caller accepts (NULL: none); returns why the job
 *		could not follow the new table back, or NULL, said in a NOTICE.
 */
char *
cutover_check_local(CutoverJobRow *job, Datum accept, bool accept_null, const char *old_name)
{
	char	   *why;
	CutoverJob	checked;

	cutover_job_from_row(DatumGetHeapTupleHeader(job->job), &checked);
	check_rls(job, &checked);
	/* each a statement of the caller's, with a snapshot of its own */
	cutover_check_swap(job);
	cutover_statement_begin();
	cutover_accepts(&checked, accept_null ? NULL : DatumGetArrayTypeP(accept));
	cutover_statement_end();
	cutover_statement_begin();
	why = cutover_irreversible(DatumGetHeapTupleHeader(job->job));
	cutover_statement_end();
	if (why != NULL)
		ereport(NOTICE,
				(errmsg("backfill job " INT64_FORMAT " cannot be rolled back after its cutover: %s",
						job->job_id, why),
				 errdetail("The old table, renamed %s, will no longer follow the new one.", old_name)));
	return why;
}
