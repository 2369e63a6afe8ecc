/*-------------------------------------------------------------------------
 *
 * slot.c
 *	  A cdc job's logical replication slot and replication origin: their
 *	  names, the lock they are used under, and dropping them.
 *
 * A cdc job owns a logical replication slot named backfill_<database
 * oid>_<job id>, made by its first fetch (kind_cdc.c) with the extension's
 * output plugin (output_plugin.c).
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
 * should a crash come first, backfill_drop_leftover_slots() drops it at the
 * next chance: when the launcher starts (in backfill.database), at a
 * start_job or at a run of any job of the job's database.
 *
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "catalog/pg_replication_origin.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "replication/slot.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"
#include "utils/varlena.h"

#include "backfill.h"
#include "capture/capture.h"
#include "catalog/capture_job_rows.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_drop_slot);
PG_FUNCTION_INFO_V1(backfill_lock_slot);
PG_FUNCTION_INFO_V1(backfill_on_drop_extension);
PG_FUNCTION_INFO_V1(backfill_flush_wal);

/* whether this session's transactions carry a job's replication origin */
static bool origin_in_session = false;

/* slots to drop when the transaction commits, in TopMemoryContext */
static List *slots_at_commit = NIL;
static bool sweep_at_commit = false;
static bool xact_callback_registered = false;

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
bool
backfill_plugin_approved(void)
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
 * backfill_lock_slot_of
 *		Take the job's slot lock until the transaction ends.  A slot serves
 *		one backend at a time, and the job's fetch, verify_job's peek and the
 *		drop after the finish take turns on it through this lock, instead of
 *		failing with "replication slot ... is active".
 */
void
backfill_lock_slot_of(int64 job_id)
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
	backfill_lock_slot_of(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}

/*
 * backfill_origin_enter
 *		Tag this session's transactions, from this one on, with the job's
 *		replication origin (made if missing), so that its slot skips them.
 *		Caller is in a transaction; backfill_origin_leave() ends it.
 */
void
backfill_origin_enter(int64 job_id)
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
 * backfill_origin_leave
 *		Stop tagging this session's transactions.  After the commit of the
 *		last tagged one: a commit advances the origin's progress, which
 *		needs the session's origin set up.
 */
void
backfill_origin_leave(void)
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
 * backfill_drop_slot_now
 *		Drop the job's replication slot and origin if they exist, now.
 */
void
backfill_drop_slot_now(int64 job_id)
{
	backfill_origin_leave();
	backfill_lock_slot_of(job_id);
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
drop_slots_at_commit(XactEvent event, void *arg pg_attribute_unused())
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
	(void) backfill_require_job_owner(PG_GETARG_INT64(0));
	backfill_drop_slot_at_commit(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}

/*
 * backfill_drop_slot_at_commit
 *		Drop the slot of a job when the transaction commits (a slot is not
 *		transactional: dropped before, a rollback could not bring it back).
 *		The cdc kind's drop_objects, for cancel_job and drop_job.
 */
void
backfill_drop_slot_at_commit(int64 job_id)
{
	MemoryContext old;

	/* a leftover sweep (below) then leaves the slot to us, or has dropped it */
	backfill_lock_slot_of(job_id);
	register_commit_callback();
	old = MemoryContextSwitchTo(TopMemoryContext);
	slots_at_commit = lappend(slots_at_commit, backfill_slot_name(job_id));
	MemoryContextSwitchTo(old);
}

/*
 * backfill_drop_leftover_slots
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
backfill_drop_leftover_slots(void)
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
		TransactionId xmin;
		char	   *status;
		bool		had_slot;

		errno = 0;
		job_id = strtoi64(name + strlen(prefix), &end, 10);
		if (errno != 0 || *end != '\0' || end == name + strlen(prefix))
			continue;
		if (!backfill_ended_cdc_job(job_id, &xmin, &status))
			continue;
		if (TransactionIdIsCurrentTransactionId(xmin) || !lock_slot(job_id, true))
			continue;
		had_slot = SearchNamedReplicationSlot(name, true) != NULL;
		drop_slot_and_origin(name);
		if (had_slot)
			ereport(LOG,
					(errmsg("dropped replication slot \"%s\" of backfill job %lld, which is %s",
							name, (long long) job_id, status)));
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
 * backfill_flush_wal_upto
 *		Flush the WAL inserted so far, so that the slot can decode every commit
 * made until now, asynchronous ones too.  Right after a page header, the
 * insert position is past WAL that does not exist yet; the WAL inserted so
 * far ends at the page's start.  Returns the position flushed.
 */
XLogRecPtr
backfill_flush_wal_upto(void)
{
	XLogRecPtr	upto = GetXLogInsertRecPtr();

	if (upto % XLOG_BLCKSZ <= SizeOfXLogLongPHD)
		upto -= upto % XLOG_BLCKSZ;
	XLogFlush(upto);
	return upto;
}

/*
 * backfill_flush_wal_to_peek
 *		For verify_job, as it peeks at a slot: flush the WAL inserted so far
 *		and return the position flushed, up to which the peek decodes
 *		(InvalidXLogRecPtr on a standby, which flushes nothing).
 *
 * The peek must stop there.  Without a limit it decodes up to the flush
 * position it reads itself, and the WAL writer flushes whole pages: that
 * position can fall inside a record (one the comparison's own scans wrote,
 * pruning the pages it read), which the decoder would then wait to see
 * flushed, a millisecond at a time, until another commit flushes it, for
 * seconds on an idle server.  The position returned here is the end of the
 * last record inserted, so the decoder stops at a record's end.
 */
XLogRecPtr
backfill_flush_wal_to_peek(void)
{
	if (RecoveryInProgress())
		return InvalidXLogRecPtr;
	return backfill_flush_wal_upto();
}

/*
 * backfill._flush_wal() RETURNS pg_lsn
 *		backfill_flush_wal_to_peek's position, NULL on a standby.
 */
Datum
backfill_flush_wal(PG_FUNCTION_ARGS)
{
	XLogRecPtr	flushed = backfill_flush_wal_to_peek();

	if (XLogRecPtrIsInvalid(flushed))
		PG_RETURN_NULL();
	PG_RETURN_LSN(flushed);
}
