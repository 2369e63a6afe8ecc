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
 * Under the lock the attempt checks the cutover again, swaps the tables
 * and renames their partitions by calling the extension's SQL functions
 * for those steps, as the caller: every ALTER they make needs the
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
#include "cutover/lock_step.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_attempts);


/* a statement of one row, as the caller, with $1.. of the given types */
static void
run_sql(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	backfill_spi_exec_args(sql, nargs, types, values, nulls, SPI_OK_SELECT);
}


/* set lock_timeout for the rest of the transaction, as set_config() does */
static void
set_lock_timeout(const char *value)
{
	(void) set_config_option("lock_timeout", value, superuser() ? PGC_SUSET : PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_LOCAL, true, 0, false);
}


/* a relation's name as a name Datum, or NULL (nulls: 'n') */
static Datum
name_of(Oid relid, char *null)
{
	char	   *relname = OidIsValid(relid) ? get_rel_name(relid) : NULL;

	*null = relname ? ' ' : 'n';
	return relname ? DirectFunctionCall1(namein, CStringGetDatum(relname)) : (Datum) 0;
}

/*
 * One attempt, in the caller's subtransaction: lock, check again under the
 * lock, swap, rename the partitions
 */
static void
attempt(Attempts *a, const char *saved)
{
	Oid			types[4] = {INT8OID, REGCLASSOID, REGCLASSOID, TEXTOID};
	Datum		values[4] = {Int64GetDatum(a->job_id), ObjectIdGetDatum(a->src),
	ObjectIdGetDatum(a->dst), a->src_new_name};
	char		nulls[4] = {a->job_null ? 'n' : ' ', OidIsValid(a->src) ? ' ' : 'n',
	OidIsValid(a->dst) ? ' ' : 'n', a->src_new_name_null ? 'n' : ' '};
	Oid			name_types[4] = {REGCLASSOID, REGCLASSOID, NAMEOID, NAMEOID};
	Datum		names[4] = {values[1], values[2], 0, 0};
	char		name_nulls[4] = {nulls[1], nulls[2], 'n', 'n'};
	Datum		swapped;
	MemoryContext old;
	Oid			check_types[3] = {InvalidOid, REGCLASSOID, REGCLASSOID};
	Datum		check_values[3] = {(Datum) 0, values[1], values[2]};
	char		check_nulls[3] = {' ', nulls[1], nulls[2]};

	set_lock_timeout(a->timeout_ms ? psprintf("%sms", a->timeout_ms) : NULL);
	if (OidIsValid(a->src) && OidIsValid(a->dst))
		backfill_cutover_lock_all(a->src, a->dst);
	a->locked_at = GetCurrentTimestamp();
	/* again, under the lock: a view or key made while we waited */
	check_values[0] = cutover_get_job(a->job_id, a->job_null, &check_types[0]);
	run_sql("SELECT backfill._cutover_check($1, $2, $3)", 3, check_types, check_values,
			check_nulls);
	backfill_attempt_report(a, psprintf("swapping table %s with table %s",
										backfill_attempt_rel(a->src), backfill_attempt_rel(a->dst)));
	names[2] = name_of(a->src, &name_nulls[2]);
	names[3] = name_of(a->dst, &name_nulls[3]);
	run_sql("SELECT backfill._cutover_swap($2, $3, $4)", 4, types, values, nulls);
	swapped = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &a->to_validate_null);
	old = MemoryContextSwitchTo(a->caller);
	a->to_validate = a->to_validate_null ? (Datum) 0 : datumCopy(swapped, false, -1);
	MemoryContextSwitchTo(old);
	run_sql("SELECT backfill._cutover_rename_partitions($1, $2, $3, $4)", 4, name_types, names,
			name_nulls);
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

/* the arguments of backfill._cutover_attempts, NULL ones marked */
static void
read_arguments(FunctionCallInfo fcinfo, Attempts *a)
{
	memset(a, 0, sizeof(Attempts));
	a->job_null = PG_ARGISNULL(0);
	a->job_id = a->job_null ? 0 : PG_GETARG_INT64(0);
	a->src = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
	a->dst = PG_ARGISNULL(2) ? InvalidOid : PG_GETARG_OID(2);
	a->src_new_name_null = PG_ARGISNULL(3);
	a->src_new_name = a->src_new_name_null ? (Datum) 0 : PG_GETARG_DATUM(3);
	if (!PG_ARGISNULL(4))
	{
		/* (extract(epoch FROM lock_timeout) * 1000)::bigint */
		Datum		epoch = DirectFunctionCall2(extract_interval, CStringGetTextDatum("epoch"),
												PG_GETARG_DATUM(4));
		Datum		ms = DirectFunctionCall2(numeric_mul, epoch,
											 NumericGetDatum(int64_to_numeric(1000)));

		a->timeout_ms = psprintf(INT64_FORMAT, DatumGetInt64(DirectFunctionCall1(numeric_int8, ms)));
	}
	if (!PG_ARGISNULL(5))
	{
		a->max_tries = PG_GETARG_INT32(5);
		a->attempts = psprintf("%d", a->max_tries);
	}
	a->line_every_us = backfill_attempt_line_interval();
	a->wait_began = a->told_at = GetCurrentTimestamp();
	a->caller = CurrentMemoryContext;
}

/*
 * backfill._cutover_attempts(job_id bigint, src regclass, dst regclass,
 *							  src_new_name text, lock_timeout interval,
 *							  attempts integer, OUT tries integer,
 *							  OUT lock_held_ms double precision,
 *							  OUT to_validate oid[]) RETURNS record
 *		Lock both tables of a cutover and what the swap alters with bounded
 *		waits and retries, then swap them and rename their partitions (see
 *		the file header).  The tries made, how long the lock was held, and
 *		the foreign keys the swap added NOT VALID, to validate after.
 */
Datum
backfill_cutover_attempts(PG_FUNCTION_ARGS)
{
	Attempts	a;
	char	   *saved = pstrdup(GetConfigOptionByName("lock_timeout", NULL, false));
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	List	   *old_parts;
	List	   *new_parts;

	read_arguments(fcinfo, &a);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
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
	values[0] = Int32GetDatum(a.tries);
	values[1] = Float8GetDatum((double) (GetCurrentTimestamp() - a.locked_at) / 1000.0);
	values[2] = a.to_validate;
	nulls[2] = a.to_validate_null;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
