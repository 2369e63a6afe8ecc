/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  The two row triggers a job puts on its upstream.
 *
 * backfill.capture_change(job_id), enabled while the job backfills, writes
 * the key of every row a writer touches (the old key, and the new one when an
 * update changes it) into backfill.changes_<job_id>, in the writer's
 * transaction.  That is all a writer pays: one small heap insert per key, no
 * index.  A barrier later consumes the keys its snapshot can see (see
 * kind_vnode.c); keys of transactions that commit after that snapshot stay for
 * the next barrier, so commit order never matters.
 *
 * For a job of kind snapshot the change table is a log (kind_snapshot.c): each
 * entry also has a sequence number, the time of the write's statement, and
 * the row's image before the write, projected on the downstream's columns
 * (NULL when the key did not exist), and the log is indexed on (key,
 * sequence) so that the first entry of a key is found at once.  The layout
 * of the change table tells the trigger which kind it serves.  What the
 * trigger learns of a job (its change table, the key, the checks) is kept
 * for the backend's life and dropped by relation cache invalidations (see
 * CaptureEntry), so a row costs little more than its insert.
 *
 * backfill.apply_change(job_id), enabled instead once the job has finished,
 * keeps the downstream equal to the upstream in the writer's own
 * transaction: for every key it touches it makes the downstream row match the
 * upstream row as the writer's statement left it (upsert, or delete when the
 * row is gone or no longer passes the job's filter).  Re-reading the upstream, rather than replaying the change,
 * makes the result right whatever order the row triggers of one statement
 * fire in.  The downstream is written with the rights of the job's owner, as
 * the writer may have none on it.  The rows of one statement are applied
 * together, as the executor finishes the statement (see ApplyBatch).
 *
 * TRUNCATE has a statement trigger of each kind.  While the job backfills,
 * backfill_capture_truncate_<id> refuses it: the positions of a running
 * executor would no longer mean anything.  Once it has finished,
 * backfill_apply_truncate_<id> truncates the downstream in the same
 * transaction.
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
 * (ddl.c) brings or takes its rows as writes would
 * (backfill_capture_partition).
 *
 * This file is the only one that knows the triggers' names, and their whole
 * lifecycle: installed by create_job (backfill_capture_install), switched by
 * the final barrier (backfill_capture_switch_to_apply), put back as the
 * status says at every run (backfill_assert_triggers), dropped with the job
 * (backfill_drop_triggers).  It also makes the change table, whose layout it
 * writes: the keys, or for the snapshot kind the log.  The change table is
 * a heap whatever default_table_access_method says, since the capture
 * trigger writes it with heap functions.
 *
 * May call: the other services (state.c), catalog.c, privilege.c and the
 * foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
#include "utils/timestamp.h"
#include "access/xact.h"
#include "nodes/execnodes.h"
#include "executor/executor.h"
#include "utils/array.h"

#include "backfill.h"
#include "lib.h"
#include "catalog_access.h"
#include "copy.h"
#include "capture.h"

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
 * The upstream and, when it is partitioned, its partitions at every level,
 * all locked in lockmode (NoLock: the caller holds what it needs).
 */
static List *
upstream_relations(Oid upstream, LOCKMODE lockmode)
{
	if (lockmode != NoLock)
		LockRelationOid(upstream, lockmode);
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
	(void) upstream_relations(upstream, ShareRowExclusiveLock);
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

	foreach(lc, upstream_relations(upstream, NoLock))
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

/* the same, for every leaf of a relation, partitioned or a leaf itself */
static void
install_partition_truncates(Oid relid, int64 job_id)
{
	ListCell   *lc;

	foreach(lc, upstream_relations(relid, ShareRowExclusiveLock))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			install_partition_truncate(lfirst_oid(lc), job_id);
}

/* drop the job's triggers named which from every relation of relid that has it */
static void
drop_trigger_everywhere(Oid relid, JobTrigger which, int64 job_id)
{
	char	   *name = trigger_name(which, job_id);
	ListCell   *lc;

	foreach(lc, upstream_relations(relid, AccessShareLock))
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

PG_FUNCTION_INFO_V1(backfill_capture_change);
PG_FUNCTION_INFO_V1(backfill_apply_change);
PG_FUNCTION_INFO_V1(backfill_truncate_change);

/* the primary key of a relation, in key order */
typedef struct RelationKey
{
	int			npk;
	AttrNumber	attnums[INDEX_MAX_KEYS];
	Oid			types[INDEX_MAX_KEYS];
	int16		typlens[INDEX_MAX_KEYS];
	bool		typbyvals[INDEX_MAX_KEYS];
} RelationKey;

static void
relation_key(Relation rel, RelationKey *key)
{
	Relation	index;
	TupleDesc	desc = RelationGetDescr(rel);

	(void) RelationGetIndexList(rel);	/* sets rd_pkindex */
	if (!OidIsValid(rel->rd_pkindex))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no primary key", RelationGetRelationName(rel)),
				 errdetail("A backfill job needs the upstream's primary key to capture its changes.")));
	index = index_open(rel->rd_pkindex, AccessShareLock);
	key->npk = index->rd_index->indnkeyatts;
	for (int k = 0; k < key->npk; k++)
	{
		Form_pg_attribute att;

		key->attnums[k] = index->rd_index->indkey.values[k];
		att = TupleDescAttr(desc, key->attnums[k] - 1);
		key->types[k] = att->atttypid;
		key->typlens[k] = att->attlen;
		key->typbyvals[k] = att->attbyval;
	}
	index_close(index, NoLock);
}

/* the key values of a tuple, detoasted so they can be stored elsewhere */
static void
tuple_key(HeapTuple tuple, TupleDesc desc, RelationKey *key, Datum *values,
		  bool *nulls)
{
	for (int k = 0; k < key->npk; k++)
	{
		values[k] = heap_getattr(tuple, key->attnums[k], desc, &nulls[k]);
		if (!nulls[k] && key->typlens[k] == -1 &&
			VARATT_IS_EXTERNAL(DatumGetPointer(values[k])))
			values[k] = PointerGetDatum(detoast_external_attr((struct varlena *)
															  DatumGetPointer(values[k])));
	}
}

static bool
same_key(RelationKey *key, Datum *a, bool *anull, Datum *b, bool *bnull)
{
	for (int k = 0; k < key->npk; k++)
	{
		if (anull[k] != bnull[k])
			return false;
		if (!anull[k] && !datumIsEqual(a[k], b[k], key->typbyvals[k], key->typlens[k]))
			return false;
	}
	return true;
}

static int64
trigger_job_id(TriggerData *trigdata, const char *funcname)
{
	Trigger    *trigger = trigdata->tg_trigger;

	if (!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s must be fired AFTER INSERT, UPDATE or DELETE FOR EACH ROW",
						funcname)));
	if (trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s needs the job id as its only argument", funcname)));
	return pg_strtoint64(trigger->tgargs[0]);
}

/* a trigger names a job that does not exist */
static void report_missing_job(TriggerData *trigdata, int64 job_id) pg_attribute_noreturn();

static void
report_missing_job(TriggerData *trigdata, int64 job_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("backfill job %lld does not exist", (long long) job_id),
			 errhint("Drop trigger \"%s\" on table \"%s\".",
					 trigdata->tg_trigger->tgname,
					 RelationGetRelationName(trigdata->tg_relation))));
}

/* how many (job, relation) pairs check_trigger_relation() remembers */
#define CHECKED_RELATIONS 32

/*
 * A trigger fires for the job its argument names only on that job's
 * upstream, or a partition of it at any level: one attached by hand to
 * another table must not write the job's change table or downstream.  A
 * pair found right is remembered, with the change table that identifies the
 * job (a partition detached since has lost the job's triggers).
 */
static void
check_trigger_relation(TriggerData *trigdata, int64 job_id, Oid job_table)
{
	/* the pairs found right: a partitioned upstream's writers alternate */
	static struct
	{
		int64		job;
		Oid			relid;
		Oid			table;
	}			ok[CHECKED_RELATIONS];
	static int	next_ok = 0;
	Oid			relid = RelationGetRelid(trigdata->tg_relation);
	Oid			upstream;

	for (int i = 0; i < CHECKED_RELATIONS; i++)
		if (job_id == ok[i].job && relid == ok[i].relid && job_table == ok[i].table)
			return;
	upstream = backfill_job_upstream(job_id);
	if (!OidIsValid(upstream))
		report_missing_job(trigdata, job_id);
	if (upstream != relid && !backfill_partition_of(relid, upstream))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("trigger \"%s\" on table \"%s\" does not belong to backfill job %lld",
						trigdata->tg_trigger->tgname,
						RelationGetRelationName(trigdata->tg_relation), (long long) job_id),
				 errdetail("Backfill job %lld copies table %s.", (long long) job_id,
						   get_rel_name(upstream) ? get_rel_name(upstream) : "?"),
				 errhint("Drop trigger \"%s\" on table \"%s\".",
						 trigdata->tg_trigger->tgname,
						 RelationGetRelationName(trigdata->tg_relation))));
	ok[next_ok].job = job_id;
	ok[next_ok].relid = relid;
	ok[next_ok].table = job_table;
	next_ok = (next_ok + 1) % CHECKED_RELATIONS;
}

/*
 * The log's own columns after the key: backfill_seq, backfill_captured_at,
 * backfill_old_row.
 */
#define LOG_EXTRA_COLUMNS 3

/*
 * The change table was made for the key the upstream had at create_job: if
 * the key's columns changed since (retyped, renamed, another primary key),
 * writing its values there would be wrong, or worse.  Refuse the write
 * instead.  An index added by hand would not be maintained by the heap
 * insert below: refuse that too.
 */
static void
check_change_table(Relation changes, Relation upstream, RelationKey *key, int64 job_id,
				   bool is_log)
{
	TupleDesc	cdesc = RelationGetDescr(changes);
	TupleDesc	udesc = RelationGetDescr(upstream);
	bool		ok = (cdesc->natts == key->npk + (is_log ? LOG_EXTRA_COLUMNS : 0));

	for (int k = 0; ok && k < key->npk; k++)
	{
		Form_pg_attribute catt = TupleDescAttr(cdesc, k);
		Form_pg_attribute uatt = TupleDescAttr(udesc, key->attnums[k] - 1);

		ok = catt->atttypid == uatt->atttypid &&
			strcmp(NameStr(catt->attname), NameStr(uatt->attname)) == 0;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the primary key of table \"%s\" has changed since backfill job %lld was created",
						RelationGetRelationName(upstream), (long long) job_id),
				 errdetail("Change table \"%s\" holds keys of the primary key the job was created with.",
						   RelationGetRelationName(changes)),
				 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again.",
						 (long long) job_id)));
	if (changes->rd_rel->relhasindex &&
		(!is_log || list_length(RelationGetIndexList(changes)) != 1))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("change table \"%s\" of backfill job %lld must not have indexes of its own",
						RelationGetRelationName(changes), (long long) job_id),
				 errhint("Drop the indexes created on it.")));
}

/* whether a change table has the snapshot kind's layout */
static bool
is_log_table(Relation changes, int npk)
{
	TupleDesc	desc = RelationGetDescr(changes);

	return desc->natts == npk + LOG_EXTRA_COLUMNS &&
		strcmp(NameStr(TupleDescAttr(desc, npk)->attname), "backfill_seq") == 0;
}

/*
 * What the log trigger keeps of a job (see CaptureEntry): how to project an
 * upstream row on the downstream's columns, and the log's index.
 */
typedef struct LogProjection
{
	Oid			image_type;		/* the relation of the log's images' row type:
								 * the downstream, or the job's image type */
	TupleDesc	down_desc;		/* the downstream's row type */
	AttrNumber *map;			/* per downstream column, the upstream's */
	Oid			seq;			/* backfill.change_seq */
	Oid			index;			/* the log's one index, on (key, seq) */
	IndexInfo  *index_info;
} LogProjection;

/* the projection for a log, built in cxt */
static LogProjection *
log_projection(MemoryContext cxt, Relation upstream, Relation changes)
{
	LogProjection *proj;
	TupleDesc	udesc = RelationGetDescr(upstream);
	Oid			rowtype;
	MemoryContext old;

	old = MemoryContextSwitchTo(cxt);
	proj = palloc0(sizeof(LogProjection));
	rowtype = TupleDescAttr(RelationGetDescr(changes),
							RelationGetDescr(changes)->natts - 1)->atttypid;
	proj->image_type = get_typ_typrelid(rowtype);
	{
		TupleDesc	td = lookup_rowtype_tupdesc(rowtype, -1);

		proj->down_desc = CreateTupleDescCopy(td);
		ReleaseTupleDesc(td);
	}
	proj->map = palloc0(sizeof(AttrNumber) * proj->down_desc->natts);
	for (int i = 0; i < proj->down_desc->natts; i++)
	{
		Form_pg_attribute datt = TupleDescAttr(proj->down_desc, i);

		if (datt->attisdropped)
			continue;
		for (int j = 0; j < udesc->natts; j++)
		{
			Form_pg_attribute uatt = TupleDescAttr(udesc, j);

			if (!uatt->attisdropped &&
				strcmp(NameStr(uatt->attname), NameStr(datt->attname)) == 0)
			{
				if (uatt->atttypid != datt->atttypid)
					break;
				proj->map[i] = uatt->attnum;
			}
		}
		if (proj->map[i] == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("column \"%s\" of table \"%s\" has changed since its backfill job was created",
							NameStr(datt->attname), RelationGetRelationName(upstream)),
					 errdetail("The job logs the rows it changes as the downstream's columns.")));
	}
	proj->seq = get_relname_relid("change_seq", get_namespace_oid(BACKFILL_SCHEMA, false));
	if (!OidIsValid(proj->seq))
		elog(ERROR, "sequence %s.change_seq does not exist", BACKFILL_SCHEMA);
	if (list_length(RelationGetIndexList(changes)) == 1)
	{
		Relation	index;

		proj->index = linitial_oid(RelationGetIndexList(changes));
		index = index_open(proj->index, AccessShareLock);
		proj->index_info = BuildIndexInfo(index);
		index_close(index, AccessShareLock);
	}
	MemoryContextSwitchTo(old);
	return proj;
}

/* one log entry: the key, the next sequence number, now, the old image */
static void
log_insert(Relation changes, LogProjection *proj, RelationKey *key,
		   Datum *keyvals, bool *keynulls, HeapTuple oldrow, TupleDesc udesc)
{
	Datum		values[INDEX_MAX_KEYS + LOG_EXTRA_COLUMNS];
	bool		nulls[INDEX_MAX_KEYS + LOG_EXTRA_COLUMNS];
	HeapTuple	entry;

	memcpy(values, keyvals, sizeof(Datum) * key->npk);
	memcpy(nulls, keynulls, sizeof(bool) * key->npk);
	values[key->npk] = Int64GetDatum(nextval_internal(proj->seq, false));
	nulls[key->npk] = false;
	values[key->npk + 1] = TimestampTzGetDatum(GetCurrentStatementStartTimestamp());
	nulls[key->npk + 1] = false;
	nulls[key->npk + 2] = (oldrow == NULL);
	values[key->npk + 2] = (Datum) 0;
	if (oldrow)
	{
		int			n = proj->down_desc->natts;
		Datum	   *dvalues = palloc(sizeof(Datum) * n);
		bool	   *dnulls = palloc(sizeof(bool) * n);
		HeapTuple	image;

		for (int i = 0; i < n; i++)
		{
			if (proj->map[i] == InvalidAttrNumber)
			{
				dvalues[i] = (Datum) 0;
				dnulls[i] = true;
			}
			else
				dvalues[i] = heap_getattr(oldrow, proj->map[i], udesc, &dnulls[i]);
		}
		image = heap_form_tuple(proj->down_desc, dvalues, dnulls);
		/* flattens what is toasted in the upstream: the log keeps its own copy */
		values[key->npk + 2] = heap_copy_tuple_as_datum(image, proj->down_desc);
	}

	entry = heap_form_tuple(RelationGetDescr(changes), values, nulls);
	simple_heap_insert(changes, entry);

	/* the log's one index, on the key and the sequence */
	if (OidIsValid(proj->index))
	{
		Relation	index = index_open(proj->index, RowExclusiveLock);
		IndexInfo  *ii = proj->index_info;
		Datum		ivalues[INDEX_MAX_KEYS];
		bool		inulls[INDEX_MAX_KEYS];

		for (int i = 0; i < ii->ii_NumIndexAttrs; i++)
		{
			AttrNumber	attnum = ii->ii_IndexAttrNumbers[i];

			if (attnum <= 0)
				elog(ERROR, "the index of change table \"%s\" must be on columns only",
					 RelationGetRelationName(changes));
			ivalues[i] = values[attnum - 1];
			inulls[i] = nulls[attnum - 1];
		}
		index_insert(index, ivalues, inulls, &entry->t_self, changes,
					 UNIQUE_CHECK_NO, false, ii);
		index_close(index, RowExclusiveLock);
	}
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

static bool
job_finished(int64 job_id)
{
	bool		isnull;
	Datum		status = backfill_job_column(job_id, "status", &isnull);

	return !isnull && backfill_parse_status(TextDatumGetCString(status)) == BACKFILL_STATUS_FINISHED;
}

/*
 * Whether a trigger of the capture side (capture = true) or of the apply
 * side is in charge now.  The trigger that asks is enabled, as it fired.
 */
static bool
side_in_charge(Relation rel, int64 job_id, bool capture, bool row)
{
	JobTrigger	other;

	if (row)
		other = capture ? TRIGGER_APPLY : TRIGGER_CAPTURE;
	else
		other = capture ? TRIGGER_APPLY_TRUNCATE : TRIGGER_CAPTURE_TRUNCATE;
	if (!trigger_enabled(rel, other, job_id))
		return true;
	return job_finished(job_id) != capture;
}

/*
 * What the capture trigger keeps of a job, for the backend's life, per table
 * it fires on (the upstream, or each partition of it), so that a
 * row costs a hash lookup, the lock on the change table and the insert: the
 * change table (found by name) and the upstream it was checked against; once
 * the trigger has been in charge, the upstream's key, the change table's
 * layout checked against it, and for a log the projection.
 *
 * Everything kept was derived from the upstream, the change table, and for
 * a log the downstream's row type and backfill.change_seq, and names are
 * looked up in the extension's schema: an invalidation of any of these
 * relations, or of any schema, drops the entry, and the next row builds it
 * again.  These invalidations arrive when the relation cache's own do: this
 * backend's at its next command, another's when a lock is next taken (the
 * writer's on the upstream at each statement, ours on the change table
 * below at each row).  The rest is asked at every row, as it may change
 * inside a transaction without a relation changing: whether the trigger is
 * in charge (side_in_charge), and the job's status when it asks that.
 *
 * An entry is only ever marked: whoever is using it when an invalidation
 * arrives goes on with what it has, which is what the relations it holds
 * open say.  A build interrupted by an invalidation (stale) or by an error
 * leaves the entry invalid.
 */
/*
 * An entry's key: the job, and the table the trigger fires on, its upstream
 * or a partition of it (a partition has its own attribute numbers and key).
 */
typedef struct CaptureKey
{
	int64		job_id;
	Oid			upstream;
} CaptureKey;

typedef struct CaptureEntry
{
	CaptureKey	hashkey;
	bool		located;		/* changes is set, the upstream checked */
	bool		valid;			/* and so is the rest */
	bool		stale;			/* invalidated while being built */
	Oid			upstream;		/* hashkey.upstream */
	Oid			changes;
	RelationKey key;
	bool		is_log;
	LogProjection *proj;		/* a log's, in cxt */
	MemoryContext cxt;
} CaptureEntry;

static HTAB *capture_cache = NULL;

static void
capture_cache_invalidate(Datum arg pg_attribute_unused(), Oid relid)
{
	HASH_SEQ_STATUS status;
	CaptureEntry *entry;

	if (capture_cache == NULL)
		return;
	hash_seq_init(&status, capture_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || relid == entry->upstream || relid == entry->changes ||
			(entry->proj != NULL && (relid == entry->proj->image_type ||
									 relid == entry->proj->seq)))
		{
			entry->located = entry->valid = false;
			entry->stale = true;
		}
}

/* a schema renamed or dropped: names may resolve to other relations now */
static void
capture_cache_invalidate_all(Datum arg pg_attribute_unused(), int cacheid pg_attribute_unused(),
							 uint32 hashvalue pg_attribute_unused())
{
	capture_cache_invalidate((Datum) 0, InvalidOid);
}

static CaptureEntry *
capture_entry(int64 job_id, Oid upstream)
{
	CaptureEntry *entry;
	CaptureKey	hashkey;
	bool		found;

	if (capture_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(CaptureKey);
		ctl.entrysize = sizeof(CaptureEntry);
		capture_cache = hash_create("backfill capture cache", 16, &ctl,
									HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(capture_cache_invalidate, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, capture_cache_invalidate_all, (Datum) 0);
	}
	/* no padding bytes in a key that is hashed as bytes */
	memset(&hashkey, 0, sizeof(hashkey));
	hashkey.job_id = job_id;
	hashkey.upstream = upstream;
	entry = hash_search(capture_cache, &hashkey, HASH_ENTER, &found);
	if (!found)
	{
		entry->located = entry->valid = entry->stale = false;
		entry->upstream = upstream;
		entry->changes = InvalidOid;
		entry->proj = NULL;
		entry->cxt = NULL;
	}
	return entry;
}

/*
 * Find the job's change table by name, and check that the trigger fires on
 * the job's upstream.
 */
static void
capture_locate(CaptureEntry *entry, TriggerData *trigdata, int64 job_id)
{
	Oid			changes_oid;

	entry->located = entry->valid = false;
	entry->stale = false;
	changes_oid = get_relname_relid(psprintf("changes_%lld", (long long) job_id),
									get_namespace_oid(BACKFILL_SCHEMA, false));
	if (!OidIsValid(changes_oid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("change table of backfill job %lld does not exist", (long long) job_id),
				 errhint("Drop trigger \"%s\" on table \"%s\", or drop the job with backfill.drop_job().",
						 trigdata->tg_trigger->tgname,
						 RelationGetRelationName(trigdata->tg_relation))));
	check_trigger_relation(trigdata, job_id, changes_oid);
	entry->changes = changes_oid;
	entry->located = !entry->stale;
}

/*
 * Open the change table with RowExclusiveLock.  Taking the lock brings in
 * what other sessions committed since the last row, so the table is looked
 * up again if it was renamed, dropped or replaced meanwhile.
 */
static Relation
capture_open_changes(CaptureEntry *entry, TriggerData *trigdata, int64 job_id)
{
	for (;;)
	{
		Oid			changes_oid = entry->changes;

		LockRelationOid(changes_oid, RowExclusiveLock);
		if (entry->located && entry->changes == changes_oid)
			return table_open(changes_oid, NoLock);
		UnlockRelationOid(changes_oid, RowExclusiveLock);
		capture_locate(entry, trigdata, job_id);
	}
}

/*
 * The upstream's key, and the change table checked against it; for a log,
 * the projection.
 */
static void
capture_build(CaptureEntry *entry, Relation upstream, Relation changes, int64 job_id)
{
	entry->valid = false;
	entry->stale = false;
	entry->proj = NULL;
	if (entry->cxt)
		MemoryContextReset(entry->cxt);
	relation_key(upstream, &entry->key);
	entry->is_log = is_log_table(changes, entry->key.npk);
	check_change_table(changes, upstream, &entry->key, job_id, entry->is_log);
	if (entry->is_log)
	{
		if (entry->cxt == NULL)
			entry->cxt = AllocSetContextCreate(CacheMemoryContext, "backfill capture entry",
											   ALLOCSET_SMALL_SIZES);
		entry->proj = log_projection(entry->cxt, upstream, changes);
	}
	entry->valid = entry->located && !entry->stale;
}

/*
 * backfill.capture_change() trigger
 */
Datum
backfill_capture_change(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	int64		job_id;
	Relation	rel;
	TupleDesc	desc;
	CaptureEntry *entry;
	RelationKey *key;
	Relation	changes;
	Datum		oldkey[INDEX_MAX_KEYS];
	bool		oldnull[INDEX_MAX_KEYS];
	Datum		newkey[INDEX_MAX_KEYS];
	bool		newnull[INDEX_MAX_KEYS];
	bool		have_new = false;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill.capture_change() was not called by the trigger manager")));
	job_id = trigger_job_id(trigdata, "backfill.capture_change()");
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);

	entry = capture_entry(job_id, RelationGetRelid(rel));
	if (!entry->located)
		capture_locate(entry, trigdata, job_id);
	if (!side_in_charge(rel, job_id, true, true))
		return PointerGetDatum(NULL);

	changes = capture_open_changes(entry, trigdata, job_id);
	if (!entry->valid)
		capture_build(entry, rel, changes, job_id);
	key = &entry->key;

	tuple_key(trigdata->tg_trigtuple, desc, key, oldkey, oldnull);
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		tuple_key(trigdata->tg_newtuple, desc, key, newkey, newnull);
		have_new = !same_key(key, oldkey, oldnull, newkey, newnull);
	}

	if (entry->is_log)
	{
		LogProjection *proj = entry->proj;

		/* an insert had no row before; an update that moves the key, none at the new key */
		if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
			log_insert(changes, proj, key, oldkey, oldnull, NULL, desc);
		else
			log_insert(changes, proj, key, oldkey, oldnull, trigdata->tg_trigtuple, desc);
		if (have_new)
			log_insert(changes, proj, key, newkey, newnull, NULL, desc);
	}
	else
	{
		simple_heap_insert(changes, heap_form_tuple(RelationGetDescr(changes), oldkey, oldnull));
		if (have_new)
			simple_heap_insert(changes, heap_form_tuple(RelationGetDescr(changes), newkey, newnull));
	}
	table_close(changes, RowExclusiveLock);

	return PointerGetDatum(NULL);
}

/*
 * What apply_change needs of a finished job, kept for the backend's life.
 * An entry is dropped when the upstream or the downstream changes shape.
 */
typedef struct ApplyEntry
{
	int64		job_id;			/* hash key */
	bool		valid;
	Oid			upstream;
	Oid			downstream;
	Oid			owner;
	int			npk;
	AttrNumber	pk_attnums[INDEX_MAX_KEYS];
	Oid			pk_types[INDEX_MAX_KEYS];
	char	   *search_path;	/* the job's, in CacheMemoryContext */
	bool		filtered;		/* the job has a row filter */
	SPIPlanPtr	upsert_plan;
	SPIPlanPtr	delete_plan;
	SPIPlanPtr	upsert_many_plan;	/* the same for a set of keys; NULL when a */
	SPIPlanPtr	delete_many_plan;	/* key type has no array type */
	DirectApply *direct;		/* applies a set of keys without SQL, in
								 * CacheMemoryContext; NULL when SQL must */
} ApplyEntry;

static HTAB *apply_cache = NULL;

static void
apply_cache_invalidate(Datum arg pg_attribute_unused(), Oid relid)
{
	HASH_SEQ_STATUS status;
	ApplyEntry *entry;

	if (apply_cache == NULL)
		return;
	hash_seq_init(&status, apply_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (!OidIsValid(relid) || relid == entry->upstream || relid == entry->downstream)
			entry->valid = false;
}

/*
 * The plans that apply a set of keys, given as one array per key column;
 * none when a key type has no array type (its keys are applied one by one).
 */
static void
prepare_many_plans(ApplyEntry *entry, BackfillJob *job)
{
	Oid			arraytypes[INDEX_MAX_KEYS];
	char	   *sql;

	for (int k = 0; k < job->npk; k++)
	{
		arraytypes[k] = get_array_type(job->pk_types[k]);
		if (!OidIsValid(arraytypes[k]))
			return;
	}
	sql = backfill_sync_upsert_many_sql(job);
	entry->upsert_many_plan = SPI_prepare(sql, job->npk, arraytypes);
	if (entry->upsert_many_plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	SPI_keepplan(entry->upsert_many_plan);
	sql = backfill_sync_delete_gone_many_sql(job);
	entry->delete_many_plan = SPI_prepare(sql, job->npk, arraytypes);
	if (entry->delete_many_plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	SPI_keepplan(entry->delete_many_plan);
}

static void
apply_entry_build(ApplyEntry *entry, int64 job_id)
{
	BackfillJob *job;
	char	   *sql;

	if (entry->upsert_plan)
		SPI_freeplan(entry->upsert_plan);
	if (entry->delete_plan)
		SPI_freeplan(entry->delete_plan);
	if (entry->upsert_many_plan)
		SPI_freeplan(entry->upsert_many_plan);
	if (entry->delete_many_plan)
		SPI_freeplan(entry->delete_many_plan);
	entry->upsert_plan = entry->delete_plan = NULL;
	entry->upsert_many_plan = entry->delete_many_plan = NULL;
	if (entry->direct)
		backfill_apply_direct_free(entry->direct);
	entry->direct = NULL;

	job = backfill_load_job(job_id, CurrentMemoryContext);
	if (!OidIsValid(job->downstream) || job->status == BACKFILL_STATUS_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has no downstream table", (long long) job_id)));

	/* the key it was made with: its change table's */
	backfill_check_key_unchanged(job, job->change_table);
	sql = backfill_sync_upsert_sql(job);
	entry->upsert_plan = SPI_prepare(sql, job->npk, job->pk_types);
	if (entry->upsert_plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	SPI_keepplan(entry->upsert_plan);
	sql = backfill_sync_delete_gone_sql(job);
	entry->delete_plan = SPI_prepare(sql, job->npk, job->pk_types);
	if (entry->delete_plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	SPI_keepplan(entry->delete_plan);
	prepare_many_plans(entry, job);
	if (entry->upsert_many_plan != NULL)
		entry->direct = backfill_apply_direct_prepare(job, CacheMemoryContext);

	entry->upstream = job->upstream;
	entry->downstream = job->downstream;
	entry->owner = job->owner;
	entry->filtered = job->filter != NULL;
	entry->npk = job->npk;
	memcpy(entry->pk_types, job->pk_types, sizeof(Oid) * job->npk);
	for (int k = 0; k < job->npk; k++)
		entry->pk_attnums[k] = get_attnum(job->upstream, job->pk_names[k]);
	if (entry->search_path)
		pfree(entry->search_path);
	entry->search_path = MemoryContextStrdup(CacheMemoryContext, job->search_path);
	entry->valid = true;
}

/*
 * Act as the job's owner (looked up if owner is invalid), in a restricted
 * security context, under a search_path of pg_catalog only: the writer's
 * rights, search_path and objects count for nothing from here on.  An error
 * restores all of it.
 */
static void
enter_owner_context(TriggerData *trigdata, int64 job_id, Oid owner, RoleContext *rc)
{
	if (!OidIsValid(owner))
		owner = backfill_job_owner(job_id);
	if (!OidIsValid(owner))
		report_missing_job(trigdata, job_id);
	backfill_owner_enter(owner, true, rc);
}

static void
apply_key(SPIPlanPtr plan, int npk, Datum *values, bool *nulls)
{
	char		cnulls[INDEX_MAX_KEYS] = {0};

	for (int k = 0; k < npk; k++)
		cnulls[k] = nulls[k] ? 'n' : ' ';
	if (SPI_execute_plan(plan, values, cnulls, false, 0) < 0)
		elog(ERROR, "could not apply a change to the downstream table");
}

/*
 * What a row's keys need, by the trigger's event: a row written is upserted;
 * with a filter, its downstream row is then deleted if it does not pass the
 * filter any more; a key deleted, or left by an update, is deleted.  Both
 * re-read the upstream, so each makes the downstream row of its key equal
 * to the upstream's.  Each key goes to apply(), which applies it now or
 * notes it for the end of the statement.
 */
typedef void (*ApplyKeyFn) (ApplyEntry *entry, bool upsert, Datum *values, bool *nulls,
							ItemPointer written_tid);

/* written_tid: where the row written is, in the table the trigger fired on */
static void
apply_row(ApplyEntry *entry, TriggerEvent event, RelationKey *key, Datum *oldkey,
		  bool *oldnull, Datum *newkey, bool *newnull, ItemPointer written_tid,
		  ApplyKeyFn apply)
{
	if (TRIGGER_FIRED_BY_DELETE(event))
		apply(entry, false, oldkey, oldnull, NULL);
	else
	{
		Datum	   *written = TRIGGER_FIRED_BY_INSERT(event) ? oldkey : newkey;
		bool	   *written_null = TRIGGER_FIRED_BY_INSERT(event) ? oldnull : newnull;

		if (TRIGGER_FIRED_BY_UPDATE(event) &&
			!same_key(key, oldkey, oldnull, newkey, newnull))
			apply(entry, false, oldkey, oldnull, NULL);
		apply(entry, true, written, written_null, written_tid);
		if (entry->filtered)
			apply(entry, false, written, written_null, NULL);
	}
}

/* apply one key now, in the SPI connection of the trigger */
static void
apply_key_now(ApplyEntry *entry, bool upsert, Datum *values, bool *nulls,
			  ItemPointer written_tid pg_attribute_unused())
{
	apply_key(upsert ? entry->upsert_plan : entry->delete_plan, entry->npk, values, nulls);
}

/*
 * The key the plans were made for must still be the primary key: of the
 * upstream, or, with its own attribute numbers, of the partition.
 */
static void
check_apply_key(TriggerData *trigdata, ApplyEntry *entry, RelationKey *key, int64 job_id)
{
	TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);

	for (int k = 0; k < Max(key->npk, entry->npk); k++)
		if (key->npk != entry->npk || key->types[k] != entry->pk_types[k] ||
			(entry->upstream == RelationGetRelid(trigdata->tg_relation) ?
			 key->attnums[k] != entry->pk_attnums[k] :
			 strcmp(NameStr(TupleDescAttr(desc, key->attnums[k] - 1)->attname),
					get_attname(entry->upstream, entry->pk_attnums[k], false)) != 0))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the primary key of table \"%s\" has changed since backfill job %lld was created",
							RelationGetRelationName(trigdata->tg_relation), (long long) job_id),
					 errhint("Drop the job with backfill.drop_job(%lld) and create it again.",
							 (long long) job_id)));
}

/*
 * A statement's rows, applied at once.
 *
 * The apply trigger fires once per row, when the writer's statement has done
 * all its writes (AFTER ROW triggers fire as the executor finishes the
 * statement), and one upsert per row made a statement of 100 rows run 100
 * statements of its own.  Instead, while the executor finishes a statement
 * (ExecutorFinish, whose AfterTriggerEndQuery fires the statement's AFTER
 * triggers), the trigger notes the keys in that statement's batch; once every
 * trigger has fired, the hook makes the downstream rows of the keys noted
 * equal to the upstream's, with at most two statements per job: one upsert of
 * the keys written, then one delete of the keys whose upstream row is gone or
 * does not pass the filter.  Since both re-read the upstream, the result is
 * what applying the rows one by one at the end of the statement gives, in
 * the writer's transaction, before its statement returns.  A statement that
 * a trigger runs while the batch is open has a batch of its own, applied
 * when that statement finishes; the outer batch re-reads the upstream later
 * still.
 *
 * Rows whose triggers fire outside an executor's finish (COPY FROM and a
 * logical replication apply worker fire their AFTER triggers themselves),
 * the first row of a job in a backend (its plans are not made yet) and keys
 * of a type with no array type are applied one by one, as they fire.  An
 * error discards the batch with the (sub)transaction: its memory is the
 * (sub)transaction's.
 */
typedef struct ApplyBatchJob
{
	int64		job_id;
	int			nkeys[2];		/* [true]: to upsert, [false]: to delete */
	ArrayBuildState *keys[2][INDEX_MAX_KEYS];
	ItemPointerData *written_tids;	/* per key to upsert, where its row was
									 * written (for apply.c) */
	int			tids_size;
} ApplyBatchJob;

typedef struct ApplyBatch
{
	MemoryContext cxt;			/* made at the first key noted */
	List	   *jobs;			/* of ApplyBatchJob, in cxt */
} ApplyBatch;

/* the batch of the innermost statement the executor is finishing, if any */
static ApplyBatch *apply_batch = NULL;

static ExecutorFinish_hook_type prev_executor_finish = NULL;

/* note one key for the end of the statement */
static void
apply_key_later(ApplyEntry *entry, bool upsert, Datum *values, bool *nulls,
				ItemPointer written_tid)
{
	ApplyBatchJob *bj = NULL;
	ListCell   *lc;
	MemoryContext old;

	if (apply_batch->cxt == NULL)
		apply_batch->cxt = AllocSetContextCreate(CurTransactionContext, "backfill apply batch",
												 ALLOCSET_DEFAULT_SIZES);
	foreach(lc, apply_batch->jobs)
		if (((ApplyBatchJob *) lfirst(lc))->job_id == entry->job_id)
			bj = lfirst(lc);
	old = MemoryContextSwitchTo(apply_batch->cxt);
	if (bj == NULL)
	{
		bj = palloc0(sizeof(ApplyBatchJob));
		bj->job_id = entry->job_id;
		apply_batch->jobs = lappend(apply_batch->jobs, bj);
	}
	for (int k = 0; k < entry->npk; k++)
		bj->keys[upsert][k] = accumArrayResult(bj->keys[upsert][k], values[k], nulls[k],
											   entry->pk_types[k], apply_batch->cxt);
	if (upsert)
	{
		if (bj->tids_size == 0)
		{
			bj->tids_size = 8;
			bj->written_tids = palloc(sizeof(ItemPointerData) * bj->tids_size);
		}
		else if (bj->nkeys[true] == bj->tids_size)
		{
			bj->tids_size *= 2;
			bj->written_tids = repalloc(bj->written_tids,
										sizeof(ItemPointerData) * bj->tids_size);
		}
		if (written_tid != NULL)
			bj->written_tids[bj->nkeys[true]] = *written_tid;
		else
			ItemPointerSetInvalid(&bj->written_tids[bj->nkeys[true]]);
	}
	bj->nkeys[upsert]++;
	MemoryContextSwitchTo(old);
}

/* apply the keys of one side of a job's batch: one key with the plan for one */
static void
apply_batch_keys(ApplyEntry *entry, ApplyBatchJob *bj, bool upsert)
{
	Datum		values[INDEX_MAX_KEYS];
	bool		nulls[INDEX_MAX_KEYS] = {0};

	if (bj->nkeys[upsert] == 0)
		return;
	if (bj->nkeys[upsert] == 1)
	{
		for (int k = 0; k < entry->npk; k++)
		{
			values[k] = bj->keys[upsert][k]->dvalues[0];
			nulls[k] = bj->keys[upsert][k]->dnulls[0];
		}
		apply_key_now(entry, upsert, values, nulls, NULL);
		return;
	}
	for (int k = 0; k < entry->npk; k++)
		values[k] = makeArrayResult(bj->keys[upsert][k], CurrentMemoryContext);
	apply_key(upsert ? entry->upsert_many_plan : entry->delete_many_plan, entry->npk,
			  values, nulls);
}

/* apply one side of a job's batch directly: the keys' arrays as they were built */
static void
apply_batch_direct(ApplyEntry *entry, ApplyBatchJob *bj, bool upsert)
{
	Datum	   *keys[INDEX_MAX_KEYS];

	if (bj->nkeys[upsert] == 0)
		return;
	for (int k = 0; k < entry->npk; k++)
		keys[k] = bj->keys[upsert][k]->dvalues;
	backfill_apply_direct(entry->direct, bj->nkeys[upsert], keys,
						  upsert ? bj->written_tids : NULL);
}

/*
 * Apply a job's batch, as the job's owner, as the trigger would: without
 * SQL when the job allows it (apply.c), else with its plans.  Plans are made
 * and run under the job's search_path; so is a direct apply that evaluates
 * expressions of the downstream's (their functions resolve names when they
 * run).  Without either, nothing looks a name up, and the search_path is
 * left alone.
 */
static void
apply_batch_job(ApplyBatchJob *bj)
{
	ApplyEntry *entry = hash_search(apply_cache, &bj->job_id, HASH_FIND, NULL);
	Oid			owner;
	RoleContext oc;
	bool		direct;
	int			guc_level = -1;

	Assert(entry != NULL);
	owner = entry->valid ? entry->owner : backfill_job_owner(bj->job_id);
	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) bj->job_id)));
	backfill_owner_enter(owner, false, &oc);
	if (!entry->valid)
	{
		guc_level = NewGUCNestLevel();
		(void) set_config_option("search_path", "pg_catalog, pg_temp",
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		backfill_pin_parse_settings();
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		apply_entry_build(entry, bj->job_id);
		SPI_finish();
		AtEOXact_GUC(true, guc_level);
		guc_level = -1;
	}
	if (entry->upsert_many_plan == NULL)
		elog(ERROR, "backfill job %lld cannot apply a set of keys", (long long) bj->job_id);
	direct = entry->direct != NULL && backfill_apply_direct_permitted(entry->direct);
	if (!direct || backfill_apply_direct_evaluates(entry->direct))
	{
		guc_level = NewGUCNestLevel();
		(void) set_config_option("search_path", entry->search_path,
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		backfill_pin_parse_settings();
	}
	if (direct)
	{
		apply_batch_direct(entry, bj, true);
		apply_batch_direct(entry, bj, false);
	}
	else
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		apply_batch_keys(entry, bj, true);
		apply_batch_keys(entry, bj, false);
		SPI_finish();
	}
	if (guc_level >= 0)
		AtEOXact_GUC(true, guc_level);
	backfill_role_leave(&oc);
}

/*
 * ExecutorFinish, with a batch open while the statement's AFTER triggers
 * fire, then applied.
 */
static void
apply_executor_finish(QueryDesc *queryDesc)
{
	ApplyBatch	batch = {NULL, NIL};
	ApplyBatch *outer = apply_batch;
	ListCell   *lc;

	apply_batch = &batch;
	PG_TRY();
	{
		if (prev_executor_finish)
			prev_executor_finish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_CATCH();
	{
		apply_batch = outer;
		PG_RE_THROW();
	}
	PG_END_TRY();
	apply_batch = outer;
	if (batch.cxt == NULL)
		return;
	foreach(lc, batch.jobs)
		apply_batch_job(lfirst(lc));
	MemoryContextDelete(batch.cxt);
}

/*
 * backfill_capture_init
 *		At load: the hook that applies a statement's rows at once.
 */
void
backfill_capture_init(void)
{
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = apply_executor_finish;
}

/*
 * backfill.apply_change() trigger
 */
Datum
backfill_apply_change(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	int64		job_id;
	ApplyEntry *entry;
	bool		found;
	RelationKey key;
	TupleDesc	desc;
	Datum		oldkey[INDEX_MAX_KEYS];
	bool		oldnull[INDEX_MAX_KEYS];
	Datum		newkey[INDEX_MAX_KEYS];
	bool		newnull[INDEX_MAX_KEYS];
	ItemPointer written_tid = NULL;
	RoleContext oc;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill.apply_change() was not called by the trigger manager")));
	job_id = trigger_job_id(trigdata, "backfill.apply_change()");
	if (!side_in_charge(trigdata->tg_relation, job_id, false, true))
		return PointerGetDatum(NULL);

	if (apply_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(ApplyEntry);
		apply_cache = hash_create("backfill apply cache", 16, &ctl,
								  HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(apply_cache_invalidate, (Datum) 0);
	}
	entry = hash_search(apply_cache, &job_id, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->upsert_plan = entry->delete_plan = NULL;
		entry->upsert_many_plan = entry->delete_many_plan = NULL;
		entry->direct = NULL;
		entry->search_path = NULL;
	}

	desc = RelationGetDescr(trigdata->tg_relation);
	relation_key(trigdata->tg_relation, &key);
	tuple_key(trigdata->tg_trigtuple, desc, &key, oldkey, oldnull);
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		tuple_key(trigdata->tg_newtuple, desc, &key, newkey, newnull);
	/* the row written, when it was written on the upstream itself */
	if (RelationGetRelid(trigdata->tg_relation) == entry->upstream)
		written_tid = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
			&trigdata->tg_newslot->tts_tid : &trigdata->tg_trigslot->tts_tid;

	/* within an executor's finish: at the end of the statement, with its other rows */
	if (apply_batch != NULL && entry->valid && entry->upsert_many_plan != NULL)
	{
		if (entry->upstream != RelationGetRelid(trigdata->tg_relation))
			check_trigger_relation(trigdata, job_id, entry->downstream);
		check_apply_key(trigdata, entry, &key, job_id);
		apply_row(entry, trigdata->tg_event, &key, oldkey, oldnull, newkey, newnull,
				  written_tid, apply_key_later);
		return PointerGetDatum(NULL);
	}

	/* everything below runs as the job's owner; see enter_owner_context */
	enter_owner_context(trigdata, job_id, entry->valid ? entry->owner : InvalidOid, &oc);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (!entry->valid)
	{
		int			build_level = NewGUCNestLevel();

		/* the plans resolve the key types' operators, wherever they live */
		apply_entry_build(entry, job_id);
		AtEOXact_GUC(true, build_level);
	}
	(void) set_config_option("search_path", entry->search_path,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	backfill_pin_parse_settings();

	if (entry->upstream != RelationGetRelid(trigdata->tg_relation))
		check_trigger_relation(trigdata, job_id, entry->downstream);
	check_apply_key(trigdata, entry, &key, job_id);
	apply_row(entry, trigdata->tg_event, &key, oldkey, oldnull, newkey, newnull,
			  written_tid, apply_key_now);

	SPI_finish();
	backfill_role_leave(&oc);
	return PointerGetDatum(NULL);
}

/*
 * TRUNCATE of a leaf partition of the upstream, BEFORE: refused while the
 * job backfills; once it has finished, the downstream rows of the
 * partition's keys go, as the job's owner.  A TRUNCATE of the partitioned
 * table fires this too, before its own triggers: it is refused there while
 * the job backfills, and truncates the whole downstream once finished.
 */
static void
truncate_partition(TriggerData *trigdata, int64 job_id)
{
	Relation	rel = trigdata->tg_relation;
	RoleContext oc;
	BackfillJob *job;
	char	   *matching;
	int			guc_level;
	Oid			argtype = OIDOID;
	Datum		partition = ObjectIdGetDatum(RelationGetRelid(rel));

	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event))
		elog(ERROR, "trigger \"%s\" must fire BEFORE TRUNCATE", trigdata->tg_trigger->tgname);
	if (!job_finished(job_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot truncate partition \"%s\" while backfill job %lld backfills its table",
						RelationGetRelationName(rel), (long long) job_id),
				 errdetail("The job's positions would no longer describe its downstream table."),
				 errhint("Wait until the job has finished, or cancel it with backfill.cancel_job(%lld).",
						 (long long) job_id)));
	enter_owner_context(trigdata, job_id, InvalidOid, &oc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	job = backfill_load_job(job_id, CurrentMemoryContext);
	guc_level = backfill_pin_search_path(job);
	/* read through the upstream: the owner may have no right on the partition */
	matching = psprintf("SELECT %s FROM %s WHERE u.tableoid OPERATOR(pg_catalog.=) $1",
						backfill_pk_list(job, "u"), backfill_job_scan(job));
	backfill_spi_exec_args(backfill_sync_delete_sql(job, matching, false), 1, &argtype,
						   &partition, NULL, SPI_OK_DELETE);
	backfill_unpin_search_path(guc_level);
	SPI_finish();
	backfill_role_leave(&oc);
}

/*
 * backfill.truncate_change() trigger, FOR EACH STATEMENT on TRUNCATE:
 * BEFORE while the job backfills (refuse), AFTER once it has finished
 * (truncate the downstream too); on a leaf partition, see
 * truncate_partition().
 */
Datum
backfill_truncate_change(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	int64		job_id;
	RoleContext oc;
	BackfillJob *job;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill.truncate_change() must be fired by TRUNCATE")));
	trigger = trigdata->tg_trigger;
	if (trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill.truncate_change() needs the job id as its only argument")));
	job_id = pg_strtoint64(trigger->tgargs[0]);

	check_trigger_relation(trigdata, job_id, InvalidOid);
	if (RelationGetRelid(trigdata->tg_relation) != backfill_job_upstream(job_id))
	{
		truncate_partition(trigdata, job_id);
		return PointerGetDatum(NULL);
	}
	if (!side_in_charge(trigdata->tg_relation, job_id,
						TRIGGER_FIRED_BEFORE(trigdata->tg_event), false))
		return PointerGetDatum(NULL);
	if (TRIGGER_FIRED_BEFORE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot truncate table \"%s\" while backfill job %lld backfills it",
						RelationGetRelationName(trigdata->tg_relation), (long long) job_id),
				 errdetail("The job's positions would no longer describe its downstream table."),
				 errhint("Wait until the job has finished, or cancel it with backfill.cancel_job(%lld).",
						 (long long) job_id)));

	/* finished: the downstream follows, as the job's owner */
	enter_owner_context(trigdata, job_id, InvalidOid, &oc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	job = backfill_load_job(job_id, CurrentMemoryContext);
	if (SPI_execute(psprintf("TRUNCATE %s", job->downstream_sql), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not truncate %s", job->downstream_sql);
	SPI_finish();
	backfill_role_leave(&oc);
	return PointerGetDatum(NULL);
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
	(void) upstream_relations(job->upstream, AccessShareLock);
	if (set_trigger_states(job->upstream, job->job_id, finished, false))
		return;
	backfill_lock_writers(job->upstream);
	(void) set_trigger_states(job->upstream, job->job_id, finished, true);
}

/*
 * backfill_capture_create_table
 *		Make the job's change table: the keys written since the last barrier,
 *		or for the log mode a log of them with the rows' images before the
 *		write, indexed on (key, sequence).  The images are of row type
 *		image_sql: the downstream's, or, when image_ddl gives its columns, a
 *		type made here.  Caller acts as the extension's owner, connected to
 *		SPI.
 */
void
backfill_capture_create_table(CaptureMode mode, const char *changes_sql,
							  const char *key_ddl, const char *key_list,
							  const char *image_sql, const char *image_ddl, Oid owner)
{
	char	   *create;

	if (mode == CAPTURE_STREAM)
		return;					/* the kind's own */

	if (mode == CAPTURE_LOG && image_ddl != NULL)
		backfill_create_job_type(psprintf("CREATE TYPE %s AS (%s)", image_sql, image_ddl),
								 image_sql, owner);
	/* key_ddl starts with ", " */
	if (mode == CAPTURE_LOG)
		create = psprintf("CREATE TABLE %s (%s, backfill_seq pg_catalog.int8, "
						  "backfill_captured_at pg_catalog.timestamptz, backfill_old_row %s) "
						  "USING heap; "
						  "CREATE INDEX ON %s (%s, backfill_seq)",
						  changes_sql, key_ddl + 2, image_sql, changes_sql, key_list);
	else
		create = psprintf("CREATE TABLE %s (%s) USING heap", changes_sql, key_ddl + 2);
	backfill_create_job_table(create, changes_sql, owner);
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
		install_partition_truncates(RelationGetRelid(upstream), job_id);
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
 * backfill_drop_triggers
 *		Drop the job's triggers on its upstream, whose owner the job's may not
 *		be: caller acts as the extension's owner, connected to SPI.  Locks
 *		the upstream and its partitions ACCESS EXCLUSIVE first, all at once
 *		(lock_all_or_none).
 */
void
backfill_drop_triggers(int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;
	Oid			upstream;

	backfill_spi_exec_args("SELECT upstream::pg_catalog.oid FROM backfill.job j "
				   "WHERE job_id = $1 AND EXISTS (SELECT FROM pg_catalog.pg_class c "
				   "WHERE c.oid OPERATOR(pg_catalog.=) j.upstream)",
				   1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;
	upstream = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &isnull));

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

/*
 * The keys of every row of a relation (a partition joining or leaving the
 * upstream) into the job's change table, as if they had just been written;
 * in a log, each with the row's image if the row leaves, none if it joins
 * (it was not part of the upstream as of the snapshot epoch).  With
 * keys_only, the keys alone, whatever the layout.  Read by the caller, the
 * extension's owner: the job's owner may have no right on the partition
 * itself (a partition has privileges of its own), and nothing of the
 * user's runs here.
 */
static void
capture_rows(BackfillJob *job, Oid relid, bool attached, bool keys_only)
{
	Relation	changes = table_open(job->change_table, AccessShareLock);
	bool		is_log = !keys_only && is_log_table(changes, job->npk);
	char	   *scan = backfill_upstream_scan(backfill_relation_sql(relid),
											  get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE);
	StringInfoData image;

	initStringInfo(&image);
	if (is_log && attached)
		appendStringInfoString(&image, ", NULL");
	else if (is_log)
	{
		TupleDesc	desc = RelationGetDescr(changes);
		Oid			rowtype = TupleDescAttr(desc, desc->natts - 1)->atttypid;
		TupleDesc	img = lookup_rowtype_tupdesc(rowtype, -1);

		appendStringInfoString(&image, ", ROW(");
		for (int i = 0; i < img->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(img, i);
			bool		in_rel = !att->attisdropped &&
				get_attnum(relid, NameStr(att->attname)) != InvalidAttrNumber;

			appendStringInfo(&image, "%s%s%s", i > 0 ? ", " : "", in_rel ? "u." : "NULL",
							 in_rel ? quote_identifier(NameStr(att->attname)) : "");
		}
		appendStringInfo(&image, ")::%s", format_type_be_qualified(rowtype));
		ReleaseTupleDesc(img);
	}
	table_close(changes, AccessShareLock);
	backfill_spi_exec(psprintf("INSERT INTO %s (%s%s) SELECT %s%s%s FROM %s", job->changes_sql,
							   backfill_pk_list(job, NULL),
							   is_log ? ", backfill_seq, backfill_captured_at, backfill_old_row" : "",
							   backfill_pk_list(job, "u"),
							   is_log ? ", pg_catalog.nextval('backfill.change_seq'), "
							   "pg_catalog.statement_timestamp()" : "",
							   image.data, scan),
					  SPI_OK_INSERT);
}

/* the leaf partitions of a relation, or itself if it is one, as an oid[] */
static Datum
leaves_array(Oid relid)
{
	List	   *leaves = NIL;
	Datum	   *oids;
	int			n = 0;
	ListCell   *lc;

	foreach(lc, upstream_relations(relid, NoLock))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION)
			leaves = lappend_oid(leaves, lfirst_oid(lc));
	oids = palloc(sizeof(Datum) * Max(list_length(leaves), 1));
	foreach(lc, leaves)
		oids[n++] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * The rows of a partition joining or leaving the upstream of a finished
 * job, into or out of its downstream, now.  Joining, they are read through
 * the upstream, as the job's owner.  Leaving, they are not part of it any
 * more: their keys go to the change table first, as the extension's owner
 * (see capture_rows); it is empty once the job has finished, and again
 * after this, in the same transaction, which holds the upstream ACCESS
 * EXCLUSIVE (DETACH PARTITION).
 */
static void
partition_rows_now(BackfillJob *job, Oid partition, bool attached)
{
	RoleContext oc;
	int			guc_level;
	Oid			argtype = OIDARRAYOID;
	Datum		leaves = attached ? leaves_array(partition) : (Datum) 0;

	if (!attached)
		capture_rows(job, partition, false, true);
	backfill_owner_enter(job->owner, false, &oc);
	guc_level = backfill_pin_search_path(job);
	if (attached)
		backfill_spi_exec_args(backfill_sync_insert_sql(job,
														psprintf("SELECT %s FROM %s WHERE u.tableoid OPERATOR(pg_catalog.=) ANY ($1)",
																 backfill_pk_list(job, "u"),
																 backfill_job_scan(job)),
														false),
							   1, &argtype, &leaves, NULL, SPI_OK_INSERT);
	else
	{
		backfill_spi_exec(backfill_sync_delete_sql(job,
												   psprintf("SELECT %s FROM %s c",
															backfill_pk_list(job, "c"),
															job->changes_sql),
												   false),
						  SPI_OK_DELETE);
		backfill_spi_exec(psprintf("DELETE FROM %s", job->changes_sql), SPI_OK_DELETE);
	}
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&oc);
}

/*
 * backfill_capture_partition
 *		A partition has joined the job's upstream (attached, or created:
 *		attached is then true and the partition empty) or left it
 *		(detached).  Its leaves get or lose the job's partition truncate
 *		trigger (the row triggers' clones PostgreSQL adds and removes).  Its
 *		rows join or leave the downstream exactly once: while the job
 *		backfills, their keys go to the change table, so that the barriers
 *		forward them as any write; once it has finished, they are inserted
 *		into or deleted from the downstream now.  Caller acts as the
 *		extension's owner, connected to SPI, in the transaction of the
 *		ALTER TABLE, which holds the partition.
 */
void
backfill_capture_partition(BackfillJob *job, Oid partition, bool attached)
{
	if (attached)
		install_partition_truncates(partition, job->job_id);
	else
		drop_trigger_everywhere(partition, TRIGGER_PARTITION_TRUNCATE, job->job_id);
	if (job->status != BACKFILL_STATUS_FINISHED)
		capture_rows(job, partition, attached, false);
	else
		partition_rows_now(job, partition, attached);
}
