/*-------------------------------------------------------------------------
 *
 * executor.c
 *	  One barrier of a job: its kind's changes, rounds of snapshot chunks
 *	  under the rate limit, the state; and the final barrier.
 *
 * A barrier is one REPEATABLE READ transaction, so everything it reads
 * comes from a single snapshot.  It runs, in this order:
 *
 * 1. Changes.  The kind forwards or consumes what was captured (kind.h:
 *	  barrier_changes), as of the barrier's snapshot.
 *
 * 2. Snapshot chunks.  Each actor reads, for each set of its unfinished
 *	  vnodes that share a position, the next chunk (kind.h: read_chunk).
 *	  Reading goes on, round after round, until backfill.barrier_interval_ms
 *	  has passed (one round when 0).
 *
 * 3. State.  The kind persists the changed state, and each actor's row of
 *	  backfill.actor gets the new epoch and row count.
 *
 * The final barrier, run once every vnode has finished, first takes SHARE
 * ROW EXCLUSIVE on the upstream and on each of its partitions, before its
 * snapshot: it waits for the writers in flight, whose keys are captured, and
 * holds off new ones, through the partitioned table or straight into a
 * partition.  It
 * forwards the remaining changes, switches the upstream from the capture
 * trigger to the apply trigger (capture/triggers.c) and marks the job finished.
 * Writers blocked by it then apply their own changes.
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
 * and barriers go on.  Before each chunk, pacing (pacing.c) may hold an actor
 * back too, for the standbys, retained WAL or the job's WAL rate: it then
 * reads no more in the barrier, or waits for the WAL rate's clock.  Each
 * actor's pace (what held it back, its rows per second) goes to its row of
 * backfill.actor with its barrier.
 *
 * A barrier takes its locks on the upstream and the downstream before its
 * statements do, so that a wait for them prints its lines (lib/lines.c).
 *
 * An executor owns its memory and its plans, and frees both.  It never asks
 * which kind a job is: it calls the kind's routine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/pquery.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "capture/capture.h"
#include "catalog/barrier_rows.h"
#include "catalog/catalog_access.h"
#include "kinds/kind.h"
#include "lib/lib.h"
#include "runtime/executor.h"
#include "runtime/pacing.h"

/* the most chunks, and rows, one statement reads in a barrier */
#define BACKFILL_MAX_BATCH_CHUNKS	1024
#define BACKFILL_MAX_BATCH_ROWS		(64 * 1024)

/*
 * Take the locks the barrier's statements take on the upstream (reading
 * it) and the downstream (writing it) before they do, through
 * backfill_lock_relation: a barrier held off by a session that holds either
 * table (an ALTER TABLE waiting for its own lock, a LOCK TABLE) says so in
 * the run's lines, what it waits for and who holds it, where a statement's
 * wait would be silent.  In the order the statements take them.  The
 * executor's plans take them too, when they are made.
 */
static void
lock_tables(BackfillJob *job)
{
	if (OidIsValid(job->upstream))
		backfill_lock_relation(job->upstream, AccessShareLock);
	if (OidIsValid(job->downstream))
		backfill_lock_relation(job->downstream, RowExclusiveLock);
}

/*
 * backfill_executor_create
 *		Prepare the statements of the job's barriers.  Caller is connected to
 *		SPI; the plans are kept across the run's transactions, until
 *		backfill_executor_free().
 */
BarrierExecutor *
backfill_executor_create(BackfillJob *job)
{
	MemoryContext cxt = AllocSetContextCreate(GetMemoryChunkContext(job), "backfill executor",
											  ALLOCSET_DEFAULT_SIZES);
	BarrierExecutor *exec = MemoryContextAllocZero(cxt, sizeof(BarrierExecutor));
	int			guc_level;

	lock_tables(job);
	exec->job = job;
	exec->kind = backfill_kind_routine(job->kind);
	exec->cxt = cxt;
	exec->plans = backfill_kept_plans_create();
	exec->barrier_cxt = AllocSetContextCreate(cxt, "backfill barrier",
											  ALLOCSET_DEFAULT_SIZES);
	guc_level = backfill_pin_search_path(job);
	for (int k = 0; k < job->npk; k++)
		get_typlenbyval(job->pk_types[k], &exec->typlens[k], &exec->typbyvals[k]);

	/* a round's groups: made once, not once per round in the barrier's memory */
	exec->groups = MemoryContextAlloc(cxt, sizeof(VnodeGroup) * BACKFILL_VNODE_COUNT);
	exec->vnode_hasher = MemoryContextAlloc(cxt, sizeof(VnodeHasher));
	if (job->vnode_bounds)
		backfill_vnode_ranges_init(exec->vnode_hasher, job->npk, job->pk_types,
								   job->pk_collations, job->vnode_bounds, cxt);
	else
		backfill_vnode_hasher_init(exec->vnode_hasher, job->npk, job->pk_types, cxt);
	exec->rate_next = MemoryContextAllocZero(cxt, sizeof(TimestampTz) * Max(job->nactors, 1));
	exec->batch = MemoryContextAllocZero(cxt, sizeof(int) * Max(job->nactors, 1));

	exec->actor_plan = backfill_prepare_record_actor(exec->plans);
	exec->kind->prepare(exec);
	exec->finish_plan = backfill_prepare_finish_job(exec->plans);
	/* NULL on a catalog older than the library, until ALTER EXTENSION UPDATE */
	exec->pace_plan = backfill_prepare_record_pace(exec->plans);
	exec->pacing = backfill_pacing_create(job, GetMemoryChunkContext(job));
	backfill_unpin_search_path(guc_level);

	return exec;
}

/*
 * backfill_executor_refresh
 *		The executor to run the next barrier with: this one, or, if a table
 *		of the job was renamed or moved since its plans were made, a new one
 *		(ALTER TABLE ... RENAME disturbs nothing), this one freed.  Caller is
 *		connected to SPI, in a transaction.
 */
BarrierExecutor *
backfill_executor_refresh(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	PacingState *pacing = exec->pacing;

	if (!backfill_names_changed(job))
		return exec;
	backfill_executor_free(exec);
	exec = backfill_executor_create(job);
	pfree(exec->pacing);		/* the run's pacing goes on */
	exec->pacing = pacing;
	return exec;
}

/* free an executor: its plans and its memory */
void
backfill_executor_free(BarrierExecutor *exec)
{
	backfill_kept_plans_free(exec->plans);
	MemoryContextDelete(exec->cxt);
}

/*
 * Whether an actor has nothing left but the final barrier, as its kind says.
 */
bool
backfill_actor_finished(BackfillJob *job, int actor)
{
	return backfill_kind_routine(job->kind)->actor_finished(job, actor);
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
 * One round of an actor: a chunk of each of its sets of vnodes that share a
 * position, as far as the rate limit allows before "deadline".  Returns the
 * rows read, or -1 when the limiter wants the actor to wait past deadline.
 */
static int64
actor_round(BarrierExecutor *exec, int actor, int rate_limit, TimestampTz deadline)
{
	BackfillJob *job = exec->job;
	VnodeGroup *groups = exec->groups;
	int			ngroups = backfill_actor_groups(exec, actor, groups);
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
	limit = backfill_pacing_chunk_rows(exec->pacing, limit);
	for (int g = 0; g < ngroups; g++)
	{
		int64		n;
		TimestampTz until;

		CHECK_FOR_INTERRUPTS();
		/* production first: the standbys, retained WAL, the job's WAL rate */
		while ((until = backfill_pacing_hold(exec->pacing, actor)) != 0)
		{
			if (until > deadline)
				return rows > 0 ? rows : -1;
			backfill_sleep_until(until);
		}
		if (rate_limit > 0)
		{
			if (exec->rate_next[actor] > GetCurrentTimestamp())
				backfill_pacing_held_by(exec->pacing, actor, "rate limit");
			if (exec->rate_next[actor] > deadline)
				return rows > 0 ? rows : -1;
			backfill_sleep_until(exec->rate_next[actor]);
		}
		n = exec->kind->read_chunk(exec, &groups[g], limit);
		backfill_pacing_read(exec->pacing, actor, n);
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

/* whether the kind wants an actor's barrier committed now */
static bool
barrier_full(BarrierExecutor *exec, int actor)
{
	return backfill_kind_barrier_full(exec->kind, exec, actor);
}

/*
 * Record an actor's pace in its row of backfill.actor: what held it back in
 * this barrier, its rows per second over the last minute (0 once its vnodes
 * have finished).  Caller is connected to SPI.
 */
static void
record_pace(BarrierExecutor *exec, int actor)
{
	const char *throttled_by;
	double		rate;

	backfill_pacing_end(exec->pacing, actor);
	if (exec->pace_plan == NULL)
		return;
	throttled_by = backfill_pacing_throttled_by(exec->pacing, actor);
	/* an actor whose vnodes have finished adds nothing to the job's rate */
	rate = backfill_vnodes_finished(exec->job, actor) ? 0 :
		backfill_pacing_rows_per_second(exec->pacing, actor);
	backfill_run_record_pace(exec->pace_plan, exec->job->actors[actor].actor_id, throttled_by, rate);
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
	lock_tables(job);
	backfill_owner_enter(job->owner, false, &owner);
	guc_level = backfill_pin_search_path(job);
	backfill_spi_enter();

	/*
	 * A barrier of one round (no interval) reads one chunk per set of
	 * vnodes, chunk_size rows, as RisingWave's.  Timed barriers keep an
	 * actor's batch from one barrier to the next: how many rows a barrier
	 * reads is the interval's business then, and starting every barrier
	 * again at one chunk costs a statement per doubling, which for a copy
	 * from another server is a round trip and a transaction of the source's
	 * each (a remote job commits at the end of every split).
	 */
	for (int a = first; a <= last; a++)
		if (interval_ms <= 0 || exec->batch[a] == 0)
			exec->batch[a] = 1;
	backfill_pacing_begin(exec->pacing, first, last);
	exec->kind->barrier_changes(exec, first, last, deadline);

	/* paused: only changes and the state move; sit out the interval */
	if (rate_limit == 0)
	{
		for (int a = first; a <= last; a++)
			if (!backfill_vnodes_finished(job, a))
				backfill_pacing_held_by(exec->pacing, a, "paused");
		backfill_sleep_until(deadline);
	}

	for (; rate_limit != 0;)
	{
		bool		all_done = true;
		bool		any_read = false;

		for (int a = first; a <= last; a++)
		{
			int64		rows;

			if (backfill_vnodes_finished(job, a) || barrier_full(exec, a))
				continue;
			rows = actor_round(exec, a, rate_limit, interval_ms > 0 ? deadline : start);
			if (rows >= 0)
			{
				total += rows;
				any_read = true;
			}
			all_done &= backfill_vnodes_finished(job, a) || barrier_full(exec, a);
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

	exec->kind->persist(exec);
	job->epoch = backfill_next_epoch(job->epoch);
	for (int a = first; a <= last; a++)
	{
		exec->kind->update_actor(exec, &job->actors[a]);
		record_pace(exec, a);
	}
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&owner);
	MemoryContextSwitchTo(old);
	MemoryContextReset(exec->barrier_cxt);
	return total;
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
	MemoryContext old;
	bool		finished;
	int			guc_level;
	RoleContext owner;

	/*
	 * Before the snapshot: wait for writers in flight, hold off new ones,
	 * through a partitioned upstream or straight into its partitions.
	 */
	backfill_lock_writers(job->upstream);

	/*
	 * A kind that fetches its changes: its slot lock too, before the
	 * snapshot, so that the snapshot sees every fetch another actor's worker
	 * committed and no fetch commits after it.  Taken after the snapshot (as
	 * the final fetch does anyway), it let an actor that finished at the same
	 * moment commit its last fetch in between, recording an offset equal to
	 * the one the snapshot saw; the final fetch took the offset as seen and
	 * failed to record its own ("could not serialize access due to
	 * concurrent update"), and its worker started over.
	 */
	if (exec->kind->fetch)
		backfill_lock_slot_of(job->job_id);
	if (ActivePortal == NULL && !ActiveSnapshotSet())
		PushActiveSnapshot(GetTransactionSnapshot());	/* a worker */
	backfill_owner_enter(job->owner, false, &owner);

	/* when every actor finishes at once, the first one finishes the job */
	backfill_spi_enter();
	finished = backfill_job_has_finished(job->job_id);
	if (finished)
	{
		backfill_spi_leave();
		backfill_role_leave(&owner);
		return false;
	}

	old = MemoryContextSwitchTo(exec->barrier_cxt);
	guc_level = backfill_pin_search_path(job);

	/* the writers are done: whatever they wrote is captured now */
	backfill_kind_final_changes(exec->kind, exec);
	backfill_forward_changes(exec, 0, BACKFILL_VNODE_COUNT - 1);
	backfill_capture_switch_to_apply(job);

	job->epoch = backfill_next_epoch(job->epoch);
	backfill_run_finish_job(exec->finish_plan, job->job_id, job->epoch);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&owner);
	MemoryContextSwitchTo(old);
	MemoryContextReset(exec->barrier_cxt);
	return true;
}

/*
 * backfill_run_fetch
 *		The kind's fetch before a barrier (kind.h), in the current
 *		transaction, which the caller commits before the barrier starts.
 *		Returns whether it fetched every change there was.
 */
bool
backfill_run_fetch(BarrierExecutor *exec)
{
	MemoryContext old = MemoryContextSwitchTo(exec->barrier_cxt);
	RoleContext owner;
	int			guc_level;
	bool		caught_up;

	backfill_owner_enter(exec->job->owner, false, &owner);
	guc_level = backfill_pin_search_path(exec->job);
	backfill_spi_enter();
	caught_up = backfill_kind_fetch(exec->kind, exec);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&owner);
	MemoryContextSwitchTo(old);
	MemoryContextReset(exec->barrier_cxt);
	return caught_up;
}
