/*-------------------------------------------------------------------------
 *
 * cutover_finish.c
 *	  backfill.finish_cutover(): the end of a cutover.  The foreign keys it
 *	  carried are validated, the old table stops following the new one
 *	  (the job is cancelled) and is dropped, unless keep.
 *
 * Only the job's own old table is dropped (its downstream since the swap,
 * or its upstream still when the cutover could not be rolled back and let
 * the job go), owned by the owner of the new one, whatever the cutover row
 * says.
 *
 * The old table's triggers go under ACCESS EXCLUSIVE on both tables, taken
 * in bounded attempts as the cutover takes it (src/cutover/finish_lock.c);
 * the other steps are src/cutover/finish_steps.c.
 *
 * Everything runs as the caller, through SPI or by direct calls of the C
 * behind the extension's internal functions (which PUBLIC may not
 * execute) for the job's row, its cancellation, the drop of its objects,
 * the cutover row and the line in pg_stat_activity: the caller needs the
 * privileges each statement needs typed by hand.  The job is read again
 * once the cutover's advisory lock on it is held: a rollback or cutover
 * that held it meanwhile has turned the job around.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"

#include "api/cutover.h"
#include "catalog/catalog_access.h"
#include "cutover/finish.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_finish_cutover);

/*
 * backfill.finish_cutover(job_id bigint, keep boolean DEFAULT false)
 *		RETURNS void
 *		End the cutover of a job: validate the foreign keys it carried,
 *		stop the old table following the new one (the job is then
 *		cancelled) and drop the old table, unless keep (see the file
 *		header).
 */
Datum
backfill_finish_cutover(PG_FUNCTION_ARGS)
{
	CutoverFinish f;

	memset(&f, 0, sizeof(CutoverFinish));
	f.job.job_id = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT64(0);
	backfill_spi_enter();
	cutover_read_job(&f.job, PG_ARGISNULL(0));
	cutover_require_read_committed("finish_cutover");
	cutover_refuse_null(fcinfo, 1, "keep");
	f.keep = PG_GETARG_BOOL(1);

	backfill_lock_job_cutover(f.job.job_id);
	cutover_read_job(&f.job, false);
	cutover_finish_read_row(&f);
	cutover_finish_check_cut_over(&f);
	if (!f.keep)
		cutover_finish_check_old_table(&f);
	cutover_finish_validate_keys(&f);
	if (strcmp(f.job.status, "cancelled") != 0)
	{
		cutover_finish_lock_tables(&f);
		backfill_let_job_go(f.job.job_id, f.job.job);
	}
	cutover_finish_drop_old_table(&f);
	cutover_finish_record(&f);
	backfill_spi_leave();
	PG_RETURN_VOID();
}
