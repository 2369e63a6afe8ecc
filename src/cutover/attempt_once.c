/*-------------------------------------------------------------------------
 *
 * attempt_once.c
 *	  One attempt of the cutover (attempts.c), in a subtransaction of its
 *	  own: the lock step (lock.c), the checks again under the lock
 *	  (check.c), the swap (swap.c) and the partitions' renames
 *	  (carry_partitions.c).
 *
 * Each lock is waited for at most lock_timeout, so that a writer queued
 * behind the attempt waits no longer than that.  A lock not had in time, or
 * a deadlock that PostgreSQL resolves against the cutover, anywhere in the
 * attempt (the swap included), rolls the attempt back and is a failed
 * attempt; any other error ends the cutover.  Each step is a statement of
 * its own as the caller: every ALTER it makes needs the privileges it
 * would need typed by hand.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "cutover/attempts.h"
#include "cutover/check.h"
#include "cutover/lock_step.h"
#include "cutover/steps.h"
#include "lib/lib.h"

/* set lock_timeout for the rest of the transaction, as set_config() does */
static void
set_lock_timeout(const char *value)
{
	(void) set_config_option("lock_timeout", value, superuser() ? PGC_SUSET : PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}


/* a relation's name, or NULL */
static char *
name_of(Oid relid)
{
	return OidIsValid(relid) ? get_rel_name(relid) : NULL;
}

/* the checks of the swap again, of the job as it is now (check.c) */
static void
check_again(Attempts *a)
{
	CutoverJob	job;
	Oid			type;
	Datum		row = cutover_get_job(a->job_id, a->job_null, &type);

	cutover_job_from_row(DatumGetHeapTupleHeader(row), &job);
	cutover_statement_begin();
	cutover_check(&job, a->src, a->dst);
	cutover_statement_end();
}

/*
 * One attempt, in the caller's subtransaction: lock, check again under the
 * lock, swap, rename the partitions.  Each step a statement of its own, as
 * the caller.
 */
static void
attempt(Attempts *a, const char *saved)
{
	char	   *src_name;
	char	   *dst_name;
	Datum		swapped;
	MemoryContext old;

	set_lock_timeout(a->timeout_ms ? psprintf("%sms", a->timeout_ms) : NULL);
	if (OidIsValid(a->src) && OidIsValid(a->dst))
		backfill_cutover_lock_all(a->src, a->dst);
	a->locked_at = GetCurrentTimestamp();
	/* again, under the lock: a view or key made while we waited */
	check_again(a);
	backfill_attempt_report(a, psprintf("swapping table %s with table %s",
										backfill_attempt_rel(a->src), backfill_attempt_rel(a->dst)));
	src_name = name_of(a->src);
	dst_name = name_of(a->dst);
	cutover_statement_begin();
	swapped = cutover_swap(a->src, a->dst, a->src_new_name);
	cutover_statement_end();
	old = MemoryContextSwitchTo(a->caller);
	a->to_validate = datumCopy(swapped, false, -1);
	MemoryContextSwitchTo(old);
	/* as the STRICT SQL function did: nothing to rename without a name */
	if (src_name != NULL && dst_name != NULL)
	{
		cutover_statement_begin();
		cutover_rename_partitions(a->src, a->dst, src_name, dst_name);
		cutover_statement_end();
	}
	set_lock_timeout(saved);
}


/* attempt() for backfill_subxact_call */
typedef struct AttemptCall
{
	Attempts   *a;
	const char *saved;
} AttemptCall;

static void
attempt_call(void *arg)
{
	AttemptCall *call = (AttemptCall *) arg;

	attempt(call->a, call->saved);
}

/*
 * backfill_attempt_try_once
 *		One attempt in a subtransaction of its own: whether it swapped.  A
 *		lock not had in time or a deadlock is a failed attempt, whose work
 *		is rolled back; any other error ends the cutover.  saved: the
 *		caller's lock_timeout, set again after the attempt.
 */
bool
backfill_attempt_try_once(Attempts *a, const char *saved)
{
	AttemptCall call = {a, saved};
	ErrorData  *edata = backfill_subxact_call(attempt_call, &call);

	if (edata == NULL)
		return true;
	if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
		edata->sqlerrcode != ERRCODE_T_R_DEADLOCK_DETECTED)
		ReThrowError(edata);
	set_lock_timeout(saved);
	backfill_attempt_failed(a, edata->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED);
	FreeErrorData(edata);
	return false;
}
