/*-------------------------------------------------------------------------
 *
 * live_actors.c
 *	  The live actors that backfill.progress shows, in shared memory after
 *	  the worker registry's (registry.c), under its lock.
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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "runtime/driver.h"
#include "runtime/registry_internal.h"

PG_FUNCTION_INFO_V1(backfill_live_actors);

/* entries of the live actors for runs in sessions, beyond the workers' */
#define BACKFILL_SESSION_ACTORS 128

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

/* the entries, in shared memory; NULL when the library is not preloaded */
static BackfillLiveActor *live = NULL;
static int	nlive = 0;
static LWLock *live_lock;		/* the registry's */

/* whether this process has registered its live entries' exit callback */
static bool live_callback = false;

static int
live_count(void)
{
	return max_worker_processes + BACKFILL_SESSION_ACTORS;
}

/* the room the entries take in shared memory, after the registry's */
Size
backfill_live_shmem_size(void)
{
	return mul_size(live_count(), sizeof(BackfillLiveActor));
}

/*
 * backfill_live_attach
 *		Where this process finds the entries, which the registry has zeroed
 *		when it created them, and the registry's lock, which guards them
 *		(called from its shmem_startup).  Until then, as when the library is
 *		not preloaded, there are none.
 */
void
backfill_live_attach(char *entries, LWLock *lock)
{
	live = (BackfillLiveActor *) entries;
	nlive = live_count();
	live_lock = lock;
}

/* free this process's live entries.  Lock not held. */
static void
live_release_mine(void)
{
	LWLockAcquire(live_lock, LW_EXCLUSIVE);
	for (int i = 0; i < nlive; i++)
		if (live[i].job_id != 0 && live[i].pid == MyProcPid)
			memset(&live[i], 0, sizeof(BackfillLiveActor));
	LWLockRelease(live_lock);
}

static void
live_at_exit(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	if (live != NULL)
		live_release_mine();
}

/* this process's entry of the actor, or NULL.  Lock held. */
static BackfillLiveActor *
live_find(int64 job_id, int32 actor_id)
{
	for (int i = 0; i < nlive; i++)
		if (live[i].job_id == job_id && live[i].actor_id == actor_id &&
			live[i].pid == MyProcPid)
			return &live[i];
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
	if (live == NULL)
		return;
	if (!live_callback)
	{
		before_shmem_exit(live_at_exit, (Datum) 0);
		live_callback = true;
	}
	LWLockAcquire(live_lock, LW_EXCLUSIVE);
	for (int a = 0; a < job->nactors; a++)
	{
		BackfillLiveActor *e;

		if ((actor >= 0 && a != actor) || live_find(job->job_id, job->actors[a].actor_id))
			continue;
		e = NULL;
		for (int i = 0; i < nlive && e == NULL; i++)
			if (live[i].job_id == 0)
				e = &live[i];
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
	LWLockRelease(live_lock);
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

	if (live == NULL)
		return;
	LWLockAcquire(live_lock, LW_EXCLUSIVE);
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
	LWLockRelease(live_lock);
}

/* free the live entries of this process: its run has ended */
void
backfill_live_end(void)
{
	if (live != NULL)
		live_release_mine();
}

/*
 * backfill._live_actors() RETURNS SETOF record: the live entries of the jobs
 * whose owner the current user has the privileges of, or every one for a
 * member of pg_read_all_stats, as pg_stat_activity shows its rows.  Empty
 * when the library is not preloaded.  The position is a key of the
 * upstream, a value of its rows: a monitoring role sees how far a job has
 * gone, not where, unless it has the privileges of the job's owner, as
 * pg_stat_activity shows the query text only to those of its role.
 */
Datum
backfill_live_actors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		all_stats;
	BackfillLiveActor *copy;
	int			n = 0;

	InitMaterializedSRF(fcinfo, 0);
	if (live == NULL)
		PG_RETURN_VOID();
	all_stats = has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);

	/* copied under the lock, then formed outside it */
	copy = palloc(sizeof(BackfillLiveActor) * nlive);
	LWLockAcquire(live_lock, LW_SHARED);
	for (int i = 0; i < nlive; i++)
		if (live[i].job_id != 0 && live[i].dboid == MyDatabaseId)
			copy[n++] = live[i];
	LWLockRelease(live_lock);

	for (int i = 0; i < n; i++)
	{
		BackfillLiveActor *e = &copy[i];
		Datum		values[13];
		bool		nulls[13];
		bool		owned = has_privs_of_role(GetUserId(), e->owner);

		if (!all_stats && !owned)
			continue;
		memset(nulls, false, sizeof(nulls));
		values[0] = Int32GetDatum((int32) e->pid);
		values[1] = Int64GetDatum(e->job_id);
		values[2] = Int32GetDatum(e->actor_id);
		values[3] = CStringGetTextDatum(e->background ? "background" : "foreground");
		values[4] = CStringGetTextDatum(e->phase);
		values[5] = Int64GetDatum(e->rows);
		values[6] = CStringGetTextDatum(e->position);
		nulls[6] = (e->position[0] == '\0' || !owned);
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
