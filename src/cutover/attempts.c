/*-------------------------------------------------------------------------
 *
 * attempts.c
 *	  The cutover's attempts: the lock step (lock.c) and the swap, tried
 *	  again while a lock is not had in time.
 *
 * Each attempt runs in a subtransaction, waiting at most lock_timeout for
 * each lock: a writer queued behind the attempt waits no longer than that.
 * A lock not had in time, or a deadlock with an application that
 * PostgreSQL resolves against the cutover, anywhere in the attempt (the
 * swap included), is a failed attempt: a NOTICE and a line in the server
 * log, then a pause that doubles each time (with jitter, at most a second)
 * lets the queued writers through.  An index built concurrently on either
 * table ends the cutover at once (index_wait.c).  After "attempts"
 * attempts the cutover gives up with 55P03, everything as it was.  While
 * the attempts last longer than backfill.client_progress_interval, a line
 * (INFO) at most every interval says how long the lock step has waited so
 * far and which processes hold a lock on either table.
 *
 * Under the lock the attempt checks the cutover again (check.c), swaps the
 * tables (swap.c) and renames their partitions (carry_partitions.c), each
 * a statement of its own as the caller: every ALTER they make needs the
 * privileges it would need typed by hand.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/snapmgr.h"

#include "cutover/attempts.h"
#include "cutover/check.h"
#include "cutover/lock_step.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_attempts);


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
 * One attempt in a subtransaction of its own: whether it swapped.  A lock
 * not had in time or a deadlock is a failed attempt, whose work is rolled
 * back; any other error ends the cutover.
 */
static bool
try_once(Attempts *a, const char *saved)
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

/*
 * backfill_cutover_pause
 *		The pause after a failed attempt of the cutover or of its finish,
 *		that lets the queued writers through: 10 ms, doubling, at most a
 *		second, with jitter.
 */
void
backfill_cutover_pause(int32 tries)
{
	double		pause = Min(0.01 * pow(2, tries - 1), 1.0) *
		(0.5 + pg_prng_double(&pg_global_prng_state) / 2);

	DirectFunctionCall1(pg_sleep, Float8GetDatum(pause));
}

/* refuse an index build unless an argument is NULL, as a STRICT call would */
static void
refuse_index_build(Attempts *a)
{
	if (!a->job_null && OidIsValid(a->src) && OidIsValid(a->dst))
		backfill_cutover_refuse_build(a->job_id, a->src, a->dst);
}

/*
 * The attempts' arguments: the job (NULL: none), the tables (InvalidOid:
 * none), src's new name (NULL: none) and the caller's lock_timeout and
 * attempts, arguments timeout_arg and attempts_arg of fcinfo (NULL: no
 * limit)
 */
static void
read_arguments(Attempts *a, const int64 *job_id, Oid src, Oid dst, const char *src_new_name,
			   FunctionCallInfo fcinfo, int timeout_arg, int attempts_arg)
{
	memset(a, 0, sizeof(Attempts));
	a->job_null = job_id == NULL;
	a->job_id = job_id ? *job_id : 0;
	a->src = src;
	a->dst = dst;
	a->src_new_name = src_new_name;
	if (!PG_ARGISNULL(timeout_arg))
	{
		/* (extract(epoch FROM lock_timeout) * 1000)::bigint */
		Datum		epoch = DirectFunctionCall2(extract_interval, CStringGetTextDatum("epoch"),
												PG_GETARG_DATUM(timeout_arg));
		Datum		ms = DirectFunctionCall2(numeric_mul, epoch,
											 NumericGetDatum(int64_to_numeric(1000)));

		a->timeout_ms = psprintf(INT64_FORMAT, DatumGetInt64(DirectFunctionCall1(numeric_int8, ms)));
	}
	if (!PG_ARGISNULL(attempts_arg))
	{
		a->max_tries = PG_GETARG_INT32(attempts_arg);
		a->attempts = psprintf("%d", a->max_tries);
	}
	a->line_every_us = backfill_attempt_line_interval();
	a->wait_began = a->told_at = GetCurrentTimestamp();
	a->caller = CurrentMemoryContext;
}

/*
 * cutover_attempts
 *		Lock both tables of a cutover and what the swap alters with bounded
 *		waits and retries, then swap them and rename their partitions (see
 *		the file header): the tries made, how long the lock was held, and
 *		the foreign keys the swap added NOT VALID, to validate after, into
 *		*swapped.  The arguments are read_arguments'.
 */
void
cutover_attempts(const int64 *job_id, Oid src, Oid dst, const char *src_new_name,
				 FunctionCallInfo fcinfo, int timeout_arg, int attempts_arg,
				 CutoverSwapped *swapped)
{
	Attempts	a;
	char	   *saved = pstrdup(GetConfigOptionByName("lock_timeout", NULL, false));
	List	   *old_parts;
	List	   *new_parts;

	read_arguments(&a, job_id, src, dst, src_new_name, fcinfo, timeout_arg, attempts_arg);
	backfill_spi_enter();
	/* partitions that would not match are refused before anything is locked */
	if (OidIsValid(a.src) && OidIsValid(a.dst) &&
		get_rel_relkind(a.src) == RELKIND_PARTITIONED_TABLE &&
		get_rel_relkind(a.dst) == RELKIND_PARTITIONED_TABLE)
		backfill_cutover_pair_partitions(a.src, a.dst, false, &old_parts, &new_parts);
	for (;;)
	{
		a.tries++;
		refuse_index_build(&a);
		backfill_attempt_report(&a, psprintf("waiting_for_lock (attempt %d of %s) on table %s", a.tries,
							a.attempts ? a.attempts : "", backfill_attempt_rel(a.src)));
		if (try_once(&a, saved))
			break;
		/* an index build that took the table meanwhile waits for us */
		refuse_index_build(&a);
		if (a.attempts && a.tries >= a.max_tries)
			backfill_attempt_give_up(&a);
		backfill_cutover_pause(a.tries);
	}
	backfill_spi_leave();
	swapped->tries = a.tries;
	swapped->lock_held_ms = (double) (GetCurrentTimestamp() - a.locked_at) / 1000.0;
	swapped->lock_held_null = false;
	swapped->to_validate = a.to_validate;
	swapped->to_validate_null = false;
}

/*
 * backfill._cutover_attempts(job_id bigint, src regclass, dst regclass,
 *							  src_new_name text, lock_timeout interval,
 *							  attempts integer, OUT tries integer,
 *							  OUT lock_held_ms double precision,
 *							  OUT to_validate oid[]) RETURNS record
 *		cutover_attempts, for a caller of SQL.
 */
Datum
backfill_cutover_attempts(PG_FUNCTION_ARGS)
{
	int64		job_id = PG_ARGISNULL(0) ? 0 : PG_GETARG_INT64(0);
	CutoverSwapped swapped;
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	cutover_attempts(PG_ARGISNULL(0) ? NULL : &job_id,
					 PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1),
					 PG_ARGISNULL(2) ? InvalidOid : PG_GETARG_OID(2),
					 PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)),
					 fcinfo, 4, 5, &swapped);
	values[0] = Int32GetDatum(swapped.tries);
	values[1] = Float8GetDatum(swapped.lock_held_ms);
	values[2] = swapped.to_validate;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
