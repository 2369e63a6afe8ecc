/*-------------------------------------------------------------------------
 *
 * executor.c
 *	  One barrier of a job: forward changes, read snapshot chunks, persist.
 *
 * A barrier is one REPEATABLE READ transaction, so everything it reads (the
 * upstream's snapshot, the captured keys, the state) comes from a single
 * snapshot S.  Its invariant, for every vnode v with position pos[v]:
 *
 *		downstream rows of v = the upstream rows of v with key <= pos[v],
 *		projected, as of S; every later change is a key in the change table.
 *
 * (all keys once v has finished).  A barrier keeps it, in this order:
 *
 * 1. Changes.  For every key in the change table that S can see and whose
 *	  vnode has finished or whose key is <= the vnode's position, the
 *	  downstream row is made equal to the upstream row as of S (deleted, then
 *	  inserted again if it still exists).  Keys above the position are
 *	  dropped: the snapshot reads them later, as RisingWave's "forward only
 *	  pk <= current_pos".  Then exactly the keys S could see are deleted;
 *	  keys written by transactions that commit after S stay for the next
 *	  barrier.  Commit order, and sequence order, never matter.
 *
 * 2. Snapshot chunks.  Each actor reads, for each set of its unfinished
 *	  vnodes that share a position, the next chunk_size rows after that
 *	  position in key order, restricted to those vnodes, and inserts them
 *	  into the downstream in the same statement.  The vnodes' position
 *	  becomes the chunk's last key: every row of theirs up to it is now
 *	  downstream.  A chunk shorter than chunk_size means the vnodes have been
 *	  read to the end: they are finished.  Reading goes on, round after
 *	  round, until backfill.barrier_interval_ms has passed (one round when 0).
 *
 * 3. State.  The changed vnodes' rows are upserted into the state table,
 *	  and the job row gets the new epoch and row count.
 *
 * The final barrier, run once every vnode has finished, first takes SHARE
 * ROW EXCLUSIVE on the upstream, before its snapshot: it waits for the
 * writers in flight, whose keys are in the change table, and holds off new
 * ones.  It forwards the remaining changes, switches the upstream from the
 * capture trigger to the apply trigger (capture.c) and marks the job
 * finished.  Writers blocked by it then apply their own changes.
 *
 * A barrier covers either every actor (run_job, in one session) or one actor
 * (a background worker per actor, worker.c).  Per-actor barriers are
 * equivalent to job-wide ones because everything a barrier touches belongs to
 * a vnode, and each vnode to exactly one actor: the captured keys it forwards
 * and consumes are those of its vnodes (a key that moves between vnodes is
 * two captured keys, one per vnode), the downstream rows it writes are those
 * of its vnodes, and so are its state rows; its progress goes to its own row
 * of backfill.actor.  Two actors' barriers therefore never write the same
 * row, and the invariant, which is per vnode, holds after each of them.
 *
 * The snapshot side of an actor may be rate limited (rows per second per
 * actor, as RisingWave's backfill_rate_limit): chunks shrink to the limit and
 * each waits until the limiter allows it; 0 pauses the snapshot while changes
 * and barriers go on.
 *
 * Legacy no-shuffle and arrangement jobs run the same algorithm; they differ
 * in what they store (section 6 of the reference): legacy rows carry the
 * actor's single position and total count on every vnode, arrangement rows
 * each vnode's own count.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "tcop/pquery.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "barrier.h"

/* the most chunks, and rows, one statement reads in a barrier */
#define BACKFILL_MAX_BATCH_CHUNKS	1024
#define BACKFILL_MAX_BATCH_ROWS		(64 * 1024)

/*
 * A barrier's statements run in an SPI connection of their own, nested in
 * the run's: what SPI allocates for them is released when the barrier is
 * done, instead of accumulating in the run's connection, which lives as long
 * as the CALL or the worker.
 */
void
backfill_spi_enter(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

void
backfill_spi_leave(void)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/*
 * Every plan the executor of this backend keeps.  A run that fails leaves
 * them behind; freeing them during the error's cleanup is unsafe while the
 * failed statement still holds one, so the next executor created in this
 * backend frees them first, in a transaction that holds none.
 */
static List *kept_plans = NIL;

static void
free_kept_plans(void)
{
	ListCell   *lc;

	foreach(lc, kept_plans)
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	list_free(kept_plans);
	kept_plans = NIL;
}

SPIPlanPtr
backfill_prepare_kept(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);
	MemoryContext old;

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed (%s) for: %s",
			 SPI_result_code_string(SPI_result), sql);
	SPI_keepplan(plan);
	old = MemoryContextSwitchTo(TopMemoryContext);
	kept_plans = lappend(kept_plans, plan);
	MemoryContextSwitchTo(old);
	return plan;
}

/* "k1 DESC, k2 DESC" */
static char *
pk_list_desc(BackfillJob *job)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&buf, "%s%s DESC", k > 0 ? ", " : "",
						 quote_identifier(job->pk_names[k]));
	return buf.data;
}

/* "$first, $first+1, ..." for the key's parameters */
char *
backfill_pk_params(BackfillJob *job, int first)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&buf, "%s$%d", k > 0 ? ", " : "", first + k);
	return buf.data;
}

/*
 * backfill_executor_create
 *		Prepare the statements of the job's barriers.  Caller is connected to
 *		SPI; the plans are kept across the run's transactions.
 */
BarrierExecutor *
backfill_executor_create(BackfillJob *job)
{
	MemoryContext cxt = GetMemoryChunkContext(job);
	BarrierExecutor *exec = MemoryContextAllocZero(cxt, sizeof(BarrierExecutor));
	StringInfoData sql;
	char	   *pk = backfill_pk_list(job, NULL);
	char	   *matching;
	Oid			argtypes[INDEX_MAX_KEYS + 4];
	int			guc_level;

	free_kept_plans();			/* those of a run that failed */
	exec->job = job;
	exec->barrier_cxt = AllocSetContextCreate(cxt, "backfill barrier",
											  ALLOCSET_DEFAULT_SIZES);
	guc_level = backfill_pin_search_path(job);
	for (int k = 0; k < job->npk; k++)
		get_typlenbyval(job->pk_types[k], &exec->typlens[k], &exec->typbyvals[k]);

	/* a round's groups: made once, not once per round in the barrier's memory */
	exec->groups = MemoryContextAlloc(cxt, sizeof(VnodeGroup) * BACKFILL_VNODE_COUNT);
	exec->vnode_hasher = MemoryContextAlloc(cxt, sizeof(VnodeHasher));
	backfill_vnode_hasher_init(exec->vnode_hasher, job->npk, job->pk_types, cxt);
	exec->rate_next = MemoryContextAllocZero(cxt, sizeof(TimestampTz) * Max(job->nactors, 1));
	exec->batch = MemoryContextAllocZero(cxt, sizeof(int) * Max(job->nactors, 1));

	/*
	 * The captured keys a barrier forwards: those of the vnodes $1..$2 whose
	 * vnode has finished or that are <= the vnode's position.  The snapshot
	 * kind forwards only once its vnodes have finished (snapshot.c, and the
	 * final barrier); the cdc kind has one state row for all vnodes.
	 */
	initStringInfo(&sql);
	if (job->kind == BACKFILL_KIND_SNAPSHOT)
		appendStringInfo(&sql,
						 "SELECT %s FROM %s c WHERE backfill.vnode(%s) BETWEEN $1 AND $2",
						 backfill_pk_list(job, "c"), job->changes_sql,
						 backfill_pk_list(job, "c"));
	else if (job->kind == BACKFILL_KIND_CDC)
		appendStringInfo(&sql,
						 "SELECT %s FROM %s c JOIN %s s ON (s.backfill_finished OR (%s) <= (%s)) "
						 "WHERE backfill.vnode(%s) BETWEEN $1 AND $2",
						 backfill_pk_list(job, "c"), job->changes_sql, job->state_sql,
						 backfill_pk_list(job, "c"), backfill_pk_list(job, "s"),
						 backfill_pk_list(job, "c"));
	else
		appendStringInfo(&sql,
						 "SELECT %s FROM %s c JOIN %s s ON s.vnode = backfill.vnode(%s) "
						 "WHERE s.vnode BETWEEN $1 AND $2 AND (s.backfill_finished OR (%s) <= (%s))",
						 backfill_pk_list(job, "c"), job->changes_sql, job->state_sql,
						 backfill_pk_list(job, "c"), backfill_pk_list(job, "c"),
						 backfill_pk_list(job, "s"));
	matching = sql.data;
	argtypes[0] = INT2OID;
	argtypes[1] = INT2OID;

	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s d WHERE (%s) IN (%s)",
					 job->downstream_sql, backfill_pk_list(job, "d"), matching);
	exec->forward_delete_plan = backfill_prepare_kept(sql.data, 2, argtypes);

	resetStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (%s) SELECT %s FROM ONLY %s u WHERE (%s) IN (%s)",
					 job->downstream_sql, job->columns_sql, job->columns_sql,
					 job->upstream_sql, backfill_pk_list(job, "u"), matching);
	exec->forward_insert_plan = backfill_prepare_kept(sql.data, 2, argtypes);

	/* consumed: exactly the keys of those vnodes that the snapshot sees */
	resetStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s c WHERE backfill.vnode(%s) BETWEEN $1 AND $2",
					 job->changes_sql, backfill_pk_list(job, "c"));
	exec->consume_plan = backfill_prepare_kept(sql.data, 2, argtypes);

	/* state rows of a set of vnodes that share position, flag */
	if (job->kind == BACKFILL_KIND_SNAPSHOT)
		backfill_snapshot_prepare(exec);
	else if (job->kind == BACKFILL_KIND_CDC)
		backfill_cdc_prepare(exec);
	else
	{
		/* $4, the epoch, is the snapshot kind's: see persist_state() */
		resetStringInfo(&sql);
		appendStringInfo(&sql,
						 "INSERT INTO %s (vnode, %s, backfill_finished, row_count) "
						 "SELECT u.v, %s, $3, u.c FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS u(v, c) "
						 "ON CONFLICT (vnode) DO UPDATE SET backfill_finished = EXCLUDED.backfill_finished, "
						 "row_count = EXCLUDED.row_count",
						 job->state_sql, pk, backfill_pk_params(job, 5));
		backfill_append_excluded_key(&sql, job);
		argtypes[0] = INT2ARRAYOID;
		argtypes[1] = INT8ARRAYOID;
		argtypes[2] = BOOLOID;
		argtypes[3] = INT8OID;
		memcpy(&argtypes[4], job->pk_types, sizeof(Oid) * job->npk);
		exec->persist_plan = backfill_prepare_kept(sql.data, 4 + job->npk, argtypes);
	}

	argtypes[0] = INT4OID;
	argtypes[1] = INT8OID;
	argtypes[2] = INT8OID;
	exec->actor_plan = backfill_prepare_kept("UPDATE backfill.actor SET epoch = $2, row_count = $3 "
									"WHERE actor_id = $1", 3, argtypes);
	argtypes[0] = INT8OID;
	argtypes[1] = INT8OID;
	exec->finish_plan = backfill_prepare_kept("WITH a AS (UPDATE backfill.actor SET epoch = $2 WHERE job_id = $1) "
									 "UPDATE backfill.job SET status = 'finished', "
									 "finished_at = pg_catalog.now() "
									 "WHERE job_id = $1 AND status <> 'finished'", 2, argtypes);
	backfill_unpin_search_path(guc_level);

	return exec;
}

/*
 * backfill_executor_refresh
 *		The executor to run the next barrier with: this one, or, if a table
 *		of the job was renamed or moved since its plans were made, a new one
 *		(ALTER TABLE ... RENAME disturbs nothing).  Caller is connected to
 *		SPI, in a transaction.
 */
BarrierExecutor *
backfill_executor_refresh(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;

	if (!backfill_names_changed(job))
		return exec;
	backfill_executor_free(exec);
	return backfill_executor_create(job);
}

void
backfill_executor_free(BarrierExecutor *exec)
{
	free_kept_plans();
}

/*
 * backfill_chunk_conditions
 *		The conditions of a chunk query on the rows of alias: after the
 *		position if any (cmp is ">" or ">="; parameters $1..$npk), then in
 *		the vnodes of the filter (the next parameters).  Sets the types of
 *		those parameters and their number; the same for every alias.
 */
char *
backfill_chunk_conditions(BackfillJob *job, const char *alias, const char *cmp,
						  bool has_pos, VnodeFilter filter, Oid *argtypes, int *nargs)
{
	StringInfoData cond;
	char	   *key = backfill_pk_list(job, alias);

	initStringInfo(&cond);
	*nargs = 0;
	if (has_pos)
	{
		appendStringInfo(&cond, " AND (%s) %s (%s)", key, cmp, backfill_pk_params(job, 1));
		memcpy(argtypes, job->pk_types, sizeof(Oid) * job->npk);
		*nargs = job->npk;
	}
	if (filter == VNODE_FILTER_RANGE)
	{
		appendStringInfo(&cond, " AND backfill.vnode(%s) BETWEEN $%d AND $%d",
						 key, *nargs + 1, *nargs + 2);
		argtypes[(*nargs)++] = INT2OID;
		argtypes[(*nargs)++] = INT2OID;
	}
	else if (filter == VNODE_FILTER_LIST)
	{
		appendStringInfo(&cond, " AND backfill.vnode(%s) = ANY ($%d)", key, *nargs + 1);
		argtypes[(*nargs)++] = INT2ARRAYOID;
	}
	return cond.data;
}

/*
 * The chunk query: read the next rows after a position (if any) of a set of
 * vnodes, in key order.  Parameters: the position ($1..$npk), the vnode
 * filter, then the limit.  With insert, it inserts them downstream itself
 * and returns per vnode the number of rows read, with the chunk's last key
 * on every row; without, it returns the rows, for a sink (sink.c).
 */
static SPIPlanPtr
chunk_plan(BarrierExecutor *exec, bool has_pos, VnodeFilter filter, bool insert)
{
	BackfillJob *job = exec->job;
	SPIPlanPtr *cached = insert ? &exec->chunk_plans[has_pos][filter] :
		&exec->select_plans[has_pos][filter];
	StringInfoData select;
	StringInfoData sql;
	Oid			argtypes[INDEX_MAX_KEYS + 3];
	int			nargs = 0;
	char	   *upk = backfill_pk_list(job, "u");
	char	   *pk = backfill_pk_list(job, NULL);

	if (*cached)
		return *cached;

	initStringInfo(&select);
	appendStringInfo(&select, "SELECT %s FROM ONLY %s u WHERE true",
					 job->columns_sql, job->upstream_sql);
	appendStringInfoString(&select,
						   backfill_chunk_conditions(job, "u", ">", has_pos, filter,
													 argtypes, &nargs));
	appendStringInfo(&select, " ORDER BY %s LIMIT $%d", upk, nargs + 1);
	argtypes[nargs++] = INT8OID;
	if (!insert)
	{
		*cached = backfill_prepare_kept(select.data, nargs, argtypes);
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
	if (BACKFILL_KIND_ONE_POSITION(job->kind))
		/* a legacy or cdc actor counts its rows as a whole */
		appendStringInfo(&sql,
						 "SELECT NULL::pg_catalog.int2, c.rows, l.* FROM "
						 "(SELECT pg_catalog.count(*) AS rows FROM ins) c, "
						 "(SELECT %s FROM ins ORDER BY %s LIMIT 1) l",
						 pk, pk_list_desc(job));
	else
		appendStringInfo(&sql,
						 "SELECT c.vnode, c.rows, l.* FROM "
						 "(SELECT backfill.vnode(%s) AS vnode, pg_catalog.count(*) AS rows "
						 "FROM ins GROUP BY 1) c, "
						 "(SELECT %s FROM ins ORDER BY %s LIMIT 1) l",
						 pk, pk, pk_list_desc(job));

	*cached = backfill_prepare_kept(sql.data, nargs, argtypes);
	return *cached;
}

static bool
same_position(BarrierExecutor *exec, VnodeState *a, VnodeState *b)
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

/* the unfinished vnodes of an actor, grouped by position */
static int
actor_groups(BarrierExecutor *exec, int actor, VnodeGroup *groups)
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
			if (same_position(exec, &job->vnodes[groups[g].vnodes[0]], vs))
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

/* how a chunk query of a group restricts its vnodes */
VnodeFilter
backfill_group_filter(VnodeGroup *group)
{
	bool		contiguous = true;

	for (int i = 1; i < group->nvnodes; i++)
		contiguous &= (group->vnodes[i] == group->vnodes[i - 1] + 1);
	if (group->nvnodes == BACKFILL_VNODE_COUNT)
		return VNODE_FILTER_NONE;
	return contiguous ? VNODE_FILTER_RANGE : VNODE_FILTER_LIST;
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

	if (first->has_pos)
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
	return nvalues;
}

/*
 * Read one chunk of a group of vnodes through an INSERT ... SELECT, into
 * total, the vnodes' row counts and lastkey.
 */
static void
insert_chunk(BarrierExecutor *exec, SPIPlanPtr plan, Datum *values, int64 *total,
			 Datum *lastkey)
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
		if (job->kind == BACKFILL_KIND_ARRANGEMENT)
			job->vnodes[DatumGetInt16(vnode)].row_count += rows;
		if (i == 0)
			for (int k = 0; k < job->npk; k++)
				lastkey[k] = SPI_getbinval(tup, desc, 3 + k, &isnull);
	}
}

/*
 * Read one chunk of a group of vnodes.  Returns the number of rows read.
 */
static int64
read_chunk(BarrierExecutor *exec, VnodeGroup *group, int64 limit)
{
	BackfillJob *job = exec->job;
	BackfillActor *actor = &job->actors[group->actor];
	VnodeState *first = &job->vnodes[group->vnodes[0]];
	VnodeFilter filter;
	Datum		values[INDEX_MAX_KEYS + 3];
	int			nvalues;
	ChunkSink  *sink;
	int64		total = 0;
	Datum		lastkey[INDEX_MAX_KEYS];

	if (job->kind == BACKFILL_KIND_SNAPSHOT)
		return backfill_snapshot_read_chunk(exec, group, limit);

	filter = backfill_group_filter(group);
	nvalues = backfill_group_params(exec, group, filter, values);
	values[nvalues++] = Int64GetDatum(limit);

	sink = backfill_sink_begin(exec, -1, job->kind == BACKFILL_KIND_ARRANGEMENT);
	if (sink != NULL)
	{
		int64		vnode_rows[BACKFILL_VNODE_COUNT] = {0};
		bool		has_last;

		backfill_sink_run(sink, chunk_plan(exec, first->has_pos, filter, false), values);
		total = backfill_sink_end(sink, vnode_rows, lastkey, &has_last, NULL, NULL);
		if (job->kind == BACKFILL_KIND_ARRANGEMENT)
			for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
				job->vnodes[v].row_count += vnode_rows[v];
	}
	else
		insert_chunk(exec, chunk_plan(exec, first->has_pos, filter, true), values,
					 &total, lastkey);

	/* legacy and cdc rows carry the actor's total, which only grows here */
	if (BACKFILL_KIND_ONE_POSITION(job->kind))
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
 * Persist every dirty vnode, one statement per set of vnodes that share
 * position, flag and epoch (the snapshot kind's; 0 for the others).  The
 * persist plans of the vnode layouts take the same parameters: the vnodes,
 * their row counts, the flag, the epoch, then the position.
 */
static void
persist_state(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	bool		done[BACKFILL_VNODE_COUNT] = {0};

	if (job->kind == BACKFILL_KIND_CDC)
	{
		backfill_cdc_persist(exec);
		return;
	}

	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		VnodeState *vs = &job->vnodes[v];
		Datum		vnodes[BACKFILL_VNODE_COUNT];
		Datum		counts[BACKFILL_VNODE_COUNT];
		int			n = 0;
		Datum		values[INDEX_MAX_KEYS + 4];
		char		nulls[INDEX_MAX_KEYS + 4];

		if (!vs->dirty || done[v])
			continue;
		for (int w = v; w < BACKFILL_VNODE_COUNT; w++)
		{
			VnodeState *ws = &job->vnodes[w];

			if (ws->dirty && !done[w] && ws->finished == vs->finished &&
				ws->epoch == vs->epoch && same_position(exec, vs, ws))
			{
				vnodes[n] = Int16GetDatum((int16) w);
				counts[n] = Int64GetDatum(ws->row_count);
				n++;
				done[w] = true;
			}
		}
		values[0] = PointerGetDatum(construct_array(vnodes, n, INT2OID, 2, true, TYPALIGN_SHORT));
		values[1] = PointerGetDatum(construct_array(counts, n, INT8OID, 8,
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[2] = BoolGetDatum(vs->finished);
		values[3] = Int64GetDatum(vs->epoch);
		memset(nulls, ' ', sizeof(nulls));
		for (int k = 0; k < job->npk; k++)
		{
			values[4 + k] = vs->has_pos ? vs->pos[k] : (Datum) 0;
			nulls[4 + k] = vs->has_pos ? ' ' : 'n';
		}
		if (SPI_execute_plan(exec->persist_plan, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not write state table %s", job->state_sql);
	}

	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		job->vnodes[v].dirty = false;
		job->vnodes[v].present |= done[v];
	}
}

/* ", k1 = EXCLUDED.k1, ...": an upsert's SET list for the key columns */
void
backfill_append_excluded_key(StringInfo sql, BackfillJob *job)
{
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(sql, ", %s = EXCLUDED.%s",
						 quote_identifier(job->pk_names[k]),
						 quote_identifier(job->pk_names[k]));
}

/* RisingWave's epoch: milliseconds since 2021-04-01 in the high 48 bits */
int64
backfill_next_epoch(int64 previous)
{
	int64		unix_ms = GetCurrentTimestamp() / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	int64		epoch = (unix_ms - INT64CONST(1617235200000)) << 16;

	return Max(epoch, previous + 1);
}

/* an actor's snapshot rows: the sum of its vnodes', or the legacy total */
static int64
actor_row_count(BackfillJob *job, BackfillActor *actor)
{
	int64		total = 0;

	if (BACKFILL_KIND_ONE_POSITION(job->kind))
		return job->vnodes[actor->vnode_start].row_count;
	for (int v = actor->vnode_start; v <= actor->vnode_end; v++)
		total += job->vnodes[v].row_count;
	return total;
}

static void
update_actor(BarrierExecutor *exec, BackfillActor *actor)
{
	BackfillJob *job = exec->job;
	Datum		values[3];
	RoleContext rc;

	if (job->kind == BACKFILL_KIND_SNAPSHOT)
	{
		backfill_snapshot_update_actor(exec, actor);
		return;
	}
	values[0] = Int32GetDatum(actor->actor_id);
	values[1] = Int64GetDatum(job->epoch);
	values[2] = Int64GetDatum(actor_row_count(job, actor));
	backfill_catalog_enter(&rc);
	if (SPI_execute_plan(exec->actor_plan, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update backfill.actor");
	backfill_role_leave(&rc);
}

/* step 1: forward the captured changes of vnodes lo..hi, consume them all */
void
backfill_forward_changes(BarrierExecutor *exec, int lo, int hi)
{
	Datum		values[2] = {Int16GetDatum(lo), Int16GetDatum(hi)};

	if (SPI_execute_plan(exec->forward_delete_plan, values, NULL, false, 0) != SPI_OK_DELETE ||
		SPI_execute_plan(exec->forward_insert_plan, values, NULL, false, 0) != SPI_OK_INSERT ||
		SPI_execute_plan(exec->consume_plan, values, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not forward the changes of %s", exec->job->upstream_sql);
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
 * Whether an actor has nothing left but the final barrier: its vnodes have
 * finished, and for the snapshot kind its log store has caught up too.
 */
bool
backfill_actor_finished(BackfillJob *job, int actor)
{
	if (!backfill_vnodes_finished(job, actor))
		return false;
	return job->kind != BACKFILL_KIND_SNAPSHOT || job->actors[actor].caught_up;
}

bool
backfill_all_finished(BackfillJob *job)
{
	for (int a = 0; a < job->nactors; a++)
		if (!backfill_actor_finished(job, a))
			return false;
	return true;
}

/*
 * backfill_sleep_ms
 *		Sleep on the latch for ms milliseconds at most: a cancel, a
 *		statement timeout, SIGTERM or the postmaster's death end it.
 */
void
backfill_sleep_ms(long ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* sleep until t, or until interrupted */
void
backfill_sleep_until(TimestampTz t)
{
	long		ms;

	CHECK_FOR_INTERRUPTS();
	while ((ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), t)) > 0)
		backfill_sleep_ms(ms);
}

/*
 * One round of an actor: a chunk of each of its sets of vnodes that share a
 * position, as far as the rate limit allows before "deadline".  Returns the
 * rows read, or -1 when the limiter wants the actor to wait past deadline.
 */
static int64
actor_round(BarrierExecutor *exec, int actor, int rate_limit, TimestampTz deadline)
{
	BackfillJob *job = exec->job;
	VnodeGroup *groups = exec->groups;
	int			ngroups = actor_groups(exec, actor, groups);
	int64		rows = 0;
	int64		limit = job->chunk_size;

	/*
	 * Unlimited, an actor reads one chunk first, then ever more chunks per
	 * statement for the rest of the barrier: positions only become visible
	 * at the barrier's commit, so k chunks read in one statement leave
	 * exactly the state that k statements of one chunk would, at a fraction
	 * of the per-statement cost.
	 */
	if (rate_limit > 0)
		limit = Min(limit, rate_limit);
	else
		limit *= exec->batch[actor];
	for (int g = 0; g < ngroups; g++)
	{
		int64		n;

		CHECK_FOR_INTERRUPTS();
		if (rate_limit > 0)
		{
			if (exec->rate_next[actor] > deadline)
				return rows > 0 ? rows : -1;
			backfill_sleep_until(exec->rate_next[actor]);
		}
		n = read_chunk(exec, &groups[g], limit);
		rows += n;
		if (exec->batch[actor] < BACKFILL_MAX_BATCH_CHUNKS &&
			(int64) job->chunk_size * exec->batch[actor] < BACKFILL_MAX_BATCH_ROWS)
			exec->batch[actor] *= 2;
		if (rate_limit > 0)
		{
			/* GCRA: each row costs 1/rate seconds; a debt delays later reads */
			TimestampTz now = GetCurrentTimestamp();

			exec->rate_next[actor] = Max(exec->rate_next[actor], now) +
				(n * USECS_PER_SEC) / rate_limit;
		}
	}
	return rows;
}

/*
 * backfill_run_barrier
 *		One barrier of one actor (actor >= 0) or of all of them (-1), in the
 *		current transaction, which must be REPEATABLE READ and must not have
 *		taken its snapshot yet.  rate_limit is rows per second per actor, 0
 *		to pause the snapshot, -1 for no limit.  Returns the snapshot rows
 *		read.
 */
int64
backfill_run_barrier(BarrierExecutor *exec, int actor, int interval_ms, int rate_limit)
{
	BackfillJob *job = exec->job;
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz deadline = TimestampTzPlusMilliseconds(start, interval_ms);
	MemoryContext old = MemoryContextSwitchTo(exec->barrier_cxt);
	int			first = actor < 0 ? 0 : actor;
	int			last = actor < 0 ? job->nactors - 1 : actor;
	int64		total = 0;
	int			guc_level;
	RoleContext owner;

	Assert(XactIsoLevel == XACT_REPEATABLE_READ);
	backfill_owner_enter(job->owner, false, &owner);
	guc_level = backfill_pin_search_path(job);
	backfill_spi_enter();
	for (int a = first; a <= last; a++)
		exec->batch[a] = 1;
	if (job->kind == BACKFILL_KIND_SNAPSHOT)
	{
		bool		waiting = false;

		/* phase 1 forwards nothing; the log store, once every vnode is done */
		for (int a = first; a <= last; a++)
			if (backfill_vnodes_finished(job, a))
				waiting |= !backfill_snapshot_log_store_barrier(exec, a);
		if (waiting)
			backfill_sleep_until(deadline);
	}
	else if (actor < 0)
		backfill_forward_changes(exec, 0, BACKFILL_VNODE_COUNT - 1);
	else
		backfill_forward_changes(exec, job->actors[actor].vnode_start, job->actors[actor].vnode_end);

	/* paused: only changes and the state move; sit out the interval */
	if (rate_limit == 0)
		backfill_sleep_until(deadline);

	for (; rate_limit != 0;)
	{
		bool		all_done = true;
		bool		any_read = false;

		for (int a = first; a <= last; a++)
		{
			int64		rows;

			if (backfill_vnodes_finished(job, a))
				continue;
			rows = actor_round(exec, a, rate_limit, interval_ms > 0 ? deadline : start);
			if (rows >= 0)
			{
				total += rows;
				any_read = true;
			}
			all_done &= backfill_vnodes_finished(job, a);
		}
		if (interval_ms <= 0 || all_done ||
			TimestampDifferenceExceeds(start, GetCurrentTimestamp(), interval_ms))
			break;
		/* paused, or every actor waits for its limiter: sit out the interval */
		if (!any_read)
		{
			backfill_sleep_until(deadline);
			break;
		}
	}

	persist_state(exec);
	job->epoch = backfill_next_epoch(job->epoch);
	for (int a = first; a <= last; a++)
		update_actor(exec, &job->actors[a]);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&owner);
	MemoryContextSwitchTo(old);
	MemoryContextReset(exec->barrier_cxt);
	return total;
}

/*
 * backfill_job_finished_everywhere
 *		Whether every vnode of the job has finished, as committed by all the
 *		actors (read from the state table, not from memory).
 */
bool
backfill_job_finished_everywhere(BackfillJob *job)
{
	char	   *sql;
	bool		isnull;
	bool		result;

	if (job->kind == BACKFILL_KIND_SNAPSHOT)
		return backfill_snapshot_everywhere(job, true);
	if (job->kind == BACKFILL_KIND_CDC)
		sql = psprintf("SELECT pg_catalog.bool_and(backfill_finished) FROM %s", job->state_sql);
	else
		sql = psprintf("SELECT pg_catalog.count(*) = %d AND pg_catalog.bool_and(backfill_finished) "
					   "FROM %s WHERE vnode BETWEEN 0 AND %d",
					   BACKFILL_VNODE_COUNT, job->state_sql, BACKFILL_VNODE_COUNT - 1);

	backfill_spi_enter();
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);
	result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	backfill_spi_leave();
	return !isnull && result;
}

/*
 * backfill_run_finish_barrier
 *		The final barrier (see the file header).  The current transaction
 *		must not have taken its snapshot yet.  Returns false if another actor
 *		already ran it.
 */
bool
backfill_run_finish_barrier(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	Relation	rel;
	MemoryContext old;
	Datum		values[2];
	char	   *sql;
	bool		isnull;
	bool		finished;
	int			guc_level;
	RoleContext rc;
	RoleContext owner;

	/* before the snapshot: wait for writers in flight, hold off new ones */
	LockRelationOid(job->upstream, ShareRowExclusiveLock);
	if (ActivePortal == NULL && !ActiveSnapshotSet())
		PushActiveSnapshot(GetTransactionSnapshot());	/* a worker */
	backfill_owner_enter(job->owner, false, &owner);

	/* when every actor finishes at once, the first one finishes the job */
	backfill_spi_enter();
	sql = psprintf("SELECT status = 'finished' FROM backfill.job WHERE job_id = %lld",
				   (long long) job->job_id);
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read backfill job %lld", (long long) job->job_id);
	finished = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (finished)
	{
		backfill_spi_leave();
		backfill_role_leave(&owner);
		return false;
	}

	old = MemoryContextSwitchTo(exec->barrier_cxt);
	guc_level = backfill_pin_search_path(job);

	/* the writers are done: whatever they wrote is in the log now */
	if (job->kind == BACKFILL_KIND_CDC)
		backfill_cdc_fetch(exec);
	backfill_forward_changes(exec, 0, BACKFILL_VNODE_COUNT - 1);

	rel = table_open(job->upstream, NoLock);
	if (job->kind != BACKFILL_KIND_CDC)
		EnableDisableTrigger(rel, psprintf("backfill_capture_%lld", (long long) job->job_id),
							 TRIGGER_DISABLED, false, ShareRowExclusiveLock);
	EnableDisableTrigger(rel, psprintf("backfill_apply_%lld", (long long) job->job_id),
						 TRIGGER_FIRES_ALWAYS, false, ShareRowExclusiveLock);
	EnableDisableTrigger(rel, psprintf("backfill_capture_truncate_%lld", (long long) job->job_id),
						 TRIGGER_DISABLED, false, ShareRowExclusiveLock);
	EnableDisableTrigger(rel, psprintf("backfill_apply_truncate_%lld", (long long) job->job_id),
						 TRIGGER_FIRES_ALWAYS, false, ShareRowExclusiveLock);
	table_close(rel, NoLock);

	job->epoch = backfill_next_epoch(job->epoch);
	values[0] = Int64GetDatum(job->job_id);
	values[1] = Int64GetDatum(job->epoch);
	backfill_catalog_enter(&rc);
	if (SPI_execute_plan(exec->finish_plan, values, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update backfill.job");
	backfill_role_leave(&rc);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&owner);
	MemoryContextSwitchTo(old);
	MemoryContextReset(exec->barrier_cxt);
	return true;
}

/*
 * backfill_needs_fetch
 *		Whether the job's barriers need a fetch first: the cdc kind's changes
 *		come from its replication slot, in a transaction of their own before
 *		each barrier (cdc.c says why).
 */
bool
backfill_needs_fetch(BackfillJob *job)
{
	return job->kind == BACKFILL_KIND_CDC;
}

/*
 * backfill_run_fetch
 *		The fetch before a barrier, in the current transaction, which the
 *		caller commits before the barrier starts.
 */
void
backfill_run_fetch(BarrierExecutor *exec)
{
	MemoryContext old = MemoryContextSwitchTo(exec->barrier_cxt);
	RoleContext owner;
	int			guc_level;

	backfill_owner_enter(exec->job->owner, false, &owner);
	guc_level = backfill_pin_search_path(exec->job);
	backfill_spi_enter();
	backfill_cdc_fetch(exec);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&owner);
	MemoryContextSwitchTo(old);
	MemoryContextReset(exec->barrier_cxt);
}

/*
 * backfill_after_finish
 *		What follows the commit of the final barrier, outside any barrier:
 *		a cdc job drops its replication slot, which nothing reads any more.
 */
void
backfill_after_finish(BackfillJob *job)
{
	if (job->kind == BACKFILL_KIND_CDC)
		backfill_cdc_drop_slot(job->job_id);
}
