/*-------------------------------------------------------------------------
 *
 * triggers.c
 *	  The triggers a job puts on its upstream: their names and their
 *	  lifecycle.
 *
 * A job has two row triggers and two TRUNCATE statement triggers on its
 * upstream.  While the job backfills, backfill_capture_<id> fires ALWAYS
 * (capture_change.c) and backfill_capture_truncate_<id> refuses TRUNCATE;
 * once it has finished, backfill_apply_<id> (apply_change.c) and
 * backfill_apply_truncate_<id> (truncate_change.c) keep the downstream equal
 * to the upstream, and the capture side is disabled.
 *
 * The switch from one trigger to the other is done by the job's final
 * barrier under a SHARE ROW EXCLUSIVE lock on the upstream; since trigger
 * state comes from the relation cache, every statement that starts after it
 * fires the new trigger, whatever its snapshot.
 *
 * A partitioned upstream's row triggers are cloned by PostgreSQL to each of
 * its partitions, at every level, as partitions are created or attached, and
 * dropped from one that is detached: a write straight into a partition
 * fires them as one routed through the partitioned table does, on the
 * partition.  Their state is set on each table, one by one.  TRUNCATE of a
 * leaf partition fires no trigger of the partitioned table, so each leaf
 * gets a statement trigger of its own, backfill_partition_truncate_<id>:
 * refused while the job backfills, the partition's rows deleted downstream
 * once it has finished.  A partition that joins or leaves the upstream
 * (api/ddl_partitions.c) brings or takes its rows as writes would (partitions.c).
 *
 * This file is the only one that knows the triggers' names, and their whole
 * lifecycle: installed by create_job (backfill_capture_install), switched by
 * the final barrier (backfill_capture_switch_to_apply), put back as the
 * status says at every run (backfill_assert_triggers), dropped with the job
 * (backfill_drop_triggers).  Since a data-only restore can leave both sides
 * enabled, it also tells a trigger function whether its side is in charge
 * (backfill_side_in_charge).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "backfill.h"
#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "catalog/capture_job_rows.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/*
 * The triggers of a job, named <prefix><job id>: four on the upstream (the
 * row triggers are cloned to its partitions, at every level, by PostgreSQL;
 * the statement triggers are not), and one on each leaf partition of a
 * partitioned upstream.
 */
typedef enum JobTrigger
{
	TRIGGER_CAPTURE,			/* row trigger, while the job backfills */
	TRIGGER_APPLY,				/* row trigger, once it has finished */
	TRIGGER_CAPTURE_TRUNCATE,	/* refuses TRUNCATE while it backfills */
	TRIGGER_APPLY_TRUNCATE,		/* truncates the downstream once finished */
	TRIGGER_PARTITION_TRUNCATE	/* a partition's TRUNCATE, at any time */
} JobTrigger;

#define NUM_JOB_TRIGGERS 5

/* the triggers put on the upstream itself */
#define NUM_UPSTREAM_TRIGGERS 4

static const char *const trigger_prefixes[NUM_JOB_TRIGGERS] = {
	[TRIGGER_CAPTURE] = "backfill_capture_",
	[TRIGGER_APPLY] = "backfill_apply_",
	[TRIGGER_CAPTURE_TRUNCATE] = "backfill_capture_truncate_",
	[TRIGGER_APPLY_TRUNCATE] = "backfill_apply_truncate_",
	[TRIGGER_PARTITION_TRUNCATE] = "backfill_partition_truncate_",
};

/* whether a trigger serves the capture side */
#define TRIGGER_IS_CAPTURE(t) ((t) == TRIGGER_CAPTURE || (t) == TRIGGER_CAPTURE_TRUNCATE)

static char *
trigger_name(JobTrigger which, int64 job_id)
{
	return psprintf("%s%lld", trigger_prefixes[which], (long long) job_id);
}

/* the state a trigger of the job is in while it backfills, or once finished */
static char
trigger_wanted(JobTrigger which, bool finished)
{
	if (which == TRIGGER_PARTITION_TRUNCATE)
		return TRIGGER_FIRES_ALWAYS;
	return (TRIGGER_IS_CAPTURE(which) != finished) ? TRIGGER_FIRES_ALWAYS : TRIGGER_DISABLED;
}

/*
 * backfill_trigger_job
 *		The job a trigger named tgname belongs to, if it is one of a job's
 *		row triggers (on the upstream or cloned to a partition), else 0.
 */
int64
backfill_trigger_job(const char *tgname)
{
	static const JobTrigger row_triggers[] = {TRIGGER_CAPTURE, TRIGGER_APPLY};

	for (int i = 0; i < lengthof(row_triggers); i++)
	{
		const char *prefix = trigger_prefixes[row_triggers[i]];
		const char *digits = tgname + strlen(prefix);

		if (strncmp(tgname, prefix, strlen(prefix)) != 0 || *digits == '\0' ||
			strspn(digits, "0123456789") != strlen(digits))
			continue;
		return pg_strtoint64(digits);
	}
	return 0;
}

/*
 * backfill_any_trigger_job
 *		The job a trigger named tgname belongs to, if it is any of a job's
 *		triggers (row or statement, on the upstream, cloned to a partition or
 *		a partition's own), else 0.
 */
int64
backfill_any_trigger_job(const char *tgname)
{
	for (int i = 0; i < NUM_JOB_TRIGGERS; i++)
	{
		const char *prefix = trigger_prefixes[i];
		const char *digits = tgname + strlen(prefix);

		if (strncmp(tgname, prefix, strlen(prefix)) != 0 || *digits == '\0' ||
			strspn(digits, "0123456789") != strlen(digits))
			continue;
		return pg_strtoint64(digits);
	}
	return 0;
}

/*
 * backfill_upstream_relations
 *		The upstream and, when it is partitioned, its partitions at every
 *		level, all locked in lockmode (NoLock: the caller holds what it
 *		needs).
 */
List *
backfill_upstream_relations(Oid upstream, LOCKMODE lockmode)
{
	/* a wait for writers says so in the run's lines (lib/lines.c) */
	if (lockmode != NoLock)
		backfill_lock_relation(upstream, lockmode);
	if (get_rel_relkind(upstream) != RELKIND_PARTITIONED_TABLE)
		return list_make1_oid(upstream);
	return find_all_inheritors(upstream, lockmode, NULL);
}

/*
 * backfill_lock_writers
 *		Lock the upstream and every partition of it SHARE ROW EXCLUSIVE:
 *		writers in flight are waited for, new ones wait, whether they write
 *		through the partitioned table or straight into a partition.
 */
void
backfill_lock_writers(Oid upstream)
{
	(void) backfill_upstream_relations(upstream, ShareRowExclusiveLock);
}

/*
 * The state of a trigger of rel, by name: its tgenabled, or 0 when rel has
 * no such trigger.
 */
static char
trigger_state(Relation rel, const char *name)
{
	TriggerDesc *td = rel->trigdesc;

	for (int t = 0; td != NULL && t < td->numtriggers; t++)
		if (strcmp(td->triggers[t].tgname, name) == 0)
			return td->triggers[t].tgenabled;
	return 0;
}

/*
 * Put the job's triggers on every relation of the upstream (which the
 * caller holds SHARE ROW EXCLUSIVE) in the state the job's status says, one
 * relation at a time, without relying on a recursion to partitions.  With
 * fix false, only look.  Returns whether every trigger was as it should be.
 */
static bool
set_trigger_states(Oid upstream, int64 job_id, bool finished, bool fix)
{
	ListCell   *lc;
	bool		as_should = true;

	foreach(lc, backfill_upstream_relations(upstream, NoLock))
	{
		Relation	rel = table_open(lfirst_oid(lc), NoLock);

		for (int i = 0; i < NUM_JOB_TRIGGERS; i++)
		{
			char	   *name = trigger_name(i, job_id);
			char		state = trigger_state(rel, name);
			char		want = trigger_wanted(i, finished);

			if (state == 0 || state == want)
				continue;
			as_should = false;
			if (!fix)
				continue;
			EnableDisableTrigger(rel, name, want, false, ShareRowExclusiveLock);
			/* the next relations see it, should it have reached their clones */
			CommandCounterIncrement();
		}
		table_close(rel, NoLock);
	}
	return as_should;
}

/*
 * The statement trigger of a leaf partition of a job's upstream: TRUNCATE
 * of the partition fires no trigger of the partitioned table.  Caller acts
 * as the extension's owner, connected to SPI, and holds the partition.
 */
static void
install_partition_truncate(Oid partition, int64 job_id)
{
	char	   *name = trigger_name(TRIGGER_PARTITION_TRUNCATE, job_id);
	Relation	rel;

	backfill_spi_exec(psprintf("CREATE TRIGGER %s BEFORE TRUNCATE ON %s FOR EACH STATEMENT "
							   "EXECUTE FUNCTION backfill.truncate_change('%lld')",
							   quote_identifier(name), backfill_relation_sql(partition),
							   (long long) job_id),
					  SPI_OK_UTILITY);
	CommandCounterIncrement();
	rel = table_open(partition, NoLock);
	EnableDisableTrigger(rel, name, TRIGGER_FIRES_ALWAYS, false, ShareRowExclusiveLock);
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/*
 * backfill_install_partition_truncates
 *		The same, for every leaf of a relation, partitioned or a leaf itself.
 */
void
backfill_install_partition_truncates(Oid relid, int64 job_id)
{
	ListCell   *lc;

	foreach(lc, backfill_upstream_relations(relid, ShareRowExclusiveLock))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			install_partition_truncate(lfirst_oid(lc), job_id);
}

/* drop the job's triggers named which from every relation of relid that has it */
static void
drop_trigger_everywhere(Oid relid, JobTrigger which, int64 job_id)
{
	char	   *name = trigger_name(which, job_id);
	ListCell   *lc;

	foreach(lc, backfill_upstream_relations(relid, AccessShareLock))
	{
		Relation	rel = table_open(lfirst_oid(lc), NoLock);
		char		state = trigger_state(rel, name);

		table_close(rel, NoLock);
		if (state != 0)
			backfill_spi_exec(psprintf("DROP TRIGGER %s ON %s", quote_identifier(name),
									   backfill_relation_sql(lfirst_oid(lc))),
							  SPI_OK_UTILITY);
	}
}

/*
 * backfill_drop_partition_truncates
 *		Drop the job's partition truncate trigger from every leaf of relid (a
 *		partition leaving the upstream).  Caller acts as the extension's
 *		owner, connected to SPI.
 */
void
backfill_drop_partition_truncates(Oid relid, int64 job_id)
{
	drop_trigger_everywhere(relid, TRIGGER_PARTITION_TRUNCATE, job_id);
}

/*
 * Which of a job's triggers are in charge.  The final barrier switches from
 * the capture triggers to the apply triggers (executor.c), and normally
 * exactly one of backfill_capture_<id> and backfill_apply_<id> is enabled.
 * ALTER TABLE ... ENABLE TRIGGER ALL, which pg_restore --disable-triggers
 * runs after each table of a data-only restore, enables both (and both
 * truncate triggers).  Then each trigger asks the job's status whether it is
 * in charge: the final barrier commits 'finished' under SHARE ROW EXCLUSIVE
 * on the upstream, which a writer's lock excludes until its transaction
 * ends, so the status cannot change under the writer.  Read from
 * backfill.job directly, as backfill_job_owner() does.
 */
static bool
trigger_enabled(Relation rel, JobTrigger which, int64 job_id)
{
	TriggerDesc *td = rel->trigdesc;
	char		name[NAMEDATALEN];
	const char *prefix = trigger_prefixes[which];
	size_t		len = strlen(prefix);

	/* prefix and id, as snprintf would: asked for every row, so cheaply */
	StaticAssertStmt(sizeof("backfill_capture_truncate_") + MAXINT8LEN + 1 <= NAMEDATALEN,
					 "a trigger's name fits in NAMEDATALEN");
	Assert(len < sizeof("backfill_capture_truncate_"));
	memcpy(name, prefix, len);
	pg_lltoa(job_id, name + len);
	for (int i = 0; td != NULL && i < td->numtriggers; i++)
		if (strcmp(td->triggers[i].tgname, name) == 0)
			return td->triggers[i].tgenabled != TRIGGER_DISABLED;
	return false;
}

/*
 * backfill_trigger_job_finished
 *		Whether the job's status is 'finished', read from backfill.job
 *		directly, as trigger_enabled() explains.
 */
bool
backfill_trigger_job_finished(int64 job_id)
{
	bool		isnull;
	Datum		status = backfill_job_column(job_id, "status", &isnull);

	return !isnull && backfill_parse_status(TextDatumGetCString(status)) == BACKFILL_STATUS_FINISHED;
}

/*
 * backfill_side_in_charge
 *		Whether a trigger of the capture side (capture = true) or of the
 *		apply side is in charge now.  The trigger that asks is enabled, as
 *		it fired.
 */
bool
backfill_side_in_charge(Relation rel, int64 job_id, bool capture, bool row)
{
	JobTrigger	other;

	if (row)
		other = capture ? TRIGGER_APPLY : TRIGGER_CAPTURE;
	else
		other = capture ? TRIGGER_APPLY_TRUNCATE : TRIGGER_CAPTURE_TRUNCATE;
	if (!trigger_enabled(rel, other, job_id))
		return true;
	return backfill_trigger_job_finished(job_id) != capture;
}

/*
 * backfill_assert_triggers
 *		Put the job's triggers in the state its status says: capture firing
 *		ALWAYS and apply disabled while it backfills, the other way round
 *		once it has finished.  Something else may have changed them: a
 *		data-only restore ends with ALTER TABLE ... ENABLE TRIGGER ALL,
 *		which enables all four and no longer fires the capture ALWAYS; on a
 *		partitioned upstream, it does so table by table.  Run at the start
 *		of every run; takes SHARE ROW EXCLUSIVE on the upstream (and its
 *		partitions) only when a trigger is not as it should be.
 */
void
backfill_assert_triggers(BackfillJob *job)
{
	bool		finished = job->status == BACKFILL_STATUS_FINISHED;

	if (job->status == BACKFILL_STATUS_CANCELLED)
		return;
	(void) backfill_upstream_relations(job->upstream, AccessShareLock);
	if (set_trigger_states(job->upstream, job->job_id, finished, false))
		return;
	backfill_lock_writers(job->upstream);
	(void) set_trigger_states(job->upstream, job->job_id, finished, true);
}

/*
 * backfill_capture_install
 *		Put the job's triggers on its upstream: capture now (unless the
 *		changes come from the WAL), apply once the job has finished, and the
 *		truncate triggers; on each leaf partition of a partitioned upstream,
 *		the partition's truncate trigger.  Caller holds the upstream and its
 *		partitions in SHARE ROW EXCLUSIVE mode (backfill_lock_writers) and
 *		acts as the extension's owner, connected to SPI.
 */
void
backfill_capture_install(Relation upstream, const char *upstream_sql, int64 job_id,
						 CaptureMode mode)
{
	static const char *const definitions[NUM_JOB_TRIGGERS] = {
		[TRIGGER_CAPTURE] = "AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW "
		"EXECUTE FUNCTION backfill.capture_change('%lld')",
		[TRIGGER_APPLY] = "AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW "
		"EXECUTE FUNCTION backfill.apply_change('%lld')",
		[TRIGGER_CAPTURE_TRUNCATE] = "BEFORE TRUNCATE ON %s FOR EACH STATEMENT "
		"EXECUTE FUNCTION backfill.truncate_change('%lld')",
		[TRIGGER_APPLY_TRUNCATE] = "AFTER TRUNCATE ON %s FOR EACH STATEMENT "
		"EXECUTE FUNCTION backfill.truncate_change('%lld')",
	};

	if (mode == CAPTURE_STREAM)
		return;					/* changes come from another server */
	for (int i = 0; i < NUM_UPSTREAM_TRIGGERS; i++)
	{
		if (i == TRIGGER_CAPTURE && mode == CAPTURE_WAL)
			continue;
		backfill_spi_exec(psprintf("CREATE TRIGGER %s %s",
								   quote_identifier(trigger_name(i, job_id)),
								   psprintf(definitions[i], upstream_sql, (long long) job_id)),
						  SPI_OK_UTILITY);
	}
	CommandCounterIncrement();

	/*
	 * Not ALTER TABLE: we hold the upstream open, and need not own it.  The
	 * capture fires ALWAYS, so that writes of a replica-role session (a
	 * logical replication subscriber, a restore) are captured too.  The row
	 * triggers' clones on the partitions are set one by one.
	 */
	if (upstream->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		backfill_install_partition_truncates(RelationGetRelid(upstream), job_id);
	(void) set_trigger_states(RelationGetRelid(upstream), job_id, false, true);
}

/*
 * backfill_capture_switch_to_apply
 *		The final barrier's switch: the capture triggers off, the apply
 *		triggers firing ALWAYS, on the upstream and on every partition.
 *		Caller holds SHARE ROW EXCLUSIVE on them (backfill_lock_writers).
 */
void
backfill_capture_switch_to_apply(BackfillJob *job)
{
	(void) set_trigger_states(job->upstream, job->job_id, true, true);
}

/*
 * Lock the upstream and its partitions at every level in lockmode, all of
 * them or, while one is busy, none.  DROP TRIGGER locks each table whose
 * trigger it drops ACCESS EXCLUSIVE, the clones of a partitioned table's
 * trigger first, leaves before their parents; a query on an intermediate
 * partition locks it, then its parent (for its partition constraint), then
 * its leaves; one through the root, the root first.  No one order of taking
 * them all is safe against both, so they are taken root to leaves, in the
 * order of find_all_inheritors, each without waiting; when one is busy,
 * those taken are let go, the busy one waited for while nothing else is
 * held, and the round begins again.  This never waits while it holds any
 * of them, so it cannot deadlock with a reader or a writer of the tree.
 */
static void
lock_all_or_none(Oid upstream, LOCKMODE lockmode)
{
	for (;;)
	{
		List	   *rels = get_rel_relkind(upstream) == RELKIND_PARTITIONED_TABLE ?
			find_all_inheritors(upstream, NoLock, NULL) : list_make1_oid(upstream);
		List	   *taken = NIL;
		Oid			busy = InvalidOid;
		ListCell   *lc;

		foreach(lc, rels)
		{
			if (!ConditionalLockRelationOid(lfirst_oid(lc), lockmode))
			{
				busy = lfirst_oid(lc);
				break;
			}
			taken = lappend_oid(taken, lfirst_oid(lc));
		}
		/* all taken, and no partition attached while they were being taken */
		if (!OidIsValid(busy) &&
			(get_rel_relkind(upstream) != RELKIND_PARTITIONED_TABLE ||
			 list_length(find_all_inheritors(upstream, NoLock, NULL)) == list_length(rels)))
			return;
		foreach(lc, taken)
			UnlockRelationOid(lfirst_oid(lc), lockmode);
		if (OidIsValid(busy))
		{
			LockRelationOid(busy, lockmode);
			UnlockRelationOid(busy, lockmode);
		}
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * backfill_has_job_triggers
 *		Whether the job has any of its triggers on its upstream: none for a
 *		job whose changes come from another server.
 */
bool
backfill_has_job_triggers(Oid upstream, int64 job_id)
{
	Relation	rel = table_open(upstream, AccessShareLock);
	bool		found = false;

	for (int i = 0; i < NUM_UPSTREAM_TRIGGERS && !found; i++)
		found = trigger_state(rel, trigger_name(i, job_id)) != 0;
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * backfill_drop_triggers
 *		Drop the job's triggers on its upstream, whose owner the job's may not
 *		be: caller acts as the extension's owner, connected to SPI.  Locks
 *		the upstream and its partitions ACCESS EXCLUSIVE first, all at once
 *		(lock_all_or_none).
 */
void
backfill_drop_triggers(int64 job_id)
{
	Oid			upstream = backfill_job_upstream_present(job_id);

	/* nothing to drop, nothing to lock: a job that follows without them */
	if (!OidIsValid(upstream) || !backfill_has_job_triggers(upstream, job_id))
		return;

	lock_all_or_none(upstream, AccessExclusiveLock);
	/* the row triggers' clones on the partitions go with them */
	for (int i = 0; i < NUM_UPSTREAM_TRIGGERS; i++)
	{
		Relation	rel = table_open(upstream, AccessShareLock);
		char		state = trigger_state(rel, trigger_name(i, job_id));

		table_close(rel, NoLock);
		if (state != 0)
			backfill_spi_exec(psprintf("DROP TRIGGER %s ON %s",
									   quote_identifier(trigger_name(i, job_id)),
									   backfill_relation_sql(upstream)),
							  SPI_OK_UTILITY);
	}
	drop_trigger_everywhere(upstream, TRIGGER_PARTITION_TRUNCATE, job_id);
}
