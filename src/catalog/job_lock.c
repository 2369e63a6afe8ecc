/*-------------------------------------------------------------------------
 *
 * job_lock.c
 *	  The job lock: who runs or changes a job.
 *
 * The job lock is an advisory lock with field4 BACKFILL_LOCK_FIELD4, which
 * pg_advisory_lock() never uses.  run_job holds it exclusively at session
 * level for the whole run; the background actors of a job share it, each at
 * session level; start_job, cancel_job, drop_job and reschedule hold it
 * exclusively at transaction level.  Whoever cannot get it at once fails
 * with OBJECT_IN_USE, except after stopping a job's workers, when waiting
 * for them to let go of it is the point.
 *
 * The job's cutover lock is another: pg_advisory_xact_lock(hashtext(
 * 'backfill.cutover'), job_id::integer), which a user's session can take
 * too.  cutover, rollback_cutover and finish_cutover take it first, then
 * read the job again; cancel_job, drop_job and unfence wait for it, so that
 * a cutover of the job commits before them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"

#include "backfill.h"
#include "catalog/catalog_access.h"

static void
job_locktag(LOCKTAG *tag, int64 job_id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (job_id >> 32),
						 (uint32) job_id, BACKFILL_LOCK_FIELD4);
}

static void
report_job_running(int64 job_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("backfill job %lld is already running", (long long) job_id),
			 errdetail("Another session is running or changing the job."),
			 errhint("Wait for that session to finish, or stop it.")));
}

/*
 * backfill_lock_job
 *		Take the job lock in exclusive mode without waiting, at session level
 *		(run_job) or transaction level (start_job, cancel_job, drop_job).
 */
void
backfill_lock_job(int64 job_id, bool session)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	if (LockAcquire(&tag, ExclusiveLock, session, true) == LOCKACQUIRE_NOT_AVAIL)
		report_job_running(job_id);
}

void
backfill_unlock_job(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	LockRelease(&tag, ExclusiveLock, true);
}

/*
 * backfill_wait_job_lock
 *		The exclusive job lock for this transaction, waiting for it: after
 *		stopping a job's workers, which release it as they exit.
 */
void
backfill_wait_job_lock(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * backfill_lock_job_shared / backfill_unlock_job_shared
 *		The lock the actors of a job hold together, at session level, for
 *		as long as they run; they wait for it while start_job's transaction
 *		holds it exclusively.
 */
void
backfill_lock_job_shared(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	(void) LockAcquire(&tag, ShareLock, true, false);
}

void
backfill_unlock_job_shared(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	LockRelease(&tag, ShareLock, true);
}

/* whether this transaction holds the job lock exclusively */
bool
backfill_job_lock_mine(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	return LockHeldByMe(&tag, ExclusiveLock);
}

/* whether anyone holds the job lock now */
bool
backfill_job_lock_held(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ExclusiveLock, false);
	return false;
}

/*
 * backfill_lock_job_cutover
 *		The job's cutover lock, held until the transaction ends; waits for
 *		it.  A job id beyond an integer's range is an error, as the lock's
 *		SQL form (job_id::integer) makes it.
 */
void
backfill_lock_job_cutover(int64 job_id)
{
	Datum		key1 = DirectFunctionCall1Coll(hashtext, DEFAULT_COLLATION_OID,
											   PointerGetDatum(cstring_to_text("backfill.cutover")));
	Datum		key2 = DirectFunctionCall1(int84, Int64GetDatum(job_id));

	DirectFunctionCall2(pg_advisory_xact_lock_int4, key1, key2);
}
