/*-------------------------------------------------------------------------
 *
 * switchover.c
 *	  The switchover of a remote job (cdc on a foreign table of
 *	  postgres_fdw): stop taking writes on the source table, take in the
 *	  last of its changes, carry its sequences over, and stop following it.
 *
 * A remote job that has finished follows its source through a publication
 * and a logical slot there (kind_remote.c).  Moving a table from another
 * server ends, as every logical-replication migration does, with a
 * switchover; backfill_remote_switchover does it in the caller's
 * transaction, as the job's owner, over the owner's user mapping:
 *
 *	 1. With fence, the source table stops taking writes from every role
 *		but its owner: in one transaction on the source, LOCK TABLE ... IN
 *		SHARE MODE under a lock_timeout (so the writers queued behind it
 *		wait that long at most; on a timeout it tries again after a backoff,
 *		up to "attempts" times, a NOTICE and a log line each), which waits
 *		out every transaction that has written to it, then REVOKE INSERT,
 *		UPDATE, DELETE, TRUNCATE (and the column grants of INSERT and
 *		UPDATE) from every grantee but the owner, then COMMIT: a writer
 *		queued behind the lock checks its privileges after it and fails.
 *		A lock alone would be undone at its transaction's end, and the
 *		writers would then write to a table nothing follows any longer;
 *		the revoke stays after a switchover, and is undone (the same grants
 *		again) when the switchover fails.  Only grants made by the table's
 *		owner can be given back, so a table with write grants made by
 *		another role is refused before anything changed.  The revoked
 *		grants are recorded, in the same transaction on the source, in the
 *		ledger (the comment of the job's publication there): a fence whose
 *		switchover died with its backend (a kill, a crash) is given back by
 *		backfill.unfence(), or taken over by the next switchover, which
 *		gives back both if it fails.
 *	 2. The target is the source's WAL insert position read after the
 *		fence (without fence: now; the caller has stopped the writers).
 *		Once the source has flushed up to it, one fetch takes every change
 *		committed before it (fetch_once), and they are applied.  One fetch
 *		only: a second in the same transaction would advance the slot to
 *		the first one's offset, which is not committed here, and a failure
 *		after it would lose those changes.  A job further behind than one
 *		fetch (BACKFILL_REMOTE_FETCH_CHANGES messages) is refused, the fence
 *		undone: let it catch up (run_job, start_job) and switch over again.
 *	 3. The sequences that feed the source table's columns (serial and
 *		identity: pg_get_serial_sequence) are read on the source, and the
 *		local table's own sequences of the same columns are set to them
 *		when they are behind, so that the next value continues after the
 *		source's.
 *	 4. The job is no longer run in the background (run_mode foreground),
 *		and its slot and publication are dropped on the source once the
 *		local transaction has committed (replication.c), never before:
 *		the changes just applied are in the slot until then, and the slot
 *		is only ever advanced to an offset committed here, so a rollback,
 *		a timeout or a crash before the commit leaves the slot as it was,
 *		and a switchover again fetches them again.
 * Returns the job's offset after the fetch: every transaction the source
 * committed before it is in the local table.  The caller records that the
 * job was switched over (the job row keeps remote_lsn at that offset).
 *
 * Nothing else it does on the source outlives a rollback: steps 2 to 4 run
 * in a subtransaction, and when one fails it is rolled back, the fence is
 * given back on the source, then the error goes on; when the caller's
 * transaction aborts later (its cutover fails, a ROLLBACK), the fence is
 * given back then (an abort callback over the open connection).  Both
 * wait for the source BACKFILL_SWITCHOVER_UNFENCE_TIMEOUT_MS at most,
 * since after a statement timeout nothing else would end the wait; a
 * source that does not answer keeps its fence and ledger, and the warning
 * names backfill.unfence().
 *
 * No switchover back after the commit: once the slot is dropped nothing
 * records the source's changes, and a switchover back would need a slot on
 * this server and a job on the source, which the source's extension (if
 * any) would own.
 *
 * The fence, its ledger and giving it back are in fence.c.
 *
 * A job over the foreign partitions of several servers (kind_remote.c)
 * switches over from all of them at once: each partition's table is fenced
 * on its server (all, or none: a fence that fails gives back those made
 * before it), each server has its own target and is waited for, the one
 * fetch takes the changes of every server, the sequences are carried over
 * from each partition's table (the highest wins), and the slot and
 * publication go on each server.  It returns no single offset: each
 * server's is in backfill.job_source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/cutover_rows.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "kinds/remote/switchover.h"
#include "lib/lib.h"
#include "remote/remote.h"

/* source s's WAL insert position now */
static XLogRecPtr
source_insert_lsn(Switchover *sw, int source)
{
	RemoteRows *rows = backfill_remote_query(remote_source_connect(sw->rj, source),
											 "SELECT pg_catalog.pg_current_wal_insert_lsn()::text",
											 0, NULL);
	bool		err = false;

	return pg_lsn_in_internal(backfill_remote_value(rows, 0, 0), &err);
}

/* wait until source s has flushed its WAL up to target: a fetch reads flushed WAL only */
static void
wait_source_flush(Switchover *sw, int source, XLogRecPtr target)
{
	const char *params[1] = {psprintf("%X/%X", LSN_FORMAT_ARGS(target))};

	for (;;)
	{
		RemoteRows *rows = backfill_remote_query(remote_source_connect(sw->rj, source),
												 "SELECT pg_catalog.pg_current_wal_flush_lsn() >= $1::pg_catalog.pg_lsn",
												 1, params);

		if (strcmp(backfill_remote_value(rows, 0, 0), "t") == 0)
			return;
		backfill_sleep_ms(10);
	}
}

/* the source's name of a column of the foreign table (its column_name option) */
static char *
source_column(Oid foreign_table, const char *name)
{
	AttrNumber	att = get_attnum(foreign_table, name);
	List	   *options = GetForeignColumnOptions(foreign_table, att);
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "column_name") == 0)
			return defGetString(def);
	}
	return pstrdup(name);
}

/*
 * Set the local table's sequences of the copied columns that have one
 * (serial or identity) to the source's, where they are behind it.  Runs as
 * the job's owner.
 */
static void
copy_sequences(Switchover *sw, FenceTarget *t)
{
	BackfillJob *job = sw->job;
	RemoteConn *conn = remote_source_connect(sw->rj, t->source);

	for (int c = 0; c < job->ncols; c++)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		Datum		values[2];
		const char *params[2];
		RemoteRows *rows;
		char	   *local_seq;

		if (job->col_exprs != NULL && job->col_exprs[c] != NULL)
			continue;			/* computed here: no source column */
		values[0] = CStringGetTextDatum(job->downstream_sql);
		values[1] = CStringGetTextDatum(job->col_names[c]);
		backfill_spi_exec_args("SELECT pg_catalog.pg_get_serial_sequence($1, $2)",
							   2, types, values, NULL, SPI_OK_SELECT);
		local_seq = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (local_seq == NULL)
			continue;

		params[0] = t->table.qualified;
		params[1] = source_column(t->relid, job->col_names[c]);
		rows = backfill_remote_query(conn,
									 "SELECT pg_catalog.pg_sequence_last_value(s::pg_catalog.regclass)::text "
									 "FROM pg_catalog.pg_get_serial_sequence($1, $2) s WHERE s IS NOT NULL",
									 2, params);
		if (rows->nrows == 0 || backfill_remote_value(rows, 0, 0) == NULL)
			continue;			/* no sequence there, or never used */

		types[1] = INT8OID;
		values[0] = CStringGetTextDatum(local_seq);
		values[1] = DirectFunctionCall1(int8in, CStringGetDatum(backfill_remote_value(rows, 0, 0)));
		backfill_spi_exec_args("SELECT pg_catalog.setval(q.seq, $2, true) "
							   "FROM (SELECT $1::pg_catalog.regclass AS seq) q "
							   "JOIN pg_catalog.pg_sequence p ON p.seqrelid = q.seq "
							   "WHERE pg_catalog.pg_sequence_last_value(q.seq) IS NULL "
							   "OR (p.seqincrement > 0 AND pg_catalog.pg_sequence_last_value(q.seq) < $2) "
							   "OR (p.seqincrement < 0 AND pg_catalog.pg_sequence_last_value(q.seq) > $2)",
							   2, types, values, NULL, SPI_OK_SELECT);
		sw->sequences += SPI_processed;
	}
}

/*
 * Steps 2 to 4 of the file header, on each of the job's servers; returns
 * the job's offset on its one server, or InvalidXLogRecPtr for a job of
 * several (each one's is in backfill.job_source).
 */
static XLogRecPtr
catch_up_and_stop(Switchover *sw)
{
	struct RemoteJob *rj = sw->rj;
	int64		job_id = sw->job->job_id;
	XLogRecPtr *target = palloc(sizeof(XLogRecPtr) * rj->nsources);
	XLogRecPtr	offset = InvalidXLogRecPtr;

	for (int s = 0; s < rj->nsources; s++)
		target[s] = source_insert_lsn(sw, s);
	for (int s = 0; s < rj->nsources; s++)
		wait_source_flush(sw, s, target[s]);
	prepare_apply(rj);
	prepare_insert(rj);
	backfill_lock_slot_of(job_id);
	(void) fetch_once(rj, false, false);
	for (int s = 0; s < rj->nsources; s++)
	{
		bool		has_offset = committed_offset(rj, s, &offset);

		if (!has_offset || offset < target[s])
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("backfill job %lld is too far behind its source to switch over",
							(long long) job_id),
					 errdetail("One fetch took the changes of server \"%s\" up to %X/%X, short of %X/%X, the source's position after the fence.",
							   rj->sources[s].server_name,
							   LSN_FORMAT_ARGS(has_offset ? offset : InvalidXLogRecPtr),
							   LSN_FORMAT_ARGS(target[s])),
					 errhint("Let the job catch up first (CALL backfill.run_job(%lld), or backfill.start_job(%lld)), then switch over again.",
							 (long long) job_id, (long long) job_id)));
	}
	apply_changes(rj, -1);
	for (int i = 0; i < sw->ntargets; i++)
		copy_sequences(sw, &sw->targets[i]);
	backfill_set_foreground(job_id);
	/* last, and after the commit: a rollback cannot make them again */
	for (int s = 0; s < rj->nsources; s++)
		backfill_remote_drop_slot_at_commit(remote_source_connect(rj, s), sw->pubname);
	return rj->sharded ? InvalidXLogRecPtr : offset;
}

/*
 * The job must have finished: checked before its workers are stopped, and
 * again under the job lock.  That it is a remote one, the kind's routine
 * says (kind.h, check_switchover).
 */
static void
check_switchable(BackfillJob *job)
{
	if (job->status != BACKFILL_STATUS_FINISHED)
	{
		bool		isnull;
		Datum		status = backfill_job_column(job->job_id, "status", &isnull);

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot switch over backfill job %lld because it has not finished", (long long) job->job_id),
				 errdetail("Its status is \"%s\".", isnull ? "?" : TextDatumGetCString(status)),
				 errhint("Run it to its end with CALL backfill.run_job(%lld) first.", (long long) job->job_id)));
	}
}

/*
 * backfill_remote_switchover
 *		kind.h: switchover.  Switch a finished remote job over from its
 *		source (see the file header) and return the source's LSN it
 *		switched at.  The caller has stopped the job's workers and holds the
 *		job lock (src/api/switchover.c) and is connected to SPI; it records
 *		the switchover.  The caller must have the privileges of the job's
 *		owner, as for run_job.
 */
XLogRecPtr
backfill_remote_switchover(int64 job_id, bool fence_writes, int lock_timeout_ms, int attempts)
{
	Switchover *sw = palloc0(sizeof(Switchover));
	MemoryContext cxt = CurrentMemoryContext;
	RoleContext rc;
	int			guc_level;
	XLogRecPtr	offset = InvalidXLogRecPtr;
	ResourceOwner owner;
	TimestampTz start = GetCurrentTimestamp();

	Assert(lock_timeout_ms > 0 && attempts > 0);
	sw->job = backfill_load_job_to_run(job_id, cxt);
	sw->lock_timeout_ms = lock_timeout_ms;
	sw->pubname = remote_object_name(job_id, false);
	check_switchable(sw->job);
	if (!backfill_job_lock_mine(job_id))
		elog(ERROR, "the switchover of backfill job %lld needs the job lock", (long long) job_id);

	backfill_owner_enter(sw->job->owner, false, &rc);
	guc_level = backfill_pin_search_path(sw->job);
	sw->rj = remote_job_make(sw->job);
	/* the tables to fence: the foreign table, or each foreign partition */
	sw->ntargets = sw->rj->nparts;
	sw->targets = palloc0(sizeof(FenceTarget) * sw->ntargets);
	for (int i = 0; i < sw->ntargets; i++)
	{
		FenceTarget *t = &sw->targets[i];

		t->relid = sw->rj->parts[i].relid;
		t->table = sw->rj->parts[i].table;
		t->source = sw->rj->parts[i].source;
		t->display = psprintf("%s.%s", t->table.nspname, t->table.relname);
	}

	/*
	 * A job switched over already, or whose slot is gone, has nothing to
	 * switch at: refused before the fence, and before a fetch would make
	 * its publication again.
	 */
	for (int s = 0; s < sw->rj->nsources; s++)
	{
		const char *params[1] = {sw->pubname};
		RemoteConn *conn = remote_source_connect(sw->rj, s);

		if (backfill_remote_query(conn,
								  "SELECT FROM pg_catalog.pg_replication_slots WHERE slot_name = $1",
								  1, params)->nrows == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("backfill job %lld has no replication slot on server \"%s\"",
							(long long) job_id, sw->rj->sources[s].server_name),
					 errdetail("Replication slot \"%s\" does not exist: the job was switched over already, or the slot was dropped.",
							   params[0]),
					 errhint("To copy the table again, create the job again with backfill.recreate_job(%lld).",
							 (long long) job_id)));
		/* the publication holds the fence's ledger: made again if dropped */
		(void) ensure_slot(sw->rj, conn, s, true);
	}

	/* every table fenced, or none: a fence that fails gives back the others' */
	if (fence_writes)
	{
		PG_TRY();
		{
			for (int i = 0; i < sw->ntargets; i++)
				fence(sw, &sw->targets[i], attempts);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			FlushErrorState();
			unfence(sw);
			ReThrowError(edata);
		}
		PG_END_TRY();
	}

	owner = backfill_subxact_begin();
	PG_TRY();
	{
		offset = catch_up_and_stop(sw);
		backfill_subxact_release(owner);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		backfill_subxact_rollback(owner);
		unfence(sw);
		ReThrowError(edata);
	}
	PG_END_TRY();
	if (fence_writes)
		unfence_at_abort(sw);

	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
	{
		int			revoked = 0;

		for (int i = 0; i < sw->ntargets; i++)
			revoked += list_length(sw->targets[i].revoked);
		ereport(LOG,
				(sw->rj->sharded ?
				 errmsg("backfill job %lld switched over from %d tables on %d servers",
						(long long) job_id, sw->ntargets, sw->rj->nsources) :
				 errmsg("backfill job %lld switched over from table \"%s\" on server \"%s\" at %X/%X",
						(long long) job_id, sw->targets[0].display, sw->targets[0].table.server_name,
						LSN_FORMAT_ARGS(offset)),
				 errdetail("%s %d of its sequences were set; it took %ld ms.",
						   fence_writes ?
						   psprintf("The source tables were fenced, %d write grants revoked.", revoked) :
						   "The source tables were not fenced.",
						   sw->sequences,
						   (long) (TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()))),
				 errhidestmt(true)));
	}
	return offset;
}

/* ---- before the workers are stopped ---- */

/*
 * What backfill.cutover() checks before it calls the switchover, checked
 * again here for a caller that calls it alone: the caller must have the
 * privileges of the owner of the local table (the switchover makes it the
 * table the writers use), and the job must not have been cut over.
 */
static void
check_switchover_caller(int64 job_id)
{
	Oid			downstream = backfill_job_downstream(job_id);
	Oid			owner = OidIsValid(downstream) ? backfill_relation_owner(downstream) : InvalidOid;
	Oid			old_table;
	Oid			new_table;
	bool		swapped;

	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot switch over backfill job %lld because it has no downstream table",
						(long long) job_id)));
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(downstream)),
				 errdetail("The switchover of backfill job %lld makes its downstream table the one the writers use.",
						   (long long) job_id)));
	if (backfill_cutover_row_tables(job_id, &old_table, &new_table, &swapped))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has already been cut over", (long long) job_id)));
}

/*
 * remote_check_switchover
 *		kind.h: check_switchover.  The job must have finished, and the caller
 *		may switch it over (check_switchover_caller).
 */
void
remote_check_switchover(BackfillJob *job)
{
	check_switchable(job);
	check_switchover_caller(job->job_id);
}

/* ---- giving a fence back ---- */

PG_FUNCTION_INFO_V1(backfill_unfence);

/*
 * backfill.unfence(job_id bigint) RETURNS integer
 *		Give back, on each of the job's servers, the write privileges its
 *		switchovers' fences revoked and recorded in the ledger there (see
 *		give_back), as the job's owner over the owner's user mapping;
 *		return how many.  A fence whose switchover committed was dropped
 *		with the publication that recorded it: it stays.  It holds the
 *		job's cutover lock first, so that no switchover fences meanwhile.
 */
Datum
backfill_unfence(PG_FUNCTION_ARGS)
{
	int64		job_id;
	Oid			owner;
	Oid			upstream;
	List	   *leaves;
	RoleContext rc;
	ListCell   *lc;
	int			given = 0;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "job_id")));
	job_id = PG_GETARG_INT64(0);
	backfill_lock_job_cutover(job_id);
	owner = backfill_require_job_owner(job_id);
	upstream = backfill_job_upstream(job_id);
	leaves = OidIsValid(upstream) ? backfill_remote_leaves(upstream) : NIL;
	if (leaves == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("backfill job %lld does not copy a table of another server", (long long) job_id),
				 errdetail("Only the switchover of a job on a foreign table of postgres_fdw fences a table.")));

	backfill_owner_enter(owner, false, &rc);
	foreach(lc, leaves)
	{
		RemoteTable table;
		RemoteConn *conn;

		backfill_remote_table(lfirst_oid(lc), &table);
		conn = backfill_remote_connect(table.serverid, owner,
									   psprintf("backfill job %lld", (long long) job_id));
		given += give_back(conn, remote_object_name(job_id, false), table.qualified);
	}
	backfill_role_leave(&rc);
	PG_RETURN_INT32(given);
}
