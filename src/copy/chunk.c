/*-------------------------------------------------------------------------
 *
 * chunk.c
 *	  Reading the live upstream in key order, chunk by chunk, per set of
 *	  vnodes that share a position; forwarding captured keys.
 *
 * An actor's unfinished vnodes are grouped by position; a chunk of a group
 * reads the next rows after that position in key order, restricted to the
 * group's vnodes (for range vnodes, to the group's range of keys, so that it
 * reads no other row), and inserts them downstream (sink.c, or one INSERT ...
 * SELECT when the downstream needs what only INSERT does).  The vnodes'
 * position becomes the chunk's last key; a chunk shorter than asked means
 * they are finished.  Counts go to each vnode (arrangement), or to the
 * actor as a whole, stored on each of its vnodes (no_shuffle, cdc).
 *
 * Forwarding makes the downstream rows of the captured keys that "matching"
 * (a kind's query) selects equal to the upstream's, then consumes every
 * captured key of the vnodes, all as of the barrier's snapshot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "copy/barrier_io.h"
#include "lib/lib.h"

/* whether two vnodes have the same position */
bool
backfill_same_position(BarrierExecutor *exec, VnodeState *a, VnodeState *b)
{
	if (a->has_pos != b->has_pos)
		return false;
	if (!a->has_pos)
		return true;
	for (int k = 0; k < exec->job->npk; k++)
		if (!datumIsEqual(a->pos[k], b->pos[k], exec->typbyvals[k], exec->typlens[k]))
			return false;
	return true;
}

/*
 * the unfinished vnodes of an actor, grouped by position; with range vnodes,
 * a group is consecutive vnodes, so that it is one range of keys
 */
int
backfill_actor_groups(BarrierExecutor *exec, int actor, VnodeGroup *groups)
{
	BackfillJob *job = exec->job;
	BackfillActor *a = &job->actors[actor];
	int			ngroups = 0;

	for (int v = a->vnode_start; v <= a->vnode_end; v++)
	{
		VnodeState *vs = &job->vnodes[v];
		int			g;

		if (vs->finished)
			continue;
		for (g = 0; g < ngroups; g++)
			if (backfill_same_position(exec, &job->vnodes[groups[g].vnodes[0]], vs) &&
				(!job->vnode_bounds || groups[g].vnodes[groups[g].nvnodes - 1] == v - 1))
				break;
		if (g == ngroups)
		{
			groups[g].nvnodes = 0;
			groups[g].actor = actor;
			ngroups++;
		}
		groups[g].vnodes[groups[g].nvnodes++] = (int16) v;
	}
	return ngroups;
}

void
backfill_set_position(BarrierExecutor *exec, VnodeState *vs, Datum *pos)
{
	BackfillJob *job = exec->job;
	MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(job));

	for (int k = 0; k < job->npk; k++)
	{
		if (vs->has_pos && !vs->pos_null[k] && !exec->typbyvals[k])
			pfree(DatumGetPointer(vs->pos[k]));
		vs->pos[k] = datumCopy(pos[k], exec->typbyvals[k], exec->typlens[k]);
		vs->pos_null[k] = false;
	}
	vs->has_pos = true;
	MemoryContextSwitchTo(old);
}

/*
 * How a chunk query of a group of range vnodes restricts keys: from the
 * group's lowest key (unless it is vnode 0's, or the position is at or above
 * it) up to the next group's (unless the group ends with vnode 255).
 */
static VnodeFilter
key_range_filter(BarrierExecutor *exec, VnodeGroup *group)
{
	int			first = group->vnodes[0];
	VnodeState *vs = &exec->job->vnodes[first];
	bool		from = first > 0;
	bool		below = group->vnodes[group->nvnodes - 1] < BACKFILL_VNODE_COUNT - 1;

	if (from && vs->has_pos &&
		backfill_vnode_compare(exec->vnode_hasher, vs->pos,
							   backfill_vnode_lower_bound(exec->vnode_hasher, first)) >= 0)
		from = false;
	if (from)
		return below ? VNODE_FILTER_KEYS_BETWEEN : VNODE_FILTER_KEYS_FROM;
	return below ? VNODE_FILTER_KEYS_BELOW : VNODE_FILTER_NONE;
}

/* how a chunk query of a group restricts its vnodes */
VnodeFilter
backfill_group_filter(BarrierExecutor *exec, VnodeGroup *group)
{
	bool		contiguous = true;

	if (exec->vnode_hasher->bounds)
		return key_range_filter(exec, group);

	for (int i = 1; i < group->nvnodes; i++)
		contiguous &= (group->vnodes[i] == group->vnodes[i - 1] + 1);
	if (group->nvnodes == BACKFILL_VNODE_COUNT)
		return VNODE_FILTER_NONE;
	return contiguous ? VNODE_FILTER_RANGE : VNODE_FILTER_LIST;
}

/*
 * backfill_chunk_conditions
 *		The conditions of a chunk query on the rows of alias: after the
 *		position if any (cmp is ">" or ">="; parameters $1..$npk), then in
 *		the vnodes of the filter (the next parameters).  Sets the types of
 *		those parameters and their number; the same for every alias.
 */
char *
backfill_chunk_conditions(BackfillJob *job, const char *alias, int cmp,
						  bool has_pos, VnodeFilter filter, Oid *argtypes, int *nargs)
{
	StringInfoData cond;
	char	   *key = backfill_pk_list(job, alias);

	initStringInfo(&cond);
	*nargs = 0;
	if (has_pos && filter != VNODE_FILTER_KEYS_FROM && filter != VNODE_FILTER_KEYS_BETWEEN)
	{
		appendStringInfo(&cond, " AND %s", backfill_key_compare_params(job, alias, cmp, 1));
		memcpy(argtypes, job->pk_types, sizeof(Oid) * job->npk);
		*nargs = job->npk;
	}
	if (filter == VNODE_FILTER_RANGE)
	{
		appendStringInfo(&cond, " AND %s BETWEEN $%d AND $%d",
						 backfill_vnode_sql(job, key), *nargs + 1, *nargs + 2);
		argtypes[(*nargs)++] = INT2OID;
		argtypes[(*nargs)++] = INT2OID;
	}
	else if (filter == VNODE_FILTER_LIST)
	{
		appendStringInfo(&cond, " AND %s = ANY ($%d)", backfill_vnode_sql(job, key), *nargs + 1);
		argtypes[(*nargs)++] = INT2ARRAYOID;
	}
	if (filter == VNODE_FILTER_KEYS_FROM || filter == VNODE_FILTER_KEYS_BETWEEN)
	{
		appendStringInfo(&cond, " AND %s",
						 backfill_key_compare_params(job, alias, BTGreaterEqualStrategyNumber, *nargs + 1));
		memcpy(&argtypes[*nargs], job->pk_types, sizeof(Oid) * job->npk);
		*nargs += job->npk;
	}
	if (filter == VNODE_FILTER_KEYS_BELOW || filter == VNODE_FILTER_KEYS_BETWEEN)
	{
		appendStringInfo(&cond, " AND %s",
						 backfill_key_compare_params(job, alias, BTLessStrategyNumber, *nargs + 1));
		memcpy(&argtypes[*nargs], job->pk_types, sizeof(Oid) * job->npk);
		*nargs += job->npk;
	}
	return cond.data;
}

/*
 * The parameters of a chunk query of a group, but the limit: the position if
 * any, then the vnode filter.  Returns how many were set.
 */
int
backfill_group_params(BarrierExecutor *exec, VnodeGroup *group, VnodeFilter filter,
					  Datum *values)
{
	BackfillJob *job = exec->job;
	VnodeState *first = &job->vnodes[group->vnodes[0]];
	int			nvalues = 0;

	if (first->has_pos && filter != VNODE_FILTER_KEYS_FROM && filter != VNODE_FILTER_KEYS_BETWEEN)
		for (int k = 0; k < job->npk; k++)
			values[nvalues++] = first->pos[k];
	if (filter == VNODE_FILTER_RANGE)
	{
		values[nvalues++] = Int16GetDatum(group->vnodes[0]);
		values[nvalues++] = Int16GetDatum(group->vnodes[group->nvnodes - 1]);
	}
	else if (filter == VNODE_FILTER_LIST)
	{
		Datum	   *elems = palloc(sizeof(Datum) * group->nvnodes);

		for (int i = 0; i < group->nvnodes; i++)
			elems[i] = Int16GetDatum(group->vnodes[i]);
		values[nvalues++] = PointerGetDatum(construct_array(elems, group->nvnodes,
															INT2OID, 2, true,
															TYPALIGN_SHORT));
	}
	if (filter == VNODE_FILTER_KEYS_FROM || filter == VNODE_FILTER_KEYS_BETWEEN)
	{
		const Datum *lo = backfill_vnode_lower_bound(exec->vnode_hasher, group->vnodes[0]);

		for (int k = 0; k < job->npk; k++)
			values[nvalues++] = lo[k];
	}
	if (filter == VNODE_FILTER_KEYS_BELOW || filter == VNODE_FILTER_KEYS_BETWEEN)
	{
		const Datum *hi = backfill_vnode_lower_bound(exec->vnode_hasher,
													 group->vnodes[group->nvnodes - 1] + 1);

		for (int k = 0; k < job->npk; k++)
			values[nvalues++] = hi[k];
	}
	return nvalues;
}

/* whether the snapshot side of an actor is done: all its vnodes finished */
bool
backfill_vnodes_finished(BackfillJob *job, int actor)
{
	BackfillActor *a = &job->actors[actor];

	for (int v = a->vnode_start; v <= a->vnode_end; v++)
		if (!job->vnodes[v].finished)
			return false;
	return true;
}

/*
 * The chunk query: read the next rows that pass the filter after a position
 * (if any) of a set of vnodes, in key order.  Parameters: the position
 * ($1..$npk), the vnode filter, then the limit.  With insert, it inserts
 * them downstream itself and returns per vnode the number of rows read, with
 * the chunk's last key on every row; without, it returns the rows, for a
 * sink (sink.c).
 */
static SPIPlanPtr
chunk_plan(BarrierExecutor *exec, bool has_pos, VnodeFilter filter, bool insert,
		   bool per_vnode_counts)
{
	BackfillJob *job = exec->job;
	SPIPlanPtr *cached = insert ? &exec->chunk_plans[has_pos][filter] :
		&exec->select_plans[has_pos][filter];
	StringInfoData select;
	StringInfoData sql;
	Oid			argtypes[3 * INDEX_MAX_KEYS + 3];
	int			nargs = 0;
	char	   *upk = backfill_pk_list(job, "u");
	char	   *pk = backfill_pk_list(job, NULL);

	if (*cached)
		return *cached;

	initStringInfo(&select);
	appendStringInfo(&select, "SELECT %s FROM %s WHERE true%s",
					 job->select_sql, backfill_job_scan(job), backfill_filter_and(job));
	appendStringInfoString(&select,
						   backfill_chunk_conditions(job, "u", BTGreaterStrategyNumber, has_pos, filter,
													 argtypes, &nargs));
	appendStringInfo(&select, " ORDER BY %s LIMIT $%d", upk, nargs + 1);
	argtypes[nargs++] = INT8OID;
	if (!insert)
	{
		*cached = backfill_keep_plan(exec->plans, select.data, nargs, argtypes);
		return *cached;
	}

	/*
	 * The rows go straight from the upstream's index scan into the
	 * downstream; only their keys come back, to count them per vnode and to
	 * find the last one.
	 */
	initStringInfo(&sql);
	appendStringInfo(&sql, "WITH ins AS (INSERT INTO %s (%s) %s RETURNING %s) ",
					 job->downstream_sql, job->columns_sql, select.data, pk);
	if (!per_vnode_counts)
		/* an actor that counts its rows as a whole */
		appendStringInfo(&sql,
						 "SELECT NULL::pg_catalog.int2, c.rows, l.* FROM "
						 "(SELECT pg_catalog.count(*) AS rows FROM ins) c, "
						 "(SELECT %s FROM ins ORDER BY %s LIMIT 1) l",
						 pk, backfill_pk_list_desc(job));
	else
		appendStringInfo(&sql,
						 "SELECT c.vnode, c.rows, l.* FROM "
						 "(SELECT %s AS vnode, pg_catalog.count(*) AS rows "
						 "FROM ins GROUP BY 1) c, "
						 "(SELECT %s FROM ins ORDER BY %s LIMIT 1) l",
						 backfill_vnode_sql(job, pk), pk, backfill_pk_list_desc(job));

	*cached = backfill_keep_plan(exec->plans, sql.data, nargs, argtypes);
	return *cached;
}

/*
 * Read one chunk of a group of vnodes through an INSERT ... SELECT, into
 * total, the vnodes' row counts and lastkey.
 */
static void
insert_chunk(BarrierExecutor *exec, SPIPlanPtr plan, Datum *values, int64 *total,
			 Datum *lastkey, bool per_vnode_counts)
{
	BackfillJob *job = exec->job;

	if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read a snapshot chunk of %s", job->upstream_sql);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		vnode = SPI_getbinval(tup, desc, 1, &isnull);
		int64		rows = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));

		*total += rows;
		if (per_vnode_counts)
			job->vnodes[DatumGetInt16(vnode)].row_count += rows;
		if (i == 0)
			for (int k = 0; k < job->npk; k++)
				lastkey[k] = SPI_getbinval(tup, desc, 3 + k, &isnull);
	}
}

/*
 * backfill_plan_by_index_begin / backfill_plan_by_index_end
 *		Plan and run a chunk without sorts, bitmap scans or hash joins where
 *		it can do without them: a chunk reads in key order through indexes,
 *		so that it costs what it reads.  Its plan is made with estimates that
 *		mislead: the vnode filter of an actor looks selective, so the planner
 *		would rather sort the few rows it expects than walk the key's index
 *		(each partition's, merged, for a partitioned upstream), and a
 *		snapshot job's log grows after the plan was made on it empty.
 *		Returns the level for backfill_plan_by_index_end().
 */
int
backfill_plan_by_index_begin(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("enable_hashjoin", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
backfill_plan_by_index_end(int level)
{
	AtEOXact_GUC(true, level);
}

/*
 * backfill_read_live_chunk
 *		Read one chunk of a group of vnodes from the upstream as it is now,
 *		counting rows per vnode or per actor.  Returns the number of rows
 *		read.
 */
int64
backfill_read_live_chunk(BarrierExecutor *exec, VnodeGroup *group, int64 limit,
						 bool per_vnode_counts)
{
	BackfillJob *job = exec->job;
	BackfillActor *actor = &job->actors[group->actor];
	VnodeState *first = &job->vnodes[group->vnodes[0]];
	VnodeFilter filter;
	Datum		values[3 * INDEX_MAX_KEYS + 3];
	int			nvalues;
	ChunkSink  *sink;
	int64		total = 0;
	Datum		lastkey[INDEX_MAX_KEYS];
	int			guc_level;

	filter = backfill_group_filter(exec, group);
	nvalues = backfill_group_params(exec, group, filter, values);
	values[nvalues++] = Int64GetDatum(limit);

	guc_level = backfill_plan_by_index_begin();
	sink = backfill_sink_begin(exec, -1, per_vnode_counts);
	if (sink != NULL)
	{
		int64		vnode_rows[BACKFILL_VNODE_COUNT] = {0};
		bool		has_last;

		backfill_sink_run(sink, chunk_plan(exec, first->has_pos, filter, false, per_vnode_counts), values);
		total = backfill_sink_end(sink, vnode_rows, lastkey, &has_last, NULL, NULL);
		if (per_vnode_counts)
			for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
				job->vnodes[v].row_count += vnode_rows[v];
	}
	else
		insert_chunk(exec, chunk_plan(exec, first->has_pos, filter, true, per_vnode_counts),
					 values, &total, lastkey, per_vnode_counts);
	backfill_plan_by_index_end(guc_level);

	/* rows of an actor counted as a whole carry its total, which only grows here */
	if (!per_vnode_counts)
	{
		int64		actor_total = job->vnodes[actor->vnode_start].row_count + total;

		for (int v = actor->vnode_start; v <= actor->vnode_end; v++)
		{
			job->vnodes[v].row_count = actor_total;
			job->vnodes[v].dirty = true;
		}
	}

	for (int i = 0; i < group->nvnodes; i++)
	{
		VnodeState *vs = &job->vnodes[group->vnodes[i]];

		if (total > 0)
			backfill_set_position(exec, vs, lastkey);
		if (total < limit)
			vs->finished = true;
		vs->dirty = true;
	}
	if (sink == NULL)
		SPI_freetuptable(SPI_tuptable);
	return total;
}

/*
 * backfill_prepare_forward
 *		Prepare the forwarding of the captured keys that matching selects
 *		among those of the vnodes $1..$2, and their consumption.
 */
void
backfill_prepare_forward(BarrierExecutor *exec, const char *matching)
{
	BackfillJob *job = exec->job;
	Oid			argtypes[2] = {INT2OID, INT2OID};

	/* in place when a foreign key references the downstream (sql.c) */
	exec->forward_in_place = backfill_sync_in_place(job);
	exec->forward_delete_plan =
		backfill_keep_plan(exec->plans,
						   exec->forward_in_place ?
						   backfill_sync_delete_gone_matching_sql(job, matching, false) :
						   backfill_sync_delete_sql(job, matching, false), 2, argtypes);
	exec->forward_insert_plan =
		backfill_keep_plan(exec->plans,
						   exec->forward_in_place ?
						   backfill_sync_upsert_matching_sql(job, matching, false) :
						   backfill_sync_insert_sql(job, matching, false), 2, argtypes);

	/* consumed: exactly the keys of those vnodes that the snapshot sees */
	exec->consume_plan =
		backfill_keep_plan(exec->plans,
						   psprintf("DELETE FROM %s c WHERE %s BETWEEN $1 AND $2",
									job->changes_sql,
									backfill_vnode_sql(job, backfill_pk_list(job, "c"))),
						   2, argtypes);
}

/*
 * backfill_forward_actors_changes
 *		A kind's barrier_changes (kind.h) for the kinds that forward at every
 *		barrier: the captured changes of the vnodes of actors first..last.
 */
void
backfill_forward_actors_changes(BarrierExecutor *exec, int first, int last,
								TimestampTz deadline pg_attribute_unused())
{
	BackfillJob *job = exec->job;

	backfill_forward_changes(exec, job->actors[first].vnode_start, job->actors[last].vnode_end);
}

/*
 * backfill_read_chunk_per_vnode / backfill_read_chunk_per_actor
 *		A kind's read_chunk (kind.h) from the live upstream, its rows counted
 *		per vnode, or per actor as a whole.
 */
int64
backfill_read_chunk_per_vnode(BarrierExecutor *exec, VnodeGroup *group, int64 limit)
{
	return backfill_read_live_chunk(exec, group, limit, true);
}

int64
backfill_read_chunk_per_actor(BarrierExecutor *exec, VnodeGroup *group, int64 limit)
{
	return backfill_read_live_chunk(exec, group, limit, false);
}

/* forward the captured changes of vnodes lo..hi, consume them all */
void
backfill_forward_changes(BarrierExecutor *exec, int lo, int hi)
{
	Datum		values[2] = {Int16GetDatum(lo), Int16GetDatum(hi)};

	/* a kind that applies its changes itself forwards nothing */
	if (exec->forward_delete_plan == NULL)
		return;
	if (exec->forward_in_place ?
		(SPI_execute_plan(exec->forward_insert_plan, values, NULL, false, 0) != SPI_OK_INSERT ||
		 SPI_execute_plan(exec->forward_delete_plan, values, NULL, false, 0) != SPI_OK_DELETE) :
		(SPI_execute_plan(exec->forward_delete_plan, values, NULL, false, 0) != SPI_OK_DELETE ||
		 SPI_execute_plan(exec->forward_insert_plan, values, NULL, false, 0) != SPI_OK_INSERT) ||
		SPI_execute_plan(exec->consume_plan, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not forward the changes of %s", exec->job->upstream_sql);
	backfill_count_changes_applied(SPI_processed);
}
