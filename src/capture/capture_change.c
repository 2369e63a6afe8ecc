/*-------------------------------------------------------------------------
 *
 * capture_change.c
 *	  The capture trigger, backfill.capture_change(), and the change table
 *	  it writes.
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
 * This file also makes the change table, whose layout it writes: the keys,
 * or for the snapshot kind the log.  The change table is a heap whatever
 * default_table_access_method says, since the capture trigger writes it
 * with heap functions.  The trigger itself is installed, switched and
 * dropped by triggers.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "storage/lmgr.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "catalog/catalog_access.h"
#include "copy/copy.h"
#include "lib/lib.h"

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

/*
 * backfill_is_log_table
 *		Whether a change table has the snapshot kind's layout.
 */
bool
backfill_is_log_table(Relation changes, int npk)
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
 * in charge (backfill_side_in_charge), and the job's status when it asks that.
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
	backfill_check_trigger_relation(trigdata, job_id, changes_oid);
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
	backfill_relation_key(upstream, &entry->key);
	entry->is_log = backfill_is_log_table(changes, entry->key.npk);
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

PG_FUNCTION_INFO_V1(backfill_capture_change);

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
	job_id = backfill_trigger_arg_job(trigdata, "backfill.capture_change()");
	rel = trigdata->tg_relation;
	desc = RelationGetDescr(rel);

	entry = capture_entry(job_id, RelationGetRelid(rel));
	if (!entry->located)
		capture_locate(entry, trigdata, job_id);
	if (!backfill_side_in_charge(rel, job_id, true, true))
		return PointerGetDatum(NULL);

	changes = capture_open_changes(entry, trigdata, job_id);
	if (!entry->valid)
		capture_build(entry, rel, changes, job_id);
	key = &entry->key;

	backfill_tuple_key(trigdata->tg_trigtuple, desc, key, oldkey, oldnull);
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		backfill_tuple_key(trigdata->tg_newtuple, desc, key, newkey, newnull);
		have_new = !backfill_same_key(key, oldkey, oldnull, newkey, newnull);
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
