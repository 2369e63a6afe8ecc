/*-------------------------------------------------------------------------
 *
 * stream.c
 *	  The remote cdc kind's callbacks on its change stream: the fetch before
 *	  a barrier, the apply at each barrier and at the final one, following
 *	  the source after the finish, and dropping the slots with the job.
 *
 * What a fetch and an apply do is in fetch.c and apply.c; this file
 * decides when they run and in which transaction, under the job's slot
 * lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "tcop/pquery.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/remote_rows.h"
#include "copy/index_build.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "lib/lib.h"
#include "remote/remote.h"

/* kind.h: fetch: whether every source's slot was read to the end it had */
bool
remote_fetch(BarrierExecutor *exec)
{
	RemoteJob  *rj = exec->kind_state;

	/*
	 * a sharded job's actors of the servers that answer go on while one
	 * does not: its changes wait in its slot, and the actors reading its
	 * splits wait for it, each in its worker
	 */
	backfill_lock_slot_of(rj->job->job_id);
	return fetch_once(rj, true, rj->sharded);
}

/*
 * kind.h: barrier_changes.  While the downstream waits for its indexes
 * (builds_indexes_once), nothing is applied: an apply upserts and deletes by
 * key, and the changes of the keys already read wait in the change table,
 * in commit order, for the final barrier, as those of the keys not read yet
 * wait for their chunk.
 */
void
remote_barrier_changes(BarrierExecutor *exec, int first, int last,
					   TimestampTz deadline pg_attribute_unused())
{
	RemoteJob  *rj = exec->kind_state;

	if (!rj->indexes_built)
		rj->indexes_built = backfill_indexes_built(rj->job, false);
	for (int a = first; a <= last; a++)
	{
		rj->full[a] = false;
		if (rj->indexes_built)
			apply_changes(rj, a);
	}
}

/*
 * kind.h: final_changes: fetch, build the downstream's indexes if it waits
 * for them (in this transaction, so a crash during the build rolls it back
 * with the final barrier, and the next run builds them again from the
 * committed copy), then every change applies.
 */
void
remote_final_changes(BarrierExecutor *exec)
{
	RemoteJob  *rj = exec->kind_state;

	backfill_lock_slot_of(rj->job->job_id);
	(void) fetch_once(rj, true, false);
	(void) backfill_indexes_built(rj->job, true);
	apply_changes(rj, -1);
}

/*
 * kind.h: after_finish: follow the source up to where it was now, then
 * return; in a background worker, after BACKFILL_REMOTE_FOLLOW_FETCHES
 * fetches at most.  One fetch and its apply per transaction: a fetch moves
 * the slot only to the offset committed here before it, so a transaction
 * that fails loses nothing the slot has let go of.  Caller is connected to
 * SPI in a non-atomic context, which this commits between fetches; each
 * fetch runs as the job's owner.
 */
void
remote_after_finish(int64 job_id)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "backfill follow",
											  ALLOCSET_DEFAULT_SIZES);
	bool		done = false;
	int			fetches = 0;

	PG_TRY();
	{
		while (!done)
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);
			BackfillJob *job;

			/*
			 * The fetch's statements run in an SPI connection of their own,
			 * released before the commit: the caller's lives as long as the
			 * worker, and the result tables SPI keeps in it until then would
			 * pile up at every round of a follow that does not end.
			 */
			backfill_spi_enter();
			job = backfill_load_job(job_id, cxt);
			CHECK_FOR_INTERRUPTS();
			done = job->status != BACKFILL_STATUS_FINISHED;
			if (!done)
			{
				RemoteJob  *rj = remote_job_make(job);
				RoleContext rc;
				int			guc_level;

				backfill_owner_enter(job->owner, false, &rc);
				guc_level = backfill_pin_search_path(job);
				prepare_apply(rj);
				prepare_insert(rj);
				backfill_lock_slot_of(job_id);
				/*
				 * In a worker, a sharded job follows the servers that answer,
				 * and one that does not is asked again at the next round, not
				 * at once.
				 */
				done = fetch_once(rj, true, IsBackgroundWorker && rj->sharded) ||
					(IsBackgroundWorker && ++fetches >= BACKFILL_REMOTE_FOLLOW_FETCHES);
				apply_changes(rj, -1);
				SPI_freeplan(rj->apply_plan);
				SPI_freeplan(rj->insert_plan);
				backfill_unpin_search_path(guc_level);
				backfill_role_leave(&rc);
			}
			backfill_spi_leave();
			MemoryContextSwitchTo(old);
			MemoryContextReset(cxt);
			if (!done)
			{
				backfill_commit();
				/* without a portal (a worker), SPI needs a snapshot pushed */
				if (ActivePortal == NULL)
					PushActiveSnapshot(GetTransactionSnapshot());
			}
		}
	}
	PG_FINALLY();
	{
		MemoryContextDelete(cxt);
	}
	PG_END_TRY();
}

/*
 * kind.h: drop_objects: the slot and the publication on the source, once
 * the transaction has committed (replication.c): dropped before, a rollback
 * of the caller (a cutover, drop_job) would leave the job without the
 * changes only its slot held
 */
void
remote_drop_objects(int64 job_id)
{
	Oid			upstream = backfill_job_upstream(job_id);
	Oid			owner = backfill_job_owner(job_id);
	char	   *name = remote_object_name(job_id, false);
	List	   *servers = NIL;
	ListCell   *lc;

	if (!OidIsValid(upstream))
		return;
	foreach(lc, backfill_remote_leaves(upstream))
	{
		RemoteTable table;
		MemoryContext cxt = CurrentMemoryContext;

		backfill_remote_table(lfirst_oid(lc), &table);
		if (list_member_oid(servers, table.serverid))
			continue;
		servers = lappend_oid(servers, table.serverid);
		PG_TRY();
		{
			RemoteConn *conn = backfill_remote_connect(table.serverid, owner,
													   psprintf("backfill job %lld", (long long) job_id));

			backfill_remote_drop_slot_at_commit(conn, name);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			/* a source that is down keeps them until a later fetch sweeps them */
			if (geterrcode() != ERRCODE_CONNECTION_FAILURE)
				PG_RE_THROW();
			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			ereport(WARNING,
					(errcode(edata->sqlerrcode),
					 errmsg("could not drop replication slot and publication \"%s\" on server \"%s\"",
							name, table.server_name),
					 errdetail_internal("%s", edata->detail ? edata->detail : edata->message),
					 errhint("The next fetch of a job on that server drops them, or drop them on the source.")));
		}
		PG_END_TRY();
	}
}
