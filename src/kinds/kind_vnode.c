/*-------------------------------------------------------------------------
 *
 * kind_vnode.c
 *	  The vnode kinds: the legacy no_shuffle backfill and the arrangement
 *	  backfill, which share everything but what they store and the check at
 *	  a restart.
 *
 * A barrier is one REPEATABLE READ transaction, so everything it reads (the
 * upstream's snapshot, the captured keys, the state) comes from a single
 * snapshot S.  Its invariant, for every vnode v with position pos[v]:
 *
 *		downstream rows of v = the upstream rows of v with key <= pos[v],
 *		projected, as of S; every later change is a key in the change table.
 *
 * (all keys once v has finished).  The changes part of a barrier forwards,
 * for every captured key that S can see and whose vnode has finished or
 * whose key is <= the vnode's position, the upstream row as of S (deleted,
 * then inserted again if it still exists).  Keys above the position are
 * dropped: the snapshot reads them later, as RisingWave's "forward only
 * pk <= current_pos".  Then exactly the keys S could see are consumed; keys
 * written by transactions that commit after S stay for the next barrier.
 * Commit order, and sequence order, never matter.  Chunks then read the
 * live upstream in key order (chunk.c).
 *
 * The state table is RisingWave's (section 6 of the reference):
 *
 *		vnode smallint PRIMARY KEY, <pk columns>, backfill_finished boolean,
 *		row_count bigint
 *
 * Legacy rows carry the actor's single position and total count on every
 * vnode, arrangement rows each vnode's own count.  An arrangement row is
 * decoded as RisingWave decodes it (utils.rs): row_count must be a
 * non-NULL, non-negative count and backfill_finished a non-NULL flag,
 * checked in that order, else "invalid backfill state: row_count" /
 * "backfill_finished".  A legacy no-shuffle job's rows are decoded as its
 * executor's recover_backfill_state decodes them, checking nothing: a NULL
 * backfill_finished is false, a NULL row_count 0 (a negative one prints as
 * the u64 RisingWave makes of it), the position is taken as it is, and a
 * vnode without a row is unfinished with no position.
 *
 * The recovery check is the legacy no-shuffle executor's: an actor whose
 * state is unfinished, or missing, cannot resume, and the job fails with
 * RisingWave's message, its current_pos printed as RisingWave's Debug
 * prints an Option<OwnedRow> (rw_debug.c).  Where RisingWave would panic
 * (its assert that all vnodes of an actor agree) the job fails with
 * "invalid backfill state: backfill_finished" instead.  Arrangement jobs
 * need no check beyond decoding: each vnode resumes after its own position.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "copy/copy.h"
#include "kinds/kind.h"
#include "lib/lib.h"

/* what the vnode kinds keep in their executor */
typedef struct VnodePlans
{
	SPIPlanPtr	persist_plan;	/* the state rows of a set of vnodes */
} VnodePlans;

static const char *const vnode_reserved_columns[] = {
	"vnode", "backfill_finished", "row_count", NULL
};

static void
vnode_create_state_table(const JobDefinition *def)
{
	backfill_create_job_table(psprintf("CREATE TABLE %s (vnode pg_catalog.int2 PRIMARY KEY%s, "
									   "backfill_finished pg_catalog.bool, row_count pg_catalog.int8)",
									   def->state_sql, def->key_ddl),
							  def->state_sql, def->owner);
}

static void
no_shuffle_after_create(const JobDefinition *def)
{
	ereport(WARNING,
			(errmsg("backfill job %lld uses the legacy no-shuffle backfill, which cannot resume after an interruption",
					(long long) def->job_id),
			 errdetail("If the job stops before it has finished, every later run fails and the job must be cancelled and recreated."),
			 errhint("Use kind \"arrangement\" for a job that resumes where it stopped.")));
}

/*
 * Decode every row of the state table into job->vnodes; legacy: as
 * recover_backfill_state does, checking nothing.
 */
static void
vnode_load_state(BackfillJob *job, bool legacy)
{
	StringInfoData sql;
	int			npk = job->npk;

	backfill_check_key_unchanged(job, job->state_table);
	backfill_init_vnodes(job);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT vnode, %s, backfill_finished, row_count FROM %s ORDER BY vnode",
					 backfill_pk_list(job, NULL), job->state_sql);
	if (SPI_execute(sql.data, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		VnodeState *vs = backfill_state_row_vnode(job, tup, desc);
		int			vnode = vs - job->vnodes;
		Datum		finished;
		Datum		row_count;
		bool		finished_null;
		bool		row_count_null;

		/* RisingWave's order: row_count, then backfill_finished */
		row_count = SPI_getbinval(tup, desc, npk + 3, &row_count_null);
		if (!legacy && (row_count_null || DatumGetInt64(row_count) < 0))
			backfill_vnode_state_error(job, "row_count", vnode);
		finished = SPI_getbinval(tup, desc, npk + 2, &finished_null);
		if (!legacy && finished_null)
			backfill_vnode_state_error(job, "backfill_finished", vnode);

		/* legacy: recover_backfill_state reads NULL as false and as 0 */
		vs->present = true;
		vs->finished = !finished_null && DatumGetBool(finished);
		vs->row_count = row_count_null ? 0 : DatumGetInt64(row_count);
		backfill_read_position(job, vs, tup, desc, 2);

		/* a position is all of the key or nothing; legacy: as it is */
		if (!legacy && vs->has_pos)
			for (int k = 0; k < npk; k++)
				if (vs->pos_null[k])
					backfill_vnode_state_error(job, "current_pos", vnode);
	}
	SPI_freetuptable(SPI_tuptable);
}

static void
no_shuffle_load_state(BackfillJob *job)
{
	vnode_load_state(job, true);
}

static void
arrangement_load_state(BackfillJob *job)
{
	vnode_load_state(job, false);
}

/*
 * The legacy no-shuffle check at a restart: every actor must have finished.
 * The state of the actor's first vnode decides, as in RisingWave, after
 * checking that all of the actor's vnodes agree.
 */
static void
no_shuffle_recovery_check(BackfillJob *job)
{

	for (int a = 0; a < job->nactors; a++)
	{
		BackfillActor *actor = &job->actors[a];
		VnodeState *first = &job->vnodes[actor->vnode_start];
		bool		first_finished = first->present && first->finished;
		char	   *message;
		char	   *detail;

		for (int v = actor->vnode_start + 1; v <= actor->vnode_end; v++)
		{
			VnodeState *vs = &job->vnodes[v];

			if ((vs->present && vs->finished) != first_finished)
			{
				message = "invalid backfill state: backfill_finished";
				detail = psprintf("In state table %s of backfill job %lld, vnodes %d and %d of actor %d disagree on whether the actor has finished.",
								  job->state_sql, (long long) job->job_id,
								  actor->vnode_start, v, actor->actor_id);
				backfill_fail_job(job, ERRCODE_DATA_CORRUPTED, message, detail, NULL);
			}
		}

		if (first_finished)
			continue;

		/* current_pos={:?} of an Option<OwnedRow>, row_count={} of a u64 */
		message = psprintf("legacy no-shuffle backfill recovered unfinished progress; "
						   "cancel and recreate the streaming job. "
						   "upstream_table_id=%u, fragment_id=%d, actor_id=%d, "
						   "current_pos=%s, row_count=%llu",
						   job->upstream, job->fragment_id, actor->actor_id,
						   backfill_rw_debug_row(first->present, job->npk, first->pos,
												 first->pos_null, job->pk_types),
						   (unsigned long long) (first->present ? first->row_count : 0));
		detail = psprintf("Backfill job %lld copies table %s with the legacy no-shuffle backfill, which cannot resume an interrupted backfill. %s",
						  (long long) job->job_id, job->upstream_sql,
						  first->present && first->has_pos ?
						  psprintf("Actor %d stopped at position %s.", actor->actor_id,
								   backfill_pos_text(job, first)) :
						  psprintf("Actor %d stopped before it had a position.",
								   actor->actor_id));
		backfill_fail_job(job, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message, detail,
						  psprintf("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld), which can also move it to kind \"arrangement\".",
								   (long long) job->job_id, (long long) job->job_id));
	}
}

/*
 * The statements of the vnode kinds: the captured keys a barrier forwards
 * (those of the vnodes $1..$2 whose vnode has finished or that are <= the
 * vnode's position), and the state rows of a set of vnodes that share
 * position and flag.  $4, the epoch, is the snapshot kind's: see
 * backfill_persist_vnodes().
 */
static void
vnode_prepare(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	VnodePlans *plans = MemoryContextAllocZero(exec->cxt, sizeof(VnodePlans));
	StringInfoData sql;
	Oid			argtypes[INDEX_MAX_KEYS + 4];

	exec->kind_state = plans;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT %s FROM %s c JOIN %s s ON s.vnode = %s "
					 "WHERE s.vnode BETWEEN $1 AND $2 AND (s.backfill_finished OR %s)",
					 backfill_pk_list(job, "c"), job->changes_sql, job->state_sql,
					 backfill_vnode_sql(job, backfill_pk_list(job, "c")),
					 backfill_key_compare(job, backfill_pk_exprs(job, "c"), BTLessEqualStrategyNumber,
										  backfill_pk_exprs(job, "s")));
	backfill_prepare_forward(exec, sql.data);

	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "INSERT INTO %s (vnode, %s, backfill_finished, row_count) "
					 "SELECT u.v, %s, $3, u.c FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS u(v, c) "
					 "ON CONFLICT (vnode) DO UPDATE SET backfill_finished = EXCLUDED.backfill_finished, "
					 "row_count = EXCLUDED.row_count",
					 job->state_sql, backfill_pk_list(job, NULL), backfill_pk_params(job, 5));
	backfill_append_excluded_key(&sql, job);
	argtypes[0] = INT2ARRAYOID;
	argtypes[1] = INT8ARRAYOID;
	argtypes[2] = BOOLOID;
	argtypes[3] = INT8OID;
	memcpy(&argtypes[4], job->pk_types, sizeof(Oid) * job->npk);
	plans->persist_plan = backfill_keep_plan(exec->plans, sql.data, 4 + job->npk, argtypes);
}


static void
vnode_persist(BarrierExecutor *exec)
{
	VnodePlans *plans = exec->kind_state;

	backfill_persist_vnodes(exec, plans->persist_plan);
}

/* an actor's snapshot rows: the sum of its vnodes', or the legacy total */
static void
vnode_update_actor(BarrierExecutor *exec, BackfillActor *actor, bool one_total)
{
	BackfillJob *job = exec->job;
	int64		total = 0;

	if (one_total)
		total = job->vnodes[actor->vnode_start].row_count;
	else
		for (int v = actor->vnode_start; v <= actor->vnode_end; v++)
			total += job->vnodes[v].row_count;
	backfill_record_actor(exec, actor, total);
}

static void
no_shuffle_update_actor(BarrierExecutor *exec, BackfillActor *actor)
{
	vnode_update_actor(exec, actor, true);
}

static void
arrangement_update_actor(BarrierExecutor *exec, BackfillActor *actor)
{
	vnode_update_actor(exec, actor, false);
}

/* every vnode has a row that says finished, as all the actors committed */
static bool
vnode_finished_everywhere(BackfillJob *job)
{
	return backfill_spi_true(psprintf("SELECT pg_catalog.count(*) = %d AND pg_catalog.bool_and(backfill_finished) "
									  "FROM %s WHERE vnode BETWEEN 0 AND %d",
									  BACKFILL_VNODE_COUNT, job->state_sql, BACKFILL_VNODE_COUNT - 1));
}

/* one position per actor: new actors could not resume from it */
static void
no_shuffle_reschedule_refusal(int64 job_id, char **detail, char **hint)
{
	*detail = psprintf("Backfill job %lld has not finished, and a legacy no-shuffle backfill keeps one position for all the vnodes of an actor, which new actors could not resume from.",
					   (long long) job_id);
	*hint = psprintf("Wait until the job has finished, or, if it cannot resume, create it again with backfill.recreate_job(%lld, 'arrangement').",
					 (long long) job_id);
}

/*
 * job_state's rows: one per vnode with its actor; a vnode without a row
 * decodes as RisingWave decodes it, not started
 */
static char *
vnode_state_query(const char *state_sql, const char *position)
{
	return psprintf("SELECT a.actor_id, v.vnode, "
					"       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, "
					"       CASE WHEN s.vnode IS NULL THEN false ELSE s.backfill_finished END, "
					"       CASE WHEN s.vnode IS NULL THEN 0 ELSE s.row_count END, "
					"       NULL::bigint, NULL::jsonb "
					"  FROM generate_series(0, %3$d) AS v(vnode) "
					"  JOIN backfill.actor a ON a.job_id = $1 AND v.vnode BETWEEN a.vnode_start AND a.vnode_end "
					"  LEFT JOIN %2$s s ON s.vnode = v.vnode "
					" ORDER BY v.vnode", position, state_sql, BACKFILL_VNODE_COUNT - 1);
}

static void
no_shuffle_recount_actors(int64 job_id, const char *state_sql)
{
	backfill_recount_vnode_actors(job_id, state_sql, true);
}

static void
arrangement_recount_actors(int64 job_id, const char *state_sql)
{
	backfill_recount_vnode_actors(job_id, state_sql, false);
}

/*
 * kind.h: verify_source.  A backfilling job covers, per vnode, the keys up
 * to its position; the keys captured since its last barrier are pending,
 * not differences.  A finished job covers every key.
 */
static void
vnode_verify_source(const VerifyJob *job, VerifySource *source)
{
	backfill_verify_vnode_source(job, source, "backfill_finished", BTLessEqualStrategyNumber);
}

const KindRoutine backfill_no_shuffle_routine = {
	.kind = BACKFILL_KIND_NO_SHUFFLE,
	.reserved_columns = vnode_reserved_columns,
	.capture = CAPTURE_KEYS,
	.recount_total = true,
	.create_state_table = vnode_create_state_table,
	.after_create = no_shuffle_after_create,
	.load_state = no_shuffle_load_state,
	.recovery_check = no_shuffle_recovery_check,
	.prepare = vnode_prepare,
	.barrier_changes = backfill_forward_actors_changes,
	.read_chunk = backfill_read_chunk_per_actor,
	.persist = vnode_persist,
	.update_actor = no_shuffle_update_actor,
	.actor_finished = backfill_vnodes_finished,
	.finished_everywhere = vnode_finished_everywhere,
	.recount_actors = no_shuffle_recount_actors,
	.reschedule_refusal = no_shuffle_reschedule_refusal,
	.verify_source = vnode_verify_source,
	.state_query = vnode_state_query,
};

const KindRoutine backfill_arrangement_routine = {
	.kind = BACKFILL_KIND_ARRANGEMENT,
	.reserved_columns = vnode_reserved_columns,
	.capture = CAPTURE_KEYS,
	.recount_total = true,
	.create_state_table = vnode_create_state_table,
	.load_state = arrangement_load_state,
	.prepare = vnode_prepare,
	.barrier_changes = backfill_forward_actors_changes,
	.read_chunk = backfill_read_chunk_per_vnode,
	.persist = vnode_persist,
	.update_actor = arrangement_update_actor,
	.actor_finished = backfill_vnodes_finished,
	.finished_everywhere = vnode_finished_everywhere,
	.recount_actors = arrangement_recount_actors,
	.verify_source = vnode_verify_source,
	.state_query = vnode_state_query,
};
