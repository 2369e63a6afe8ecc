/*-------------------------------------------------------------------------
 *
 * apply_change.c
 *	  The apply trigger, backfill.apply_change(), and the batching of a
 *	  statement's rows.
 *
 * backfill.apply_change(job_id), enabled instead of the capture trigger once
 * the job has finished, keeps the downstream equal to the upstream in the
 * writer's own transaction: for every key it touches it makes the downstream
 * row match the upstream row as the writer's statement left it (upsert, or
 * delete when the row is gone or no longer passes the job's filter).
 * Re-reading the upstream, rather than replaying the change, makes the
 * result right whatever order the row triggers of one statement fire in.
 * The downstream is written with the rights of the job's owner, as the
 * writer may have none on it.  The rows of one statement are applied
 * together, as the executor finishes the statement (see ApplyBatch): without
 * SQL when the job allows it (apply_direct.c), else with one upsert and one
 * delete per statement.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "backfill.h"
#include "capture/capture.h"
#include "capture/capture_internal.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

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
	sql = backfill_sync_upsert_many_sql(job, false);
	entry->upsert_many_plan = SPI_prepare(sql, job->npk, arraytypes);
	if (entry->upsert_many_plan == NULL)
		elog(ERROR, "SPI_prepare failed for: %s", sql);
	SPI_keepplan(entry->upsert_many_plan);
	sql = backfill_sync_delete_gone_many_sql(job, false);
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

	job = backfill_load_job_latest(job_id, CurrentMemoryContext);
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
			!backfill_same_key(key, oldkey, oldnull, newkey, newnull))
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
									 * written (for apply_direct.c) */
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
 * SQL when the job allows it (apply_direct.c), else with its plans.  Plans
 * are made and run under the job's search_path; so is a direct apply that
 * evaluates expressions of the downstream's (their functions resolve names
 * when they run).  Without either, nothing looks a name up, and the
 * search_path is left alone.
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

PG_FUNCTION_INFO_V1(backfill_apply_change);

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
	job_id = backfill_trigger_arg_job(trigdata, "backfill.apply_change()");
	if (!backfill_side_in_charge(trigdata->tg_relation, job_id, false, true))
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
	backfill_relation_key(trigdata->tg_relation, &key);
	backfill_tuple_key(trigdata->tg_trigtuple, desc, &key, oldkey, oldnull);
	if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
		backfill_tuple_key(trigdata->tg_newtuple, desc, &key, newkey, newnull);
	/* the row written, when it was written on the upstream itself */
	if (RelationGetRelid(trigdata->tg_relation) == entry->upstream)
		written_tid = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ?
			&trigdata->tg_newslot->tts_tid : &trigdata->tg_trigslot->tts_tid;

	/* within an executor's finish: at the end of the statement, with its other rows */
	if (apply_batch != NULL && entry->valid && entry->upsert_many_plan != NULL)
	{
		if (entry->upstream != RelationGetRelid(trigdata->tg_relation))
			backfill_check_trigger_relation(trigdata, job_id, entry->downstream);
		check_apply_key(trigdata, entry, &key, job_id);
		apply_row(entry, trigdata->tg_event, &key, oldkey, oldnull, newkey, newnull,
				  written_tid, apply_key_later);
		return PointerGetDatum(NULL);
	}

	/* everything below runs as the job's owner; see backfill_trigger_enter_owner */
	backfill_trigger_enter_owner(trigdata, job_id, entry->valid ? entry->owner : InvalidOid, &oc);

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
		backfill_check_trigger_relation(trigdata, job_id, entry->downstream);
	check_apply_key(trigdata, entry, &key, job_id);
	apply_row(entry, trigdata->tg_event, &key, oldkey, oldnull, newkey, newnull,
			  written_tid, apply_key_now);

	SPI_finish();
	backfill_role_leave(&oc);
	return PointerGetDatum(NULL);
}
