/*-------------------------------------------------------------------------
 *
 * pacing.c
 *	  Pacing that protects production: whether an actor may read its next
 *	  snapshot chunk now and, if not, why; and the actor's pace (snapshot
 *	  rows per second, what held it back) for backfill.jobs.
 *
 * Three settings hold back the snapshot side of every actor (0 turns each
 * off; reloadable, read before every chunk):
 *
 *	backfill.max_replica_lag	(time) while a streaming standby, or an
 *		active physical replication slot, is further behind than this;
 *	backfill.max_retained_wal	(bytes) while a replication slot other than
 *		the job's own retains more WAL than this, or while more WAL than this
 *		waits for the archiver;
 *	backfill.max_wal_rate		(bytes per second) the WAL the job writes,
 *		over all its actors.
 *
 * An actor held back reads nothing more in its barrier, which goes on with
 * changes only, as with rate limit 0: changes at or below its positions
 * still reach the downstream, the barrier commits, nothing is lost.  The
 * executor asks before each chunk (backfill_pacing_hold), next to its rate
 * limiter.
 *
 * Replica lag is a time.  pg_stat_replication's replay_lag keeps its last
 * sample when a standby stops replaying, so it never shows such a standby
 * falling further behind.  The lag is measured instead from the job's own
 * commits: a run remembers the WAL position (XactLastCommitEnd) of its
 * barriers' commits and when they happened (when the next barrier begins,
 * right after); a standby whose replay position is below a commit made t
 * seconds ago is t seconds behind, which keeps growing while the standby
 * stands still.  A standby's position is the replay position its walsender
 * has, or the flush position for a client that does not replay
 * (pg_receivewal); its lag is never less than its walsender's replay_lag.  A
 * physical slot's position is its restart_lsn.  Logical walsenders and slots
 * are not standbys.  The memory of commits keeps them at least 100 ms apart,
 * the newest 256 at full resolution, older ones thinned; a standby behind
 * the oldest one remembered is at least as far behind as it.
 *
 * Retained WAL is bytes: from a slot's restart_lsn to the current insert
 * position; for the archiver, the WAL segments waiting to be archived
 * (pg_wal/archive_status/<segment>.ready), when archive_mode is on.
 *
 * Hysteresis: once held back by replica lag or retained WAL, an actor
 * resumes only when the measure is at or below 80% of the limit (4 s for a
 * limit of 5 s), so that it does not start and stop around the limit; the
 * text in throttled_by shows the threshold in force.  Measurements are taken
 * at most every 100 ms.
 *
 * The WAL rate is a token bucket (GCRA) over the WAL this process writes
 * (pgWalUsage: every byte of its barriers, chunks, changes, state and
 * commits alike): each byte costs 1/rate seconds on a clock that never lags
 * behind the time the bytes began; an actor reads when the clock is not
 * ahead of now.  The actors of a job in background workers share one clock
 * in the worker registry (registry.c); a run in a session, which runs every
 * actor, keeps its own.  While the limit is set, a statement reads at most
 * about a tenth of a second's worth of WAL, so the rate holds over short
 * windows too.
 *
 * The state is per run and per process (one worker, or the session that
 * runs every actor), one allocation in the job's memory that outlives the
 * executor's replacement (pfree frees it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "replication/slot.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "barrier.h"
#include "capture/capture.h"
#include "runtime/driver.h"
#include "runtime/pacing.h"

/* the settings; 0 turns each off */
static int	max_replica_lag_ms = 0;
static int	max_wal_rate_kb = 0;	/* kB per second */
static int	max_retained_wal_kb = 0;

/* an actor held back resumes at or below this fraction of the limit */
#define PACING_RESUME_FRACTION	0.8

/* measurements of standbys, slots and the archiver are this fresh */
#define PACING_MEASURE_USECS	(100 * 1000)

/* commits remembered: at least this far apart, so many at full resolution */
#define PACING_COMMIT_SPACING_USECS (100 * 1000)
#define PACING_RECENT_COMMITS	256
#define PACING_MAX_COMMITS		(2 * PACING_RECENT_COMMITS)

/* rows per second: over this window, from samples at least 1 s apart */
#define PACING_RATE_WINDOW_USECS (60 * USECS_PER_SEC)
#define PACING_RATE_SAMPLES		64

/* under a WAL rate limit, a statement writes about this much of a second's */
#define PACING_STATEMENT_FRACTION 0.1

#define PACING_REASON_LEN		(NAMEDATALEN + 96)

typedef struct PacedCommit
{
	XLogRecPtr	lsn;			/* the end of its commit record */
	TimestampTz at;
} PacedCommit;

typedef struct RateSample
{
	TimestampTz at;
	int64		rows;			/* read by the actor in this run until then */
} RateSample;

typedef struct PacedActor
{
	int64		rows;
	int			nsamples;		/* oldest first */
	RateSample	samples[PACING_RATE_SAMPLES];
	char		reason[PACING_REASON_LEN];	/* this barrier's; "" for none */
} PacedActor;

struct PacingState
{
	int64		job_id;
	char		own_slot[NAMEDATALEN];	/* the job's replication slot's name */
	int			nactors;
	bool		held;			/* pacing held an actor back this barrier */

	/* this run's commits, oldest first */
	int			ncommits;
	PacedCommit commits[PACING_MAX_COMMITS];

	/* the last measurements */
	TimestampTz measured_at;
	double		lag_ms;
	char		lag_source[NAMEDATALEN + 16];
	int64		retained;
	char		retained_source[NAMEDATALEN + 16];
	bool		lag_held;		/* above the limit, not yet below the resume mark */
	bool		retained_held;

	/* the WAL rate */
	uint64		wal_seen;		/* pgWalUsage.wal_bytes when last charged */
	TimestampTz wal_from;		/* when last charged */
	TimestampTz wal_clock;		/* a run in a session: its own clock */
	double		wal_per_row;	/* of the last chunks, 0 unknown */

	PacedActor	actors[FLEXIBLE_ARRAY_MEMBER];
};

/*
 * backfill_pacing_init
 *		Define the pacing settings; from _PG_init.  They are PGC_SUSET: they
 *		protect the server from its jobs, so a job's owner cannot lift them
 *		in its session; a superuser sets them in postgresql.conf, per role or
 *		per database (ALTER ROLE/DATABASE ... SET), or lets a role set them
 *		with GRANT SET ON PARAMETER.
 */
void
backfill_pacing_init(void)
{
	DefineCustomIntVariable("backfill.max_replica_lag",
							"Holds back a job's snapshot reads while a standby is further behind than this.",
							"Streaming standbys and active physical replication slots count, their lag "
							"measured from the job's own commits. Zero turns the check off.",
							&max_replica_lag_ms,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomIntVariable("backfill.max_wal_rate",
							"The most WAL per second a job writes, over all its actors.",
							"Measured from the WAL the job writes itself. Zero turns the limit off.",
							&max_wal_rate_kb,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("backfill.max_retained_wal",
							"Holds back a job's snapshot reads while a replication slot retains more WAL than this, "
							"or while more than this waits for the archiver.",
							"The job's own slot does not count. Zero turns the check off.",
							&max_retained_wal_kb,
							0, 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* backfill.max_wal_rate in bytes per second, 0 when off */
int64
backfill_pacing_wal_rate(void)
{
	return (int64) max_wal_rate_kb * 1024;
}

/*
 * backfill_pacing_create
 *		The pacing state of a run of job, in memory context cxt.
 */
PacingState *
backfill_pacing_create(BackfillJob *job, MemoryContext cxt)
{
	PacingState *ps = MemoryContextAllocZero(cxt, offsetof(PacingState, actors) +
											 sizeof(PacedActor) * Max(job->nactors, 1));
	TimestampTz now = GetCurrentTimestamp();
	char	   *slot = backfill_slot_name(job->job_id);

	ps->job_id = job->job_id;
	strlcpy(ps->own_slot, slot, sizeof(ps->own_slot));
	pfree(slot);
	ps->nactors = job->nactors;
	for (int a = 0; a < job->nactors; a++)
	{
		ps->actors[a].samples[0].at = now;
		ps->actors[a].nsamples = 1;
	}
	ps->wal_seen = pgWalUsage.wal_bytes;
	ps->wal_from = now;
	return ps;
}

/* ---- formatting ---- */

/* a number with one decimal, without a trailing ".0" */
static void
format_number(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.1f", v);
	if (strlen(buf) > 2 && strcmp(buf + strlen(buf) - 2, ".0") == 0)
		buf[strlen(buf) - 2] = '\0';
}

/* bytes in the largest unit that leaves at least 1, as "5.1 GB", "819 bytes" */
static void
format_bytes(char *buf, size_t len, double bytes)
{
	static const char *const units[] = {"bytes", "kB", "MB", "GB", "TB", "PB"};
	int			u = 0;
	char		num[32];

	while (u < lengthof(units) - 1 && bytes >= 1024.0)
	{
		bytes /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(num, sizeof(num), "%.0f", bytes);
	else
		format_number(num, sizeof(num), bytes);
	snprintf(buf, len, "%s %s", num, units[u]);
}

/* ---- the job's commits ---- */

/* remember the last commit of this process, if it is new */
static void
note_commit(PacingState *ps, TimestampTz now)
{
	PacedCommit *last = ps->ncommits > 0 ? &ps->commits[ps->ncommits - 1] : NULL;

	if (XactLastCommitEnd == InvalidXLogRecPtr ||
		(last && (XactLastCommitEnd <= last->lsn ||
				  now - last->at < PACING_COMMIT_SPACING_USECS)))
		return;
	if (ps->ncommits == PACING_MAX_COMMITS)
	{
		/* every other one of the older half goes */
		int			older = PACING_MAX_COMMITS - PACING_RECENT_COMMITS;
		int			kept = 0;

		for (int i = 0; i < older; i += 2)
			ps->commits[kept++] = ps->commits[i];
		memmove(&ps->commits[kept], &ps->commits[older],
				sizeof(PacedCommit) * PACING_RECENT_COMMITS);
		ps->ncommits = kept + PACING_RECENT_COMMITS;
	}
	ps->commits[ps->ncommits].lsn = XactLastCommitEnd;
	ps->commits[ps->ncommits].at = now;
	ps->ncommits++;
}

/*
 * How long ago the job committed the oldest of its commits that a standby
 * at position pos has not replayed, in milliseconds; 0 if it has them all.
 */
static double
lag_behind(PacingState *ps, XLogRecPtr pos, TimestampTz now)
{
	for (int i = 0; i < ps->ncommits; i++)
		if (ps->commits[i].lsn > pos)
			return (double) (now - ps->commits[i].at) / 1000.0;
	return 0;
}

/* ---- measurements ---- */

/* a larger lag than so far, from source */
static void
note_lag(PacingState *ps, double lag_ms, const char *source)
{
	if (lag_ms <= ps->lag_ms)
		return;
	ps->lag_ms = lag_ms;
	strlcpy(ps->lag_source, source, sizeof(ps->lag_source));
}

/*
 * The physical walsender with process id pid: its application_name, from
 * the snapshot of backend status this transaction took.  False for a
 * logical walsender, or one the snapshot does not have yet.
 */
static bool
physical_walsender(pid_t pid, char *name, size_t len)
{
	int			n = pgstat_fetch_stat_numbackends();

	for (int i = 1; i <= n; i++)
	{
		LocalPgBackendStatus *local = pgstat_fetch_stat_local_beentry(i);
		PgBackendStatus *be = local ? &local->backendStatus : NULL;

		if (be == NULL || be->st_procpid != pid)
			continue;
		if (be->st_backendType != B_WAL_SENDER || OidIsValid(be->st_databaseid))
			return false;
		if (be->st_appname && be->st_appname[0] != '\0')
			strlcpy(name, be->st_appname, len);
		else
			snprintf(name, len, "walsender %d", (int) pid);
		return true;
	}
	return false;
}

/* the lag of the streaming standbys */
static void
measure_standbys(PacingState *ps, TimestampTz now)
{
	for (int i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *walsnd = &WalSndCtl->walsnds[i];
		pid_t		pid;
		WalSndState state;
		XLogRecPtr	pos;
		XLogRecPtr	flush;
		TimeOffset	replay_lag;
		char		name[NAMEDATALEN];
		double		lag;

		SpinLockAcquire(&walsnd->mutex);
		pid = walsnd->pid;
		state = walsnd->state;
		pos = walsnd->apply;
		flush = walsnd->flush;
		replay_lag = walsnd->applyLag;
		SpinLockRelease(&walsnd->mutex);

		if (pid == 0 || (state != WALSNDSTATE_STREAMING && state != WALSNDSTATE_CATCHUP))
			continue;
		if (XLogRecPtrIsInvalid(pos))
			pos = flush;		/* a client that does not replay */
		if (XLogRecPtrIsInvalid(pos) || !physical_walsender(pid, name, sizeof(name)))
			continue;			/* nothing reported yet, or not a standby */
		lag = lag_behind(ps, pos, now);
		if (replay_lag > 0)
			lag = Max(lag, (double) replay_lag / 1000.0);
		note_lag(ps, lag, name);
	}
}

/* the WAL segments waiting for the archiver, in bytes */
static int64
archiver_backlog(void)
{
	const char *path = XLOGDIR "/archive_status";
	DIR		   *dir;
	struct dirent *de;
	int64		segments = 0;

	if (!XLogArchivingActive())
		return 0;
	dir = AllocateDir(path);
	while ((de = ReadDir(dir, path)) != NULL)
		if (strlen(de->d_name) == XLOG_FNAME_LEN + 6 &&
			strspn(de->d_name, "0123456789ABCDEF") == XLOG_FNAME_LEN &&
			strcmp(de->d_name + XLOG_FNAME_LEN, ".ready") == 0)
			segments++;
	FreeDir(dir);
	return segments * wal_segment_size;
}

/*
 * The slots: the lag of the active physical ones, the WAL every one but the
 * job's own retains.
 */
static void
measure_slots(PacingState *ps, TimestampTz now, bool lag, bool retained)
{
	XLogRecPtr	insert = GetXLogInsertRecPtr();

	LWLockAcquire(ReplicationSlotControlLock, LW_SHARED);
	for (int i = 0; i < max_replication_slots; i++)
	{
		ReplicationSlot *s = &ReplicationSlotCtl->replication_slots[i];
		XLogRecPtr	restart;
		Oid			database;
		pid_t		active;
		char		name[NAMEDATALEN];
		char		source[NAMEDATALEN + 16];

		if (!s->in_use)
			continue;
		SpinLockAcquire(&s->mutex);
		restart = s->data.restart_lsn;
		database = s->data.database;
		active = s->active_pid;
		strlcpy(name, NameStr(s->data.name), sizeof(name));
		SpinLockRelease(&s->mutex);

		if (XLogRecPtrIsInvalid(restart) || strcmp(name, ps->own_slot) == 0)
			continue;
		snprintf(source, sizeof(source), "slot \"%s\"", name);
		if (lag && active != 0 && !OidIsValid(database))
			note_lag(ps, lag_behind(ps, restart, now), source);
		if (retained && insert > restart && (int64) (insert - restart) > ps->retained)
		{
			ps->retained = (int64) (insert - restart);
			strlcpy(ps->retained_source, source, sizeof(ps->retained_source));
		}
	}
	LWLockRelease(ReplicationSlotControlLock);
}

/* measure what the settings in force ask for, unless done lately */
static void
measure(PacingState *ps, TimestampTz now)
{
	if (ps->measured_at != 0 && now - ps->measured_at < PACING_MEASURE_USECS)
		return;
	ps->measured_at = now;
	ps->lag_ms = 0;
	ps->lag_source[0] = '\0';
	ps->retained = 0;
	ps->retained_source[0] = '\0';
	if (max_replica_lag_ms > 0)
		measure_standbys(ps, now);
	if (max_replica_lag_ms > 0 || max_retained_wal_kb > 0)
		measure_slots(ps, now, max_replica_lag_ms > 0, max_retained_wal_kb > 0);
	if (max_retained_wal_kb > 0)
	{
		int64		archiver = archiver_backlog();

		if (archiver > ps->retained)
		{
			ps->retained = archiver;
			strlcpy(ps->retained_source, "archiver", sizeof(ps->retained_source));
		}
	}
}

/*
 * Charge the WAL written since the last charge to the job's clock, and
 * return the clock; 0 without a limit.
 */
static TimestampTz
charge_wal(PacingState *ps, TimestampTz now)
{
	uint64		written = pgWalUsage.wal_bytes;
	int64		bytes = (int64) (written - ps->wal_seen);
	int64		rate = backfill_pacing_wal_rate();
	TimestampTz from = ps->wal_from;
	int64		usecs;
	TimestampTz clock;

	ps->wal_seen = written;
	ps->wal_from = now;
	if (rate <= 0)
		return 0;
	usecs = (int64) ((double) bytes * USECS_PER_SEC / rate);
	clock = backfill_run_pace_clock(ps->job_id, from, usecs);
	if (clock == 0)
	{
		ps->wal_clock = Max(ps->wal_clock, from) + usecs;
		clock = ps->wal_clock;
	}
	return clock;
}

/* ---- what the executor asks ---- */

/*
 * backfill_pacing_begin
 *		A barrier of actors first..last begins: remember the last commit,
 *		charge the WAL written since the last chunk, forget what held the
 *		actors back in the last barrier.
 */
void
backfill_pacing_begin(PacingState *ps, int first, int last)
{
	TimestampTz now = GetCurrentTimestamp();

	note_commit(ps, now);
	(void) charge_wal(ps, now);
	ps->held = false;
	for (int a = first; a <= last; a++)
		ps->actors[a].reason[0] = '\0';
}

/*
 * backfill_pacing_hold
 *		Whether the actor may read a chunk now: 0 if so, else the time until
 *		which it must wait (DT_NOEND: until a measure goes down), having
 *		recorded why.
 */
TimestampTz
backfill_pacing_hold(PacingState *ps, int actor)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz clock = charge_wal(ps, now);
	PacedActor *pa = &ps->actors[actor];
	char		value[32];
	char		threshold[32];

	if (max_replica_lag_ms > 0 || max_retained_wal_kb > 0)
		measure(ps, now);

	if (max_replica_lag_ms > 0)
	{
		double		limit = ps->lag_held ? max_replica_lag_ms * PACING_RESUME_FRACTION :
			max_replica_lag_ms;

		ps->lag_held = ps->lag_ms > limit;
		if (ps->lag_held)
		{
			format_number(value, sizeof(value), ps->lag_ms / 1000.0);
			format_number(threshold, sizeof(threshold), limit / 1000.0);
			snprintf(pa->reason, sizeof(pa->reason), "replica lag %s s > %s s (%s)",
					 value, threshold, ps->lag_source);
			ps->held = true;
			return DT_NOEND;
		}
	}
	else
		ps->lag_held = false;

	if (max_retained_wal_kb > 0)
	{
		double		limit = (double) max_retained_wal_kb * 1024 *
			(ps->retained_held ? PACING_RESUME_FRACTION : 1.0);

		ps->retained_held = ps->retained > limit;
		if (ps->retained_held)
		{
			format_bytes(value, sizeof(value), (double) ps->retained);
			format_bytes(threshold, sizeof(threshold), limit);
			snprintf(pa->reason, sizeof(pa->reason), "retained WAL %s > %s (%s)",
					 value, threshold, ps->retained_source);
			ps->held = true;
			return DT_NOEND;
		}
	}
	else
		ps->retained_held = false;

	if (clock > now)
	{
		strlcpy(pa->reason, "WAL rate", sizeof(pa->reason));
		ps->held = true;
		return clock;
	}
	return 0;
}

/* record that something else held the actor back: "rate limit", "paused" */
void
backfill_pacing_held_by(PacingState *ps, int actor, const char *reason)
{
	strlcpy(ps->actors[actor].reason, reason, sizeof(ps->actors[actor].reason));
}

/*
 * backfill_pacing_chunk_rows
 *		The rows the next statement may read, at most limit: under a WAL rate
 *		limit, about a tenth of a second's worth.
 */
int64
backfill_pacing_chunk_rows(PacingState *ps, int64 limit)
{
	int64		rate = backfill_pacing_wal_rate();
	int64		rows;

	if (rate <= 0 || ps->wal_per_row <= 0)
		return limit;
	rows = (int64) (rate * PACING_STATEMENT_FRACTION / ps->wal_per_row);
	return Max(1, Min(limit, rows));
}

/* an actor read rows in a chunk, whose WAL is what was written since the hold */
void
backfill_pacing_read(PacingState *ps, int actor, int64 rows)
{
	double		per_row;

	if (rows <= 0)
		return;
	ps->actors[actor].rows += rows;
	per_row = (double) (pgWalUsage.wal_bytes - ps->wal_seen) / rows;
	ps->wal_per_row = ps->wal_per_row > 0 ? (ps->wal_per_row + per_row) / 2 : per_row;
}

/*
 * backfill_pacing_end
 *		An actor's barrier ends: a sample of its rows, for its rate.
 */
void
backfill_pacing_end(PacingState *ps, int actor)
{
	PacedActor *pa = &ps->actors[actor];
	TimestampTz now = GetCurrentTimestamp();
	int			drop = 0;

	/* only the newest sample a window old or older is needed */
	while (drop + 1 < pa->nsamples &&
		   pa->samples[drop + 1].at <= now - PACING_RATE_WINDOW_USECS)
		drop++;
	if (pa->nsamples == PACING_RATE_SAMPLES)
		drop = Max(drop, 1);
	if (drop > 0)
	{
		pa->nsamples -= drop;
		memmove(&pa->samples[0], &pa->samples[drop], sizeof(RateSample) * pa->nsamples);
	}
	/* samples a second apart: a newer one within the second replaces the last */
	if (pa->nsamples >= 2 &&
		now - pa->samples[pa->nsamples - 2].at < USECS_PER_SEC)
		pa->nsamples--;
	pa->samples[pa->nsamples].at = now;
	pa->samples[pa->nsamples].rows = pa->rows;
	pa->nsamples++;
}

/* what held the actor back in its last barrier, or NULL */
const char *
backfill_pacing_throttled_by(PacingState *ps, int actor)
{
	return ps->actors[actor].reason[0] != '\0' ? ps->actors[actor].reason : NULL;
}

/* whether the pacing settings held back an actor in the last barrier */
bool
backfill_pacing_held(PacingState *ps)
{
	return ps->held;
}

/* the actor's snapshot rows per second over the last minute; -1 unknown */
double
backfill_pacing_rows_per_second(PacingState *ps, int actor)
{
	PacedActor *pa = &ps->actors[actor];
	RateSample *first = &pa->samples[0];
	RateSample *last = &pa->samples[pa->nsamples - 1];

	if (pa->nsamples < 2 || last->at <= first->at)
		return -1;
	return (double) (last->rows - first->rows) * USECS_PER_SEC / (double) (last->at - first->at);
}
