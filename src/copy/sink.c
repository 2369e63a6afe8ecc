/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  Where a snapshot chunk's rows go: into the downstream in batches, the
 *	  way COPY FROM inserts them.
 *
 * A chunk read as one INSERT ... SELECT ... RETURNING inserts every row on
 * its own (a buffer lock and a WAL record per row), then keeps the returned
 * keys in a tuplestore to count them per vnode and sort out the last one.
 * Instead, the chunk's SELECT sends its rows to the DestReceiver made here,
 * which
 *   - inserts them with table_multi_insert, up to 1000 rows or 64 kB at a
 *	   time (one buffer lock and one WAL record per page), then adds their
 *	   index entries, checking unique and exclusion constraints as INSERT
 *	   does; CHECK and NOT NULL constraints are checked row by row first;
 *   - counts them per vnode and keeps the key of the last row inserted;
 *   - past an insert limit, keeps the key of the next row without inserting
 *	   it (a snapshot job's position is the next row to read).
 *
 * That is all an INSERT does for the downstream create_job makes, with any
 * indexes and constraints added to it later.  What makes an INSERT do more
 * (a trigger on INSERT, foreign keys and deferrable constraints included; a
 * rule; row-level security; a column the job does not fill, whose default
 * would be needed; being a partition or partitioned; being a table the
 * user made, whose columns may be of other types than the values, which
 * INSERT assigns) makes backfill_sink_begin() return NULL, and the caller
 * inserts through SQL instead.  The permissions are
 * checked as for an INSERT by the current user, the job's owner.
 *
 * The rows go through a ring of buffers, the strategy of COPY FROM's bulk
 * writes, that the executor keeps for all the chunks of its run
 * (bulk_ring): a job's copy then writes the downstream's new pages through
 * the same 2048 buffers, as one COPY FROM does, instead of taking every
 * page it adds from the buffers never used yet, while there are some; the
 * first touch of a page of shared memory costs each process a page fault.
 * A ring of the chunk's own would be made of those unused buffers too.
 * Only the ring is kept: the page a sink inserted into last is let go at
 * its end, before the transaction's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/hio.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/params.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "copy/barrier_io.h"
#include "lib/lib.h"

/* as COPY FROM's buffer */
#define SINK_MAX_BUFFERED_ROWS	1000
#define SINK_MAX_BUFFERED_BYTES	65535

struct ChunkSink
{
	DestReceiver pub;			/* first: a ChunkSink is a DestReceiver */

	BarrierExecutor *exec;
	int64		insert_limit;	/* rows to insert; -1 for all */
	bool		count_vnodes;	/* count rows per vnode */

	/* the downstream */
	Relation	rel;
	BulkInsertState bistate;	/* over the executor's bulk_ring */
	EState	   *estate;
	ResultRelInfo *rri;
	CommandId	cid;
	int		   *attmap;			/* per attribute: its column of the chunk, or -1 */
	int			key_columns[INDEX_MAX_KEYS];	/* the key's columns of the chunk */
	AttrNumber	key_attnos[INDEX_MAX_KEYS]; /* the key's attributes downstream */

	/* rows read, not inserted yet */
	TupleTableSlot *slots[SINK_MAX_BUFFERED_ROWS];
	int			nbuffered;
	Size		buffered_bytes;

	/* what the chunk did */
	MemoryContext key_cxt;		/* holds last_key */
	int64		rows;
	int64		vnode_rows[BACKFILL_VNODE_COUNT];
	bool		has_last;
	Datum		last_key[INDEX_MAX_KEYS];
	bool		has_next;
	Datum		next_key[INDEX_MAX_KEYS];
};

/*
 * Whether inserting a row into rel takes nothing but the row and its index
 * entries, and the columns rel has are exactly the job's, as create_job made
 * them (a column added and dropped again leaves a hole, which is fine).
 */
static bool
direct_insert_allowed(BackfillJob *job, Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TriggerDesc *trig = rel->trigdesc;
	int			ncols = 0;

	/* a table of the user's: its types may differ from the values' */
	if (job->into_existing)
		return false;
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition)
		return false;
	if (trig && (trig->trig_insert_before_row || trig->trig_insert_after_row ||
				 trig->trig_insert_instead_row || trig->trig_insert_before_statement ||
				 trig->trig_insert_after_statement || trig->trig_insert_new_table))
		return false;
	if (rel->rd_rules != NULL)
		return false;
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, true) == RLS_ENABLED)
		return false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (att->attgenerated || ncols >= job->ncols ||
			strcmp(NameStr(att->attname), job->col_names[ncols]) != 0)
			return false;
		ncols++;
	}
	return ncols == job->ncols;
}

/* Insert the buffered rows and their index entries. */
static void
sink_flush(ChunkSink *sink)
{
	ResultRelInfo *rri = sink->rri;
	TupleTableSlot *last;
	MemoryContext old;

	if (sink->nbuffered == 0)
		return;
	/* what the insert allocates is gone after the first row's index entries */
	old = MemoryContextSwitchTo(GetPerTupleMemoryContext(sink->estate));
	table_multi_insert(sink->rel, sink->slots, sink->nbuffered, sink->cid, 0, sink->bistate);
	MemoryContextSwitchTo(old);
	for (int i = 0; i < sink->nbuffered; i++)
	{
		if (rri->ri_NumIndices > 0)
			list_free(ExecInsertIndexTuples(rri, sink->slots[i], sink->estate,
											false, false, NULL, NIL));
		ResetPerTupleExprContext(sink->estate);
	}

	/* rows arrive in key order: the batch's last row has the largest key */
	last = sink->slots[sink->nbuffered - 1];
	MemoryContextReset(sink->key_cxt);
	old = MemoryContextSwitchTo(sink->key_cxt);
	for (int k = 0; k < sink->exec->job->npk; k++)
	{
		bool		isnull;
		Datum		d = slot_getattr(last, sink->key_attnos[k], &isnull);

		sink->last_key[k] = datumCopy(d, sink->exec->typbyvals[k], sink->exec->typlens[k]);
	}
	MemoryContextSwitchTo(old);
	sink->has_last = true;

	for (int i = 0; i < sink->nbuffered; i++)
		ExecClearTuple(sink->slots[i]);
	sink->rows += sink->nbuffered;
	sink->nbuffered = 0;
	sink->buffered_bytes = 0;
}

static void
sink_startup(DestReceiver *self, int operation pg_attribute_unused(), TupleDesc typeinfo)
{
	ChunkSink  *sink = (ChunkSink *) self;
	TupleDesc	desc = RelationGetDescr(sink->rel);

	/* the chunk's columns are the job's, in order, typed as downstream */
	if (typeinfo->natts != sink->exec->job->ncols)
		elog(ERROR, "a chunk of %s has %d columns, expected %d",
			 sink->exec->job->upstream_sql, typeinfo->natts, sink->exec->job->ncols);
	for (int i = 0; i < desc->natts; i++)
	{
		int			c = sink->attmap[i];

		if (c >= 0 && TupleDescAttr(typeinfo, c)->atttypid != TupleDescAttr(desc, i)->atttypid)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of %s is of type %s, but the upstream's is of type %s",
							NameStr(TupleDescAttr(desc, i)->attname),
							sink->exec->job->downstream_sql,
							format_type_be(TupleDescAttr(desc, i)->atttypid),
							format_type_be(TupleDescAttr(typeinfo, c)->atttypid))));
	}
}

static bool
sink_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ChunkSink  *sink = (ChunkSink *) self;
	BackfillJob *job = sink->exec->job;
	TupleDesc	desc = RelationGetDescr(sink->rel);
	TupleTableSlot *row;

	slot_getallattrs(slot);

	if (sink->insert_limit >= 0 && sink->rows + sink->nbuffered >= sink->insert_limit)
	{
		/* the row after the chunk: its key only */
		if (!sink->has_next)
		{
			MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(sink));

			for (int k = 0; k < job->npk; k++)
				sink->next_key[k] = datumCopy(slot->tts_values[sink->key_columns[k]],
											  sink->exec->typbyvals[k],
											  sink->exec->typlens[k]);
			MemoryContextSwitchTo(old);
			sink->has_next = true;
		}
		return true;
	}

	if (sink->count_vnodes)
	{
		Datum		key[INDEX_MAX_KEYS];
		bool		key_null[INDEX_MAX_KEYS];

		for (int k = 0; k < job->npk; k++)
		{
			key[k] = slot->tts_values[sink->key_columns[k]];
			key_null[k] = slot->tts_isnull[sink->key_columns[k]];
		}
		sink->vnode_rows[backfill_vnode_of(sink->exec->vnode_hasher, key, key_null)]++;
	}

	row = sink->slots[sink->nbuffered];
	if (row == NULL)
	{
		/* the chunk's executor calls us in its own memory, gone before us */
		MemoryContext old = MemoryContextSwitchTo(sink->estate->es_query_cxt);

		row = sink->slots[sink->nbuffered] =
			table_slot_create(sink->rel, &sink->estate->es_tupleTable);
		MemoryContextSwitchTo(old);
	}
	ExecClearTuple(row);
	for (int i = 0; i < desc->natts; i++)
	{
		int			c = sink->attmap[i];

		row->tts_values[i] = c >= 0 ? slot->tts_values[c] : (Datum) 0;
		row->tts_isnull[i] = c >= 0 ? slot->tts_isnull[c] : true;
	}
	ExecStoreVirtualTuple(row);
	/* the chunk's slot is reused for the next row: copy this one */
	ExecMaterializeSlot(row);
	if (desc->constr)
		ExecConstraints(sink->rri, row, sink->estate);
	sink->buffered_bytes += ExecFetchSlotHeapTuple(row, false, NULL)->t_len;
	sink->nbuffered++;

	if (sink->nbuffered == SINK_MAX_BUFFERED_ROWS ||
		sink->buffered_bytes >= SINK_MAX_BUFFERED_BYTES)
		sink_flush(sink);
	return true;
}

static void
sink_shutdown(DestReceiver *self)
{
	sink_flush((ChunkSink *) self);
}

static void
sink_destroy(DestReceiver *self pg_attribute_unused())
{
}

/*
 * backfill_sink_begin
 *		A DestReceiver that inserts the rows of a chunk of the job's columns
 *		into its downstream, or NULL when the downstream needs an INSERT
 *		statement.  insert_limit is the number of rows to insert, -1 for all;
 *		count_vnodes asks for the rows per vnode.  backfill_sink_end() frees
 *		it.
 */
ChunkSink *
backfill_sink_begin(BarrierExecutor *exec, int64 insert_limit, bool count_vnodes)
{
	BackfillJob *job = exec->job;
	ChunkSink  *sink;
	Relation	rel;
	TupleDesc	desc;
	RangeTblEntry *rte;
	List	   *range_table;

	/* the lock an INSERT takes, before we look at what the table is like */
	LockRelationOid(job->downstream, RowExclusiveLock);
	rel = table_open(job->downstream, NoLock);
	if (!direct_insert_allowed(job, rel))
	{
		table_close(rel, NoLock);
		return NULL;
	}
	desc = RelationGetDescr(rel);

	sink = palloc0(sizeof(ChunkSink));
	sink->pub.receiveSlot = sink_receive;
	sink->pub.rStartup = sink_startup;
	sink->pub.rShutdown = sink_shutdown;
	sink->pub.rDestroy = sink_destroy;
	sink->pub.mydest = DestNone;
	sink->exec = exec;
	sink->insert_limit = insert_limit;
	sink->count_vnodes = count_vnodes;
	sink->rel = rel;

	sink->attmap = palloc(sizeof(int) * desc->natts);
	for (int i = 0, c = 0; i < desc->natts; i++)
		sink->attmap[i] = TupleDescAttr(desc, i)->attisdropped ? -1 : c++;
	for (int k = 0; k < job->npk; k++)
	{
		sink->key_columns[k] = -1;
		for (int c = 0; c < job->ncols; c++)
			if (strcmp(job->col_names[c], job->pk_names[k]) == 0)
				sink->key_columns[k] = c;
		for (int i = 0; i < desc->natts; i++)
			if (sink->attmap[i] == sink->key_columns[k])
				sink->key_attnos[k] = i + 1;
		if (sink->key_columns[k] < 0)
			elog(ERROR, "key column \"%s\" is not a column of %s",
				 job->pk_names[k], job->downstream_sql);
	}

	/* an INSERT of every column by the current user, as the planner sets up */
	rte = makeNode(RangeTblEntry);
	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(rel);
	rte->relkind = rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	rte->requiredPerms = ACL_INSERT;
	for (int i = 0; i < desc->natts; i++)
		if (sink->attmap[i] >= 0)
			rte->insertedCols = bms_add_member(rte->insertedCols,
											   i + 1 - FirstLowInvalidHeapAttributeNumber);
	range_table = list_make1(rte);
	ExecCheckRTPerms(range_table, true);

	sink->estate = CreateExecutorState();
	ExecInitRangeTable(sink->estate, range_table);
	sink->rri = makeNode(ResultRelInfo);
	ExecInitResultRelation(sink->estate, sink->rri, 1);
	CheckValidResultRel(sink->rri, CMD_INSERT);
	ExecOpenIndices(sink->rri, false);
	sink->cid = GetCurrentCommandId(true);
	sink->key_cxt = AllocSetContextCreate(CurrentMemoryContext, "backfill chunk key",
										  ALLOCSET_SMALL_SIZES);

	/* the executor's ring of buffers, made by its first sink */
	if (exec->bulk_ring == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(exec->cxt);

		exec->bulk_ring = GetAccessStrategy(BAS_BULKWRITE);
		MemoryContextSwitchTo(old);
	}
	sink->bistate = GetBulkInsertState();
	FreeAccessStrategy(sink->bistate->strategy);
	sink->bistate->strategy = exec->bulk_ring;
	return sink;
}

/*
 * backfill_sink_run
 *		Run a chunk's SELECT, prepared with the executor's, into the sink.
 */
void
backfill_sink_run(ChunkSink *sink, SPIPlanPtr plan, Datum *values)
{
	int			nargs = SPI_getargcount(plan);
	ParamListInfo params = makeParamList(nargs);
	SPIExecuteOptions options = {0};
	int			rc;

	for (int i = 0; i < nargs; i++)
	{
		params->params[i].value = values[i];
		params->params[i].isnull = false;
		params->params[i].pflags = PARAM_FLAG_CONST;
		params->params[i].ptype = SPI_getargtypeid(plan, i);
	}
	options.params = params;
	options.read_only = false;
	options.dest = (DestReceiver *) sink;
	rc = SPI_execute_plan_extended(plan, &options);
	pfree(params);
	if (rc < 0)
		elog(ERROR, "could not read a snapshot chunk of %s: %s",
			 sink->exec->job->upstream_sql, SPI_result_code_string(rc));
}

/* a copy of a key in the current memory context */
static void
copy_key(ChunkSink *sink, const Datum *key, Datum *copy)
{
	for (int k = 0; k < sink->exec->job->npk; k++)
		copy[k] = datumCopy(key[k], sink->exec->typbyvals[k], sink->exec->typlens[k]);
}

/*
 * backfill_sink_end
 *		Close the downstream and free the sink.  Returns the rows it
 *		inserted; adds them per vnode to vnode_rows if counted; copies into
 *		the current memory context the key of the last row inserted and the
 *		key of the next row, and says whether there were such rows, each
 *		only for a caller that asks (has_last, has_next not NULL).
 */
int64
backfill_sink_end(ChunkSink *sink, int64 *vnode_rows, Datum *last_key, bool *has_last,
				  Datum *next_key, bool *has_next)
{
	int64		rows = sink->rows;

	if (vnode_rows && sink->count_vnodes)
		for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
			vnode_rows[v] += sink->vnode_rows[v];
	if (has_last)
	{
		*has_last = sink->has_last;
		if (sink->has_last)
			copy_key(sink, sink->last_key, last_key);
	}
	if (has_next)
	{
		*has_next = sink->has_next;
		if (sink->has_next)
			copy_key(sink, sink->next_key, next_key);
	}
	if (sink->has_next)
		for (int k = 0; k < sink->exec->job->npk; k++)
			if (!sink->exec->typbyvals[k])
				pfree(DatumGetPointer(sink->next_key[k]));

	/* the ring stays the executor's; the last page's pin goes */
	ReleaseBulkInsertStatePin(sink->bistate);
	pfree(sink->bistate);
	ExecResetTupleTable(sink->estate->es_tupleTable, false);
	ExecCloseResultRelations(sink->estate);
	ExecCloseRangeTableRelations(sink->estate);
	FreeExecutorState(sink->estate);
	table_close(sink->rel, NoLock);
	MemoryContextDelete(sink->key_cxt);
	pfree(sink->attmap);
	pfree(sink);
	return rows;
}
