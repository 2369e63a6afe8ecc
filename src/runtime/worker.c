/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  Background workers: one per actor of a job, and the launcher.
 *
 * An actor worker (backfill_actor_main) connects as the job's owner, takes
 * the job lock in share mode (the actors of a job share it; run_job,
 * cancel_job and drop_job need it exclusively) and then:
 *
 *	1. prepares the run, once per launch: the first actor to claim it
 *	   decodes the state and runs the recovery check (driver.c); the others
 *	   wait for the outcome and exit if it failed;
 *	2. runs barriers of its own vnodes (driver.c), each one transaction,
 *	   until its vnodes have finished, the job is stopped, or it is no longer
 *	   backfilling;
 *	3. when its vnodes have finished and every other actor's have too, as
 *	   committed in the state table, runs the job's final barrier; when
 *	   several actors finish at once, the first to get the upstream's lock
 *	   does it and the others find the job finished;
 *	4. for a job that follows its upstream without a trigger (job->follows),
 *	   the worker that ran the final barrier, or the one worker started for
 *	   a finished job, follows the upstream until stop_job (driver.c), and
 *	   goes on following when it retries after an error; the workers of the
 *	   other actors end.
 *
 * A SIGHUP makes the worker read postgresql.conf again before its next
 * barrier, so that a change of the pacing settings reaches it there.
 *
 * An error fails the job (status, last_error, SQLSTATE, recorded in a
 * transaction of its own) and ends the worker after writing the error to the
 * server log; the other actors see the status at their next barrier and
 * stop.  A serialization failure or deadlock is retried instead, from the
 * committed state; so is a lost connection to another server (SQLSTATE
 * class 08, remote.c), for as long as it takes, waiting twice as long
 * after each failure up to BACKFILL_MAX_WAIT_MS, with the reason in
 * pg_stat_activity, until stop_job; the server log has each retried error
 * as a LOG line.  stop_job sets the workers' latches: a
 * worker waiting for another server (remote.c), or between two tries to
 * reach it, ends at once, its barrier rolled back, without failing the job.
 *
 * The launcher (backfill_launcher_main) starts with the server when the
 * library is preloaded, and again after a crash.  Job ids and catalogs are
 * each database's, and a backend reads one database only, so the launcher
 * connects to no database, as logical replication's launcher does: it reads
 * pg_database, a shared catalog, and starts for each database that accepts
 * connections and is not a template (backfill.database first) a database
 * worker (backfill_database_worker_main), one at a time, waiting for each to
 * exit.  That worker connects to the database, does nothing where the
 * extension is not installed, and launches every job whose run_mode is
 * 'background' and that is still pending or backfilling, or finished and
 * following its upstream in a worker; their actors then run the recovery
 * check exactly as at any restart.  A job whose owner may no longer log in
 * is failed instead, with the reason: its workers, which connect as the
 * owner, would end before they could record it.  It logs one line for the
 * database, drops the slots that cdc jobs which finished or were cancelled
 * left behind (slot.c), and exits.
 *
 * Then the launcher wakes every second to look for jobs, of any database,
 * whose worker exited unexpectedly (pg_terminate_backend(), a FATAL error),
 * and starts a database worker for each database that has any, unless that
 * database's still runs.  That worker counts each such exit as a failure of
 * the job, with what is known of it as the job's last error, and starts the
 * job again after a pause that doubles with each exit in a row
 * (replace_lost_workers); it stays while a job of its database is to start
 * again and for a minute after, so that it remembers the exits in a row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/job_run_rows.h"
#include "kinds/kind.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PGDLLEXPORT void backfill_actor_main(Datum main_arg);
PGDLLEXPORT void backfill_launcher_main(Datum main_arg);
PGDLLEXPORT void backfill_database_worker_main(Datum main_arg);

/* backfill.database: the database whose jobs the launcher restarts first */
static char *backfill_database = NULL;

/* how often a worker retries a barrier that lost a serialization race */
#define BACKFILL_MAX_RETRIES 10

/* the longest wait between two tries to reach a source that is down */
#define BACKFILL_MAX_WAIT_MS 10000

/*
 * The actor's work after the prepare step: barriers until done (driver.c),
 * or, once the job has finished, following its upstream if this worker is
 * to (may_follow).  Runs in a transaction with SPI connected non-atomically.
 */
static void
actor_barriers(ActorArgs *args, MemoryContext cxt, bool may_follow)
{
	BackfillJob *job;
	int			actor = -1;

	job = backfill_load_job(args->job_id, cxt);
	if (job->status == BACKFILL_STATUS_FINISHED && job->follows && may_follow)
	{
		backfill_follow(job, args->actor_id);
		return;
	}
	if (job->status != BACKFILL_STATUS_BACKFILLING)
		return;
	backfill_kind_routine(job->kind)->load_state(job);
	for (int a = 0; a < job->nactors; a++)
		if (job->actors[a].actor_id == args->actor_id)
			actor = a;
	if (actor < 0)
		return;					/* rescheduled away since the launch */
	backfill_drive(job, actor, 0);
}

/* the job of this actor worker, for job_stopped() */
static int64 my_job = 0;

/* backfill_stop_pending() of this worker: whether stop_job asked it to stop */
static bool
job_stopped(void)
{
	return backfill_stop_requested(my_job);
}

/*
 * record an error that stops the job, in a transaction of its own, unless
 * the job has ended already
 */
static void
record_failure(int64 job_id, ErrorData *edata)
{
	backfill_xact_begin(false);
	/* a failure the recovery check recorded is already there */
	backfill_record_failure(job_id, edata->sqlerrcode, edata->message, edata->detail, true);
	backfill_xact_end();
}

/*
 * A worker's search_path, for its whole session: the role's and the
 * database's defaults (which the job's owner, or the database's, may set)
 * must not decide what the worker's statements mean.  The job's own SQL
 * runs under the job's search_path regardless (privilege.c).
 */
static void
pin_session_path(void)
{
	SetConfigOption("search_path", BACKFILL_CATALOG_PATH, PGC_USERSET, PGC_S_SESSION);
}

/* the end of an actor's run: its last line, then the process exits */
static void actor_exit(const char *how, int code) pg_attribute_noreturn();

static void
actor_exit(const char *how, int code)
{
	backfill_progress_run_end(0, how);
	backfill_worker_exit_expected();
	proc_exit(code);
}

void
backfill_actor_main(Datum main_arg pg_attribute_unused())
{
	ActorArgs	args;
	MemoryContext cxt;
	volatile bool preparer = false;
	volatile int retries = 0;
	volatile bool done = false;
	volatile long wait_ms = 100;
	volatile bool stopped_between = false;
	char		name[NAMEDATALEN];

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	pqsignal(SIGTERM, die);
	/* a reload takes effect at the next barrier (driver.c) */
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(args.dboid, args.owner, 0);
	pin_session_path();
	backfill_attach_worker(args.job_id, args.actor_id);
	/* a wait on another server ends when the job is stopped (remote.c) */
	my_job = args.job_id;
	backfill_set_stop_check(job_stopped);

	snprintf(name, sizeof(name), "backfill job %lld actor %d",
			 (long long) args.job_id, args.actor_id);
	SetConfigOption("application_name", name, PGC_USERSET, PGC_S_SESSION);
	pgstat_report_activity(STATE_RUNNING, "waiting for the job lock");

	/* start_job's transaction holds it exclusively until it commits */
	backfill_lock_job_shared(args.job_id);
	backfill_worker_locked_job();
	/* the run's lines in the server log, the last one when it ends */
	backfill_progress_run_begin(args.job_id, args.actor_id, backfill_log_progress_interval_ms());

	cxt = AllocSetContextCreate(TopMemoryContext, "backfill actor", ALLOCSET_DEFAULT_SIZES);
	while (!done)
	{
		PG_TRY();
		{
			backfill_xact_begin(true);
			if (!preparer && backfill_claim_prepare(args.job_id))
			{
				BackfillJob *job = backfill_load_job(args.job_id, cxt);
				bool		runnable;

				preparer = true;
				pgstat_report_activity(STATE_RUNNING, "recovery check");
				runnable = job->status != BACKFILL_STATUS_CANCELLED &&
					backfill_prepare_run(job, true);
				backfill_commit();
				PushActiveSnapshot(GetTransactionSnapshot());
				backfill_finish_prepare(args.job_id, runnable);
				/* a finished job that follows its upstream: this worker does */
				if (runnable || job->follows)
					actor_barriers(&args, cxt, !runnable || backfill_following);
			}
			else if (preparer || backfill_wait_prepared(args.job_id))
				/* a follower retrying after a lost connection goes on */
				actor_barriers(&args, cxt, backfill_following);

			backfill_xact_end();
			done = true;
		}
		PG_CATCH();
		{
			ErrorData  *edata;
			bool		retry;
			bool		transient;
			bool		stopped;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			/* a lost connection to another server: until it is back */
			transient = ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_CONNECTION_EXCEPTION;
			retry = transient ||
				((edata->sqlerrcode == ERRCODE_T_R_SERIALIZATION_FAILURE ||
				  edata->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED) &&
				 retries < BACKFILL_MAX_RETRIES);

			/*
			 * Stopped while it waited for another server, or while it could
			 * not reach it: the barrier in flight is rolled back, as by an
			 * immediate stop, and the job is not failed.
			 */
			stopped = (transient || edata->sqlerrcode == ERRCODE_QUERY_CANCELED) &&
				job_stopped();
			if (retry || stopped)
			{
				/*
				 * A LOG line, not an ERROR: EmitErrorReport() reports the
				 * error as raised, so the copy is reported at its level
				 */
				FlushErrorState();
				edata->elevel = LOG;
				ThrowErrorData(edata);
			}
			else
			{
				EmitErrorReport();
				FlushErrorState();
			}
			backfill_xact_abort();
			if (preparer)
			{
				/* failed during the prepare step: give it back, or fail it */
				if (retry && !stopped)
					backfill_unclaim_prepare(args.job_id);
				else
					backfill_finish_prepare(args.job_id, false);
				preparer = false;
			}
			if (stopped)
				actor_exit("stopped", 0);
			if (!retry)
			{
				record_failure(args.job_id, edata);
				actor_exit("failed", 1);
			}
			if (!transient)
				retries++;
			else
			{
				/*
				 * backfill.workers and backfill.jobs show why it waits: the
				 * message names the server, libpq's detail what failed
				 */
				pgstat_report_activity(STATE_IDLE,
									   edata->detail ?
									   psprintf("waiting for the source: %s: %s",
												edata->message, edata->detail) :
									   psprintf("waiting for the source: %s", edata->message));
				wait_ms = Min(wait_ms * 2, BACKFILL_MAX_WAIT_MS);
			}
			MemoryContextReset(cxt);
		}
		PG_END_TRY();
		if (!done)
		{
			backfill_sleep_ms(wait_ms);
			/* stop_job wakes the sleep */
			done = stopped_between = job_stopped();
		}
	}
	actor_exit(stopped_between ? "stopped" : "ended", 0);
}

/*
 * launch every job of this database that was running in the background when
 * the server stopped; returns how many were launched, -1 when the database
 * does not have the extension
 */
static int
launch_jobs(void)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "backfill launcher",
											  ALLOCSET_DEFAULT_SIZES);
	int64	   *volatile job_ids = NULL;
	volatile int njobs = 0;
	volatile bool installed = false;
	volatile int launched = 0;
	int			n;

	/* an error here (say, a catalog of another version) must not loop */
	PG_TRY();
	{
		backfill_xact_begin(false);
		installed = SPI_execute("SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'backfill'",
								true, 0) == SPI_OK_SELECT && SPI_processed == 1;
		if (installed && (job_ids = backfill_jobs_to_relaunch(&n, cxt)) != NULL)
			njobs = n;
		backfill_xact_end();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		EmitErrorReport();
		FlushErrorState();
		backfill_xact_abort();
		njobs = 0;
	}
	PG_END_TRY();

	/* one transaction per job, so that one job's error does not stop the rest */
	for (volatile int i = 0; i < njobs; i++)
	{
		MemoryContext oldcxt = CurrentMemoryContext;

		PG_TRY();
		{
			BackfillJob *job;

			backfill_xact_begin(false);
			job = backfill_load_job(job_ids[i], CurrentMemoryContext);
			/* a finished job needs a worker only to follow its upstream */
			if (job->status != BACKFILL_STATUS_FINISHED || job->follows)
			{
				backfill_launch_job(job);
				ereport(LOG,
						(errmsg("backfill launcher restarted backfill job %lld", (long long) job_ids[i])));
				launched++;
			}
			backfill_xact_end();
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			MemoryContextSwitchTo(oldcxt);
			EmitErrorReport();
			FlushErrorState();
			backfill_xact_abort();
			/* an owner who may not log in: fail the job, not at every start */
			if (edata->sqlerrcode == ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION)
				record_failure(job_ids[i], edata);
		}
		PG_END_TRY();
	}
	MemoryContextDelete(cxt);
	return installed ? launched : -1;
}

/*
 * Run work(arg) in a transaction of the launcher's own: an error is written
 * to the server log and the transaction rolled back, so that one job's
 * error does not stop the launcher.  Returns whether work succeeded.
 */
static bool
launcher_xact(void (*work) (void *arg), void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	volatile bool ok = true;

	PG_TRY();
	{
		backfill_xact_begin(false);
		work(arg);
		backfill_xact_end();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		EmitErrorReport();
		FlushErrorState();
		backfill_xact_abort();
		ok = false;
	}
	PG_END_TRY();
	return ok;
}

/*
 * Jobs of this database whose worker exited unexpectedly (registry.c), each
 * started again after a pause of 1 s, doubled at each exit of its workers
 * within BACKFILL_LOST_MEMORY_MS of the last, up to BACKFILL_MAX_WAIT_MS,
 * as the launcher of logical replication waits between two starts of an
 * apply worker.  The launcher keeps what it needs for that in its own
 * memory: the jobs waiting for their pause to end, and when each job's
 * workers last exited and how often in a row.
 */
#define BACKFILL_LAUNCHER_NAP_MS 1000
#define BACKFILL_LOST_MEMORY_MS (10 * 60 * 1000)
#define BACKFILL_LOST_TRACKED 64

typedef struct LostJob
{
	int64		job_id;			/* 0: free */
	int			exits;			/* in a row, each within the memory of the last */
	TimestampTz last_exit;
	TimestampTz relaunch_at;	/* 0: not waiting */
} LostJob;

static LostJob lost_jobs[BACKFILL_LOST_TRACKED];

/* the entry of a job, a free one, or the one that exited longest ago */
static LostJob *
lost_job_entry(int64 job_id)
{
	LostJob    *oldest = &lost_jobs[0];

	for (int i = 0; i < BACKFILL_LOST_TRACKED; i++)
		if (lost_jobs[i].job_id == job_id)
			return &lost_jobs[i];
	for (int i = 0; i < BACKFILL_LOST_TRACKED; i++)
	{
		if (lost_jobs[i].job_id == 0 && lost_jobs[i].relaunch_at == 0)
			return &lost_jobs[i];
		if (lost_jobs[i].relaunch_at == 0 && lost_jobs[i].last_exit < oldest->last_exit)
			oldest = &lost_jobs[i];
	}
	return oldest;
}

/* what note_lost_job records, and whether the job is to run again */
typedef struct LostExit
{
	int64		job_id;
	int32		actor_id;
	int			exit_code;
	bool		relaunch;
} LostExit;

static void
record_lost_exit(void *arg)
{
	LostExit   *lost = arg;

	lost->relaunch = backfill_record_lost_worker(lost->job_id, lost->actor_id, lost->exit_code);
}

/* count the exit on the job; schedule its start if it is still to run */
static void
note_lost_job(int64 job_id, int32 actor_id, int exit_code)
{
	LostExit	lost = {job_id, actor_id, exit_code, false};
	LostJob    *entry;
	TimestampTz now = GetCurrentTimestamp();
	long		pause_ms;

	if (!launcher_xact(record_lost_exit, &lost) || !lost.relaunch)
		return;

	entry = lost_job_entry(job_id);
	if (entry->job_id != job_id ||
		TimestampDifferenceExceeds(entry->last_exit, now, BACKFILL_LOST_MEMORY_MS))
		entry->exits = 0;
	entry->job_id = job_id;
	entry->exits++;
	entry->last_exit = now;
	pause_ms = Min(1000L << Min(entry->exits - 1, 10), BACKFILL_MAX_WAIT_MS);
	entry->relaunch_at = TimestampTzPlusMilliseconds(now, pause_ms);
	ereport(LOG,
			(errmsg("background worker of actor %d of backfill job %lld exited unexpectedly with exit code %d",
					actor_id, (long long) job_id, exit_code),
			 errdetail("The launcher starts the job again in %ld ms (exit %d in a row).",
					   pause_ms, entry->exits)));
}

/* start a job whose pause has ended, unless it is no longer to run */
static void
relaunch_job(void *arg)
{
	int64		job_id = *(int64 *) arg;
	BackfillJob *job = backfill_load_job(job_id, CurrentMemoryContext);

	if (job->background &&
		(job->status == BACKFILL_STATUS_PENDING ||
		 job->status == BACKFILL_STATUS_BACKFILLING ||
		 (job->status == BACKFILL_STATUS_FINISHED && job->follows)))
	{
		backfill_launch_job(job);
		ereport(LOG,
				(errmsg("backfill launcher restarted backfill job %lld", (long long) job_id)));
	}
}

static void
relaunch_lost_job(LostJob *entry)
{
	int64		job_id = entry->job_id;

	entry->relaunch_at = 0;
	(void) launcher_xact(relaunch_job, &job_id);
}

/* returns whether a job of this database is still to start again */
static bool
replace_lost_workers(void)
{
	int64		job_id;
	int32		actor_id;
	int			exit_code;
	TimestampTz now;
	bool		waiting = false;

	while ((job_id = backfill_take_lost_worker(&actor_id, &exit_code)) != 0)
		note_lost_job(job_id, actor_id, exit_code);
	now = GetCurrentTimestamp();
	for (int i = 0; i < BACKFILL_LOST_TRACKED; i++)
	{
		if (lost_jobs[i].relaunch_at != 0 && lost_jobs[i].relaunch_at <= now)
			relaunch_lost_job(&lost_jobs[i]);
		waiting |= (lost_jobs[i].relaunch_at != 0);
	}
	return waiting;
}

/* drop what cdc jobs that finished or were cancelled left of their slots */
static void
drop_leftover_slots(void *arg pg_attribute_unused())
{
	backfill_drop_leftover_slots();
}

/*
 * The database workers: one per database, started by the launcher, connected
 * to that database.  A "start" worker restarts the database's background
 * jobs and drops the slots its cdc jobs left, then exits; a "lost" worker
 * starts again the jobs whose workers exited unexpectedly, and exits once it
 * has had nothing to do for BACKFILL_LOST_LINGER_MS, long enough to remember
 * the exits in a row of a job whose workers keep failing (each pause is
 * BACKFILL_MAX_WAIT_MS at most).
 */
typedef enum DatabaseWorkerMode
{
	DATABASE_WORKER_START,
	DATABASE_WORKER_LOST
} DatabaseWorkerMode;

#define BACKFILL_LOST_LINGER_MS (60 * 1000)

/* a database worker's pass: restart the jobs, log it, drop leftover slots */
static void
restart_database_jobs(void)
{
	int			launched;

	pgstat_report_activity(STATE_RUNNING, "restarting background jobs");
	launched = launch_jobs();
	if (launched < 0)
		return;					/* the extension is not installed here */
	if (launched > 0)
	{
		/* the database's name, read in a transaction */
		backfill_xact_begin(false);
		ereport(LOG,
				(errmsg_plural("backfill launcher restarted %d background job in database \"%s\"",
							   "backfill launcher restarted %d background jobs in database \"%s\"",
							   launched, launched, get_database_name(MyDatabaseId))));
		backfill_xact_end();
	}
	(void) launcher_xact(drop_leftover_slots, NULL);
}

/* a lost worker's pass: until there has been nothing to do for a while */
static void
replace_database_lost_workers(void)
{
	TimestampTz last_busy = GetCurrentTimestamp();

	pgstat_report_activity(STATE_IDLE, NULL);
	for (;;)
	{
		if (replace_lost_workers())
			last_busy = GetCurrentTimestamp();
		else if (TimestampDifferenceExceeds(last_busy, GetCurrentTimestamp(),
											BACKFILL_LOST_LINGER_MS))
			return;
		backfill_sleep_ms(BACKFILL_LAUNCHER_NAP_MS);
	}
}

void
backfill_database_worker_main(Datum main_arg)
{
	DatabaseWorkerMode mode;

	memcpy(&mode, MyBgworkerEntry->bgw_extra, sizeof(mode));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(DatumGetObjectId(main_arg), InvalidOid, 0);
	pin_session_path();
	pgstat_report_appname("backfill database worker");

	if (mode == DATABASE_WORKER_START)
		restart_database_jobs();
	else
	{
		bool		installed = false;

		backfill_xact_begin(false);
		installed = OidIsValid(get_extension_oid("backfill", true));
		backfill_xact_end();
		if (installed)
			replace_database_lost_workers();
	}
	proc_exit(0);
}

/*
 * start_database_worker
 *		Register a database worker for the database; NULL when no background
 *		worker slot is free.  The launcher is told when it stops.
 */
static BackgroundWorkerHandle *
start_database_worker(Oid dboid, DatabaseWorkerMode mode)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "backfill", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "backfill_database_worker_main", BGW_MAXLEN);
	snprintf(worker.bgw_name, BGW_MAXLEN, "backfill database worker for database %u", dboid);
	strlcpy(worker.bgw_type, "backfill database worker", BGW_MAXLEN);
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	memcpy(worker.bgw_extra, &mode, sizeof(mode));
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;
	return handle;
}

/*
 * list_databases
 *		The databases the launcher visits: every one that accepts
 *		connections and is not a template (a connection to a template would
 *		make CREATE DATABASE fail), backfill.database first.  Read from
 *		pg_database, a shared catalog, without a database connection.
 */
static Oid *
list_databases(int *ndbs)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	int			n = 0;
	int			size = 16;
	Oid		   *dboids = MemoryContextAlloc(TopMemoryContext, size * sizeof(Oid));

	backfill_xact_begin(false);
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);

		if (!db->datallowconn || db->datistemplate)
			continue;
		if (n == size)
		{
			size *= 2;
			dboids = repalloc(dboids, size * sizeof(Oid));
		}
		dboids[n] = db->oid;
		/* its jobs get their worker slots first */
		if (backfill_database != NULL && strcmp(NameStr(db->datname), backfill_database) == 0)
		{
			dboids[n] = dboids[0];
			dboids[0] = db->oid;
		}
		n++;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	backfill_xact_end();
	*ndbs = n;
	return dboids;
}

/* restart the background jobs of every database, one database at a time */
static void
restart_every_database(void)
{
	int			ndbs;
	Oid		   *dboids = list_databases(&ndbs);

	for (int i = 0; i < ndbs; i++)
	{
		BackgroundWorkerHandle *handle;

		while ((handle = start_database_worker(dboids[i], DATABASE_WORKER_START)) == NULL)
		{
			ereport(LOG,
					(errmsg("backfill launcher found no free background worker slot for database %u, trying again",
							dboids[i]),
					 errhint("Consider increasing the configuration parameter \"max_worker_processes\".")));
			backfill_sleep_ms(BACKFILL_LAUNCHER_NAP_MS);
		}
		if (WaitForBackgroundWorkerShutdown(handle) == BGWH_POSTMASTER_DIED)
			proc_exit(1);
		pfree(handle);
	}
	pfree(dboids);
}

/*
 * The lost workers' database workers the launcher started, by database: a
 * database with lost workers gets one unless its own still runs.
 */
#define BACKFILL_LOST_DATABASES 64

typedef struct LostDatabase
{
	Oid			dboid;			/* InvalidOid: free */
	BackgroundWorkerHandle *handle;
} LostDatabase;

static LostDatabase lost_databases[BACKFILL_LOST_DATABASES];

/* whether the database worker of a lost database still runs; frees it if not */
static bool
lost_database_busy(LostDatabase *entry)
{
	pid_t		pid;

	if (entry->handle != NULL &&
		GetBackgroundWorkerPid(entry->handle, &pid) != BGWH_STOPPED)
		return true;
	if (entry->handle != NULL)
		pfree(entry->handle);
	memset(entry, 0, sizeof(LostDatabase));
	return false;
}

static void
watch_lost_workers(void)
{
	Oid			dboids[BACKFILL_LOST_DATABASES];
	int			n = backfill_lost_worker_databases(dboids, BACKFILL_LOST_DATABASES);

	for (int i = 0; i < n; i++)
	{
		LostDatabase *free_entry = NULL;
		bool		busy = false;

		for (int k = 0; k < BACKFILL_LOST_DATABASES; k++)
		{
			if (lost_databases[k].dboid == dboids[i])
				busy = lost_database_busy(&lost_databases[k]);
			if (lost_databases[k].dboid == InvalidOid && free_entry == NULL)
				free_entry = &lost_databases[k];
		}
		if (busy || free_entry == NULL)
			continue;
		/* no slot free: the next nap tries again */
		free_entry->handle = start_database_worker(dboids[i], DATABASE_WORKER_LOST);
		if (free_entry->handle != NULL)
			free_entry->dboid = dboids[i];
	}
}

void
backfill_launcher_main(Datum main_arg pg_attribute_unused())
{
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* connected to no database: it reads pg_database only */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("backfill launcher");
	pgstat_report_activity(STATE_RUNNING, "restarting background jobs");

	restart_every_database();

	pgstat_report_activity(STATE_IDLE, NULL);
	for (;;)
	{
		backfill_sleep_ms(BACKFILL_LAUNCHER_NAP_MS);
		watch_lost_workers();
	}
}

/*
 * backfill_worker_init
 *		Define the launcher's setting, read only at server start, and
 *		register the launcher.  Called from _PG_init while
 *		shared_preload_libraries is processed.
 */
void
backfill_worker_init(void)
{
	BackgroundWorker worker;

	DefineCustomStringVariable("backfill.database",
							   "Database whose background jobs the launcher restarts first.",
							   "The launcher restarts the background jobs of every database that accepts connections and is not a template.",
							   &backfill_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	/* after a crash reinitialization it restarts at once regardless */
	worker.bgw_restart_time = 60;
	strlcpy(worker.bgw_library_name, "backfill", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "backfill_launcher_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "backfill launcher", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "backfill launcher", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}
