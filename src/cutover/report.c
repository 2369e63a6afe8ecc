/*-------------------------------------------------------------------------
 *
 * report.c
 *	  What a cutover is doing, in pg_stat_activity.query of its backend,
 *	  where backfill.jobs reads it ("backfill cutover of job N: ..."): the
 *	  cutover's transaction shows nothing to others until it commits.
 *
 * The steps of cutover, rollback_cutover and finish_cutover call
 * cutover_report directly, not backfill._cutover_report through SPI: the
 * SQL function is not PUBLIC's, and the executor would check the caller's
 * right to execute it.  Both check the same things.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "pgstat.h"
#include "utils/builtins.h"

#include "catalog/catalog_access.h"
#include "cutover/steps.h"

PG_FUNCTION_INFO_V1(backfill_cutover_report);

/* the longest text a cutover shows of what it does (two qualified names) */
#define BACKFILL_CUTOVER_REPORT_MAX 512

/*
 * cutover_report
 *		What the cutover of job job_id does, one line of at most
 *		BACKFILL_CUTOVER_REPORT_MAX bytes, for a caller who owns the job:
 *		backfill.jobs shows it as the job's state.
 */
void
cutover_report(int64 job_id, const char *what)
{
	(void) backfill_require_job_owner(job_id);
	if (strlen(what) > BACKFILL_CUTOVER_REPORT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a cutover report must be at most %d bytes long", BACKFILL_CUTOVER_REPORT_MAX)));
	for (const char *c = what; *c; c++)
		if ((unsigned char) *c < ' ' || *c == '\x7f')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("a cutover report must not contain control characters"),
					 errdetail("It is one line of pg_stat_activity.query.")));
	pgstat_report_activity(STATE_RUNNING,
						   psprintf("backfill cutover of job %lld: %s", (long long) job_id, what));
}

/*
 * backfill._cutover_report(job_id bigint, what text) RETURNS void
 *		cutover_report, for the tests of its checks (a superuser's: PUBLIC
 *		may not execute it).
 */
Datum
backfill_cutover_report(PG_FUNCTION_ARGS)
{
	cutover_report(PG_GETARG_INT64(0), text_to_cstring(PG_GETARG_TEXT_PP(1)));
	PG_RETURN_VOID();
}
