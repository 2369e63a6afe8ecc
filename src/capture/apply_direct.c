/*-------------------------------------------------------------------------
 *
 * apply_direct.c
 *	  A statement's keys applied to a finished job's downstream without SQL,
 *	  the way PostgreSQL's logical replication applies its rows.
 *
 * Once a job has finished, the apply trigger (apply_change.c) makes the
 * downstream row of every key a statement wrote equal to the upstream row,
 * when the statement ends.  Through SQL that is an INSERT ... ON CONFLICT
 * and a DELETE per statement, each planned, started and ended by the
 * executor; for a statement of one row those cost more than the row itself.
 * Here, for each key: the upstream row is read through the upstream's
 * primary key index with the snapshot such a statement would take, the
 * downstream row through the downstream's, and the downstream row is
 * inserted, updated (only when it differs) or deleted with the executor's
 * routines for logical replication (execReplication.c), which check the
 * constraints and maintain the indexes as an INSERT, UPDATE or DELETE does.
 *
 * That is all the statements do for a job whose downstream create_job made
 * with the upstream's columns, unfiltered.  What would make them do more (a
 * row filter or computed columns; a partitioned upstream; row-level security
 * on either table; a trigger or a rule on the downstream, foreign keys and
 * deferrable constraints included; a column the job does not fill; a table
 * of the user's, whose types may differ; a key with no unique index
 * downstream) makes backfill_apply_direct_prepare() return NULL, and the
 * caller applies through SQL.  So does a job owner without the privileges
 * the statements would need, so that the SQL reports it.
 *
 * Concurrency is the statements' too: the downstream row is looked for with
 * a dirty snapshot, waiting for a transaction that is writing it, as
 * logical replication does; the writer holds the upstream row's lock, or the
 * upstream key's unique index entry, until it commits, so two writers never
 * apply the same key at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "backfill.h"
#include "capture/capture_internal.h"

/* how to find a key in one of the two tables */
typedef struct KeyIndex
{
	Oid			index;
	int			npk;
	int			key_of_column[INDEX_MAX_KEYS];	/* per index column: its key column */
	RegProcedure eq_proc[INDEX_MAX_KEYS];
	Oid			collation[INDEX_MAX_KEYS];
} KeyIndex;

struct DirectApply
{
	Oid			upstream;
	Oid			downstream;
	KeyIndex	up_key;
	KeyIndex	down_key;
	int			down_natts;
	AttrNumber *up_attnum;		/* per downstream attribute: the upstream's, 0 if dropped */
	bool		evaluates;		/* writing the downstream evaluates expressions
								 * (CHECK constraints, index expressions or
								 * predicates), which may call functions */
};

/*
 * The unique index of rel whose columns are exactly the key (key_attnums,
 * in key order), immediate, plain and whole; its primary key first.
 */
static bool
find_key_index(Relation rel, int npk, AttrNumber *key_attnums, KeyIndex *ki)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	/* the list is the caller's copy */
	if (OidIsValid(rel->rd_pkindex))
	{
		indexes = list_delete_oid(indexes, rel->rd_pkindex);
		indexes = lcons_oid(rel->rd_pkindex, indexes);
	}
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = index->rd_index;
		bool		usable = form->indisunique && form->indimmediate && form->indisvalid &&
			form->indnkeyatts == npk && index->rd_rel->relam == BTREE_AM_OID &&
			RelationGetIndexExpressions(index) == NIL &&
			RelationGetIndexPredicate(index) == NIL;

		for (int c = 0; usable && c < npk; c++)
		{
			Oid			optype = index->rd_opcintype[c];
			Oid			eq;

			ki->key_of_column[c] = -1;
			for (int k = 0; k < npk; k++)
				if (form->indkey.values[c] == key_attnums[k])
					ki->key_of_column[c] = k;
			eq = get_opfamily_member(index->rd_opfamily[c], optype, optype,
									 BTEqualStrategyNumber);
			usable = ki->key_of_column[c] >= 0 && OidIsValid(eq);
			if (usable)
			{
				ki->eq_proc[c] = get_opcode(eq);
				ki->collation[c] = index->rd_indcollation[c];
			}
		}
		index_close(index, AccessShareLock);
		if (usable)
		{
			ki->index = lfirst_oid(lc);
			ki->npk = npk;
			found = true;
			break;
		}
	}
	return found;
}

/* a table read or written as its rows are, without row-level security */
static bool
plain_table(Relation rel)
{
	return rel->rd_rel->relkind == RELKIND_RELATION && !rel->rd_rel->relispartition &&
		!rel->rd_rel->relrowsecurity;
}

/* what makes an INSERT, UPDATE or DELETE of rel do more than its rows */
static bool
plain_target(Relation rel)
{
	return plain_table(rel) && rel->trigdesc == NULL && rel->rd_rules == NULL;
}

/* whether writing rel evaluates an expression of its definition */
static bool
writes_evaluate(Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		evaluates = rel->rd_att->constr != NULL && rel->rd_att->constr->num_check > 0;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		evaluates = evaluates || RelationGetIndexExpressions(index) != NIL ||
			RelationGetIndexPredicate(index) != NIL;
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return evaluates;
}

/*
 * backfill_apply_direct_prepare
 *		What applying a finished job's keys directly needs, allocated in cxt;
 *		NULL when the job's keys must be applied through SQL (see above).
 */
DirectApply *
backfill_apply_direct_prepare(BackfillJob *job, MemoryContext cxt)
{
	Relation	up;
	Relation	down;
	TupleDesc	up_desc;
	TupleDesc	down_desc;
	AttrNumber	up_keys[INDEX_MAX_KEYS];
	AttrNumber	down_keys[INDEX_MAX_KEYS];
	DirectApply *da;
	int			ncols = 0;
	bool		ok;

	if (job->filter != NULL || job->into_existing || job->partitioned)
		return NULL;
	for (int c = 0; c < job->ncols; c++)
		if (job->col_exprs != NULL && job->col_exprs[c] != NULL)
			return NULL;

	up = table_open(job->upstream, AccessShareLock);
	down = table_open(job->downstream, AccessShareLock);
	up_desc = RelationGetDescr(up);
	down_desc = RelationGetDescr(down);
	da = MemoryContextAllocZero(cxt, sizeof(DirectApply));
	da->upstream = job->upstream;
	da->downstream = job->downstream;
	da->down_natts = down_desc->natts;
	da->up_attnum = MemoryContextAllocZero(cxt, sizeof(AttrNumber) * down_desc->natts);

	ok = plain_table(up) && plain_target(down);
	/* every column downstream is one of the job's, in order, of the same type */
	for (int i = 0; ok && i < down_desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(down_desc, i);
		AttrNumber	up_att;

		if (att->attisdropped)
			continue;
		up_att = ncols < job->ncols ? get_attnum(job->upstream, job->col_names[ncols]) : InvalidAttrNumber;
		ok = !att->attgenerated && up_att > 0 &&
			strcmp(NameStr(att->attname), job->col_names[ncols]) == 0 &&
			TupleDescAttr(up_desc, up_att - 1)->atttypid == att->atttypid &&
			TupleDescAttr(up_desc, up_att - 1)->atttypmod == att->atttypmod;
		da->up_attnum[i] = up_att;
		ncols++;
	}
	ok = ok && ncols == job->ncols;
	for (int k = 0; ok && k < job->npk; k++)
	{
		up_keys[k] = get_attnum(job->upstream, job->pk_names[k]);
		down_keys[k] = get_attnum(job->downstream, job->pk_names[k]);
		ok = up_keys[k] > 0 && down_keys[k] > 0;
	}
	ok = ok && find_key_index(up, job->npk, up_keys, &da->up_key) &&
		find_key_index(down, job->npk, down_keys, &da->down_key);
	if (ok)
		da->evaluates = writes_evaluate(down);

	table_close(down, AccessShareLock);
	table_close(up, AccessShareLock);
	if (!ok)
	{
		pfree(da->up_attnum);
		pfree(da);
		return NULL;
	}
	return da;
}

void
backfill_apply_direct_free(DirectApply *da)
{
	pfree(da->up_attnum);
	pfree(da);
}

/*
 * backfill_apply_direct_evaluates
 *		Whether applying evaluates expressions of the downstream's, which
 *		must then run under the job's search_path, as the SQL would.
 */
bool
backfill_apply_direct_evaluates(DirectApply *da)
{
	return da->evaluates;
}

/*
 * backfill_apply_direct_permitted
 *		Whether the current user may do what the statements would: read the
 *		upstream, and read, insert, update and delete the downstream.
 */
bool
backfill_apply_direct_permitted(DirectApply *da)
{
	Oid			user = GetUserId();

	return pg_class_aclcheck(da->upstream, user, ACL_SELECT) == ACLCHECK_OK &&
		pg_class_aclmask(da->downstream, user,
						 ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE, ACLMASK_ALL) ==
		(ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE);
}

/* position scan on the key (values in key order) and fetch its row */
static bool
fetch_by_key(IndexScanDesc scan, KeyIndex *ki, Datum *key, TupleTableSlot *slot)
{
	ScanKeyData skey[INDEX_MAX_KEYS];

	for (int c = 0; c < ki->npk; c++)
	{
		ScanKeyInit(&skey[c], c + 1, BTEqualStrategyNumber, ki->eq_proc[c],
					key[ki->key_of_column[c]]);
		skey[c].sk_collation = ki->collation[c];
	}
	index_rescan(scan, skey, ki->npk, NULL, 0);
	return index_getnext_slot(scan, ForwardScanDirection, slot);
}

/* whether two rows of the downstream are the same, image for image */
static bool
same_row(TupleTableSlot *a, TupleTableSlot *b)
{
	TupleDesc	desc = a->tts_tupleDescriptor;

	slot_getallattrs(a);
	slot_getallattrs(b);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (a->tts_isnull[i] != b->tts_isnull[i])
			return false;
		if (!a->tts_isnull[i] &&
			!datum_image_eq(a->tts_values[i], b->tts_values[i], att->attbyval, att->attlen))
			return false;
	}
	return true;
}

/* the downstream row of an upstream row: its columns, by attribute */
static void
project_row(DirectApply *da, TupleTableSlot *up_slot, TupleTableSlot *row)
{
	ExecClearTuple(row);
	slot_getallattrs(up_slot);
	for (int i = 0; i < da->down_natts; i++)
	{
		AttrNumber	a = da->up_attnum[i];

		row->tts_isnull[i] = a == 0 || up_slot->tts_isnull[a - 1];
		row->tts_values[i] = a == 0 ? (Datum) 0 : up_slot->tts_values[a - 1];
	}
	ExecStoreVirtualTuple(row);
}

/*
 * backfill_apply_direct
 *		Make the downstream row of each key equal to the upstream's, or gone
 *		when the upstream has none.  keys[k] holds the nkeys values of key
 *		column k; written_tids, if not NULL, where the writer's statement
 *		wrote each key's row (invalid if unknown).  As a statement run now
 *		would, it sees the writer's statement, which has just written the
 *		upstream.
 */
void
backfill_apply_direct(DirectApply *da, int nkeys, Datum **keys, ItemPointerData *written_tids)
{
	Relation	up = table_open(da->upstream, AccessShareLock);
	Relation	down = table_open(da->downstream, RowExclusiveLock);
	Relation	up_index = index_open(da->up_key.index, AccessShareLock);
	Relation	down_index = index_open(da->down_key.index, RowExclusiveLock);
	EState	   *estate;
	RangeTblEntry *rte;
	ResultRelInfo *rri;
	EPQState	epqstate;
	SnapshotData dirty;
	IndexScanDesc up_scan;
	IndexScanDesc down_scan;
	TupleTableSlot *up_slot;
	TupleTableSlot *found;
	TupleTableSlot *row;
	MemoryContext old;

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());

	estate = CreateExecutorState();
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = da->downstream;
	rte->relkind = RELKIND_RELATION;
	rte->rellockmode = RowExclusiveLock;
	ExecInitRangeTable(estate, list_make1(rte));
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, down, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	estate->es_output_cid = GetCurrentCommandId(true);
	estate->es_snapshot = GetActiveSnapshot();
	EvalPlanQualInit(&epqstate, estate, NULL, NIL, -1);

	up_slot = table_slot_create(up, &estate->es_tupleTable);
	found = table_slot_create(down, &estate->es_tupleTable);
	row = ExecInitExtraTupleSlot(estate, RelationGetDescr(down), &TTSOpsVirtual);
	up_scan = index_beginscan(up, up_index, GetActiveSnapshot(), da->up_key.npk, 0);
	InitDirtySnapshot(dirty);
	down_scan = index_beginscan(down, down_index, &dirty, da->down_key.npk, 0);

	for (int i = 0; i < nkeys; i++)
	{
		Datum		key[INDEX_MAX_KEYS];
		bool		in_up;
		bool		in_down;

		CHECK_FOR_INTERRUPTS();
		for (int k = 0; k < da->up_key.npk; k++)
			key[k] = keys[k][i];
		/*
		 * the row the statement wrote, unless something wrote it again
		 * since (a trigger's statement, say): then that version is no
		 * longer visible, and the key's row is looked for by the key
		 */
		in_up = written_tids != NULL && ItemPointerIsValid(&written_tids[i]) &&
			table_tuple_fetch_row_version(up, &written_tids[i], GetActiveSnapshot(), up_slot);
		if (!in_up)
			in_up = fetch_by_key(up_scan, &da->up_key, key, up_slot);
		for (;;)
		{
			TransactionId xwait;

			in_down = fetch_by_key(down_scan, &da->down_key, key, found);
			xwait = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
			if (!in_down || !TransactionIdIsValid(xwait))
				break;
			/* another transaction is writing the row: wait for it, look again */
			XactLockTableWait(xwait, down, &found->tts_tid, XLTW_None);
		}
		/*
		 * what the writes allocate goes with the key; not the scans' state,
		 * which they allocate as they go and keep to their end
		 */
		old = MemoryContextSwitchTo(GetPerTupleMemoryContext(estate));
		if (in_up)
		{
			project_row(da, up_slot, row);
			if (!in_down)
				ExecSimpleRelationInsert(rri, estate, row);
			else if (!same_row(found, row))
				ExecSimpleRelationUpdate(rri, estate, &epqstate, found, row);
		}
		else if (in_down)
			ExecSimpleRelationDelete(rri, estate, &epqstate, found);
		MemoryContextSwitchTo(old);
		ResetPerTupleExprContext(estate);
	}

	index_endscan(down_scan);
	index_endscan(up_scan);
	EvalPlanQualEnd(&epqstate);
	ExecCloseIndices(rri);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
	PopActiveSnapshot();
	index_close(down_index, NoLock);
	index_close(up_index, NoLock);
	table_close(down, NoLock);
	table_close(up, NoLock);
}
