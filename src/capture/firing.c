/*-------------------------------------------------------------------------
 *
 * firing.c
 *	  What each trigger function of a job does as it fires, before its own
 *	  work: find the job its argument names, check that it fires on that
 *	  job's upstream (or a partition of it), read the key of the row, and
 *	  act as the job's owner.
 *
 * The capture trigger (capture_change.c), the apply trigger
 * (apply_change.c) and the truncate triggers (truncate_change.c) share
 * these.  A trigger attached by hand to another table, or naming a job that
 * is gone, fails here with a hint that says which trigger to drop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "backfill.h"
#include "capture/capture_internal.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/*
 * backfill_relation_key
 *		The key of a relation (backfill_key_index: its primary key, or a
 *		unique index over NOT NULL columns), in key order.
 */
void
backfill_relation_key(Relation rel, RelationKey *key)
{
	Relation	index;
	TupleDesc	desc = RelationGetDescr(rel);
	Oid			key_index = backfill_key_index(rel);

	if (!OidIsValid(key_index))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no primary key or unique index over NOT NULL columns",
						RelationGetRelationName(rel)),
				 errdetail("A backfill job needs the upstream's key to capture its changes.")));
	index = index_open(key_index, AccessShareLock);
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

/*
 * backfill_tuple_key
 *		The key values of a tuple, detoasted so they can be stored elsewhere.
 */
void
backfill_tuple_key(HeapTuple tuple, TupleDesc desc, RelationKey *key, Datum *values,
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

/*
 * backfill_same_key
 *		Whether two keys of a relation are the same, byte for byte.
 */
bool
backfill_same_key(RelationKey *key, Datum *a, bool *anull, Datum *b, bool *bnull)
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

/*
 * backfill_trigger_arg_job
 *		The job a row trigger's argument names, after checking that funcname
 *		was fired AFTER a write, FOR EACH ROW.
 */
int64
backfill_trigger_arg_job(TriggerData *trigdata, const char *funcname)
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

/*
 * backfill_report_missing_job
 *		A trigger names a job that does not exist.
 */
void
backfill_report_missing_job(TriggerData *trigdata, int64 job_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("backfill job %lld does not exist", (long long) job_id),
			 errhint("Drop trigger \"%s\" on table \"%s\".",
					 trigdata->tg_trigger->tgname,
					 RelationGetRelationName(trigdata->tg_relation))));
}

/* how many (job, relation) pairs backfill_check_trigger_relation() remembers */
#define CHECKED_RELATIONS 32

/*
 * backfill_check_trigger_relation
 *		A trigger fires for the job its argument names only on that job's
 *		upstream, or a partition of it at any level: one attached by hand to
 *		another table must not write the job's change table or downstream.
 *		A pair found right is remembered, with the change table that
 *		identifies the job (a partition detached since has lost the job's
 *		triggers).
 */
void
backfill_check_trigger_relation(TriggerData *trigdata, int64 job_id, Oid job_table)
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
		backfill_report_missing_job(trigdata, job_id);
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
 * backfill_trigger_enter_owner
 *		Act as the job's owner (looked up if owner is invalid), in a
 *		restricted security context, under a search_path of pg_catalog only:
 *		the writer's rights, search_path and objects count for nothing from
 *		here on.  An error restores all of it.
 */
void
backfill_trigger_enter_owner(TriggerData *trigdata, int64 job_id, Oid owner, RoleContext *rc)
{
	if (!OidIsValid(owner))
		owner = backfill_job_owner(job_id);
	if (!OidIsValid(owner))
		backfill_report_missing_job(trigdata, job_id);
	backfill_owner_enter(owner, true, rc);
}
