/*-------------------------------------------------------------------------
 *
 * cutover.c
 *	  The job turned around at the swap of backfill.cutover() and
 *	  backfill.rollback_cutover().  The hand-over that follows the turn of
 *	  a cutover is cutover_hand_over.c's.
 *
 * The turn.  A finished local job keeps its downstream equal to its
 * upstream through its apply trigger, in each writer's transaction.  At the
 * swap both tables are held ACCESS EXCLUSIVE, so they are equal then; the
 * job is turned around under that same lock: its triggers leave the old
 * table, its catalog row names the new table as its upstream and the old
 * one as its downstream (a table of the user's, which the job never drops),
 * and its apply triggers go onto the new table, enabled.  From the commit
 * on, every write to the new table reaches the old one in the writer's
 * transaction, as every write to the old one reached the new one before:
 * no snapshot copy is needed, and no write is lost on either side.  The
 * rollback turns it once more.  Only a job whose downstream maps back onto
 * its upstream column for column (no filter, no computed column) can be
 * turned; backfill.cutover() checks that before it starts.
 *
 * The job's triggers are guarded by the DDL event trigger (event_trigger.c) while the
 * job is not cancelled; as cancel_job does, the row is marked cancelled for
 * the moment its triggers are dropped, inside the same transaction, so no
 * one ever sees that state.
 *
 * Who may.  cutover and rollback_cutover call the turn directly, as their
 * caller (cutover_turn_job); the SQL function _cutover_turn is not
 * PUBLIC's.  It checks its arguments itself.  The turn and the cutover row
 * (src/cutover/record.c) name tables: the caller must have the privileges
 * of the job's owner and of the owners of both tables, which it needs for
 * the swap anyway, so that no role makes another role's table a job's
 * downstream, or the old table that finish_cutover drops.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "fmgr.h"
#include "storage/lmgr.h"

#include "api/cutover.h"
#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/cutover_rows.h"
#include "cutover/steps.h"
#include "kinds/kind.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_turn);

/*
 * cutover_turn_job, backfill._cutover_turn(job_id bigint, into_existing
 *											 boolean) RETURNS void
 *		Turn a finished local job around (see the file header): from then on
 *		its downstream is its upstream, and the other way round;
 *		into_existing says whether the new downstream is a table of the
 *		user's (the old table, after the cutover) or the job's own (after the
 *		rollback, as it was made).  The caller
 *		holds both tables ACCESS EXCLUSIVE and has checked that the job's
 *		columns map back.  The caller must have the privileges of the
 *		job's owner and of the owners of both tables (checked before the
 *		catalog context is entered, as the caller), and the job's cutover
 *		row must be in the state the turn undoes: none or rolled back for a
 *		cutover, cut over for its rollback.
 */
void
cutover_turn_job(int64 job_id, bool into_existing)
{
	BackfillJob *job;
	Relation	rel;
	RoleContext rc;
	int			guc_level;
	Oid			old_table;
	Oid			new_table;
	bool		swapped;
	Oid			downstream;

	(void) backfill_require_job_owner(job_id);
	/* as the caller: the turn gives each table the other's part */
	downstream = backfill_job_downstream(job_id);
	if (!OidIsValid(downstream))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld cannot be turned around", (long long) job_id),
				 errdetail("It has no downstream table.")));
	cutover_require_table_owner(backfill_job_upstream(job_id), "upstream", false);
	cutover_require_table_owner(downstream, "downstream", false);
	backfill_catalog_enter(&rc);
	guc_level = backfill_pin_catalog_path();
	backfill_spi_enter();
	job = backfill_load_job(job_id, CurrentMemoryContext);
	if (job->status != BACKFILL_STATUS_FINISHED ||
		backfill_kind_routine(job->kind)->capture == CAPTURE_STREAM)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld cannot be turned around", (long long) job_id),
				 errdetail("Only a finished job whose upstream is local follows its downstream back.")));

	/*
	 * A cutover turns a job whose swap is not in place, making the old
	 * table the user's; its rollback turns back one whose swap is, giving
	 * the new table back what it was before the cutover (the user's too,
	 * for a job made with into_existing)
	 */
	(void) backfill_cutover_row_tables(job_id, &old_table, &new_table, &swapped);
	if (swapped ? into_existing != backfill_cutover_row_into_existing(job_id) : !into_existing)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld cannot be turned around", (long long) job_id),
				 errdetail(swapped ? "It has been cut over: only its rollback turns it back." :
						   "It has not been cut over: there is nothing to turn back.")));
	if (!OidIsValid(job->downstream) ||
		!CheckRelationOidLockedByMe(job->upstream, AccessExclusiveLock, false) ||
		!CheckRelationOidLockedByMe(job->downstream, AccessExclusiveLock, false))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld cannot be turned around without its tables locked",
						(long long) job_id),
				 errdetail("The tables must be equal while the triggers move: only backfill.cutover() and backfill.rollback_cutover() turn a job around, under the lock of both tables.")));

	/* out of the guard's sight while its triggers leave the old table */
	backfill_hide_job_status(job_id);
	CommandCounterIncrement();
	backfill_drop_triggers(job_id);
	backfill_turn_job_row(job_id, into_existing);
	CommandCounterIncrement();

	/* the apply triggers on what is now the upstream, enabled at once */
	job = backfill_load_job(job_id, CurrentMemoryContext);
	rel = relation_open(job->upstream, NoLock);
	backfill_capture_install(rel, job->upstream_sql, job_id,
							 backfill_kind_routine(job->kind)->capture);
	relation_close(rel, NoLock);
	CommandCounterIncrement();
	backfill_capture_switch_to_apply(job);

	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
}

Datum
backfill_cutover_turn(PG_FUNCTION_ARGS)
{
	cutover_turn_job(PG_GETARG_INT64(0), PG_GETARG_BOOL(1));
	PG_RETURN_VOID();
}
