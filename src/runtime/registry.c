/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  Which jobs run in background workers: the registry in shared memory,
 *	  launching a job's workers, stopping them.
 *
 * With the library in shared_preload_libraries, shared memory holds one
 * "run" per job running in the background and one slot per worker, both
 * arrays sized by max_worker_processes, under one LWLock.
 *
 * Job ids are those of one database's catalog: another database has its own
 * job 1.  So runs and slots are keyed by (database, job), and every lookup
 * is of the current database's (MyDatabaseId: backends and workers alike
 * are connected to the job's database); only the caps below count across
 * databases, as the worker processes are the whole server's.
 *
 * Launching a job (start_job, the launcher, reschedule) reserves the run and
 * one slot per actor, then registers one dynamic background worker per actor
 * (worker.c).  A second launch of the same job finds its run and fails.  A
 * worker fills in its pid when it starts and empties its slot when it exits;
 * the last one frees the run.
 *
 * Two settings a superuser sets cap the slots, checked under the registry's
 * lock as a launch reserves them: backfill.max_workers, the workers of every
 * job of every database, and backfill.max_workers_per_role, those of the
 * jobs one role owns (the role they connect as), so that one role cannot
 * take every worker process of the server.  As a role's CONNECTION LIMIT,
 * the latter does not bind the jobs of a superuser.  -1 lifts either.
 *
 * A worker that exits before it has attached to its slot (it failed while it
 * connected, or never started) leaves the slot to whoever next looks at the
 * registry.  Each slot keeps the handle of its worker's registration, which
 * any backend can ask the postmaster about: a slot whose worker has stopped
 * is freed.  A pid could not tell: the launching session may never have
 * learnt it (a statement timeout while it waited for the start), and once
 * the worker is gone the system may give it to another process, which would
 * keep the slot, and its job, running forever.
 *
 * Restarts run the recovery check once per launch, not once per actor: the
 * first worker to claim the run's "prepare" step runs it (driver.c) while the
 * others wait for its outcome; if it fails, they exit.
 *
 * The workers of a job also share the clock of its WAL rate limit (pacing.c)
 * in its run.
 *
 * Stopping sets the run's stop flag, which each worker reads before each
 * barrier, so it stops at the next barrier, and sets the workers' latches,
 * so that one waiting on another server notices it at once (remote.c); an
 * immediate stop also sends SIGTERM, which ends the barrier in flight
 * (rolled back).  The caller waits until every worker has left.
 *
 * DROP EXTENSION and ALTER EXTENSION UPDATE would take locks on the
 * extension's catalogs and functions in an order the workers' barriers take
 * them the other way round, and deadlock with them: a ProcessUtility hook
 * (installed with the registry, which is where workers can exist) stops the
 * workers of this database first for DROP EXTENSION backfill CASCADE, as
 * drop_job stops a job's, and locks the jobs' upstreams against writers
 * (whose triggers would deadlock with the drop as well); it refuses a DROP
 * without CASCADE and an ALTER EXTENSION UPDATE while workers run, naming
 * the jobs.
 *
 * The live actors: every actor that runs now, in a worker or in a session's
 * CALL backfill.run_job, has an entry that its process writes after each
 * barrier (phase, rows, barriers, position, pace) and that backfill.progress
 * reads, as a backend's st_progress_param is read by pg_stat_progress_*.
 * Only what changes between two commits or is known to the running process
 * alone lives here; what the catalogs hold (the job's name, its total) is
 * joined in by the view.  There are max_worker_processes entries for the
 * workers plus BACKFILL_SESSION_ACTORS for runs in sessions; an actor that
 * finds none free is not shown.  A process frees its entries when its run
 * ends and, whatever happens, when it exits.
 *
 * May call: catalog.c, privilege.c and the foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/syscache.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "driver.h"
#include "lib.h"
#include "catalog_access.h"
#include "capture.h"

PG_FUNCTION_INFO_V1(backfill_job_workers);
PG_FUNCTION_INFO_V1(backfill_start_job);
PG_FUNCTION_INFO_V1(backfill_stop_job_workers);
PG_FUNCTION_INFO_V1(backfill_stop_and_lock_job);
PG_FUNCTION_INFO_V1(backfill_job_is_running);
PG_FUNCTION_INFO_V1(backfill_check_workers_1_3);
PG_FUNCTION_INFO_V1(backfill_live_actors);

/* entries of the live actors for runs in sessions, beyond the workers' */
#define BACKFILL_SESSION_ACTORS 128

typedef enum PrepareState
{
	PREPARE_NONE,				/* nobody has claimed it */
	PREPARE_CLAIMED,			/* a worker runs the recovery check */
	PREPARE_DONE,				/* passed: the actors run */
	PREPARE_FAILED				/* failed: the actors exit */
} PrepareState;

typedef struct BackfillRun
{
	Oid			dboid;			/* the database of the job */
	int64		job_id;			/* 0: free */
	int			nworkers;		/* slots still held */
	PrepareState prepare;
	bool		stop;
	TimestampTz wal_clock;		/* the job's WAL rate clock (pacing.c) */
} BackfillRun;

/*
 * A dynamic background worker's handle is the postmaster's slot and its
 * generation (bgworker.c, from 9.4 on): it means the same in every backend,
 * so it is kept in shared memory, as pg_cron keeps it.
 */
struct BackgroundWorkerHandle
{
	int			slot;
	uint64		generation;
};

typedef struct BackfillWorkerSlot
{
	Oid			dboid;			/* the database of the job */
	int64		job_id;			/* 0: free */
	int32		actor_id;
	Oid			owner;			/* the job's owner, as the workers connect */
	pid_t		pid;			/* 0 until the worker has started */
	bool		registered;		/* handle is set */
	BackgroundWorkerHandle handle;	/* of the worker's registration */
} BackfillWorkerSlot;

/* an actor that runs now, as its process last published it */
typedef struct BackfillLiveActor
{
	Oid			dboid;			/* the database of the job */
	int64		job_id;			/* 0: free */
	int32		actor_id;
	pid_t		pid;
	Oid			owner;			/* the job's, whose members may read it */
	bool		background;		/* a worker's, not a session's */
	char		phase[BACKFILL_PHASE_LEN];
	int64		rows;
	int64		barriers;
	int64		epoch;
	double		rows_per_second;	/* -1: unknown */
	TimestampTz started_at;
	TimestampTz barrier_at;		/* 0: no barrier yet */
	char		throttled_by[BACKFILL_THROTTLED_LEN];
	char		position[BACKFILL_POSITION_LEN];
} BackfillLiveActor;

typedef struct BackfillShared
{
	LWLock	   *lock;
	int			nslots;
	int			nlive;
	BackfillRun *runs;			/* nslots of each, after the struct */
	BackfillWorkerSlot *workers;
	BackfillLiveActor *live;	/* nlive, after the workers */
} BackfillShared;

bool		backfill_preloaded = false;

static BackfillShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

/* backfill.max_workers and backfill.max_workers_per_role; -1: no cap */
static int	backfill_max_workers = 8;
static int	backfill_max_workers_per_role = 4;

/* this worker's slot, for its exit callback (in MyDatabaseId) */
static int64 my_job_id = 0;
static int32 my_actor_id = 0;
static bool my_job_locked = false;

/* whether this process has registered its live entries' exit callback */
static bool live_callback = false;

static int
live_count(void)
{
	return max_worker_processes + BACKFILL_SESSION_ACTORS;
}

static Size
shared_size(void)
{
	return add_size(MAXALIGN(sizeof(BackfillShared)),
					add_size(add_size(mul_size(max_worker_processes, sizeof(BackfillRun)),
									  mul_size(max_worker_processes, sizeof(BackfillWorkerSlot))),
							 mul_size(live_count(), sizeof(BackfillLiveActor))));
}

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(shared_size());
	RequestNamedLWLockTranche("backfill", 1);
}

static void
shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("backfill", shared_size(), &found);
	if (!found)
	{
		memset(shared, 0, shared_size());
		shared->lock = &(GetNamedLWLockTranche("backfill"))->lock;
		shared->nslots = max_worker_processes;
		shared->nlive = live_count();
	}
	/* pointers are per process: recompute them */
	shared->runs = (BackfillRun *) ((char *) shared + MAXALIGN(sizeof(BackfillShared)));
	shared->workers = (BackfillWorkerSlot *) (shared->runs + shared->nslots);
	shared->live = (BackfillLiveActor *) (shared->workers + shared->nslots);
	LWLockRelease(AddinShmemInitLock);
}

static void registry_process_utility(PlannedStmt *pstmt, const char *queryString,
									 bool readOnlyTree, ProcessUtilityContext context,
									 ParamListInfo params, QueryEnvironment *queryEnv,
									 DestReceiver *dest, QueryCompletion *qc);

/*
 * backfill_shmem_init
 *		Called from _PG_init while shared_preload_libraries is processed.
 */
void
backfill_shmem_init(void)
{
	backfill_preloaded = true;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = registry_process_utility;
}

/*
 * backfill_worker_caps_init
 *		Define the caps on background workers, from _PG_init however the
 *		library is loaded, so that a superuser may set them in any session.
 */
void
backfill_worker_caps_init(void)
{
	DefineCustomIntVariable("backfill.max_workers",
							"Most background workers the jobs of every database may run at once.",
							"-1 for no cap but max_worker_processes; 0 lets no job run in the background.",
							&backfill_max_workers,
							8,
							-1,
							MAX_BACKENDS,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("backfill.max_workers_per_role",
							"Most background workers the jobs one role owns may run at once.",
							"The jobs of superusers are not capped. -1 for no cap; 0 lets no other role's job run in the background.",
							&backfill_max_workers_per_role,
							4,
							-1,
							MAX_BACKENDS,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
}

static void
require_preloaded(const char *funcname)
{
	if (!backfill_preloaded || shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s requires the backfill library to be preloaded", funcname),
				 errdetail("Background workers and their registry in shared memory are set up when the server starts."),
				 errhint("Add 'backfill' to shared_preload_libraries in postgresql.conf and restart the server, or run the job in this session with CALL backfill.run_job().")));
}

static void release_slot(BackfillWorkerSlot *slot);

/*
 * Free the slots of workers that exited before they could free them (a
 * FATAL while connecting, or never started), as the postmaster reports them
 * through their handles.  Lock held exclusively.
 */
static void
reap_dead_slots(void)
{
	for (int i = 0; i < shared->nslots; i++)
	{
		BackfillWorkerSlot *slot = &shared->workers[i];
		pid_t		pid;

		if (slot->job_id != 0 && slot->registered &&
			GetBackgroundWorkerPid(&slot->handle, &pid) == BGWH_STOPPED)
			release_slot(slot);
	}
}

/* whether the slot still holds the worker of this registration.  Lock held. */
static bool
slot_holds(BackfillWorkerSlot *slot, BackgroundWorkerHandle *handle)
{
	return slot->job_id != 0 && slot->registered &&
		memcmp(&slot->handle, handle, sizeof(BackgroundWorkerHandle)) == 0;
}

/* the run of a job of a database, or NULL.  Lock held. */
static BackfillRun *
find_run_of(Oid dboid, int64 job_id)
{
	for (int i = 0; i < shared->nslots; i++)
		if (shared->runs[i].job_id == job_id && shared->runs[i].dboid == dboid)
			return &shared->runs[i];
	return NULL;
}

/* the run of a job of this database, or NULL.  Lock held. */
static BackfillRun *
find_run(int64 job_id)
{
	return find_run_of(MyDatabaseId, job_id);
}

/* whether a slot is one of the workers of a job of this database.  Lock held. */
static bool
slot_of_job(BackfillWorkerSlot *slot, int64 job_id)
{
	return slot->job_id != 0 && slot->job_id == job_id && slot->dboid == MyDatabaseId;
}

/* free a reserved slot; the last one of a run frees the run.  Lock held. */
static void
release_slot(BackfillWorkerSlot *slot)
{
	BackfillRun *run = find_run_of(slot->dboid, slot->job_id);

	if (run && --run->nworkers <= 0)
		memset(run, 0, sizeof(BackfillRun));
	memset(slot, 0, sizeof(BackfillWorkerSlot));
}

/*
 * Workers connect as the job's owner, which ends them before they can record
 * anything when the owner may not log in: refuse to launch them, with
 * PostgreSQL's message, which the launcher records on the job.
 */
static void
check_owner_login(BackfillJob *job)
{
	HeapTuple	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(job->owner));
	char	   *name;
	bool		canlogin;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("role with OID %u does not exist", job->owner),
				 errdetail("The background workers of backfill job %lld connect as its owner.",
						   (long long) job->job_id)));
	name = pstrdup(NameStr(((Form_pg_authid) GETSTRUCT(tup))->rolname));
	canlogin = ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin;
	ReleaseSysCache(tup);
	if (!canlogin)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("role \"%s\" is not permitted to log in", name),
				 errdetail("The background workers of backfill job %lld connect as its owner.",
						   (long long) job->job_id),
				 errhint("Grant LOGIN to the role, or run the job in a session with CALL backfill.run_job(%lld).",
						 (long long) job->job_id)));
}

/*
 * Refuse a launch of nworkers workers for the job that would take more than
 * backfill.max_workers, or, for an owner who is not a superuser (capped),
 * backfill.max_workers_per_role.  The job's own workers do not count when
 * replacing (reschedule checks before it stops them).  Lock held
 * exclusively; released before the error.
 */
static void
check_worker_caps(BackfillJob *job, int nworkers, bool capped, bool replacing)
{
	int			total = 0;
	int			of_role = 0;

	for (int i = 0; i < shared->nslots; i++)
	{
		BackfillWorkerSlot *slot = &shared->workers[i];

		if (slot->job_id == 0 || (replacing && slot_of_job(slot, job->job_id)))
			continue;
		total++;
		if (slot->owner == job->owner)
			of_role++;
	}
	if (backfill_max_workers >= 0 && total + nworkers > backfill_max_workers)
	{
		LWLockRelease(shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start the %d background workers of backfill job %lld",
						nworkers, (long long) job->job_id),
				 errdetail("Backfill jobs run %d background workers already, and backfill.max_workers allows %d.",
						   total, backfill_max_workers),
				 errhint("Stop other jobs with backfill.stop_job(), reduce the job's parallelism with backfill.reschedule(), or have a superuser raise backfill.max_workers.")));
	}
	if (capped && backfill_max_workers_per_role >= 0 &&
		of_role + nworkers > backfill_max_workers_per_role)
	{
		char	   *name;

		LWLockRelease(shared->lock);
		name = GetUserNameFromId(job->owner, false);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start the %d background workers of backfill job %lld",
						nworkers, (long long) job->job_id),
				 errdetail("The jobs of role \"%s\" have %d background workers already, and backfill.max_workers_per_role allows %d.",
						   name, of_role, backfill_max_workers_per_role),
				 errhint("Stop other jobs of the role with backfill.stop_job(), reduce the job's parallelism with backfill.reschedule(), or have a superuser raise backfill.max_workers_per_role.")));
	}
}

/*
 * backfill_launch_job
 *		Start one background worker per actor of the job, or only the first
 *		actor's for a finished job (which follows its upstream).  The job's
 *		actors must be loaded.  Errors: INVALID_AUTHORIZATION_SPECIFICATION
 *		when the job's owner may not log in, OBJECT_IN_USE when the job
 *		already runs in the background, INSUFFICIENT_RESOURCES when worker
 *		slots run out (no worker is left running then).
 */
void
backfill_launch_job(BackfillJob *job)
{
	BackfillRun *run = NULL;
	int			reserved[BACKFILL_MAX_PARALLELISM];
	BackgroundWorkerHandle *handles[BACKFILL_MAX_PARALLELISM];
	int			nreserved = 0;
	int			nregistered = 0;
	int			nworkers = job->status == BACKFILL_STATUS_FINISHED ? 1 : job->nactors;

	bool		capped;

	require_preloaded("backfill.start_job()");
	check_owner_login(job);
	/* looked up before the lock: a catalog read may fail */
	capped = !superuser_arg(job->owner);

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	if (find_run(job->job_id) != NULL)
	{
		LWLockRelease(shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("backfill job %lld is already running", (long long) job->job_id),
				 errdetail("Background workers run the job."),
				 errhint("Stop them with backfill.stop_job(%lld).", (long long) job->job_id)));
	}
	check_worker_caps(job, nworkers, capped, false);
	for (int i = 0; i < shared->nslots && run == NULL; i++)
		if (shared->runs[i].job_id == 0)
			run = &shared->runs[i];
	for (int i = 0; i < shared->nslots && nreserved < nworkers; i++)
		if (shared->workers[i].job_id == 0)
			reserved[nreserved++] = i;
	if (run == NULL || nreserved < nworkers)
	{
		LWLockRelease(shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start the %d background workers of backfill job %lld",
						nworkers, (long long) job->job_id),
				 errdetail("Every one of the max_worker_processes slots for backfill workers is taken."),
				 errhint("Raise max_worker_processes, or reduce the job's parallelism with backfill.reschedule().")));
	}
	run->dboid = MyDatabaseId;
	run->job_id = job->job_id;
	run->nworkers = nworkers;
	run->prepare = PREPARE_NONE;
	run->stop = false;
	run->wal_clock = 0;
	for (int a = 0; a < nworkers; a++)
	{
		shared->workers[reserved[a]].dboid = MyDatabaseId;
		shared->workers[reserved[a]].job_id = job->job_id;
		shared->workers[reserved[a]].actor_id = job->actors[a].actor_id;
		shared->workers[reserved[a]].owner = job->owner;
		shared->workers[reserved[a]].pid = 0;
		shared->workers[reserved[a]].registered = false;
	}

	/* under the lock: no one sees a slot without its handle once registered */
	for (int a = 0; a < nworkers; a++)
	{
		BackgroundWorker worker;
		ActorArgs	args;

		memset(&worker, 0, sizeof(worker));
		worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
		worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
		worker.bgw_restart_time = BGW_NEVER_RESTART;
		strlcpy(worker.bgw_library_name, "backfill", BGW_MAXLEN);
		strlcpy(worker.bgw_function_name, "backfill_actor_main", BGW_MAXLEN);
		snprintf(worker.bgw_name, BGW_MAXLEN, "backfill job %lld actor %d",
				 (long long) job->job_id, job->actors[a].actor_id);
		strlcpy(worker.bgw_type, "backfill actor", BGW_MAXLEN);
		args.job_id = job->job_id;
		args.actor_id = job->actors[a].actor_id;
		args.dboid = MyDatabaseId;
		args.owner = job->owner;
		memcpy(worker.bgw_extra, &args, sizeof(args));
		worker.bgw_notify_pid = MyProcPid;

		if (!RegisterDynamicBackgroundWorker(&worker, &handles[a]))
			break;
		shared->workers[reserved[a]].handle = *handles[a];
		shared->workers[reserved[a]].registered = true;
		nregistered++;
	}
	LWLockRelease(shared->lock);

	if (nregistered < nworkers)
	{
		/*
		 * Take back what was started and reserved.  A worker stopped before
		 * it attached never frees its slot, so wait for each to be gone and
		 * free whatever is left.
		 */
		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		run->stop = true;
		LWLockRelease(shared->lock);
		for (int a = 0; a < nregistered; a++)
		{
			TerminateBackgroundWorker(handles[a]);
			(void) WaitForBackgroundWorkerShutdown(handles[a]);
		}
		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		for (int a = 0; a < nworkers; a++)
			if (slot_of_job(&shared->workers[reserved[a]], job->job_id) &&
				shared->workers[reserved[a]].actor_id == job->actors[a].actor_id)
				release_slot(&shared->workers[reserved[a]]);
		LWLockRelease(shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start the %d background workers of backfill job %lld",
						nworkers, (long long) job->job_id),
				 errdetail("Only %d of them could be registered.", nregistered),
				 errhint("Raise max_worker_processes, or reduce the job's parallelism with backfill.reschedule().")));
	}

	/* wait until each has a process, so that the workers are visible at once */
	for (int a = 0; a < nregistered; a++)
	{
		pid_t		pid;
		BgwHandleStatus status = WaitForBackgroundWorkerStartup(handles[a], &pid);
		BackfillWorkerSlot *slot = &shared->workers[reserved[a]];

		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		if (slot_holds(slot, handles[a]))
		{
			/* a worker that never ran will not free its slot */
			if (status != BGWH_STARTED)
				release_slot(slot);
			else if (slot->pid == 0)
				slot->pid = pid;
		}
		LWLockRelease(shared->lock);
	}
}

static void
detach_worker(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	if (shared == NULL || my_job_id == 0)
		return;
	/* let cancel_job and friends take the job lock as soon as we are gone */
	if (my_job_locked)
		backfill_unlock_job_shared(my_job_id);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < shared->nslots; i++)
		if (slot_of_job(&shared->workers[i], my_job_id) &&
			shared->workers[i].actor_id == my_actor_id)
		{
			/* a preparer that dies leaves the others a failed prepare */
			BackfillRun *run = find_run(my_job_id);

			if (run && run->prepare == PREPARE_CLAIMED && code != 0)
				run->prepare = PREPARE_FAILED;
			release_slot(&shared->workers[i]);
			break;
		}
	LWLockRelease(shared->lock);
	my_job_id = 0;
}

/*
 * backfill_attach_worker
 *		A worker takes its reserved slot; it is freed when the worker exits,
 *		however it exits.
 */
void
backfill_attach_worker(int64 job_id, int32 actor_id)
{
	bool		found = false;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < shared->nslots && !found; i++)
		if (slot_of_job(&shared->workers[i], job_id) && shared->workers[i].actor_id == actor_id)
		{
			shared->workers[i].pid = MyProcPid;
			found = true;
		}
	LWLockRelease(shared->lock);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("no worker slot was reserved for actor %d of backfill job %lld",
						actor_id, (long long) job_id)));
	my_job_id = job_id;
	my_actor_id = actor_id;
	before_shmem_exit(detach_worker, (Datum) 0);
}

/* the worker holds its job's shared lock now */
void
backfill_worker_locked_job(void)
{
	my_job_locked = true;
}

bool
backfill_stop_requested(int64 job_id)
{
	BackfillRun *run;
	bool		stop;

	LWLockAcquire(shared->lock, LW_SHARED);
	run = find_run(job_id);
	stop = (run == NULL || run->stop);
	LWLockRelease(shared->lock);
	return stop;
}

/*
 * backfill_run_pace_clock
 *		The WAL rate clock the workers of a job share (pacing.c): advanced by
 *		usecs from no earlier than "from", then returned.  0 when the job does
 *		not run in background workers.
 */
TimestampTz
backfill_run_pace_clock(int64 job_id, TimestampTz from, int64 usecs)
{
	BackfillRun *run;
	TimestampTz clock = 0;

	if (!backfill_preloaded || shared == NULL)
		return 0;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	run = find_run(job_id);
	if (run != NULL)
	{
		run->wal_clock = Max(run->wal_clock, from) + usecs;
		clock = run->wal_clock;
	}
	LWLockRelease(shared->lock);
	return clock;
}

bool
backfill_claim_prepare(int64 job_id)
{
	BackfillRun *run;
	bool		claimed = false;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	run = find_run(job_id);
	if (run && run->prepare == PREPARE_NONE)
	{
		run->prepare = PREPARE_CLAIMED;
		claimed = true;
	}
	LWLockRelease(shared->lock);
	return claimed;
}

void
backfill_finish_prepare(int64 job_id, bool ok)
{
	BackfillRun *run;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	run = find_run(job_id);
	if (run && run->prepare == PREPARE_CLAIMED)
		run->prepare = ok ? PREPARE_DONE : PREPARE_FAILED;
	LWLockRelease(shared->lock);
}

/* a preparer that will retry gives the prepare step back, if unfinished */
void
backfill_unclaim_prepare(int64 job_id)
{
	BackfillRun *run;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	run = find_run(job_id);
	if (run && run->prepare == PREPARE_CLAIMED)
		run->prepare = PREPARE_NONE;
	LWLockRelease(shared->lock);
}

/* wait for the preparer's outcome: true when the actors may run */
bool
backfill_wait_prepared(int64 job_id)
{
	for (;;)
	{
		BackfillRun *run;
		PrepareState state;

		LWLockAcquire(shared->lock, LW_SHARED);
		run = find_run(job_id);
		state = run ? run->prepare : PREPARE_FAILED;
		LWLockRelease(shared->lock);
		if (state == PREPARE_DONE || state == PREPARE_FAILED)
			return state == PREPARE_DONE;
		backfill_sleep_ms(10);
	}
}

/*
 * backfill_stop_workers
 *		Ask the job's workers to stop (at their next barrier, or at once with
 *		SIGTERM, which the postmaster sends through their handles) and wait
 *		until they have all exited.  Returns whether any was running.
 */
bool
backfill_stop_workers(int64 job_id, bool immediate)
{
	BackfillRun *run;
	BackgroundWorkerHandle handles[BACKFILL_MAX_PARALLELISM];
	pid_t		pids[BACKFILL_MAX_PARALLELISM];
	int			nhandles = 0;

	if (!backfill_preloaded || shared == NULL)
		return false;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	run = find_run(job_id);
	if (run == NULL)
	{
		LWLockRelease(shared->lock);
		return false;
	}
	/* they wait for this transaction's lock: waiting for them would hang */
	if (backfill_job_lock_mine(job_id))
	{
		LWLockRelease(shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot stop the workers of backfill job %lld in the transaction that started them",
						(long long) job_id),
				 errhint("Commit the transaction that called backfill.start_job() first.")));
	}
	run->stop = true;
	for (int i = 0; i < shared->nslots && nhandles < BACKFILL_MAX_PARALLELISM; i++)
		if (slot_of_job(&shared->workers[i], job_id) && shared->workers[i].registered)
		{
			pids[nhandles] = shared->workers[i].pid;
			handles[nhandles++] = shared->workers[i].handle;
		}
	LWLockRelease(shared->lock);

	/* wake those that wait on something else than a barrier (remote.c) */
	for (int i = 0; i < nhandles; i++)
	{
		PGPROC	   *proc = pids[i] != 0 ? BackendPidGetProc(pids[i]) : NULL;

		if (proc != NULL)
			SetLatch(&proc->procLatch);
	}

	if (immediate)
		for (int i = 0; i < nhandles; i++)
			TerminateBackgroundWorker(&handles[i]);

	for (;;)
	{
		bool		gone;

		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		reap_dead_slots();
		gone = (find_run(job_id) == NULL);
		LWLockRelease(shared->lock);
		if (gone)
			return true;
		backfill_sleep_ms(10);
	}
}

/*
 * backfill.job_workers() RETURNS SETOF (job_id bigint, actor_id int, pid int)
 */
Datum
backfill_job_workers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (!backfill_preloaded || shared == NULL)
		PG_RETURN_VOID();

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	for (int i = 0; i < shared->nslots; i++)
	{
		BackfillWorkerSlot *slot = &shared->workers[i];
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		/* another database's job 1 is not this one's */
		if (slot->job_id == 0 || slot->dboid != MyDatabaseId)
			continue;
		values[0] = Int64GetDatum(slot->job_id);
		values[1] = Int32GetDatum(slot->actor_id);
		values[2] = Int32GetDatum((int32) slot->pid);
		nulls[2] = (slot->pid == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(shared->lock);
	PG_RETURN_VOID();
}

/*
 * backfill.start_job(job_id bigint) RETURNS void
 *
 * A finished job has nothing to start, unless it follows its upstream in a
 * worker (job->follows): then one worker does, until stop_job.  Holds the
 * job lock until the caller commits, so the workers, which wait for it,
 * start from what the caller's transaction committed.
 */
Datum
backfill_start_job(PG_FUNCTION_ARGS)
{
	int64		job_id;
	BackfillJob *job;
	RoleContext rc;

	require_preloaded("backfill.start_job()");
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	job_id = PG_GETARG_INT64(0);

	SPI_connect();
	job = backfill_load_job_to_run(job_id, CurrentMemoryContext);
	/* the slots of cdc jobs a crash kept from dropping theirs, any job's */
	backfill_drop_leftover_slots();
	/* a job that follows its upstream without a trigger needs a worker */
	if (job->status == BACKFILL_STATUS_FINISHED && !job->follows)
	{
		ereport(NOTICE,
				(errmsg("backfill job %lld has already finished", (long long) job_id),
				 errdetail("Its downstream table follows the upstream without workers.")));
		SPI_finish();
		PG_RETURN_VOID();
	}
	/* not run by a session now; held until commit */
	backfill_lock_job(job_id, false);
	/* the launcher relaunches it after a crash, even one right after this */
	backfill_catalog_enter(&rc);
	if (SPI_execute_with_args("UPDATE backfill.job SET run_mode = 'background' WHERE job_id = $1",
							  1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)},
							  NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update backfill.job");
	backfill_role_leave(&rc);
	backfill_launch_job(job);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * backfill._stop_workers(job_id bigint, immediate boolean) RETURNS boolean
 */
Datum
backfill_stop_job_workers(PG_FUNCTION_ARGS)
{
	(void) backfill_require_job_owner(PG_GETARG_INT64(0));
	PG_RETURN_BOOL(backfill_stop_workers(PG_GETARG_INT64(0), PG_GETARG_BOOL(1)));
}

/*
 * backfill._stop_and_lock_job(job_id bigint) RETURNS boolean
 *		For cancel_job, drop_job and reschedule: stop the job's background
 *		workers at once, then take the job lock for this transaction; fail if
 *		a session runs the job.  Returns whether workers were running.
 */
Datum
backfill_stop_and_lock_job(PG_FUNCTION_ARGS)
{
	int64		job_id = PG_GETARG_INT64(0);
	bool		stopped;

	(void) backfill_require_job_owner(job_id);
	stopped = backfill_stop_workers(job_id, true);

	if (stopped)
		backfill_wait_job_lock(job_id);
	else
		backfill_lock_job(job_id, false);
	PG_RETURN_BOOL(stopped);
}

/*
 * backfill._job_is_running(job_id bigint) RETURNS boolean
 *		Whether workers or a session run the job now.
 */
Datum
backfill_job_is_running(PG_FUNCTION_ARGS)
{
	int64		job_id = PG_GETARG_INT64(0);
	bool		running = false;

	if (backfill_preloaded && shared != NULL)
	{
		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		reap_dead_slots();
		running = (find_run(job_id) != NULL);
		LWLockRelease(shared->lock);
	}
	PG_RETURN_BOOL(running || backfill_job_lock_held(job_id));
}

/*
 * backfill._check_workers(job_id bigint, parallelism integer) RETURNS void
 *		For reschedule, before it stops the job's workers: refuse, as a
 *		launch would, a parallelism whose workers the caps do not allow, so
 *		that a refused reschedule leaves the job running as it was.  Nothing
 *		to check when the job does not run in the background.
 */
Datum
backfill_check_workers_1_3(PG_FUNCTION_ARGS)
{
	int64		job_id;
	int32		parallelism;
	BackfillJob job;
	bool		capped;
	bool		isnull;
	Datum		status;
	int			nworkers;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_VOID();
	job_id = PG_GETARG_INT64(0);
	parallelism = PG_GETARG_INT32(1);
	memset(&job, 0, sizeof(job));
	job.job_id = job_id;
	job.owner = backfill_require_job_owner(job_id);
	if (!backfill_preloaded || shared == NULL)
		PG_RETURN_VOID();
	status = backfill_job_column(job_id, "status", &isnull);
	/* a finished job runs one worker, which follows its upstream */
	nworkers = (!isnull && backfill_parse_status(TextDatumGetCString(status)) == BACKFILL_STATUS_FINISHED) ? 1 : parallelism;
	capped = !superuser_arg(job.owner);

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	if (find_run(job_id) != NULL)
		check_worker_caps(&job, nworkers, capped, true);
	LWLockRelease(shared->lock);
	PG_RETURN_VOID();
}

/* ---- DROP EXTENSION and ALTER EXTENSION UPDATE ---- */

/*
 * The jobs of this database that run in background workers now, as "3, 5",
 * and how many; NULL when none does.
 */
static char *
running_jobs(int *njobs)
{
	StringInfoData buf;

	initStringInfo(&buf);
	*njobs = 0;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	for (int i = 0; i < shared->nslots; i++)
		if (shared->runs[i].job_id != 0 && shared->runs[i].dboid == MyDatabaseId)
			appendStringInfo(&buf, "%s%lld", (*njobs)++ > 0 ? ", " : "",
							 (long long) shared->runs[i].job_id);
	LWLockRelease(shared->lock);
	return *njobs > 0 ? buf.data : NULL;
}

/*
 * Lock the upstream of every job that is not cancelled, and its partitions,
 * root to leaves, in the mode DROP TRIGGER takes, before DROP EXTENSION
 * CASCADE drops the jobs' tables and triggers: it may reach a change table
 * before its upstream's trigger, which a writer in flight, holding the
 * upstream and wanting the change table, would deadlock with.  Writers wait
 * for the drop instead, as drop_job makes them, which drops the triggers
 * first.
 */
static void
lock_upstreams_for_drop(void)
{
	RoleContext rc;
	Oid		   *upstreams;
	uint64		n;

	SPI_connect();
	backfill_catalog_enter(&rc);
	if (SPI_execute("SELECT DISTINCT upstream::pg_catalog.oid FROM backfill.job "
					"WHERE status OPERATOR(pg_catalog.<>) 'cancelled' ORDER BY 1",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	n = SPI_processed;
	upstreams = palloc(sizeof(Oid) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		upstreams[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
													  SPI_tuptable->tupdesc, 1, &isnull));
	}
	backfill_role_leave(&rc);
	SPI_finish();

	for (uint64 i = 0; i < n; i++)
	{
		if (get_rel_relkind(upstreams[i]) == RELKIND_PARTITIONED_TABLE)
			(void) find_all_inheritors(upstreams[i], AccessExclusiveLock, NULL);
		else
			LockRelationOid(upstreams[i], AccessExclusiveLock);
	}
}

/*
 * Before DROP EXTENSION backfill: with CASCADE, stop the workers of this
 * database's jobs at once, as drop_job does (the barrier in flight rolls
 * back; the jobs go with the extension anyway); without it, refuse while
 * they run.  Only for the extension's owner: anyone else is refused by the
 * command itself, and must not stop anything first.
 */
static void
before_drop_extension(DropBehavior behavior)
{
	Oid			extoid = get_extension_oid(BACKFILL_SCHEMA, true);
	int64	   *job_ids;
	int			njobs = 0;
	char	   *list;

	if (!OidIsValid(extoid) || !pg_extension_ownercheck(extoid, GetUserId()))
		return;
	list = running_jobs(&njobs);
	if (list == NULL)
	{
		if (behavior == DROP_CASCADE)
			lock_upstreams_for_drop();
		return;
	}
	if (behavior != DROP_CASCADE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot drop extension \"%s\" while background workers run its jobs",
						BACKFILL_SCHEMA),
				 errdetail_plural("Backfill job %s runs in background workers in this database.",
								  "Backfill jobs %s run in background workers in this database.",
								  njobs, list),
				 errhint("Stop them with backfill.stop_job() first, or drop the extension with CASCADE, which stops them.")));

	/* stop each; one started meanwhile is stopped by the next round */
	for (;;)
	{
		job_ids = palloc(sizeof(int64) * shared->nslots);
		njobs = 0;
		LWLockAcquire(shared->lock, LW_SHARED);
		for (int i = 0; i < shared->nslots; i++)
			if (shared->runs[i].job_id != 0 && shared->runs[i].dboid == MyDatabaseId)
				job_ids[njobs++] = shared->runs[i].job_id;
		LWLockRelease(shared->lock);
		if (njobs == 0)
			break;
		for (int i = 0; i < njobs; i++)
			(void) backfill_stop_workers(job_ids[i], true);
		pfree(job_ids);
	}
	lock_upstreams_for_drop();
}

/*
 * Before ALTER EXTENSION backfill UPDATE: refuse while workers run this
 * database's jobs, naming them.  The workers run the barriers of the old
 * catalog with the new library, and a restart under the new one is for
 * their user to choose: stop_job, then start_job after the update.
 */
static void
before_update_extension(void)
{
	Oid			extoid = get_extension_oid(BACKFILL_SCHEMA, true);
	int			njobs = 0;
	char	   *list;

	if (!OidIsValid(extoid) || !pg_extension_ownercheck(extoid, GetUserId()))
		return;
	list = running_jobs(&njobs);
	if (list == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("cannot update extension \"%s\" while background workers run its jobs",
					BACKFILL_SCHEMA),
			 errdetail_plural("Backfill job %s runs in background workers in this database.",
							  "Backfill jobs %s run in background workers in this database.",
							  njobs, list),
			 errhint("Stop them with backfill.stop_job(), update the extension, then start them again with backfill.start_job().")));
}

static void
registry_process_utility(PlannedStmt *pstmt, const char *queryString,
						 bool readOnlyTree, ProcessUtilityContext context,
						 ParamListInfo params, QueryEnvironment *queryEnv,
						 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (shared != NULL && IsA(parsetree, DropStmt) &&
		((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION)
	{
		DropStmt   *stmt = (DropStmt *) parsetree;
		ListCell   *lc;

		foreach(lc, stmt->objects)
			if (strcmp(strVal(lfirst(lc)), BACKFILL_SCHEMA) == 0)
				before_drop_extension(stmt->behavior);
	}
	else if (shared != NULL && IsA(parsetree, AlterExtensionStmt) &&
			 strcmp(((AlterExtensionStmt *) parsetree)->extname, BACKFILL_SCHEMA) == 0)
		before_update_extension();

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}
/* ---- the live actors (backfill.progress) ---- */

/* free this process's live entries.  Lock not held. */
static void
live_release_mine(void)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < shared->nlive; i++)
		if (shared->live[i].job_id != 0 && shared->live[i].pid == MyProcPid)
			memset(&shared->live[i], 0, sizeof(BackfillLiveActor));
	LWLockRelease(shared->lock);
}

static void
live_at_exit(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	if (shared != NULL)
		live_release_mine();
}

/* this process's entry of the actor, or NULL.  Lock held. */
static BackfillLiveActor *
live_find(int64 job_id, int32 actor_id)
{
	for (int i = 0; i < shared->nlive; i++)
		if (shared->live[i].job_id == job_id && shared->live[i].actor_id == actor_id &&
			shared->live[i].pid == MyProcPid)
			return &shared->live[i];
	return NULL;
}

/*
 * backfill_live_begin
 *		Take the live entries of the actors this process runs: one actor (its
 *		index, in a worker) or every actor of the job (-1, in a session), in
 *		phase "phase".  An actor that has its entry already keeps it as it
 *		is.  Does nothing when the library is not preloaded.
 */
void
backfill_live_begin(BackfillJob *job, int actor, const char *phase)
{
	if (!backfill_preloaded || shared == NULL)
		return;
	if (!live_callback)
	{
		before_shmem_exit(live_at_exit, (Datum) 0);
		live_callback = true;
	}
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int a = 0; a < job->nactors; a++)
	{
		BackfillLiveActor *e;

		if ((actor >= 0 && a != actor) || live_find(job->job_id, job->actors[a].actor_id))
			continue;
		e = NULL;
		for (int i = 0; i < shared->nlive && e == NULL; i++)
			if (shared->live[i].job_id == 0)
				e = &shared->live[i];
		if (e == NULL)
			break;				/* not shown: see the file header */
		memset(e, 0, sizeof(BackfillLiveActor));
		e->dboid = MyDatabaseId;
		e->job_id = job->job_id;
		e->actor_id = job->actors[a].actor_id;
		e->pid = MyProcPid;
		e->owner = job->owner;
		e->background = actor >= 0;
		strlcpy(e->phase, phase, sizeof(e->phase));
		e->rows_per_second = -1;
		e->started_at = GetCurrentTimestamp();
	}
	LWLockRelease(shared->lock);
}

/*
 * backfill_live_report
 *		Publish what an actor of this process did: its phase, and, after a
 *		barrier (report->barrier), its rows, epoch, pace and position.
 */
void
backfill_live_report(int64 job_id, int32 actor_id, const BackfillLiveReport *report)
{
	BackfillLiveActor *e;

	if (!backfill_preloaded || shared == NULL)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	e = live_find(job_id, actor_id);
	if (e != NULL)
	{
		strlcpy(e->phase, report->phase, sizeof(e->phase));
		if (report->barrier)
		{
			e->barriers++;
			e->barrier_at = GetCurrentTimestamp();
			e->rows = report->rows;
			e->epoch = report->epoch;
			e->rows_per_second = report->rows_per_second;
			strlcpy(e->throttled_by, report->throttled_by ? report->throttled_by : "",
					sizeof(e->throttled_by));
			strlcpy(e->position, report->position ? report->position : "",
					sizeof(e->position));
		}
	}
	LWLockRelease(shared->lock);
}

/* free the live entries of this process: its run has ended */
void
backfill_live_end(void)
{
	if (backfill_preloaded && shared != NULL)
		live_release_mine();
}

/*
 * backfill._live_actors() RETURNS SETOF record: the live entries of the jobs
 * whose owner the current user has the privileges of, or every one for a
 * member of pg_read_all_stats, as pg_stat_activity shows its rows.  Empty
 * when the library is not preloaded.
 */
Datum
backfill_live_actors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		all_stats;
	BackfillLiveActor *copy;
	int			n = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (!backfill_preloaded || shared == NULL)
		PG_RETURN_VOID();
	all_stats = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	/* copied under the lock, then formed outside it */
	copy = palloc(sizeof(BackfillLiveActor) * shared->nlive);
	LWLockAcquire(shared->lock, LW_SHARED);
	for (int i = 0; i < shared->nlive; i++)
		if (shared->live[i].job_id != 0 && shared->live[i].dboid == MyDatabaseId)
			copy[n++] = shared->live[i];
	LWLockRelease(shared->lock);

	for (int i = 0; i < n; i++)
	{
		BackfillLiveActor *e = &copy[i];
		Datum		values[13];
		bool		nulls[13];

		if (!all_stats && !has_privs_of_role(GetUserId(), e->owner))
			continue;
		memset(nulls, false, sizeof(nulls));
		values[0] = Int32GetDatum((int32) e->pid);
		values[1] = Int64GetDatum(e->job_id);
		values[2] = Int32GetDatum(e->actor_id);
		values[3] = CStringGetTextDatum(e->background ? "background" : "foreground");
		values[4] = CStringGetTextDatum(e->phase);
		values[5] = Int64GetDatum(e->rows);
		values[6] = CStringGetTextDatum(e->position);
		nulls[6] = (e->position[0] == '\0');
		values[7] = Int64GetDatum(e->barriers);
		values[8] = Int64GetDatum(e->epoch);
		values[9] = Float8GetDatum(e->rows_per_second);
		nulls[9] = (e->rows_per_second < 0);
		values[10] = CStringGetTextDatum(e->throttled_by);
		nulls[10] = (e->throttled_by[0] == '\0');
		values[11] = TimestampTzGetDatum(e->started_at);
		values[12] = TimestampTzGetDatum(e->barrier_at);
		nulls[12] = (e->barrier_at == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}
