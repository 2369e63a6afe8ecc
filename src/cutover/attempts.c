/*-------------------------------------------------------------------------
 *
 * attempts.c
 *	  The cutover's attempts: the lock step (lock.c) and the swap, tried
 *	  again while a lock is not had in time.
 *
 * Each attempt runs in a subtransaction, waiting at most lock_timeout for
 * each lock: a writer queued behind the attempt waits no longer than that
 * (attempt_once.c).  A lock not had in time, or a deadlock with an
 * application that PostgreSQL resolves against the cutover, anywhere in
 * the attempt (the swap included), is a failed attempt: a NOTICE and a
 * line in the server log, then a pause that doubles each time (with
 * jitter, at most a second) lets the queued writers through
 * (attempt_pause.c).  An index built concurrently on either table ends the
 * cutover at once (index_wait.c).  After "attempts" attempts the cutover
 * gives up with 55P03, everything as it was.  While the attempts last
 * longer than backfill.client_progress_interval, a line (INFO) at most
 * every interval says how long the lock step has waited so far and which
 * processes hold a lock on either table (attempt_lines.c).
 *
 * Under the lock the attempt checks the cutover again (check.c), swaps the
 * tables (swap.c) and renames their partitions (carry_partitions.c), each
 * a statement of its own as the caller: every ALTER they make needs the
 * privileges it would need typed by hand.  The arguments are read once,
 * before the first attempt (attempt_arguments.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "cutover/attempts.h"
#include "cutover/lock_step.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_attempts);

/* refuse an index build unless an argument is NULL, as a STRICT call would */
static void
refuse_index_build(Attempts *a)
{
	if (!a->job_null && OidIsValid(a->src) && OidIsValid(a->dst))
		backfill_cutover_refuse_build(a->job_id, a->src, a->dst);
}

/*
 * cutover_attempts
 *		Lock both tables of a cutover and what the swap alters with bounded
 *		waits and retries, then swap them and rename their partitions (see
 *		the file header): the tries made, how long the lock was held, and
 *		the foreign keys the swap added NOT VALID, to validate after, into
 *		*swapped.  The arguments are backfill_attempt_read_arguments'.
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

	backfill_attempt_read_arguments(&a, job_id, src, dst, src_new_name, fcinfo, timeout_arg,
									attempts_arg);
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
		if (backfill_attempt_try_once(&a, saved))
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
