/*-------------------------------------------------------------------------
 *
 * driver.c
 *	  The barrier loop, one committed transaction per barrier: the same for
 *	  a run in the foreground (CALL backfill.run_job, every actor) and for a
 *	  background worker (one actor).
 *
 * Every run after the first is a restart, as when RisingWave recovers a
 * streaming job: the state is decoded and the kind's recovery check runs
 * before anything else (backfill_prepare_run).  Then each barrier runs in a
 * transaction of its own, started REPEATABLE READ before it takes its
 * snapshot; a kind that fetches its changes does so in a transaction just
 * before.  A kill at any moment loses only the barrier in flight.
 *
 * A run in the foreground fetches before every barrier, so that stepping
 * through barriers (run_job's max_barriers) sees each change at the next
 * one.  A worker fetches before a barrier only when it has not fetched for
 * a barrier interval, or its last fetch stopped at its limit with more
 * waiting: a remote actor commits at the end of every split, and the
 * fetches before barriers that come faster than the interval would go to
 * every source for the few changes of a fraction of a second.  The kinds
 * that fetch allow a change to arrive a barrier late (kind.h: fetch), and
 * the final barrier fetches under its lock whatever came before.
 *
 * The loop ends when the barriers asked for have run, when the job (or the
 * worker's actor) has finished, when the job is no longer backfilling, or
 * when a worker is asked to stop.  When the last actor finishes, the final
 * barrier runs; when several actors finish at once, the first to get the
 * upstream's lock does it and the others find the job finished.
 *
 * A job whose upstream has no trigger of ours (job->follows: its source is
 * another server) keeps following it after the finish in a worker: the one
 * that ran the final barrier, or the one start_job or the launcher starts
 * for a finished job (backfill_follow).  Each round is the kind's
 * after_finish (what the upstream committed so far, applied), committed,
 * then a wait of a barrier interval, until stop_job.
 *
 * Between two barriers the loop reads postgresql.conf again if it was asked
 * to (SIGHUP), so a reload of the pacing settings takes effect at the next
 * barrier, in workers and in run_job alike.  A worker logs its progress at
 * most every backfill.log_progress_interval: the job's progress as
 * ddl_progress shows it, its actor's rows per second, the job's ETA and what
 * holds the actor back.  A run in the foreground sends the job's progress to
 * its client at most every backfill.client_progress_interval (progress.c).
 * While an actor catches up (a snapshot job's log store: kind.h, backlog),
 * the line has the changes left, the changes applied per second since the
 * previous line and the ETA at that rate instead: the snapshot's rows are
 * all read then, and their ETA would say 00:00:00 while changes are left.
 * The driver counts each barrier and its rows for the line that ends the
 * run (lib/lines.c).
 * After each barrier, each actor publishes what it did in its live entry
 * (registry.c), which backfill.progress shows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "replication/slot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/job_run_rows.h"
#include "copy/copy.h"
#include "copy/index_build.h"
#include "kinds/kind.h"
#include "lib/lib.h"
#include "runtime/driver.h"
#include "runtime/executor.h"
#include "runtime/pacing.h"

/*
 * backfill.barrier_interval_ms: how long an executor reads snapshot chunks
 * before it commits a barrier.  RisingWave's default barrier interval is one
 * second.  Zero means exactly one chunk per actor per barrier, which makes
 * tests deterministic.
 */
int			backfill_barrier_interval_ms = 1000;

/* backfill.log_progress_interval: seconds between a worker's progress lines */
static int	log_progress_interval_s = 60;

/* define the settings the loop reads; from _PG_init */
void
backfill_driver_init(void)
{
	DefineCustomIntVariable("backfill.barrier_interval_ms",
							"Time an executor reads the snapshot between two barriers.",
							"Every unfinished actor reads at least one chunk per barrier. "
							"Zero means exactly one chunk per actor per barrier.",
							&backfill_barrier_interval_ms,
							1000,
							0,
							3600 * 1000,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("backfill.log_progress_interval",
							"Time between two lines of progress a background worker writes to the server log.",
							"Zero turns the lines off.",
							&log_progress_interval_s,
							60,
							0,
							INT_MAX / 1000,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}

/* backfill.log_progress_interval in ms, for the lines of a worker's run */
int
backfill_log_progress_interval_ms(void)
{
	return log_progress_interval_s * 1000;
}

/*
 * Where the rate of a catch-up is measured from: the time and the run's
 * count of changes applied at the previous line, or at the start of the
 * first barrier that applied any (at is 0 before that).
 */
typedef struct CatchupMark
{
	TimestampTz at;
	int64		applied;
} CatchupMark;

/* an ETA of seconds as hh:mm:ss, or "unknown" when negative or absurd */
static void
eta_text(double seconds, char *buf, size_t size)
{
	if (seconds >= 0 && seconds < (double) INT64CONST(1000000000))
	{
		int64		s = (int64) rint(seconds);

		snprintf(buf, size, "%02lld:%02d:%02d", (long long) (s / 3600),
				 (int) (s / 60 % 60), (int) (s % 60));
	}
	else
		strlcpy(buf, "unknown", size);
}

/*
 * The line of an actor (its index; -1: every actor) catching up, when it
 * is: the job's progress, the backlog (the changes captured while the
 * snapshot was read that are still to apply), the changes applied per
 * second since the previous line and the ETA at that rate; "unknown" while
 * there is no rate yet, never 00:00:00 while changes are left.  Returns
 * false, printing nothing, when no such actor is catching up.  In the
 * barrier's transaction, connected to SPI.
 */
static bool
catchup_line(BarrierExecutor *exec, int actor, const char *progress, CatchupMark *mark)
{
	BackfillJob *job = exec->job;
	RoleContext owner;
	int			guc_level;
	int64		backlog;
	int64		applied = backfill_run_counts(NULL)->changes_applied;
	TimestampTz now = GetCurrentTimestamp();
	double		rate = -1;
	char		rate_buf[64];
	char		eta_buf[64];

	/* the log is the job's owner's to read, as its barriers read it */
	backfill_owner_enter(job->owner, false, &owner);
	guc_level = backfill_pin_search_path(job);
	backlog = backfill_kind_backlog(exec->kind, job, actor);
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&owner);
	if (backlog < 0)
		return false;

	if (mark->at != 0 && now > mark->at)
		rate = (applied - mark->applied) / ((now - mark->at) / 1000000.0);
	mark->at = now;
	mark->applied = applied;
	if (rate >= 0)
		snprintf(rate_buf, sizeof(rate_buf), "%.0f changes/s", rate);
	else
		strlcpy(rate_buf, "changes/s unknown", sizeof(rate_buf));
	/* a second at least while changes are left: 00:00:00 means none */
	eta_text(backlog == 0 ? 0 : rate > 0 ? Max(ceil(backlog / rate), 1) : -1,
			 eta_buf, sizeof(eta_buf));
	backfill_line("%s, catching up: %lld change%s left, %s, ETA %s",
				  progress ? progress : "no progress", (long long) backlog,
				  backlog == 1 ? "" : "s", rate_buf, eta_buf);
	return true;
}

/*
 * The progress total of a restarted job: the upstream's rows as the catalog
 * estimates them (size.c), without reading one, as pg_stat_progress_*
 * takes a table's size.  -1, keeping the total create_job counted, for a
 * job with a filter (the estimate is of the whole table) or an upstream
 * that has no estimate yet.
 */
static int64
estimate_upstream(BackfillJob *job)
{
	int64		blocks;
	int64		tuples;

	if (job->filter != NULL ||
		!backfill_measure_upstream(job->upstream, false, &blocks, &tuples))
		return -1;
	return tuples;
}

/*
 * backfill_prepare_run
 *		What a run does before its first barrier: decode the state, run the
 *		recovery check if this is a restart, record the start and put the
 *		triggers as the status says.  Caller is connected to SPI in a
 *		non-atomic context; a failed check is committed on the job, then
 *		raised.  Returns false when the job has finished already, so there is
 *		nothing to run.
 */
bool
backfill_prepare_run(BackfillJob *job, bool background)
{
	const KindRoutine *kind = backfill_kind_routine(job->kind);

	/* the slots of cdc jobs a crash kept from dropping theirs, any job's */
	backfill_drop_leftover_slots();
	/* a policy may apply to the owner since create_job: copy no part of it */
	if (job->status != BACKFILL_STATUS_FINISHED)
		backfill_check_unfiltered_copy(job->upstream, job->owner);
	kind->load_state(job);
	if (job->runs > 0)
		backfill_kind_recovery_check(kind, job);
	/* create_job counted it; a restart takes the catalog's estimate */
	backfill_record_start(job, background,
						  kind->recount_total && job->runs > 0 ? estimate_upstream(job) : -1);
	backfill_assert_triggers(job);
	if (job->status == BACKFILL_STATUS_FINISHED)
	{
		/* a crash may have come between the finish and what follows it */
		backfill_kind_after_finish(kind, job->job_id);
		backfill_give_foreign_keys(job);
		return false;
	}
	return true;
}

/*
 * Write a worker's progress to the server log: the job's progress as
 * ddl_progress shows it, the actor's rows per second, the job's ETA and what
 * held the actor back in its last barrier.  In the barrier's transaction,
 * after the barrier.
 */
static void
log_progress(BarrierExecutor *exec, int actor, CatchupMark *mark)
{
	BackfillJob *job = exec->job;
	double		rate = backfill_pacing_rows_per_second(exec->pacing, actor);
	const char *throttled_by = backfill_pacing_throttled_by(exec->pacing, actor);
	char	   *progress = NULL;
	char	   *eta = NULL;
	char		rate_text[64];

	backfill_spi_enter();
	/* eta is in backfill.jobs from the catalog that records the pace on */
	backfill_job_progress_text(job->job_id, exec->pace_plan != NULL, &progress, &eta);
	if (catchup_line(exec, actor, progress, mark))
	{
		backfill_spi_leave();
		return;
	}
	if (rate >= 0)
		snprintf(rate_text, sizeof(rate_text), "%.0f rows/s", rate);
	else
		strlcpy(rate_text, "rows/s unknown", sizeof(rate_text));
	ereport(LOG,
			(errmsg("backfill job %lld actor %d: %s, %s, ETA %s%s%s",
					(long long) job->job_id, job->actors[actor].actor_id,
					progress ? progress : "no progress", rate_text, eta ? eta : "unknown",
					throttled_by ? ", throttled by " : "", throttled_by ? throttled_by : "")));
	backfill_spi_leave();
}

/*
 * Send a foreground run's progress to its client: the job's progress as
 * ddl_progress shows it, the rows per second of its actors that still read,
 * the ETA at that rate, and what held the first held-back actor back in the
 * last barrier.  In the barrier's transaction, after the barrier.
 */
static void
client_progress(BarrierExecutor *exec, CatchupMark *mark)
{
	BackfillJob *job = exec->job;
	double		rate = -1;
	const char *throttled_by = NULL;
	char	   *progress = NULL;
	double		eta = -1;
	double		left;

	for (int a = 0; a < job->nactors; a++)
	{
		double		r = backfill_pacing_rows_per_second(exec->pacing, a);

		if (r >= 0 && !backfill_actor_finished(job, a))
			rate = Max(rate, 0) + r;
		if (throttled_by == NULL)
			throttled_by = backfill_pacing_throttled_by(exec->pacing, a);
	}
	backfill_spi_enter();
	if (backfill_job_rows_left(job->job_id, &progress, &left) && rate > 0)
		eta = Max(left, 0) / rate;
	if (catchup_line(exec, -1, progress, mark))
	{
		backfill_spi_leave();
		return;
	}
	backfill_progress_send(job->job_id, progress, rate, eta, throttled_by);
	backfill_spi_leave();
}

/* the phase an actor is in, as backfill.progress shows it */
static const char *
actor_phase(BackfillJob *job, int actor)
{
	const char *phase = backfill_kind_actor_phase(backfill_kind_routine(job->kind), job, actor);

	if (phase != NULL)
		return phase;
	if (backfill_actor_finished(job, actor))
		return "done";
	return "snapshot";
}

/*
 * Publish an actor's live entry: its phase, and after a barrier its rows,
 * its epoch, its pace and the position of its first unfinished vnode.
 */
static void
publish_actor(BarrierExecutor *exec, int actor, bool barrier)
{
	static MemoryContext publish_cxt = NULL;
	BackfillJob *job = exec->job;
	BackfillActor *ba = &job->actors[actor];
	BackfillLiveReport report;
	MemoryContext old;

	/* the position's text, every barrier of a long run: freed at once */
	if (publish_cxt == NULL)
		publish_cxt = AllocSetContextCreate(TopMemoryContext, "backfill live actor",
											ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(publish_cxt);
	memset(&report, 0, sizeof(report));
	report.phase = actor_phase(job, actor);
	report.barrier = barrier;
	if (barrier)
	{
		report.epoch = job->epoch;
		report.rows_per_second = backfill_pacing_rows_per_second(exec->pacing, actor);
		report.throttled_by = backfill_pacing_throttled_by(exec->pacing, actor);
		for (int v = ba->vnode_start; v <= ba->vnode_end; v++)
		{
			VnodeState *vs = &job->vnodes[v];

			report.rows += vs->row_count;
			if (report.position == NULL && !vs->finished && vs->present && vs->has_pos)
				report.position = backfill_pos_text(job, vs);
		}
	}
	backfill_live_report(job->job_id, ba->actor_id, &report);
	MemoryContextSwitchTo(old);
	MemoryContextReset(publish_cxt);
}

/* whether this process has started following a finished job's upstream */
bool		backfill_following = false;

/*
 * backfill_follow
 *		A worker's rounds after the finish of a job that follows its upstream
 *		(see the file header), until the job's workers are asked to stop.
 *		actor_id is the worker's actor, shown in backfill.progress as
 *		following.  Caller is connected to SPI in a non-atomic context,
 *		without a portal (a snapshot pushed or not), and commits what the
 *		last round left.
 */
void
backfill_follow(BackfillJob *job, int32 actor_id)
{
	const KindRoutine *kind = backfill_kind_routine(job->kind);
	char		activity[64];
	/* one for the process: a worker that retries after an error comes back */
	static MemoryContext round = NULL;

	if (round == NULL)
		round = AllocSetContextCreate(TopMemoryContext, "backfill follow round",
									  ALLOCSET_DEFAULT_SIZES);

	snprintf(activity, sizeof(activity), "backfill job %lld: following the upstream",
			 (long long) job->job_id);
	backfill_following = true;
	for (int a = 0; a < job->nactors; a++)
		if (job->actors[a].actor_id == actor_id)
		{
			backfill_live_begin(job, a, "following");
			backfill_live_report(job->job_id, actor_id,
								 &(BackfillLiveReport) {.phase = "following"});
		}
	while (!backfill_stop_requested(job->job_id))
	{
		/*
		 * Each round starts in a context of its own, which outlives the
		 * round's commits: a commit gives back the context current before
		 * it, and one of the transaction it ended would be gone (reading
		 * the configuration file again makes a context under the current
		 * one).
		 */
		MemoryContextSwitchTo(round);
		MemoryContextReset(round);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		pgstat_report_activity(STATE_RUNNING, activity);
		if (!ActiveSnapshotSet())
			PushActiveSnapshot(GetTransactionSnapshot());
		backfill_kind_after_finish(kind, job->job_id);
		MemoryContextSwitchTo(round);
		backfill_commit();
		pgstat_report_activity(STATE_IDLE, activity);
		backfill_sleep_ms(Max(backfill_barrier_interval_ms, 100));
	}
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextReset(round);
}

/*
 * The kind's open_stream (kind.h), before the run's first fetch, in a
 * transaction of its own that holds no lock on the upstream: it may wait
 * for every transaction that has written, one of which may want such a
 * lock.  As the job's owner, as a fetch.  In run_job, a failure is
 * recorded on the job and committed before it is raised, as a worker
 * records its own (worker.c, which retries a deadlock first): an operator
 * who was not watching reads why in last_error.  It runs in a
 * subtransaction, so that the failure can be recorded in this transaction.
 */
static void
open_stream(BackfillJob *job, const KindRoutine *kind, bool worker)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner;

	backfill_next_barrier(true);
	owner = backfill_subxact_begin();
	PG_TRY();
	{
		RoleContext rc;
		int			guc_level;

		backfill_owner_enter(job->owner, false, &rc);
		guc_level = backfill_pin_search_path(job);
		backfill_spi_enter();
		backfill_kind_open_stream(kind, job);
		backfill_spi_leave();
		backfill_unpin_search_path(guc_level);
		backfill_role_leave(&rc);
		backfill_subxact_release(owner);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* what a failed slot creation leaves acquired, as the main loop does */
		if (MyReplicationSlot != NULL)
			ReplicationSlotRelease();
		backfill_subxact_rollback(owner);
		if (!worker)
		{
			backfill_record_failure(job->job_id, edata->sqlerrcode, edata->message,
									edata->detail, true);
			backfill_commit();
		}
		ReThrowError(edata);
	}
	PG_END_TRY();
}

/*
 * Whether to fetch before the next barrier (see the file header): always in
 * the foreground; in a worker, when its last fetch stopped short or is a
 * barrier interval old (caught_up starts false, so the first one is due).
 */
static bool
fetch_due(bool worker, TimestampTz fetched_at, bool caught_up)
{
	if (!worker || !caught_up)
		return true;
	return TimestampDifferenceExceeds(fetched_at, GetCurrentTimestamp(),
									  backfill_barrier_interval_ms);
}

/*
 * backfill_drive
 *		Run barriers of one actor (its index, in a worker) or of every actor
 *		(-1, in CALL backfill.run_job), at most max_barriers of them unless
 *		0.  The job is prepared, its state loaded.  Caller is connected to SPI
 *		in a non-atomic context.
 */
void
backfill_drive(BackfillJob *job, int actor, int max_barriers)
{
	const KindRoutine *kind = backfill_kind_routine(job->kind);
	BarrierExecutor *exec = backfill_executor_create(job);
	bool		worker = actor >= 0;
	int			barriers = 0;
	char		activity[256];
	TimestampTz logged_at = GetCurrentTimestamp();
	TimestampTz told_at = logged_at;
	TimestampTz fetched_at = 0;
	bool		caught_up = false;
	CatchupMark mark = {0};

	backfill_live_begin(job, actor, "snapshot");
	for (int a = 0; a < job->nactors; a++)
		if (!worker || a == actor)
			publish_actor(exec, a, false);

	if (kind->open_stream)
		open_stream(job, kind, worker);
	while (max_barriers <= 0 || barriers < max_barriers)
	{
		int64		rows;
		int64		applied_before;
		TimestampTz barrier_start;

		/* without a portal (a worker), each transaction pushes a snapshot */
		if (kind->fetch && fetch_due(worker, fetched_at, caught_up))
		{
			backfill_next_fetch();
			exec = backfill_executor_refresh(exec);
			caught_up = backfill_run_fetch(exec);
			fetched_at = GetCurrentTimestamp();
		}
		backfill_next_barrier(true);
		exec = backfill_executor_refresh(exec);
		/* nor since the last barrier (the upstream is locked now) */
		backfill_check_unfiltered_copy(job->upstream, job->owner);
		barriers++;
		/* a reload asked for since the last barrier */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (worker && backfill_stop_requested(job->job_id))
			break;
		if (worker ? backfill_actor_finished(job, actor) : backfill_all_finished(job))
		{
			/* a worker finishes the job once every actor has, as committed */
			if (worker)
			{
				if (!kind->finished_everywhere(job))
					break;
				backfill_next_barrier(false);
				pgstat_report_activity(STATE_RUNNING, "final barrier");
			}
			for (int a = 0; a < job->nactors; a++)
				backfill_live_report(job->job_id, job->actors[a].actor_id,
									 &(BackfillLiveReport) {.phase = "finishing"});
			if (backfill_run_finish_barrier(exec))
			{
				backfill_count_barrier();
				backfill_commit();
				/* without a portal (a worker), SPI needs a snapshot pushed */
				if (worker)
					PushActiveSnapshot(GetTransactionSnapshot());
				backfill_kind_after_finish(kind, job->job_id);
				/* the downstream follows now: it may check foreign keys */
				backfill_give_foreign_keys(job);
				if (worker && job->follows)
				{
					backfill_commit();
					backfill_follow(job, job->actors[actor].actor_id);
				}
			}
			break;
		}
		backfill_reload_settings(job);
		if (job->status != BACKFILL_STATUS_BACKFILLING)
			break;
		applied_before = backfill_run_counts(NULL)->changes_applied;
		barrier_start = GetCurrentTimestamp();
		rows = backfill_run_barrier(exec, actor, backfill_barrier_interval_ms, job->rate_limit);
		backfill_count_barrier();
		backfill_count_rows_copied(rows);
		/* a catch-up's rate counts from the first barrier that applied */
		if (mark.at == 0 && backfill_run_counts(NULL)->changes_applied > applied_before)
		{
			mark.at = barrier_start;
			mark.applied = applied_before;
		}
		for (int a = 0; a < job->nactors; a++)
			if (!worker || a == actor)
				publish_actor(exec, a, true);
		if (!worker && backfill_progress_due(told_at))
		{
			client_progress(exec, &mark);
			told_at = GetCurrentTimestamp();
		}
		if (worker)
		{
			const char *throttled_by = backfill_pacing_throttled_by(exec->pacing, actor);

			snprintf(activity, sizeof(activity),
					 "backfill job %lld actor %d: barrier at epoch " INT64_FORMAT ", %lld rows%s%s",
					 (long long) job->job_id, job->actors[actor].actor_id, job->epoch,
					 (long long) rows, throttled_by ? ", throttled by " : "",
					 throttled_by ? throttled_by : "");
			pgstat_report_activity(STATE_RUNNING, activity);
			if (log_progress_interval_s > 0 &&
				TimestampDifferenceExceeds(logged_at, GetCurrentTimestamp(),
										   log_progress_interval_s * 1000))
			{
				log_progress(exec, actor, &mark);
				logged_at = GetCurrentTimestamp();
			}
		}

		/*
		 * No interval to wait out and nothing to read: do not spin.  A worker
		 * judges by what it read, a foreground run, whose snapshot kind reads
		 * nothing in its log store phase, by whether it is paused or held
		 * back by pacing.
		 */
		if (backfill_barrier_interval_ms == 0 &&
			(worker ? rows == 0 :
			 job->rate_limit == 0 || backfill_pacing_held(exec->pacing)))
		{
			if (worker)
			{
				backfill_commit();
				PushActiveSnapshot(GetTransactionSnapshot());
			}
			backfill_sleep_ms(100);
		}
	}
	backfill_commit();
	backfill_executor_free(exec);
}
