/*-------------------------------------------------------------------------
 *
 * capture_internal.h
 *	  What the files of src/capture/ share among themselves, and no layer
 *	  above calls: the triggers' lifecycle helpers (triggers.c), what every
 *	  trigger function checks as it fires (firing.c), the change table's
 *	  layout (capture_change.c) and the direct apply (apply_direct.c).
 *
 * Only files of src/capture/ include this; capture.h declares what the
 * layers above may call.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CAPTURE_CAPTURE_INTERNAL_H
#define BACKFILL_CAPTURE_CAPTURE_INTERNAL_H

#include "commands/trigger.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include "backfill.h"
#include "lib/lib.h"

/* triggers.c: the relations of an upstream, the triggers in charge */
extern List *backfill_upstream_relations(Oid upstream, LOCKMODE lockmode);
extern void backfill_install_partition_truncates(Oid relid, int64 job_id);
extern void backfill_drop_partition_truncates(Oid relid, int64 job_id);
extern bool backfill_trigger_job_finished(int64 job_id);
extern bool backfill_side_in_charge(Relation rel, int64 job_id, bool capture, bool row);

/* firing.c: what a trigger function of a job checks as it fires */

/* the primary key of a relation, in key order */
typedef struct RelationKey
{
	int			npk;
	AttrNumber	attnums[INDEX_MAX_KEYS];
	Oid			types[INDEX_MAX_KEYS];
	int16		typlens[INDEX_MAX_KEYS];
	bool		typbyvals[INDEX_MAX_KEYS];
} RelationKey;

extern void backfill_relation_key(Relation rel, RelationKey *key);
extern void backfill_tuple_key(HeapTuple tuple, TupleDesc desc, RelationKey *key,
							   Datum *values, bool *nulls);
extern bool backfill_same_key(RelationKey *key, Datum *a, bool *anull, Datum *b, bool *bnull);
extern int64 backfill_trigger_arg_job(TriggerData *trigdata, const char *funcname);
extern void backfill_report_missing_job(TriggerData *trigdata, int64 job_id) pg_attribute_noreturn();
extern void backfill_check_trigger_relation(TriggerData *trigdata, int64 job_id, Oid job_table);
extern void backfill_trigger_enter_owner(TriggerData *trigdata, int64 job_id, Oid owner,
										 RoleContext *rc);

/* capture_change.c: the change table's layout */
extern bool backfill_is_log_table(Relation changes, int npk);

/* apply_direct.c: a statement's keys applied to a finished job's downstream directly */
typedef struct DirectApply DirectApply;

extern DirectApply *backfill_apply_direct_prepare(BackfillJob *job, MemoryContext cxt);
extern void backfill_apply_direct_free(DirectApply *da);
extern bool backfill_apply_direct_permitted(DirectApply *da);
extern bool backfill_apply_direct_evaluates(DirectApply *da);
extern void backfill_apply_direct(DirectApply *da, int nkeys, Datum **keys,
								  ItemPointerData *written_tids);

#endif							/* BACKFILL_CAPTURE_CAPTURE_INTERNAL_H */
