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
 * A worker that exits while its job still needs it, and nobody asked it to
 * stop (pg_terminate_backend(), a FATAL error it could not record), leaves a
 * "lost worker" entry behind: the launcher of the job's database takes it
 * once the job's other workers have exited too, counts the exit as a failure
 * of the job and launches the job again, after a pause that doubles with
 * each exit (worker.c).  A stop asked for meanwhile drops the entry.
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
 * The DROP EXTENSION / ALTER EXTENSION UPDATE guard (extension_ddl.c), the
 * live actors that backfill.progress shows (live_actors.c) and the SQL
 * functions that start and stop workers (worker_control.c) reach the
 * registry through registry_internal.h; only this file knows its structs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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
#include "utils/syscache.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "lib/lib.h"
#include "runtime/driver.h"
#include "runtime/registry_internal.h"

PG_FUNCTION_INFO_V1(backfill_job_workers);

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

/* a worker that exited unexpectedly, until the launcher takes it */
typedef struct BackfillLostWorker
{
	Oid			dboid;			/* the database of the job */
	int64		job_id;			/* 0: free */
	int32		actor_id;
	int			exit_code;		/* the worker's, as proc_exit() had it */
} BackfillLostWorker;

typedef struct BackfillShared
{
	LWLock	   *lock;
	int			nslots;
	BackfillRun *runs;			/* nslots of each, after the struct */
	BackfillWorkerSlot *workers;
	BackfillLostWorker *lost;
	/* then the live actors' entries (live_actors.c) */
} BackfillShared;

bool		backfill_preloaded = false;

static BackfillShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* backfill.max_workers and backfill.max_workers_per_role; -1: no cap */
static int	backfill_max_workers = 8;
static int	backfill_max_workers_per_role = 4;

/* this worker's slot, for its exit callback (in MyDatabaseId) */
static int64 my_job_id = 0;
static int32 my_actor_id = 0;
static bool my_job_locked = false;
/* this worker ends as its job asked: done, stopped or failed and recorded */
static bool my_exit_expected = false;

static Size
shared_size(void)
{
	return add_size(MAXALIGN(sizeof(BackfillShared)),
					add_size(add_size(add_size(mul_size(max_worker_processes, sizeof(BackfillRun)),
											   mul_size(max_worker_processes, sizeof(BackfillWorkerSlot))),
									  mul_size(max_worker_processes, sizeof(BackfillLostWorker))),
							 backfill_live_shmem_size()));
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
	}
	/* pointers are per process: recompute them */
	shared->runs = (BackfillRun *) ((char *) shared + MAXALIGN(sizeof(BackfillShared)));
	shared->workers = (BackfillWorkerSlot *) (shared->runs + shared->nslots);
	shared->lost = (BackfillLostWorker *) (shared->workers + shared->nslots);
	backfill_live_attach((char *) (shared->lost + shared->nslots), shared->lock);
	LWLockRelease(AddinShmemInitLock);
}

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

/*
 * backfill_require_preloaded
 *		Refuse funcname, which needs background workers, when the library
 *		was not preloaded.
 */
void
backfill_require_preloaded(const char *funcname)
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

/* forget the lost workers of a job: it was stopped.  Lock held. */
static void
forget_lost_workers(Oid dboid, int64 job_id)
{
	for (int i = 0; i < shared->nslots; i++)
		if (shared->lost[i].job_id == job_id && shared->lost[i].dboid == dboid)
			memset(&shared->lost[i], 0, sizeof(BackfillLostWorker));
}

/*
 * free a reserved slot; the last one of a run frees the run, and if it was
 * stopped, its lost workers are not to be replaced.  Lock held.
 */
static void
release_slot(BackfillWorkerSlot *slot)
{
	BackfillRun *run = find_run_of(slot->dboid, slot->job_id);

	if (run && --run->nworkers <= 0)
	{
		if (run->stop)
			forget_lost_workers(run->dboid, run->job_id);
		memset(run, 0, sizeof(BackfillRun));
	}
	memset(slot, 0, sizeof(BackfillWorkerSlot));
}

/* note this worker, which exits unexpectedly, for the launcher.  Lock held. */
static void
note_lost_worker(int code)
{
	BackfillLostWorker *entry = NULL;

	for (int i = 0; i < shared->nslots && entry == NULL; i++)
		if (shared->lost[i].job_id == 0 ||
			(shared->lost[i].job_id == my_job_id && shared->lost[i].dboid == MyDatabaseId))
			entry = &shared->lost[i];
	if (entry == NULL)
		return;					/* one per job at most: there is a free one */
	entry->dboid = MyDatabaseId;
	entry->job_id = my_job_id;
	entry->actor_id = my_actor_id;
	entry->exit_code = code;
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

	backfill_require_preloaded("backfill.start_job()");
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
			if (run && !run->stop && !my_exit_expected)
				note_lost_worker(code);
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

/*
 * backfill_worker_exit_expected
 *		The worker is about to exit as its job wants (its work done, stopped,
 *		or its failure recorded): not a lost worker.
 */
void
backfill_worker_exit_expected(void)
{
	my_exit_expected = true;
}

/*
 * backfill_take_lost_worker
 *		A job of this database a worker of which exited unexpectedly, and
 *		whose other workers have exited since, taken off the list: returns
 *		its id and sets the worker's actor and exit code; 0 when there is
 *		none.  For the launcher.
 */
int64
backfill_take_lost_worker(int32 *actor_id, int *exit_code)
{
	int64		job_id = 0;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	for (int i = 0; i < shared->nslots && job_id == 0; i++)
	{
		BackfillLostWorker *entry = &shared->lost[i];

		if (entry->job_id == 0 || entry->dboid != MyDatabaseId ||
			find_run(entry->job_id) != NULL)
			continue;
		job_id = entry->job_id;
		*actor_id = entry->actor_id;
		*exit_code = entry->exit_code;
		memset(entry, 0, sizeof(BackfillLostWorker));
	}
	LWLockRelease(shared->lock);
	return job_id;
}

/*
 * backfill_lost_worker_databases
 *		The databases that have a lost worker whose job's other workers have
 *		exited too: a worker of that database is to take it
 *		(backfill_take_lost_worker).  Fills at most max of them into dboids,
 *		each once; returns how many.  For the launcher, which is connected to
 *		no database.
 */
int
backfill_lost_worker_databases(Oid *dboids, int max)
{
	int			n = 0;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	for (int i = 0; i < shared->nslots && n < max; i++)
	{
		BackfillLostWorker *entry = &shared->lost[i];
		bool		listed = false;

		if (entry->job_id == 0 || find_run_of(entry->dboid, entry->job_id) != NULL)
			continue;
		for (int k = 0; k < n && !listed; k++)
			listed = (dboids[k] == entry->dboid);
		if (!listed)
			dboids[n++] = entry->dboid;
	}
	LWLockRelease(shared->lock);
	return n;
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
		/* a worker lost since is not to be replaced either */
		forget_lost_workers(MyDatabaseId, job_id);
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
	BackfillWorkerSlot *slots;
	int			nslots = 0;
	bool		all_stats;

	InitMaterializedSRF(fcinfo, 0);
	if (!backfill_preloaded || shared == NULL)
		PG_RETURN_VOID();

	/* copied under the lock; whose they are is checked after it */
	slots = palloc(sizeof(BackfillWorkerSlot) * shared->nslots);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	for (int i = 0; i < shared->nslots; i++)
		/* another database's job 1 is not this one's */
		if (shared->workers[i].job_id != 0 && shared->workers[i].dboid == MyDatabaseId)
			slots[nslots++] = shared->workers[i];
	LWLockRelease(shared->lock);

	/* as pg_stat_activity: the jobs of the caller's roles, or every one */
	all_stats = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	for (int i = 0; i < nslots; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		if (!all_stats && !has_privs_of_role(GetUserId(), slots[i].owner))
			continue;
		values[0] = Int64GetDatum(slots[i].job_id);
		values[1] = Int32GetDatum(slots[i].actor_id);
		values[2] = Int32GetDatum((int32) slots[i].pid);
		nulls[2] = (slots[i].pid == 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}

/* ---- what the guard of extension_ddl.c, the live actors and the SQL functions need ---- */

/* whether this process is attached to the registry: the library was preloaded */
bool
backfill_registry_attached(void)
{
	return backfill_preloaded && shared != NULL;
}

/*
 * backfill_job_runs_in_background
 *		Whether workers run the job of this database now.  False when the
 *		library is not preloaded.
 */
bool
backfill_job_runs_in_background(int64 job_id)
{
	bool		running = false;

	if (backfill_registry_attached())
	{
		LWLockAcquire(shared->lock, LW_EXCLUSIVE);
		reap_dead_slots();
		running = (find_run(job_id) != NULL);
		LWLockRelease(shared->lock);
	}
	return running;
}

/*
 * backfill_check_worker_caps
 *		For reschedule: if the job runs in the background, refuse nworkers
 *		workers in place of its own that the caps do not allow, as a launch
 *		would (capped: the owner is not a superuser).  The registry must be
 *		attached.
 */
void
backfill_check_worker_caps(BackfillJob *job, int nworkers, bool capped)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	if (find_run(job->job_id) != NULL)
		check_worker_caps(job, nworkers, capped, true);
	LWLockRelease(shared->lock);
}

/*
 * backfill_running_jobs
 *		The ids of the jobs of this database that run in background workers
 *		now, palloc'd, and how many (*njobs).  The registry must be attached.
 */
int64 *
backfill_running_jobs(int *njobs)
{
	int64	   *job_ids = palloc(sizeof(int64) * shared->nslots);

	*njobs = 0;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	reap_dead_slots();
	for (int i = 0; i < shared->nslots; i++)
		if (shared->runs[i].job_id != 0 && shared->runs[i].dboid == MyDatabaseId)
			job_ids[(*njobs)++] = shared->runs[i].job_id;
	LWLockRelease(shared->lock);
	return job_ids;
}
