/*-------------------------------------------------------------------------
 *
 * xact.c
 *	  Transactions: the only place that commits, the barriers' transactions,
 *	  subtransactions rolled back, interruptible sleeps, and RisingWave's
 *	  epochs.
 *
 * A run commits one transaction per barrier.  In CALL backfill.run_job the
 * SPI connection is non-atomic and SPI_commit starts the next transaction;
 * a background worker, which has no portal, starts and ends its own
 * transactions around the same SPI calls.  Either way each barrier's
 * transaction is REPEATABLE READ and takes its snapshot after this file has
 * started it, so the caller can take a lock first (the final barrier).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "tcop/pquery.h"
#include "utils/guc.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "backfill.h"
#include "lib/lib.h"

/*
 * backfill_xact_pin_path
 *		Pin the search_path of the extension's own statements until the
 *		transaction ends, as SET LOCAL does: a run's statements outside any
 *		role context (reading its job's row, its state) must not be planned
 *		under the caller's search_path.
 */
void
backfill_xact_pin_path(void)
{
	(void) set_config_option("search_path", BACKFILL_CATALOG_PATH,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}

/*
 * backfill_commit
 *		Commit in a non-atomic SPI connection; SPI starts the next
 *		transaction, under the pinned search_path again (the commit ended
 *		the previous one's).  Within CALL the portal owns the active
 *		snapshot and SPI_commit lets go of it; a background worker has no
 *		portal and pushed its own, which it must pop first.
 */
void
backfill_commit(void)
{
	if (ActivePortal == NULL)
		while (ActiveSnapshotSet())
			PopActiveSnapshot();
	SPI_commit();
	backfill_xact_pin_path();
}

/*
 * backfill_next_barrier
 *		Commit, and start the next barrier's transaction REPEATABLE READ,
 *		before it has taken a snapshot.  Without a portal to provide one, the
 *		transaction's snapshot is pushed when with_snapshot; the final
 *		barrier wants none yet, as it locks the upstream first.
 */
void
backfill_next_barrier(bool with_snapshot)
{
	backfill_commit();
	Assert(!FirstSnapshotSet);
	XactIsoLevel = XACT_REPEATABLE_READ;
	if (with_snapshot && ActivePortal == NULL)
		PushActiveSnapshot(GetTransactionSnapshot());
}

/*
 * backfill_next_fetch
 *		Commit, and start the transaction of the fetch before a barrier
 *		(kind.h: fetch) READ COMMITTED.  A fetch takes its job's slot lock
 *		first, then reads the offset the fetch before it committed and
 *		records its own: each statement must see what the holder of the lock
 *		before it committed.  Under one snapshot taken before the lock, the
 *		actors of a job in their workers would fail one another's update of
 *		the job's row ("could not serialize access"), and a worker retries
 *		such a failure only after a pause.
 */
void
backfill_next_fetch(void)
{
	backfill_commit();
	Assert(!FirstSnapshotSet);
	XactIsoLevel = XACT_READ_COMMITTED;
	if (ActivePortal == NULL)
		PushActiveSnapshot(GetTransactionSnapshot());
}

/*
 * backfill_xact_begin
 *		Start a transaction of a background worker, connected to SPI
 *		(non-atomic when it is to commit barriers), with a snapshot.
 */
void
backfill_xact_begin(bool nonatomic)
{
	StartTransactionCommand();
	if (SPI_connect_ext(nonatomic ? SPI_OPT_NONATOMIC : 0) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* commit what backfill_xact_begin() started */
void
backfill_xact_end(void)
{
	while (ActiveSnapshotSet())
		PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
}

/* abort a worker's transaction after an error was caught */
void
backfill_xact_abort(void)
{
	AbortCurrentTransaction();
}

/*
 * backfill_rollback_after_error
 *		In CALL backfill.run_job, after an error was caught and its state
 *		flushed: roll the failed transaction back and start the next, as
 *		ROLLBACK in a procedure does, so that the caller can record the
 *		failure and commit it before it raises the error again.  The SPI
 *		connections the failed statements left open, above the run's own
 *		(the only non-atomic one), are closed first, and the snapshots they
 *		pushed, above the portal's, popped.  False, with nothing done, when
 *		that cannot be: within a subtransaction, or outside a non-atomic
 *		connection.
 */
bool
backfill_rollback_after_error(void)
{
	if (IsSubTransaction() || ActivePortal == NULL)
		return false;
	while (!SPI_inside_nonatomic_context())
		if (SPI_finish() != SPI_OK_FINISH)
			return false;
	while (ActiveSnapshotSet() && GetActiveSnapshot() != ActivePortal->portalSnapshot)
		PopActiveSnapshot();
	SPI_rollback();
	return true;
}

/*
 * backfill_subxact_begin / backfill_subxact_rollback / backfill_subxact_release
 *		A subtransaction whose work is then thrown away, for estimate_job's
 *		sample, or kept unless it fails (a cdc job's slot, driver.c).  The
 *		caller stays in its memory context; what it acquires in the
 *		subtransaction belongs to the subtransaction's resource owner, and
 *		the rollback gives back the one begin returned.
 */
ResourceOwner
backfill_subxact_begin(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	return owner;
}

/* keep the work of a subtransaction begun with backfill_subxact_begin */
void
backfill_subxact_release(ResourceOwner owner)
{
	MemoryContext cxt = CurrentMemoryContext;

	ReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

void
backfill_subxact_rollback(ResourceOwner owner)
{
	MemoryContext cxt = CurrentMemoryContext;

	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/*
 * backfill_subxact_call
 *		Call work(arg) in a subtransaction of its own: NULL if it succeeded,
 *		else its error, copied into the caller's memory context, with
 *		everything it did rolled back.  For work whose failure the caller
 *		reports, or tries again, and goes on.
 */
ErrorData *
backfill_subxact_call(void (*work) (void *arg), void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = backfill_subxact_begin();
	ErrorData  *edata = NULL;

	PG_TRY();
	{
		work(arg);
		backfill_subxact_release(owner);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		backfill_subxact_rollback(owner);
	}
	PG_END_TRY();
	return edata;
}

/* a statement for backfill_subxact_exec */
typedef struct SubxactStatement
{
	const char *sql;
	int			expected;
	int			lock_ms;
} SubxactStatement;

static void
exec_statement(void *arg)
{
	SubxactStatement *stmt = (SubxactStatement *) arg;
	int			level = NewGUCNestLevel();

	if (stmt->lock_ms >= 0)
		(void) set_config_option("lock_timeout", psprintf("%d", stmt->lock_ms), PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	backfill_spi_exec(stmt->sql, stmt->expected);
	AtEOXact_GUC(true, level);
}

/*
 * backfill_subxact_exec
 *		Run a statement (caller connected to SPI) in a subtransaction of its
 *		own (backfill_subxact_call).  With lock_ms >= 0 it waits that long at
 *		most for each lock (lock_timeout, for the statement only; the
 *		rollback of the subtransaction undoes it too).
 */
ErrorData *
backfill_subxact_exec(const char *sql, int expected, int lock_ms)
{
	SubxactStatement stmt = {sql, expected, lock_ms};

	return backfill_subxact_call(exec_statement, &stmt);
}

/*
 * backfill_sleep_ms
 *		Sleep on the latch for ms milliseconds at most: a cancel, a
 *		statement timeout, SIGTERM or the postmaster's death end it.
 */
void
backfill_sleep_ms(long ms)
{
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 ms, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
}

/* a background worker's test of whether its job was asked to stop */
static bool (*stop_check) (void) = NULL;

/*
 * backfill_set_stop_check
 *		For a background worker: how waits that may last (on another
 *		server, remote.c) learn that the job was asked to stop, once the
 *		latch wakes them.
 */
void
backfill_set_stop_check(bool (*check) (void))
{
	stop_check = check;
}

/*
 * backfill_stop_pending
 *		Whether this process is a worker whose job was asked to stop.
 */
bool
backfill_stop_pending(void)
{
	return stop_check != NULL && stop_check();
}

/* sleep until t, or until interrupted */
void
backfill_sleep_until(TimestampTz t)
{
	long		ms;

	CHECK_FOR_INTERRUPTS();
	while ((ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), t)) > 0)
		backfill_sleep_ms(ms);
}

/* RisingWave's epoch: milliseconds since 2021-04-01 in the high 48 bits */
int64
backfill_next_epoch(int64 previous)
{
	int64		unix_ms = GetCurrentTimestamp() / 1000 +
		(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
	int64		epoch = (unix_ms - INT64CONST(1617235200000)) << 16;

	return Max(epoch, previous + 1);
}
