/*-------------------------------------------------------------------------
 *
 * lines.c
 *	  The lines of progress of the run in this process, wherever the run is
 *	  when one is due: its counts for the line that ends it, and the waits
 *	  for a lock that say what they wait for.
 *
 * A run (CALL backfill.run_job, or a background worker's actor) begins its
 * lines here with the words that start each of them ("backfill job 7", or
 * "backfill job 7 actor 3"), the level they go out at (INFO to the client
 * of a run in the foreground, LOG from a worker) and the interval between
 * two of them, which runtime/ reads from its settings; it ends them when it
 * ends.  At most one run is active in a backend, so the state is the
 * process's, as pgstat_progress_start_command's is.  Outside a run nothing
 * is printed and a lock is waited for as PostgreSQL waits for it.
 *
 * The layers below the driver count what they did here (the snapshot rows
 * a barrier read, the captured changes a barrier applied), so that the
 * run's last line can say it whichever kind ran, and print a line of their
 * own (an index build, index_build.c) through backfill_line.
 *
 * A wait for a lock in the same backend cannot print while it waits: the
 * lock manager sleeps in ProcSleep, and a timeout handler may not ereport.
 * So backfill_lock_relation waits in steps of the interval: each step asks
 * for the lock with lock_timeout set to the step, in a subtransaction; a
 * step that times out prints what the wait is for (the relation, the mode,
 * the processes that hold a conflicting lock, as pg_locks shows them) and
 * how long it has lasted, then asks again.  Between two steps the request
 * leaves the lock's queue for an instant, so a request that came after it
 * may be granted first; the waits it is used for (a barrier's lock on the
 * upstream against writers) give way to the application anyway.  The
 * caller's own lock_timeout still bounds the whole wait.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/sinvaladt.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "lib/lib.h"

/* the run in this process, when its lines are on */
static struct
{
	bool		active;
	char		prefix[64];		/* "backfill job 7" or "... actor 3" */
	int			elevel;
	int			interval_ms;	/* > 0 */
	TimestampTz started_at;
	BackfillRunCounts counts;
}			run_lines;

/*
 * backfill_lines_begin
 *		Begin the lines of a run: prefix starts each, elevel is their level,
 *		interval_ms the time between two of them (0 or less: no lines, but
 *		the counts are kept).  The counts start at zero.
 */
void
backfill_lines_begin(const char *prefix, int elevel, int interval_ms)
{
	memset(&run_lines, 0, sizeof(run_lines));
	strlcpy(run_lines.prefix, prefix, sizeof(run_lines.prefix));
	run_lines.elevel = elevel;
	run_lines.interval_ms = Max(interval_ms, 0);
	run_lines.started_at = GetCurrentTimestamp();
	run_lines.active = true;
}

/* end the lines of the run: nothing is printed any more */
void
backfill_lines_end(void)
{
	run_lines.active = false;
}

/* whether the run's lines are on */
bool
backfill_lines_on(void)
{
	return run_lines.active && run_lines.interval_ms > 0;
}

/* the run's interval between two lines, in ms (0: no lines) */
int
backfill_lines_interval_ms(void)
{
	return backfill_lines_on() ? run_lines.interval_ms : 0;
}

/* the run's counts so far, and when it began */
const BackfillRunCounts *
backfill_run_counts(TimestampTz *started_at)
{
	if (started_at != NULL)
		*started_at = run_lines.started_at;
	return &run_lines.counts;
}

/* count what a barrier did: snapshot rows read, captured changes applied */
void
backfill_count_rows_copied(int64 rows)
{
	if (run_lines.active && rows > 0)
		run_lines.counts.rows_copied += rows;
}

void
backfill_count_changes_applied(int64 changes)
{
	if (run_lines.active && changes > 0)
		run_lines.counts.changes_applied += changes;
}

void
backfill_count_barrier(void)
{
	if (run_lines.active)
		run_lines.counts.barriers++;
}

/*
 * backfill_line
 *		Print a line of the run, its prefix first, when its lines are on.
 */
void
backfill_line(const char *fmt,...)
{
	StringInfoData buf;

	if (!backfill_lines_on())
		return;
	initStringInfo(&buf);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}
	ereport(run_lines.elevel,
			(errmsg("%s: %s", run_lines.prefix, buf.data)));
	pfree(buf.data);
}

/* ---- waits for a lock ---- */

/*
 * The processes that hold a lock on relid conflicting with mode, as
 * "pid 123, 456", or "no holder (queued behind other requests)".
 */
static char *
lock_holders(Oid relid, LOCKMODE mode)
{
	LOCKTAG		tag;
	VirtualTransactionId *vxids;
	StringInfoData buf;
	int			n = 0;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	vxids = GetLockConflicts(&tag, mode, NULL);
	initStringInfo(&buf);
	for (; VirtualTransactionIdIsValid(*vxids); vxids++)
	{
		PGPROC	   *proc = BackendIdGetProc(vxids->backendId);
		int			pid = proc != NULL ? proc->pid : 0;

		if (pid == 0 || pid == MyProcPid)
			continue;
		appendStringInfo(&buf, "%s%d", n++ == 0 ? "" : ", ", pid);
	}
	if (n == 0)
		return pstrdup("no holder (queued behind other requests)");
	return psprintf("held by pid%s %s", n == 1 ? "" : "s", buf.data);
}

/*
 * Ask for the lock, waiting at most timeout_ms (a lock_timeout of the
 * subtransaction's); whether it was granted.  A lock not available in time
 * returns false; any other error (a deadlock, a cancel) is raised.  The
 * lock granted belongs to the caller's transaction.
 */
static bool
lock_within(Oid relid, LOCKMODE mode, int timeout_ms)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = backfill_subxact_begin();
	volatile bool granted = false;

	PG_TRY();
	{
		int			level = NewGUCNestLevel();
		char		value[32];

		snprintf(value, sizeof(value), "%dms", Max(timeout_ms, 1));
		(void) set_config_option("lock_timeout", value, PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		LockRelationOid(relid, mode);
		AtEOXact_GUC(true, level);
		backfill_subxact_release(owner);
		granted = true;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		backfill_subxact_rollback(owner);
		/* a deadlock, a cancel: the caller's, as LockRelationOid raises it */
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
			ReThrowError(edata);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return granted;
}

/*
 * backfill_lock_relation
 *		LockRelationOid(relid, mode), which, in a run whose lines are on,
 *		prints a line every interval while it waits (see the file header).
 *		Without the caller's lock_timeout it waits as long as it takes;
 *		with it, at most that long in all, then fails as LockRelationOid
 *		would.
 */
void
backfill_lock_relation(Oid relid, LOCKMODE mode)
{
	TimestampTz start;
	const char *what;
	bool		told = false;

	if (!backfill_lines_on() || ConditionalLockRelationOid(relid, mode))
	{
		if (!backfill_lines_on())
			LockRelationOid(relid, mode);
		return;
	}
	start = GetCurrentTimestamp();
	what = psprintf("%s on %s \"%s\"", GetLockmodeName(DEFAULT_LOCKMETHOD, mode),
					get_rel_relkind(relid) == RELKIND_SEQUENCE ? "sequence" :
					get_rel_relkind(relid) == RELKIND_VIEW ? "view" : "table",
					get_rel_name(relid) ? get_rel_name(relid) : "?");
	for (;;)
	{
		long		waited_ms = (long) ((GetCurrentTimestamp() - start) / 1000);
		int			step = run_lines.interval_ms;

		CHECK_FOR_INTERRUPTS();
		if (LockTimeout > 0)
		{
			/* the caller's bound: the last step is the usual wait, and fails */
			if (waited_ms + step >= LockTimeout)
			{
				int			level = NewGUCNestLevel();
				char		value[32];

				snprintf(value, sizeof(value), "%ldms", Max(LockTimeout - waited_ms, 1));
				(void) set_config_option("lock_timeout", value, PGC_USERSET, PGC_S_SESSION,
										 GUC_ACTION_SAVE, true, 0, false);
				LockRelationOid(relid, mode);
				AtEOXact_GUC(true, level);
				if (told)
					backfill_line("granted %s after %.1f s", what,
								  (GetCurrentTimestamp() - start) / 1000000.0);
				return;
			}
		}
		if (lock_within(relid, mode, step))
		{
			if (told)
				backfill_line("granted %s after %.1f s", what,
							  (GetCurrentTimestamp() - start) / 1000000.0);
			return;
		}
		told = true;
		backfill_line("waiting for %s for %.1f s, %s", what,
					  (GetCurrentTimestamp() - start) / 1000000.0,
					  lock_holders(relid, mode));
	}
}
