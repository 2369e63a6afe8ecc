/*-------------------------------------------------------------------------
 *
 * cdc.c
 *	  The cdc kind: its replication slot, and fetching the changes it decodes.
 *
 * RisingWave's CDC backfill reads an external database's snapshot in key
 * order while it consumes that database's change stream; the state is one
 * row per table with the position and the stream's offset (section 5.1 of
 * the reference).  Here the change stream is this server's write-ahead log,
 * decoded through a logical replication slot the job owns, named
 * backfill_<database oid>_<job id>, with the extension's own output plugin
 * (decode.c), which emits the key of every row of the upstream a committed
 * transaction wrote, with the LSN of that transaction's commit record.
 * Writers pay nothing for it: no trigger fires while the job backfills.
 *
 * The offset is an LSN: every transaction whose commit record starts below
 * it has been consumed.  Before each barrier, in a transaction of its own, a
 * fetch:
 *
 * 1. advances the slot to the offset the last barrier committed, so the WAL
 *	  before it can go;
 * 2. flushes the WAL and peeks at the slot's changes up to that point, drops
 *	  those below the offset, and appends their keys to
 *	  backfill.changes_<id>;
 * 3. waits until each decoded transaction has left the process array, so
 *	  that the barrier's snapshot, taken after this transaction commits,
 *	  sees all of them.
 *
 * The barrier then runs as for the trigger kinds (executor.c): keys at or
 * below the position are forwarded by re-reading the upstream as of the
 * barrier's snapshot, the others dropped, and the fetch's end is persisted
 * as the new offset with the position.  A peek does not move the slot, and
 * the slot is advanced only to a committed offset, so a crash anywhere
 * loses nothing: the changes since the committed offset are decoded again,
 * and a key fetched twice is forwarded twice, which is harmless.
 *
 * The slot is created by the first fetch, in a transaction that has written
 * nothing yet (PostgreSQL's rule): the snapshot that barrier reads is taken
 * after the slot is consistent, so every later change is decoded.  Before
 * the first chunk every key is above the position, so what was written
 * between create_job and the slot needs no forwarding.  The final barrier
 * fetches under its lock, so it sees every write; the slot is dropped right
 * after the job has finished.  The slot and the offset belong to the
 * database and its WAL, so a job dumped and restored mid-backfill cannot
 * resume (fail_restored() in state.c says why).
 *
 * The job's own transactions write the downstream, the state and the change
 * table, and the slot would decode every row of them, only for the plugin
 * to skip them: a barrier's inserts filled the reorder buffer, and spilled
 * to disk.  So a run tags its transactions with a replication origin of the
 * job's own, named as its slot, and the plugin filters that origin out
 * before anything is decoded (filter_by_origin_cb).  Writes by anybody else
 * to the upstream, even another job's barriers, carry another origin, or
 * none, and are decoded.
 *
 * Dropping a slot cannot be rolled back, so cancel_job and drop_job drop it
 * when their transaction commits (just before, at PRE_COMMIT); a cancel that
 * rolls back keeps it.  A crash between that drop and the commit leaves the
 * job as it was, without its slot: its next run fails, saying that the slot
 * does not exist, and cancel_job or drop_job, called again, complete.
 * DROP EXTENSION ... CASCADE drops the jobs' tables without running
 * drop_job: an event trigger on DROP EXTENSION asks for a check at commit,
 * which drops this database's backfill slots if the extension is gone by
 * then.  After a final barrier the slot is dropped in the next transaction;
 * should a crash come first, backfill_cdc_drop_leftover_slots() drops it at
 * the next chance: when the launcher starts (in backfill.database), at a
 * start_job or at a run of any job of the job's database.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_replication_origin.h"
#include "commands/extension.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/lmgr.h"
#include "storage/standby.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/varlena.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"

#include "barrier.h"

PG_FUNCTION_INFO_V1(backfill_drop_slot);
PG_FUNCTION_INFO_V1(backfill_lock_slot);
PG_FUNCTION_INFO_V1(backfill_on_drop_extension);

/* whether this session's transactions carry a job's replication origin */
static bool origin_in_session = false;

/* slots to drop when the transaction commits, in TopMemoryContext */
static List *slots_at_commit = NIL;
static bool sweep_at_commit = false;
static bool xact_callback_registered = false;
PG_FUNCTION_INFO_V1(backfill_flush_wal);

/* the name of a job's replication slot */
char *
backfill_slot_name(int64 job_id)
{
	return psprintf("backfill_%u_%lld", MyDatabaseId, (long long) job_id);
}

/*
 * Whether the server lets this library be an output plugin.  Servers that
 * have the setting output_plugin_libraries (Debian's, from 15.20) allow only
 * the libraries it lists; others allow any.
 */
static bool
plugin_approved(void)
{
	const char *setting = GetConfigOption("output_plugin_libraries", true, false);
	char	   *copy;
	List	   *names;
	ListCell   *lc;

	if (setting == NULL)
		return true;
	copy = pstrdup(setting);
	if (!SplitIdentifierString(copy, ',', &names))
		return false;
	foreach(lc, names)
	{
		const char *name = lfirst(lc);

		if (strcmp(name, "backfill") == 0 || strcmp(name, "$libdir/backfill") == 0)
			return true;
	}
	return false;
}

/*
 * backfill_cdc_check_create
 *		What create_job requires of a cdc job: logical decoding, the right to
 *		use it, an upstream whose deletes carry their key, one actor.
 */
void
backfill_cdc_check_create(Relation upstream, int parallelism)
{
	if (parallelism != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a backfill job of kind \"cdc\" must have parallelism 1"),
				 errdetail("The cdc backfill reads each table with a single actor, as RisingWave's non-parallel CDC backfill does.")));
	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"cdc\" requires \"wal_level\" to be \"logical\""),
				 errdetail("A cdc job decodes the upstream's changes from the write-ahead log."),
				 errhint("Set wal_level = logical and restart the server, or use kind \"arrangement\".")));
	if (max_replication_slots <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"cdc\" requires \"max_replication_slots\" > 0"),
				 errdetail("A cdc job owns a logical replication slot.")));
	if (!plugin_approved())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"cdc\" requires \"backfill\" in \"output_plugin_libraries\""),
				 errdetail("A cdc job decodes the write-ahead log with the output plugin of library \"backfill\", which the server does not allow yet."),
				 errhint("Add backfill to output_plugin_libraries and reload the server configuration, or use kind \"arrangement\".")));
	if (!superuser() && !has_rolreplication(GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create a backfill job of kind \"cdc\""),
				 errdetail("A cdc job owns a replication slot, which only superusers and roles with the REPLICATION attribute may use."),
				 errhint("Use kind \"arrangement\", or ask for the REPLICATION attribute.")));

	/* deletes and key changes must carry the old key in the WAL */
	if (upstream->rd_rel->relreplident == REPLICA_IDENTITY_NOTHING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has REPLICA IDENTITY NOTHING", RelationGetRelationName(upstream)),
				 errdetail("A cdc job needs the key of every deleted row in the write-ahead log."),
				 errhint("Use ALTER TABLE ... REPLICA IDENTITY DEFAULT.")));
	if (upstream->rd_rel->relreplident == REPLICA_IDENTITY_INDEX &&
		RelationGetReplicaIndex(upstream) != upstream->rd_pkindex)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the replica identity of table \"%s\" is not its primary key",
						RelationGetRelationName(upstream)),
				 errdetail("A cdc job needs the primary key of every deleted row in the write-ahead log."),
				 errhint("Use ALTER TABLE ... REPLICA IDENTITY DEFAULT.")));
}

/*
 * Take the job's slot lock until the transaction ends.  With nowait, return
 * false at once if another session holds it.
 */
static bool
lock_slot(int64 job_id, bool nowait)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (job_id >> 32), (uint32) job_id,
						 BACKFILL_SLOT_LOCK_FIELD4);
	return LockAcquire(&tag, ExclusiveLock, false, nowait) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * backfill_cdc_lock_slot
 *		Take the job's slot lock until the transaction ends.  A slot serves
 *		one backend at a time, and the job's fetch, verify_job's peek and the
 *		drop after the finish take turns on it through this lock, instead of
 *		failing with "replication slot ... is active".
 */
void
backfill_cdc_lock_slot(int64 job_id)
{
	(void) lock_slot(job_id, false);
}

/*
 * backfill._lock_slot(job_id bigint) RETURNS void
 *		For verify_job(), before it peeks at the slot of a job the caller owns.
 */
Datum
backfill_lock_slot(PG_FUNCTION_ARGS)
{
	(void) backfill_require_job_owner(PG_GETARG_INT64(0));
	backfill_cdc_lock_slot(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}

/*
 * backfill_cdc_origin_enter
 *		Tag this session's transactions, from this one on, with the job's
 *		replication origin (made if missing), so that its slot skips them.
 *		Caller is in a transaction; backfill_cdc_origin_leave() ends it.
 */
void
backfill_cdc_origin_enter(int64 job_id)
{
	char	   *name = backfill_slot_name(job_id);
	RepOriginId origin;

	if (origin_in_session)
		return;
	origin = replorigin_by_name(name, true);
	if (origin == InvalidRepOriginId)
		origin = replorigin_create(name);
	replorigin_session_setup(origin);
	replorigin_session_origin = origin;
	origin_in_session = true;
}

/*
 * backfill_cdc_origin_leave
 *		Stop tagging this session's transactions.  After the commit of the
 *		last tagged one: a commit advances the origin's progress, which
 *		needs the session's origin set up.
 */
void
backfill_cdc_origin_leave(void)
{
	if (!origin_in_session)
		return;
	replorigin_session_reset();
	replorigin_session_origin = InvalidRepOriginId;
	replorigin_session_origin_lsn = InvalidXLogRecPtr;
	replorigin_session_origin_timestamp = 0;
	origin_in_session = false;
}

/* drop a slot and the origin of the same name, if they exist */
static void
drop_slot_and_origin(const char *name)
{
	if (SearchNamedReplicationSlot(name, true) != NULL)
		ReplicationSlotDrop(name, false);
	replorigin_drop_by_name(name, true, false);
}

/*
 * backfill_cdc_drop_slot
 *		Drop the job's replication slot and origin if they exist, now.
 */
void
backfill_cdc_drop_slot(int64 job_id)
{
	backfill_cdc_origin_leave();
	backfill_cdc_lock_slot(job_id);
	drop_slot_and_origin(backfill_slot_name(job_id));
}

/*
 * This database's slots and replication origins whose name starts
 * "backfill_<database oid>_".
 */
static List *
database_slots(void)
{
	char	   *prefix = psprintf("backfill_%u_", MyDatabaseId);
	List	   *names = NIL;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *slot = &ReplicationSlotCtl->replication_slots[i];

		if (slot->in_use && strncmp(NameStr(slot->data.name), prefix, strlen(prefix)) == 0)
			names = lappend(names, pstrdup(NameStr(slot->data.name)));
	}
	LWLockRelease(ReplicationSlotControlLock);

	/* an origin without its slot: a crash came between their creations */
	rel = table_open(ReplicationOriginRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		bool		isnull;
		char	   *name = TextDatumGetCString(heap_getattr(tup, Anum_pg_replication_origin_roname,
														RelationGetDescr(rel), &isnull));

		/* a name twice is harmless: the second drop finds nothing */
		if (strncmp(name, prefix, strlen(prefix)) == 0)
			names = lappend(names, name);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return names;
}

static void
drop_slots_at_commit(XactEvent event, void *arg)
{
	ListCell   *lc;
	List	   *names;

	if (event == XACT_EVENT_PRE_COMMIT)
	{
		names = list_copy(slots_at_commit);
		if (sweep_at_commit && !OidIsValid(get_extension_oid(BACKFILL_SCHEMA, true)))
			names = list_concat(names, database_slots());
		foreach(lc, names)
			drop_slot_and_origin(lfirst(lc));
	}
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		list_free_deep(slots_at_commit);
		slots_at_commit = NIL;
		sweep_at_commit = false;
	}
}

static void
register_commit_callback(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(drop_slots_at_commit, NULL);
		xact_callback_registered = true;
	}
}

/*
 * backfill._drop_slot(job_id bigint) RETURNS void
 *		Drop the slot of a job the caller owns when the transaction commits.
 */
Datum
backfill_drop_slot(PG_FUNCTION_ARGS)
{
	MemoryContext old;

	(void) backfill_require_job_owner(PG_GETARG_INT64(0));
	/* a leftover sweep (below) then leaves the slot to us, or has dropped it */
	backfill_cdc_lock_slot(PG_GETARG_INT64(0));
	register_commit_callback();
	old = MemoryContextSwitchTo(TopMemoryContext);
	slots_at_commit = lappend(slots_at_commit, backfill_slot_name(PG_GETARG_INT64(0)));
	MemoryContextSwitchTo(old);
	PG_RETURN_VOID();
}

/*
 * backfill_cdc_drop_leftover_slots
 *		Drop the slots, and origins, that this database's finished or
 *		cancelled cdc jobs left behind.  A job drops its slot right after its
 *		final barrier has committed, in a transaction of its own, and a crash
 *		or a kill in between leaves a finished job with its slot, which
 *		nothing reads again and which holds back the WAL and the vacuum of
 *		the catalogs without limit.  So the launcher when it starts,
 *		start_job and every run call this.  It leaves alone a job whose
 *		status this transaction wrote (it may still roll back), and a slot
 *		whose lock another session holds (that session drops it, or peeks at
 *		it).  A slot without a job row is left alone too: drop_job and
 *		DROP EXTENSION drop slots before their commit, so none is left that
 *		way.  Caller is in a transaction, with a snapshot.
 */
void
backfill_cdc_drop_leftover_slots(void)
{
	char	   *prefix = psprintf("backfill_%u_", MyDatabaseId);
	List	   *names = database_slots();
	ListCell   *lc;
	RoleContext rc;

	if (names == NIL || !OidIsValid(get_extension_oid(BACKFILL_SCHEMA, true)))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the extension's owner sees every role's jobs */
	backfill_catalog_enter(&rc);
	foreach(lc, names)
	{
		const char *name = lfirst(lc);
		char	   *end;
		int64		job_id;
		Datum		arg;
		bool		isnull;
		TransactionId xmin;
		bool		had_slot;

		errno = 0;
		job_id = strtoi64(name + strlen(prefix), &end, 10);
		if (errno != 0 || *end != '\0' || end == name + strlen(prefix))
			continue;
		arg = Int64GetDatum(job_id);
		if (SPI_execute_with_args("SELECT j.xmin, j.status FROM backfill.job j "
								  "WHERE j.job_id OPERATOR(pg_catalog.=) $1 "
								  "AND j.kind OPERATOR(pg_catalog.=) 'cdc' "
								  "AND j.status OPERATOR(pg_catalog.=) ANY (ARRAY['finished', 'cancelled'])",
								  1, (Oid[]) {INT8OID}, &arg, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read backfill.job");
		if (SPI_processed == 0)
			continue;
		xmin = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[0],
												   SPI_tuptable->tupdesc, 1, &isnull));
		if (TransactionIdIsCurrentTransactionId(xmin) || !lock_slot(job_id, true))
			continue;
		had_slot = SearchNamedReplicationSlot(name, true) != NULL;
		drop_slot_and_origin(name);
		if (had_slot)
			ereport(LOG,
					(errmsg("dropped replication slot \"%s\" of backfill job %lld, which is %s",
							name, (long long) job_id,
							SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2))));
	}
	backfill_role_leave(&rc);
	SPI_finish();
}

/*
 * backfill._on_drop_extension() event trigger, ON ddl_command_start WHEN TAG
 * IN ('DROP EXTENSION'): check at commit whether extension backfill is gone,
 * and drop its slots if it is.
 */
Datum
backfill_on_drop_extension(PG_FUNCTION_ARGS)
{
	register_commit_callback();
	sweep_at_commit = true;
	PG_RETURN_NULL();
}

/*
 * backfill_cdc_prepare
 *		The statements of the cdc kind, prepared with the executor's.
 */
void
backfill_cdc_prepare(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	StringInfoData sql;
	Oid			argtypes[INDEX_MAX_KEYS + 4];

	exec->slot_name = MemoryContextStrdup(GetMemoryChunkContext(job),
										  backfill_slot_name(job->job_id));
	exec->cdc_offset = job->cdc_offset;
	exec->cdc_offset_known = job->has_cdc_offset;
	exec->cdc_fetched = job->cdc_offset;

	/* the one state row: $1 split, $2 finished, $3 rows, $4 offset, key */
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "INSERT INTO %s (split_id, %s, backfill_finished, row_count, cdc_offset) "
					 "VALUES ($1, %s, $2, $3, pg_catalog.jsonb_build_object('lsn', $4::pg_catalog.text)) "
					 "ON CONFLICT (split_id) DO UPDATE SET backfill_finished = EXCLUDED.backfill_finished, "
					 "row_count = EXCLUDED.row_count, cdc_offset = EXCLUDED.cdc_offset",
					 job->state_sql, backfill_pk_list(job, NULL), backfill_pk_params(job, 5));
	backfill_append_excluded_key(&sql, job);
	argtypes[0] = VARCHAROID;
	argtypes[1] = BOOLOID;
	argtypes[2] = INT8OID;
	argtypes[3] = PG_LSNOID;
	memcpy(&argtypes[4], job->pk_types, sizeof(Oid) * job->npk);
	exec->persist_plan = backfill_prepare_kept(sql.data, 4 + job->npk, argtypes);

	/*
	 * The decoded keys from the offset on, into the change table; returns
	 * the transactions they came from.
	 */
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH p AS MATERIALIZED (SELECT c.xid, c.data "
					 "FROM pg_catalog.pg_logical_slot_peek_changes($1, $2, NULL, 'relid', $3) c "
					 "WHERE pg_catalog.split_part(c.data, E'\\t', 1)::pg_catalog.pg_lsn >= $4), "
					 "ins AS (INSERT INTO %s SELECT (s.k).* FROM "
					 "(SELECT pg_catalog.substr(p.data, pg_catalog.strpos(p.data, E'\\t') + 1)::%s AS k FROM p) s) "
					 "SELECT DISTINCT p.xid FROM p",
					 job->changes_sql, job->changes_sql);
	argtypes[0] = NAMEOID;
	argtypes[1] = PG_LSNOID;
	argtypes[2] = TEXTOID;
	argtypes[3] = PG_LSNOID;
	exec->fetch_plan = backfill_prepare_kept(sql.data, 4, argtypes);
}

/*
 * Flush the WAL inserted so far, so that the slot can decode every commit
 * made until now, asynchronous ones too.  Right after a page header, the
 * insert position is past WAL that does not exist yet; the WAL inserted so
 * far ends at the page's start.  Returns the position flushed.
 */
static XLogRecPtr
flush_wal(void)
{
	XLogRecPtr	upto = GetXLogInsertRecPtr();

	if (upto % XLOG_BLCKSZ <= SizeOfXLogLongPHD)
		upto -= upto % XLOG_BLCKSZ;
	XLogFlush(upto);
	return upto;
}

/*
 * backfill._flush_wal() RETURNS void
 *		For verify_job(), before it peeks at a slot.
 */
Datum
backfill_flush_wal(PG_FUNCTION_ARGS)
{
	if (!RecoveryInProgress())
		(void) flush_wal();
	PG_RETURN_VOID();
}

/* the slot's confirmed position, or InvalidXLogRecPtr if there is no slot */
static XLogRecPtr
slot_position(BarrierExecutor *exec, bool *exists)
{
	Oid			argtypes[1] = {NAMEOID};
	Datum		values[1];
	bool		isnull;
	XLogRecPtr	result = InvalidXLogRecPtr;

	values[0] = CStringGetDatum(exec->slot_name);
	values[0] = DirectFunctionCall1(namein, values[0]);
	if (SPI_execute_with_args("SELECT confirmed_flush_lsn FROM pg_catalog.pg_replication_slots "
							  "WHERE slot_name = $1", 1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_replication_slots");
	*exists = SPI_processed > 0;
	if (*exists)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			result = DatumGetLSN(d);
	}
	return result;
}

/*
 * backfill_cdc_fetch
 *		Fetch the changes decoded since the offset into the change table (see
 *		the file header).  Caller is connected to SPI, in a transaction whose
 *		snapshot the barrier does not use, or in the final barrier after its
 *		lock.
 */
void
backfill_cdc_fetch(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	Datum		name = DirectFunctionCall1(namein, CStringGetDatum(exec->slot_name));
	Datum		values[4];
	Oid			argtypes[2] = {NAMEOID, PG_LSNOID};
	XLogRecPtr	upto;
	bool		exists;
	XLogRecPtr	confirmed;

	backfill_cdc_lock_slot(job->job_id);
	confirmed = slot_position(exec, &exists);
	if (!exists)
	{
		if (exec->cdc_offset_known)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" of backfill job %lld does not exist",
							exec->slot_name, (long long) job->job_id),
					 errdetail("The job has consumed changes up to offset %X/%X; the changes after it are lost.",
							   LSN_FORMAT_ARGS(exec->cdc_offset)),
					 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
							 (long long) job->job_id, (long long) job->job_id)));
		if (SPI_execute_with_args("SELECT pg_catalog.pg_create_logical_replication_slot($1, 'backfill')",
								  1, argtypes, &name, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not create replication slot \"%s\"", exec->slot_name);
		confirmed = slot_position(exec, &exists);
	}
	/* after the slot: making the origin writes, and a slot is made before any */
	backfill_cdc_origin_enter(job->job_id);

	if (!exec->cdc_offset_known)
	{
		/* RisingWave: no stored offset, so the source's current one */
		exec->cdc_offset = confirmed;
		exec->cdc_offset_known = true;
	}

	/* what was consumed can go */
	if (confirmed < exec->cdc_offset)
	{
		values[0] = name;
		values[1] = LSNGetDatum(exec->cdc_offset);
		if (SPI_execute_with_args("SELECT pg_catalog.pg_replication_slot_advance($1, $2)",
								  2, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not advance replication slot \"%s\"", exec->slot_name);
	}

	/*
	 * Decoding starts at the slot's restart point, which moves only past a
	 * record of the transactions running (a standby snapshot), logged every
	 * 15 s at most while the server is busy: without one, each fetch would
	 * decode again all the WAL since the last, the advance above too.  One
	 * logged now is passed by the next fetch's advance, so the restart point
	 * stays a barrier behind.
	 */
	(void) LogStandbySnapshot();

	/* a commit made asynchronously may not be flushed yet: flush it */
	upto = flush_wal();

	values[0] = name;
	values[1] = LSNGetDatum(upto);
	values[2] = CStringGetTextDatum(psprintf("%u", job->upstream));
	values[3] = LSNGetDatum(exec->cdc_offset);
	if (SPI_execute_plan(exec->fetch_plan, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not fetch the changes of replication slot \"%s\"", exec->slot_name);

	/* committed, but maybe not visible yet to a new snapshot: wait */
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		TransactionId xid = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i],
																SPI_tuptable->tupdesc, 1,
																&isnull));

		if (!isnull && TransactionIdIsValid(xid))
			XactLockTableWait(xid, NULL, NULL, XLTW_None);
	}
	SPI_freetuptable(SPI_tuptable);
	exec->cdc_fetched = Max(upto, exec->cdc_offset);
}

/*
 * backfill_cdc_persist
 *		Persist the job's one state row: the position and row count all
 *		vnodes share, and the offset of the last fetch.  Written at every
 *		barrier, since the offset moves even when the position does not.
 */
void
backfill_cdc_persist(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	VnodeState *vs = &job->vnodes[0];
	Datum		values[INDEX_MAX_KEYS + 4];
	char		nulls[INDEX_MAX_KEYS + 4];

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(psprintf("%u", job->upstream));
	values[1] = BoolGetDatum(vs->finished);
	values[2] = Int64GetDatum(vs->row_count);
	values[3] = LSNGetDatum(exec->cdc_fetched);
	for (int k = 0; k < job->npk; k++)
	{
		values[4 + k] = vs->has_pos ? vs->pos[k] : (Datum) 0;
		nulls[4 + k] = vs->has_pos ? ' ' : 'n';
	}
	if (SPI_execute_plan(exec->persist_plan, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write state table %s", job->state_sql);
	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		job->vnodes[v].dirty = false;
		job->vnodes[v].present = true;
	}
	exec->cdc_offset = exec->cdc_fetched;
	/* an executor made again in this run starts from here */
	job->cdc_offset = exec->cdc_offset;
	job->has_cdc_offset = true;
}
