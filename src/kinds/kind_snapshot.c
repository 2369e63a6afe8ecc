/*-------------------------------------------------------------------------
 *
 * kind_snapshot.c
 *	  The snapshot kind: reading the upstream as of the snapshot epoch, then
 *	  consuming the log store.
 *
 * RisingWave's snapshot backfill reads a committed snapshot of the upstream
 * at a fixed snapshot epoch (phase 1), then replays the upstream's change log
 * from that epoch on until it has caught up (phase 2), then follows the
 * upstream (phase 3).  No change made after the snapshot epoch is visible
 * downstream during phase 1, across restarts too.
 *
 * PostgreSQL cannot keep an MVCC snapshot across barriers, let alone across
 * a restart, so "as of the snapshot epoch" comes from the change capture
 * instead.  The snapshot epoch is create_job's commit: create_job holds SHARE
 * ROW EXCLUSIVE on the upstream while it installs the capture trigger, so
 * every later write is captured.  For this kind the trigger (capture/capture_change.c)
 * writes, for every row it touches, the key, a sequence number and the row's
 * image before the write (NULL when the key did not exist) into the log,
 * backfill.changes_<id>.  Writes of one key are serialized by its row lock,
 * so the sequence orders them as their commits do, and the first log entry
 * of a key holds its image as of the snapshot epoch.  At any later snapshot,
 *
 *		upstream as of the snapshot epoch =
 *			upstream rows whose key has no log entry
 *			+ the first image of each logged key, when not NULL
 *
 * which is what a phase 1 chunk reads, in key order, per set of vnodes that
 * share a position.  It reads one row past the chunk and stores that row's
 * key as the vnodes' position: as in RisingWave, the position is the next
 * row not yet read, and a restart reads from it inclusive.  No log entry is
 * consumed during phase 1.
 *
 * Phase 1 ends for the whole job at once, as in RisingWave, where no actor
 * sees a barrier past the snapshot epoch before every actor has finished its
 * snapshot: an actor whose vnodes are done waits, barrier after barrier,
 * until every vnode's state row says is_epoch_finished.  Then each actor
 * consumes the log entries of its vnodes that its barrier's snapshot sees,
 * making each logged key's downstream row equal to the upstream's, and
 * records Consumed at the previous epoch with the rows of that epoch.  An
 * actor whose log store barrier found at most chunk_size keys has caught up;
 * when all have, the job's final barrier (executor.c) takes the rest under
 * its lock and the job follows the upstream through the apply trigger.
 *
 * Nothing reads or writes the downstream by key during phase 1: its chunks
 * insert keys that are all different, of a snapshot no change reaches, and
 * their positions commit with them.  So the downstream has no index during
 * phase 1 (create_job drops them while it is empty, index_build.c), and the
 * first actor builds them all once, each with one sort, before any actor
 * applies its log; the others wait for it.  A kill during the build rolls
 * it back with its barrier, and the restarted job builds again without
 * reading the snapshot again (doc/indexes.md).
 *
 * The state table is RisingWave's progress table of a snapshot backfill:
 *
 *		vnode smallint PRIMARY KEY, epoch bigint, row_count bigint,
 *		is_epoch_finished boolean, <pk columns>
 *
 * checked as RisingWave checks it (snapshot_backfill/state.rs): first the
 * table's columns, with RisingWave's texts, then each row, where RisingWave
 * panics on a value of the wrong type: here "invalid backfill state:
 * <column>".  An unfinished row's key is the next row to read, so it must be
 * all there; a finished row's key must be NULL, and, as in a release build
 * of RisingWave, one that is not draws a warning and is ignored.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "capture/capture.h"
#include "catalog/barrier_rows.h"
#include "catalog/catalog_access.h"
#include "catalog/job_run_rows.h"
#include "copy/copy.h"
#include "copy/index_build.h"
#include "kinds/kind.h"
#include "lib/lib.h"

/* what the snapshot kind keeps in its executor */
typedef struct SnapshotPlans
{
	SPIPlanPtr	persist_plan;	/* the state rows of a set of vnodes */
	SPIPlanPtr	log_consume_plan;
	SPIPlanPtr	log_consume_all_plan;	/* the same for every vnode */
	SPIPlanPtr	log_store_plan;
} SnapshotPlans;

static const char *const snapshot_reserved_columns[] = {
	"vnode", "epoch", "row_count", "is_epoch_finished",
	"backfill_seq", "backfill_captured_at", "backfill_old_row", NULL
};

static void
snapshot_create_state_table(const JobDefinition *def)
{
	backfill_create_job_table(psprintf("CREATE TABLE %s (vnode pg_catalog.int2 PRIMARY KEY, "
									   "epoch pg_catalog.int8, row_count pg_catalog.int8, "
									   "is_epoch_finished pg_catalog.bool%s)",
									   def->state_sql, def->key_ddl),
							  def->state_sql, def->owner);
}

/* the snapshot kind reads as of now: the epoch of create_job */
static void
snapshot_after_create(const JobDefinition *def)
{
	backfill_set_snapshot_epoch(def->job_id, backfill_next_epoch(0));
}

/*
 * The snapshot kind's progress table must have RisingWave's columns:
 * smallint, bigint, bigint, boolean, then the upstream's key types.
 */
static void
check_snapshot_state_table(BackfillJob *job)
{
	int			natts;
	Oid		   *types;
	char	   *cols = backfill_column_list(job->state_table, &natts, &types);
	StringInfoData pk;
	Oid			expected[4] = {INT2OID, INT8OID, INT8OID, BOOLOID};
	bool		ok = true;
	char	   *message;

	initStringInfo(&pk);
	appendStringInfoChar(&pk, '[');
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&pk, "%s%s %s", k > 0 ? ", " : "", job->pk_names[k],
						 format_type_be(job->pk_types[k]));
	appendStringInfoChar(&pk, ']');

	if (natts != 4 + job->npk)
		message = psprintf("progress table columns len not matched with the len derived from upstream table pk. progress table: %s, pk: %s",
						   cols, pk.data);
	else
	{
		for (int i = 0; i < natts; i++)
			ok &= types[i] == (i < 4 ? expected[i] : job->pk_types[i - 4]);
		if (ok)
			return;
		message = psprintf("progress table column not matched with upstream table schema: progress table: %s, pk: %s",
						   cols, pk.data);
	}
	backfill_fail_job(job, ERRCODE_DATA_CORRUPTED, message,
					  psprintf("State table %s of backfill job %lld does not have the layout of a snapshot backfill's progress table.",
							   job->state_sql, (long long) job->job_id), NULL);
}

/*
 * The snapshot kind's own state of a job (BackfillJob.kind_data): the epoch
 * it reads as of, and the log store phase of each actor, as load_state
 * first read them.
 */
typedef struct SnapshotActor
{
	bool		in_log_store;	/* consumes the log store */
	bool		caught_up;		/* its last log store barrier found little */
	int64		lag_ms;			/* age of the oldest change it last consumed */
} SnapshotActor;

typedef struct SnapshotJob
{
	int64		snapshot_epoch; /* the epoch it reads as of */
	SnapshotActor *actors;		/* one per job->actors */
} SnapshotJob;

static SnapshotJob *
snapshot_job(BackfillJob *job)
{
	if (job->kind_data == NULL)
		elog(ERROR, "the state of backfill job %lld is not loaded", (long long) job->job_id);
	return job->kind_data;
}

/* the log store phase of the actor at index actor of job->actors */
static SnapshotActor *
snapshot_actor(BackfillJob *job, int actor)
{
	return &snapshot_job(job)->actors[actor];
}

/*
 * Read what the job's catalog rows say of the kind, once per loaded job: a
 * job loaded again in the same run keeps its actors' phases.
 */
static void
load_snapshot_job(BackfillJob *job)
{
	MemoryContext cxt = GetMemoryChunkContext(job);
	SnapshotJob *sj;
	bool	   *caught_up;

	if (job->kind_data != NULL)
		return;
	sj = MemoryContextAllocZero(cxt, sizeof(SnapshotJob));
	sj->snapshot_epoch = backfill_job_snapshot_epoch(job->job_id);
	sj->actors = MemoryContextAllocZero(cxt, sizeof(SnapshotActor) * Max(job->nactors, 1));
	caught_up = palloc(sizeof(bool) * Max(job->nactors, 1));
	backfill_actors_caught_up(job, caught_up);
	/* a snapshot job that had caught up goes on with its final barrier */
	for (int i = 0; i < job->nactors; i++)
		sj->actors[i].caught_up = caught_up[i];
	pfree(caught_up);
	job->kind_data = sj;
}

/* the snapshot kind's rows: (vnode, epoch, row_count, is_epoch_finished, pk) */
static void
snapshot_load_state(BackfillJob *job)
{
	StringInfoData sql;

	/*
	 * The key types it was made with: its log's, so that a progress table
	 * that lost them fails its own check with RisingWave's message, recorded
	 * on the job.
	 */
	backfill_check_key_unchanged(job, job->change_table);
	load_snapshot_job(job);
	backfill_init_vnodes(job);
	check_snapshot_state_table(job);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT vnode, epoch, row_count, is_epoch_finished, %s FROM %s ORDER BY vnode",
					 backfill_pk_list(job, NULL), job->state_sql);
	if (SPI_execute(sql.data, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		VnodeState *vs = backfill_state_row_vnode(job, tup, desc);
		int			vnode = vs - job->vnodes;
		bool		isnull;
		Datum		epoch;
		Datum		row_count;
		Datum		finished;

		epoch = SPI_getbinval(tup, desc, 2, &isnull);
		if (isnull || DatumGetInt64(epoch) < snapshot_job(job)->snapshot_epoch)
			backfill_state_error(job, "epoch",
								 isnull ?
								 psprintf("State table %s of backfill job %lld has an invalid row for vnode %d.",
										  job->state_sql, (long long) job->job_id, vnode) :
								 psprintf("In state table %s of backfill job %lld, vnode %d has epoch %lld, before the job's snapshot epoch %lld.",
										  job->state_sql, (long long) job->job_id, vnode,
										  (long long) DatumGetInt64(epoch),
										  (long long) snapshot_job(job)->snapshot_epoch));
		row_count = SPI_getbinval(tup, desc, 3, &isnull);
		if (isnull || DatumGetInt64(row_count) < 0)
			backfill_vnode_state_error(job, "row_count", vnode);
		finished = SPI_getbinval(tup, desc, 4, &isnull);
		if (isnull)
			backfill_vnode_state_error(job, "is_epoch_finished", vnode);

		vs->present = true;
		vs->epoch = DatumGetInt64(epoch);
		vs->row_count = DatumGetInt64(row_count);
		vs->finished = DatumGetBool(finished);
		backfill_read_position(job, vs, tup, desc, 5);

		if (vs->finished && vs->has_pos)
		{
			ereport(WARNING,
					(errmsg("get non-empty pk row: %s", backfill_pos_text(job, vs)),
					 errdetail("Vnode %d of backfill job %lld is finished, so its position is ignored.",
							   vnode, (long long) job->job_id)));
			vs->has_pos = false;
		}
		/* the next row to read: all of the key */
		if (!vs->finished)
			for (int k = 0; k < job->npk; k++)
				if (vs->pos_null[k])
					backfill_vnode_state_error(job, "latest_pk", vnode);
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * The statements of the snapshot kind: the final barrier forwards every
 * logged key of the vnodes $1..$2; the state rows of a set of vnodes that
 * share position, flag and epoch; the log store's.
 */
static void
snapshot_prepare(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	SnapshotPlans *plans = MemoryContextAllocZero(exec->cxt, sizeof(SnapshotPlans));
	StringInfoData sql;
	Oid			argtypes[INDEX_MAX_KEYS + 4];
	char	   *pk = backfill_pk_list(job, NULL);

	exec->kind_state = plans;
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s FROM %s c WHERE %s BETWEEN $1 AND $2",
					 backfill_pk_list(job, "c"), job->changes_sql,
					 backfill_vnode_sql(job, backfill_pk_list(job, "c")));
	backfill_prepare_forward(exec, sql.data);

	/* state rows of a set of vnodes that share position, flag and epoch */
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "INSERT INTO %s (vnode, epoch, row_count, is_epoch_finished, %s) "
					 "SELECT u.v, $4, u.c, $3, %s FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS u(v, c) "
					 "ON CONFLICT (vnode) DO UPDATE SET epoch = EXCLUDED.epoch, "
					 "row_count = EXCLUDED.row_count, is_epoch_finished = EXCLUDED.is_epoch_finished",
					 job->state_sql, pk, backfill_pk_params(job, 5));
	backfill_append_excluded_key(&sql, job);
	argtypes[0] = INT2ARRAYOID;
	argtypes[1] = INT8ARRAYOID;
	argtypes[2] = BOOLOID;
	argtypes[3] = INT8OID;
	memcpy(&argtypes[4], job->pk_types, sizeof(Oid) * job->npk);
	plans->persist_plan = backfill_keep_plan(exec->plans, sql.data, 4 + job->npk, argtypes);

	/* the log entries of vnodes $1..$2: how many, and the oldest */
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH d AS (DELETE FROM %s c WHERE %s BETWEEN $1 AND $2 "
					 "RETURNING c.backfill_captured_at) "
					 "SELECT pg_catalog.count(*), pg_catalog.min(d.backfill_captured_at) FROM d",
					 job->changes_sql, backfill_vnode_sql(job, backfill_pk_list(job, "c")));
	argtypes[0] = INT2OID;
	argtypes[1] = INT2OID;
	plans->log_consume_plan = backfill_keep_plan(exec->plans, sql.data, 2, argtypes);
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH d AS (DELETE FROM %s c RETURNING c.backfill_captured_at) "
					 "SELECT pg_catalog.count(*), pg_catalog.min(d.backfill_captured_at) FROM d",
					 job->changes_sql);
	plans->log_consume_all_plan = backfill_keep_plan(exec->plans, sql.data, 0, NULL);

	plans->log_store_plan = backfill_prepare_record_log_store(exec->plans);
}

/*
 * The columns of the log's images but the key, each as "(f.o).col": the
 * images are of the downstream's row type, or of a type of the job's own
 * (capture/capture_change.c).
 */
static char *
image_columns(BackfillJob *job)
{
	Oid			image_type = get_atttype(job->change_table,
										 get_attnum(job->change_table, "backfill_old_row"));
	TupleDesc	desc = lookup_rowtype_tupdesc(image_type, -1);
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		bool		is_key = false;

		for (int k = 0; k < job->npk; k++)
			is_key |= strcmp(job->pk_names[k], NameStr(att->attname)) == 0;
		if (!att->attisdropped && !is_key)
			appendStringInfo(&buf, ", (f.o).%s", quote_identifier(NameStr(att->attname)));
	}
	ReleaseTupleDesc(desc);
	return buf.data;
}

/*
 * The fragments of a chunk's statement, each named for what it reads; the
 * comment of snapshot_chunk_plan says why it reads so.  nargs is the number
 * of the limit's parameter.
 */

/* the upstream's rows after the position that the log has no entry of */
static void
append_upstream_branch(StringInfo buf, BackfillJob *job, const char *cond_u,
					   const char *cond_l, int nargs)
{
	appendStringInfo(buf, "SELECT %s FROM %s WHERE true%s%s ",
					 job->select_sql, backfill_job_scan(job), backfill_filter_and(job), cond_u);
	appendStringInfo(buf, "AND NOT EXISTS (SELECT FROM %s l WHERE %s%s) ",
					 job->changes_sql,
					 backfill_key_compare(job, backfill_pk_exprs(job, "l"), BTEqualStrategyNumber,
										  backfill_pk_exprs(job, "u")),
					 cond_l);
	appendStringInfo(buf, "ORDER BY %s LIMIT $%d + 1", backfill_pk_list(job, "u"), nargs);
}

/* the log's first image of each key after the position, as f(key, o) */
static void
append_log_images(StringInfo buf, BackfillJob *job, const char *cond_l)
{
	char	   *lpk = backfill_pk_list(job, "l");

	appendStringInfo(buf, "SELECT DISTINCT ON (%s) %s, l.backfill_old_row AS o ", lpk, lpk);
	appendStringInfo(buf, "FROM %s l WHERE true%s ORDER BY %s, l.backfill_seq",
					 job->changes_sql, cond_l, lpk);
}

/* the rows the log's images were, read as rows u of the upstream */
static void
append_log_branch(StringInfo buf, BackfillJob *job, const char *cond_l, int nargs)
{
	appendStringInfo(buf, "SELECT %s FROM (SELECT %s%s FROM (",
					 job->select_sql, backfill_pk_list(job, "f"), image_columns(job));
	append_log_images(buf, job, cond_l);
	appendStringInfo(buf, ") f WHERE pg_catalog.num_nonnulls((f.o).%s) OPERATOR(pg_catalog.=) 1) u ",
					 quote_identifier(job->pk_names[0]));
	appendStringInfo(buf, "WHERE true%s ORDER BY %s LIMIT $%d + 1",
					 backfill_filter_and(job), backfill_pk_list(job, "u"), nargs);
}

/* the chunk's rows: the first limit + 1 of both branches, in key order */
static void
append_chunk_select(StringInfo buf, BackfillJob *job, const char *cond_u,
					const char *cond_l, int nargs)
{
	appendStringInfoString(buf, "SELECT x.* FROM ((");
	append_upstream_branch(buf, job, cond_u, cond_l, nargs);
	appendStringInfoString(buf, ") UNION ALL (");
	append_log_branch(buf, job, cond_l, nargs);
	appendStringInfo(buf, ")) x ORDER BY %s LIMIT $%d + 1", backfill_pk_list(job, NULL), nargs);
}

/*
 * The chunk written into the downstream: its first limit rows of select s
 * inserted (ins), their count per vnode (c), and the next key (nxt).
 */
static void
append_chunk_insert(StringInfo buf, BackfillJob *job, const char *select, int nargs)
{
	char	   *pk = backfill_pk_list(job, NULL);

	appendStringInfo(buf, "WITH s AS MATERIALIZED (%s), ", select);
	appendStringInfo(buf, "ins AS (INSERT INTO %s (%s) SELECT %s FROM s ORDER BY %s LIMIT $%d RETURNING %s) ",
					 job->downstream_sql, job->columns_sql, job->columns_sql, pk, nargs, pk);
	appendStringInfoString(buf, "SELECT c.vnodes, c.counts, nxt.* FROM ");
	appendStringInfo(buf, "(SELECT pg_catalog.array_agg(g.v) AS vnodes, pg_catalog.array_agg(g.n) AS counts "
					 "FROM (SELECT %s AS v, pg_catalog.count(*) AS n FROM ins GROUP BY 1) g) c ",
					 backfill_vnode_sql(job, pk));
	appendStringInfo(buf, "LEFT JOIN (SELECT %s FROM s ORDER BY %s OFFSET $%d LIMIT 1) nxt ON true",
					 pk, pk, nargs);
}

/*
 * The chunk query of phase 1: the next limit + 1 rows that pass the filter,
 * as of the snapshot epoch, from a position (inclusive) if any, of a set of
 * vnodes, in key order.  Parameters: the position ($1..$npk), the vnode
 * filter, then the limit.  With insert, it inserts all but the last row
 * downstream and returns one row: the vnodes and their row counts, and the
 * key of the row it did not insert, NULL at the end; without, it returns the
 * rows, for a sink (sink.c).
 */
static SPIPlanPtr
snapshot_chunk_plan(BarrierExecutor *exec, bool has_pos, VnodeFilter filter, bool insert)
{
	BackfillJob *job = exec->job;
	SPIPlanPtr *cached = insert ? &exec->chunk_plans[has_pos][filter] :
		&exec->select_plans[has_pos][filter];
	StringInfoData select;
	StringInfoData sql;
	Oid			argtypes[3 * INDEX_MAX_KEYS + 3];
	int			nargs = 0;
	char	   *cond_u;
	char	   *cond_l;

	if (*cached)
		return *cached;

	cond_u = backfill_chunk_conditions(job, "u", BTGreaterEqualStrategyNumber, has_pos, filter, argtypes, &nargs);
	cond_l = backfill_chunk_conditions(job, "l", BTGreaterEqualStrategyNumber, has_pos, filter, argtypes, &nargs);
	argtypes[nargs++] = INT8OID;

	/*
	 * Each branch reads at most limit + 1 rows in key order, the upstream's
	 * through its primary key, the log's through its index, so that a chunk
	 * costs its own size, not a sort of all the rest of the upstream; the
	 * first limit + 1 rows of the union are among them.  The anti-join
	 * repeats the position on the log, which the planner would not infer,
	 * so that it starts at the position rather than at the log's first key.
	 * An image is read as a row u of the upstream, its key from the log's
	 * (which orders it), so that the columns and the filter are computed
	 * from it as from a live row.  An image of no row has no key: counted
	 * with num_nonnulls(), since IS NOT NULL of a composite key with a NULL
	 * field is false too.  The fragments are built by the append_* functions
	 * above.
	 */
	initStringInfo(&select);
	append_chunk_select(&select, job, cond_u, cond_l, nargs);
	if (!insert)
	{
		*cached = backfill_keep_plan(exec->plans, select.data, nargs, argtypes);
		return *cached;
	}

	initStringInfo(&sql);
	append_chunk_insert(&sql, job, select.data, nargs);
	*cached = backfill_keep_plan(exec->plans, sql.data, nargs, argtypes);
	return *cached;
}

/*
 * Read one chunk of phase 1 through an INSERT ... SELECT, into total, the
 * vnodes' row counts and nextkey.  Returns whether the vnodes have been read
 * to the end (there is no next key).
 */
static bool
insert_chunk(BarrierExecutor *exec, SPIPlanPtr plan, Datum *values, int64 *total,
			 Datum *nextkey)
{
	BackfillJob *job = exec->job;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;
	bool		at_end = false;

	if (SPI_execute_plan(plan, values, NULL, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read a snapshot chunk of %s", job->upstream_sql);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;

	d = SPI_getbinval(tup, desc, 1, &isnull);
	if (!isnull)
	{
		Datum	   *vnodes;
		Datum	   *counts;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(d), INT2OID, 2, true, TYPALIGN_SHORT,
						  &vnodes, NULL, &n);
		deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 2, &isnull)),
						  INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &counts, NULL, &n);
		for (int i = 0; i < n; i++)
		{
			job->vnodes[DatumGetInt16(vnodes[i])].row_count += DatumGetInt64(counts[i]);
			*total += DatumGetInt64(counts[i]);
		}
	}
	for (int k = 0; k < job->npk; k++)
	{
		nextkey[k] = SPI_getbinval(tup, desc, 3 + k, &isnull);
		at_end |= isnull;
	}
	return at_end;
}

/*
 * Read one chunk of a group of vnodes as of the snapshot epoch.  Returns the
 * number of rows inserted downstream.
 */
static int64
snapshot_read_chunk(BarrierExecutor *exec, VnodeGroup *group, int64 limit)
{
	BackfillJob *job = exec->job;
	VnodeState *first = &job->vnodes[group->vnodes[0]];
	VnodeFilter filter = backfill_group_filter(exec, group);
	Datum		values[3 * INDEX_MAX_KEYS + 3];
	int			nvalues;
	ChunkSink  *sink;
	int64		total = 0;
	Datum		nextkey[INDEX_MAX_KEYS];
	bool		at_end;
	int			guc_level;

	nvalues = backfill_group_params(exec, group, filter, values);
	values[nvalues++] = Int64GetDatum(limit);
	guc_level = backfill_plan_by_index_begin();
	sink = backfill_sink_begin(exec, limit, true);
	if (sink != NULL)
	{
		int64		vnode_rows[BACKFILL_VNODE_COUNT] = {0};
		Datum		lastkey[INDEX_MAX_KEYS];
		bool		has_last;
		bool		has_next;

		backfill_sink_run(sink, snapshot_chunk_plan(exec, first->has_pos, filter, false),
						  values);
		total = backfill_sink_end(sink, vnode_rows, lastkey, &has_last, nextkey, &has_next);
		for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
			job->vnodes[v].row_count += vnode_rows[v];
		at_end = !has_next;
	}
	else
		at_end = insert_chunk(exec, snapshot_chunk_plan(exec, first->has_pos, filter, true),
							  values, &total, nextkey);
	backfill_plan_by_index_end(guc_level);

	for (int i = 0; i < group->nvnodes; i++)
	{
		VnodeState *vs = &job->vnodes[group->vnodes[i]];

		if (at_end)
		{
			/* Consumed at the snapshot epoch: no position */
			vs->finished = true;
			vs->has_pos = false;
			for (int k = 0; k < job->npk; k++)
				vs->pos_null[k] = true;
		}
		else
			backfill_set_position(exec, vs, nextkey);
		vs->epoch = snapshot_job(job)->snapshot_epoch;
		vs->dirty = true;
	}
	if (sink == NULL)
		SPI_freetuptable(SPI_tuptable);
	return total;
}

/*
 * Whether every vnode has finished phase 1, as committed by all the
 *		actors; with log_store_too, whether every actor has caught up too.
 */
static bool
snapshot_everywhere(BackfillJob *job, bool log_store_too)
{
	Oid			types[2] = {INT8OID, BOOLOID};
	Datum		values[2] = {Int64GetDatum(job->job_id), BoolGetDatum(log_store_too)};

	return backfill_spi_true_args(psprintf("SELECT (SELECT pg_catalog.count(*) = %d AND pg_catalog.bool_and(is_epoch_finished) "
										   "        FROM %s WHERE vnode BETWEEN 0 AND %d) "
										   "   AND (NOT $2 OR (SELECT pg_catalog.bool_and(log_store_caught_up) "
										   "                   FROM backfill.actor WHERE job_id = $1))",
										   BACKFILL_VNODE_COUNT, job->state_sql,
										   BACKFILL_VNODE_COUNT - 1),
								  2, types, values);
}

/* count the vnodes of the rows a forwarding statement returned */
static void
count_returned_vnodes(int64 *counts)
{
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int16		v = DatumGetInt16(SPI_getbinval(SPI_tuptable->vals[i],
													SPI_tuptable->tupdesc, 1, &isnull));

		if (!isnull && v >= 0 && v < BACKFILL_VNODE_COUNT)
			counts[v]++;
	}
}

/*
 * The log store part of a barrier of an actor whose vnodes have all finished
 * phase 1.  Returns false while other vnodes are still in phase 1, when
 * there is nothing to do but wait.
 */
static bool
log_store_barrier(BarrierExecutor *exec, int actor)
{
	BackfillJob *job = exec->job;
	SnapshotPlans *plans = exec->kind_state;
	BackfillActor *a = &job->actors[actor];
	SnapshotActor *sa = snapshot_actor(job, actor);
	int64		counts[BACKFILL_VNODE_COUNT] = {0};
	Datum		values[2];
	bool		isnull;
	int64		consumed;
	Datum		oldest;
	char	   *matching;
	int			guc_level;
	bool		all_vnodes = a->vnode_start == 0 && a->vnode_end == BACKFILL_VNODE_COUNT - 1;

	if (!sa->in_log_store)
	{
		/* inside the barrier's connection: a nested one of its own */
		if (!snapshot_everywhere(job, false))
			return false;
		/* the downstream's indexes, built once by the first actor */
		if (!backfill_indexes_built(job, actor == 0))
			return false;
		sa->in_log_store = true;
	}

	/*
	 * Every logged key of the actor's vnodes that this snapshot sees: its
	 * downstream row becomes the upstream's.  Counted per vnode, a changed
	 * row twice, as RisingWave counts an update.
	 */
	matching = psprintf("SELECT %s FROM %s c WHERE %s BETWEEN %d AND %d",
						backfill_pk_list(job, "c"), job->changes_sql,
						backfill_vnode_sql(job, backfill_pk_list(job, "c")),
						a->vnode_start, a->vnode_end);
	if (all_vnodes)
		matching = psprintf("SELECT %s FROM %s c", backfill_pk_list(job, "c"), job->changes_sql);

	/*
	 * In key order: the log's keys through its index, each once, merged with
	 * the upstream's or the downstream's key, or looked up there one by one;
	 * not hashed, which would write the downstream in the hash's order, a
	 * leaf page of its key's index after another at random.
	 */
	guc_level = backfill_plan_by_index_begin();
	(void) set_config_option("enable_hashagg", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	if (backfill_sync_in_place(job))
	{
		/* a foreign key references the downstream: in place (sql.c) */
		if (SPI_execute(backfill_sync_upsert_matching_sql(job, matching, true), false, 0) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "could not forward the changes of %s", job->upstream_sql);
		count_returned_vnodes(counts);
		SPI_freetuptable(SPI_tuptable);
		if (SPI_execute(backfill_sync_delete_gone_matching_sql(job, matching, true), false, 0) != SPI_OK_DELETE_RETURNING)
			elog(ERROR, "could not forward the changes of %s", job->upstream_sql);
	}
	else
	{
		if (SPI_execute(backfill_sync_delete_sql(job, matching, true), false, 0) != SPI_OK_DELETE_RETURNING)
			elog(ERROR, "could not forward the changes of %s", job->upstream_sql);
		count_returned_vnodes(counts);
		SPI_freetuptable(SPI_tuptable);
		if (SPI_execute(backfill_sync_insert_sql(job, matching, true), false, 0) != SPI_OK_INSERT_RETURNING)
			elog(ERROR, "could not forward the changes of %s", job->upstream_sql);
	}
	count_returned_vnodes(counts);
	SPI_freetuptable(SPI_tuptable);
	backfill_plan_by_index_end(guc_level);

	/* consumed: exactly the entries this snapshot sees */
	values[0] = Int16GetDatum(a->vnode_start);
	values[1] = Int16GetDatum(a->vnode_end);
	if (SPI_execute_plan(all_vnodes ? plans->log_consume_all_plan : plans->log_consume_plan,
						 values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not consume the log store of %s", job->upstream_sql);
	consumed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	oldest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	sa->lag_ms = 0;
	if (!isnull)
	{
		long		secs;
		int			usecs;

		TimestampDifference(DatumGetTimestampTz(oldest), GetCurrentTimestamp(), &secs, &usecs);
		sa->lag_ms = (int64) secs * 1000 + usecs / 1000;
	}
	SPI_freetuptable(SPI_tuptable);
	sa->caught_up = consumed <= job->chunk_size;
	backfill_count_changes_applied(consumed);

	/* Consumed at the epoch that ends here, with its rows */
	for (int v = a->vnode_start; v <= a->vnode_end; v++)
	{
		VnodeState *vs = &job->vnodes[v];

		vs->epoch = job->epoch;
		vs->row_count = counts[v];
		vs->dirty = true;
	}
	return true;
}

/* phase 1 forwards nothing; the log store, once every vnode is done */
static void
snapshot_barrier_changes(BarrierExecutor *exec, int first, int last, TimestampTz deadline)
{
	bool		waiting = false;

	for (int a = first; a <= last; a++)
		if (backfill_vnodes_finished(exec->job, a))
			waiting |= !log_store_barrier(exec, a);
	if (waiting)
		backfill_sleep_until(deadline);
}

static void
snapshot_persist(BarrierExecutor *exec)
{
	SnapshotPlans *plans = exec->kind_state;

	backfill_persist_vnodes(exec, plans->persist_plan);
}

/*
 * Record an actor's barrier in backfill.actor.  In phase 1 its row count is
 * its snapshot rows; in the log store it keeps that count and records its
 * lag instead.
 */
static void
snapshot_update_actor(BarrierExecutor *exec, BackfillActor *actor)
{
	BackfillJob *job = exec->job;
	SnapshotPlans *plans = exec->kind_state;
	SnapshotActor *sa = snapshot_actor(job, actor - job->actors);
	int64		rows = 0;

	if (sa->in_log_store)
	{
		backfill_run_record_log_store(plans->log_store_plan, actor->actor_id, job->epoch,
									  sa->lag_ms, sa->caught_up);
		return;
	}
	for (int v = actor->vnode_start; v <= actor->vnode_end; v++)
		rows += job->vnodes[v].row_count;
	backfill_record_actor(exec, actor, rows);
}

/* the log store is the snapshot kind's own phase */
static const char *
snapshot_actor_phase(BackfillJob *job, int actor)
{
	if (job->kind_data != NULL && snapshot_actor(job, actor)->in_log_store)
		return "log store";
	return NULL;
}

/*
 * The log entries of an actor's vnodes (actor -1: every actor's) left to
 * consume, once it is in the log store: the backlog of its catch-up.
 */
static int64
snapshot_backlog(BackfillJob *job, int actor)
{
	bool		any = false;
	int			first = actor < 0 ? 0 : actor;
	int			last = actor < 0 ? job->nactors - 1 : actor;
	char	   *sql;
	bool		isnull;
	int64		n;

	if (job->kind_data == NULL)
		return -1;
	for (int a = first; a <= last; a++)
		any |= snapshot_actor(job, a)->in_log_store;
	if (!any)
		return -1;
	sql = psprintf("SELECT pg_catalog.count(*) FROM %s c", job->changes_sql);
	if (actor >= 0)
		sql = psprintf("%s WHERE %s BETWEEN %d AND %d", sql,
					   backfill_vnode_sql(job, backfill_pk_list(job, "c")),
					   job->actors[actor].vnode_start, job->actors[actor].vnode_end);
	/* not read-only: it must see what this barrier consumed */
	if (SPI_execute(sql, false, 0) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not count the log store of %s", job->upstream_sql);
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/* an actor is done when its vnodes are, and its log store has caught up */
static bool
snapshot_actor_finished(BackfillJob *job, int actor)
{
	return backfill_vnodes_finished(job, actor) && snapshot_actor(job, actor)->caught_up;
}

static bool
snapshot_finished_everywhere(BackfillJob *job)
{
	return snapshot_everywhere(job, true);
}

static void
snapshot_recount_actors(int64 job_id, const char *state_sql)
{
	backfill_recount_vnode_actors(job_id, state_sql, false);
}

/* the vnodes stay on their actors until the job follows the upstream */
static void
snapshot_reschedule_refusal(int64 job_id, char **detail, char **hint)
{
	*detail = psprintf("Backfill job %lld has not finished, and a snapshot backfill keeps its vnodes on their actors until it follows the upstream directly.",
					   (long long) job_id);
	*hint = pstrdup("Wait until the job has finished.");
}

/*
 * job_state's rows: one per vnode with its actor; current_pos is the next
 * row to read, finished is is_epoch_finished
 */
static char *
snapshot_state_query(const char *state_sql, const char *position)
{
	return psprintf("SELECT a.actor_id, v.vnode, "
					"       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, "
					"       coalesce(s.is_epoch_finished, false), coalesce(s.row_count, 0), "
					"       s.epoch, NULL::jsonb "
					"  FROM generate_series(0, %3$d) AS v(vnode) "
					"  JOIN backfill.actor a ON a.job_id = $1 AND v.vnode BETWEEN a.vnode_start AND a.vnode_end "
					"  LEFT JOIN %2$s s ON s.vnode = v.vnode "
					" ORDER BY v.vnode", position, state_sql, BACKFILL_VNODE_COUNT - 1);
}

/*
 * kind.h: verify_source.  A backfilling job covers, per vnode, the keys
 * below its position, the next row it reads; the keys logged since its
 * snapshot are pending, not differences.  A finished job covers every key.
 */
static void
snapshot_verify_source(const VerifyJob *job, VerifySource *source)
{
	backfill_verify_vnode_source(job, source, "is_epoch_finished", BTLessStrategyNumber);
}

const KindRoutine backfill_snapshot_routine = {
	.kind = BACKFILL_KIND_SNAPSHOT,
	.reserved_columns = snapshot_reserved_columns,
	.capture = CAPTURE_LOG,
	.recount_total = false,		/* that of its snapshot, counted by create_job */
	.needs_job_column = "snapshot_epoch",	/* version 1.1 */
	.builds_indexes_once = true,
	.snapshot_backfill = true,
	.create_state_table = snapshot_create_state_table,
	.after_create = snapshot_after_create,
	.load_state = snapshot_load_state,
	.prepare = snapshot_prepare,
	.barrier_changes = snapshot_barrier_changes,
	.read_chunk = snapshot_read_chunk,
	.persist = snapshot_persist,
	.update_actor = snapshot_update_actor,
	.actor_phase = snapshot_actor_phase,
	.backlog = snapshot_backlog,
	.actor_finished = snapshot_actor_finished,
	.finished_everywhere = snapshot_finished_everywhere,
	.recount_actors = snapshot_recount_actors,
	.reschedule_refusal = snapshot_reschedule_refusal,
	.verify_source = snapshot_verify_source,
	.state_query = snapshot_state_query,
};
