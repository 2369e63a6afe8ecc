/*-------------------------------------------------------------------------
 *
 * other_job.c
 *	  Another job over either table of a cutover: the swap would leave it
 *	  on the wrong table, so the cutover refuses.
 *
 * Row-level security on backfill.job shows the caller its own jobs only,
 * and a job of another role left on the wrong table would block
 * finish_cutover for good: the jobs are read as the extension's owner.
 * The answer tells nothing but the other job's id, and only to a caller
 * with the privileges of the cut-over job's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "catalog/catalog_access.h"
#include "catalog/job_holdings.h"
#include "cutover/check.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_other_job);

/*
 * cutover_other_job
 *		The first job other than job_id, not cancelled, over src or dst,
 *		whoever owns it; 0 when there is none.  The caller must have the
 *		privileges of job_id's owner.
 */
int64
cutover_other_job(int64 job_id, Oid src, Oid dst)
{
	int64		other;
	RoleContext rc;
	int			guc_level;

	(void) backfill_require_job_owner(job_id);
	backfill_catalog_enter(&rc);
	guc_level = backfill_pin_catalog_path();
	backfill_spi_enter();
	other = backfill_other_job_over(job_id, src, dst);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
	return other;
}

/*
 * cutover_refuse_other_job
 *		Refuse the cutover of job when another job runs over src or dst.  A
 *		NULL job id or table finds none, as the STRICT SQL function did.
 */
void
cutover_refuse_other_job(CutoverJob *job, Oid src, Oid dst)
{
	int64		other;

	if (job->id_null || !OidIsValid(src) || !OidIsValid(dst))
		return;
	cutover_statement_begin();
	other = cutover_other_job(job->job_id, src, dst);
	cutover_statement_end();
	if (other != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot cut over backfill job %s because backfill job " INT64_FORMAT " uses its tables",
						job->id_raise, other),
				 errdetail("Backfill job " INT64_FORMAT " copies table %s or %s, and would be left on the wrong one after the swap.",
						   other, cutover_rel_format(src), cutover_rel_format(dst)),
				 errhint("Drop backfill job " INT64_FORMAT " first, or cut it over first.", other)));
}

/*
 * backfill._cutover_other_job(job_id bigint, src regclass, dst regclass)
 *		RETURNS bigint
 *		cutover_other_job, NULL for none.  STRICT.
 */
Datum
backfill_cutover_other_job(PG_FUNCTION_ARGS)
{
	int64		other = cutover_other_job(PG_GETARG_INT64(0), PG_GETARG_OID(1), PG_GETARG_OID(2));

	if (other == 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(other);
}
