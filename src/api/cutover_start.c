/*-------------------------------------------------------------------------
 *
 * cutover_start.c
 *	  backfill.cutover(): gives a finished job's downstream its upstream's
 *	  name and what names it, under the upstream's lock taken in bounded
 *	  attempts; the old table then follows the new one until
 *	  finish_cutover.  For a job whose upstream is on another server, the
 *	  switchover (kinds/remote/switchover.c) instead.
 *
 * The order is the one doc/cutover.md describes: the arguments; the
 * cutover's advisory lock on the job, after which the job and its cutover
 * row are read again (a rollback that held the lock meanwhile has turned
 * the job back); the checks, before anything is locked or changed
 * (src/cutover/check.c, accepts.c, arguments.c); the verify gate; the
 * attempts and the swap (src/cutover/attempts.c, swap.c); then the job
 * turned around and handed over, or let go when it cannot follow the new
 * table back; the cutover row, the log line and pg_stat_activity.
 *
 * Each step runs as the caller, through SPI (src/cutover/steps.c) or by a
 * direct call of the C behind an internal function, which PUBLIC may not
 * execute; each checks its own arguments and the caller's rights: the
 * caller needs the privileges the swap's statements need.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/catalog_access.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_lsn.h"

#include "api/cutover.h"
#include "api/job_ops.h"
#include "catalog/cutover_rows.h"
#include "cutover/queries.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover);

/* the arguments, in the order of the SQL signature */
enum
{
	ARG_JOB_ID, ARG_OLD_NAME, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS, ARG_FENCE, ARG_ACCEPT, ARG_VERIFY
};

/* the OUT columns */
enum
{
	OUT_STATE, OUT_ATTEMPTS_MADE, OUT_LOCK_HELD_MS, OUT_OLD_TABLE, OUT_ROLLBACK_POSSIBLE,
	OUT_SOURCE_LSN, OUT_COLUMNS
};

/* what the call returns */
typedef struct CutoverResult
{
	const char *state;			/* made a text once out of SPI */
	Datum		values[OUT_COLUMNS];
	bool		nulls[OUT_COLUMNS];
} CutoverResult;

/* a text Datum of a C string, or NULL (*isnull) */
static Datum
text_or_null(const char *str, bool *isnull)
{
	*isnull = str == NULL;
	return str ? CStringGetTextDatum(str) : (Datum) 0;
}

/* an OID Datum, or NULL (*isnull) for InvalidOid */
static Datum
oid_or_null(Oid oid, bool *isnull)
{
	*isnull = !OidIsValid(oid);
	return ObjectIdGetDatum(oid);
}

/*
 * The cutover row of a switchover: finished at once, not reversible, the
 * names and schema as the catalog has them now
 */
static void
record_switchover(CutoverJobRow *job)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};

	cutover_statement_begin();
	values[0] = Int64GetDatum(job->job_id);
	values[1] = CStringGetTextDatum("finished");
	values[2] = Int32GetDatum(1);
	values[3] = oid_or_null(job->upstream, &nulls[3]);
	values[4] = oid_or_null(job->downstream, &nulls[4]);
	values[5] = text_or_null(OidIsValid(job->upstream) ? get_rel_name(job->upstream) : NULL,
							 &nulls[5]);
	values[6] = oid_or_null(OidIsValid(job->downstream) ? get_rel_namespace(job->downstream) :
							InvalidOid, &nulls[6]);
	values[7] = text_or_null(OidIsValid(job->downstream) ? get_rel_name(job->downstream) : NULL,
							 &nulls[7]);
	values[8] = BoolGetDatum(false);
	values[9] = BoolGetDatum(job->into_existing);
	nulls[10] = nulls[11] = true;
	values[10] = values[11] = (Datum) 0;
	values[12] = BoolGetDatum(true);
	cutover_record(values, nulls);
	cutover_statement_end();
}

/*
 * A switchover: the source stops being followed, so the job lets go of the
 * local table at once, as finish_cutover does; there is no rollback to keep
 * it for
 */
static void
switch_over(FunctionCallInfo fcinfo, CutoverJobRow *job, bool verify, CutoverResult *result)
{
	XLogRecPtr	lsn;

	if (verify)
		cutover_verify_gate(job->job_id);
	cutover_statement_begin();
	lsn = backfill_switch_over(job->job_id, PG_GETARG_BOOL(ARG_FENCE),
							   PG_GETARG_INTERVAL_P(ARG_LOCK_TIMEOUT), PG_GETARG_INT32(ARG_ATTEMPTS));
	cutover_statement_end();
	result->values[OUT_SOURCE_LSN] = LSNGetDatum(lsn);
	result->nulls[OUT_SOURCE_LSN] = XLogRecPtrIsInvalid(lsn);
	backfill_let_job_go(job->job_id, job->job);
	record_switchover(job);
	result->state = "finished";
	result->values[OUT_ATTEMPTS_MADE] = Int32GetDatum(1);
	result->nulls[OUT_ATTEMPTS_MADE] = false;
}

/*
 * The cutover row: cut over, reversible or not.  dst_schema is the new
 * table's schema before the swap moved it into the old table's: a rollback
 * moves it back there.
 */
static void
record(CutoverJobRow *job, const char *old_name, const char *dst_name, Oid dst_schema,
	   CutoverSwapped *swapped, bool reversible)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};

	cutover_statement_begin();
	values[0] = Int64GetDatum(job->job_id);
	values[1] = CStringGetTextDatum("cut_over");
	values[3] = oid_or_null(job->upstream, &nulls[3]);
	values[4] = oid_or_null(job->downstream, &nulls[4]);
	values[5] = CStringGetTextDatum(old_name);
	values[6] = oid_or_null(dst_schema, &nulls[6]);
	values[7] = text_or_null(dst_name, &nulls[7]);
	values[8] = BoolGetDatum(reversible);
	values[9] = BoolGetDatum(job->into_existing);
	values[12] = BoolGetDatum(false);
	cutover_record_attempts(values, nulls, swapped);
	cutover_record(values, nulls);
	cutover_statement_end();
}

/* a local cutover of a finished job */
static void
cut_over(FunctionCallInfo fcinfo, CutoverJobRow *job, bool verify, CutoverResult *result)
{
	char	   *old_name;
	char	   *why;
	char	   *dst_name;
	char	   *up_text;
	char	   *down_text;
	Oid			dst_schema;
	CutoverSwapped swapped;

	if (strcmp(job->status, "finished") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot cut over backfill job " INT64_FORMAT " because it has not finished",
						job->job_id),
				 errdetail("Its status is %s: its downstream table is not yet equal to its upstream table.",
						   job->status),
				 errhint("Wait until it has finished: backfill.wait_job(" INT64_FORMAT ").",
						 job->job_id)));
	old_name = cutover_old_name(job, PG_ARGISNULL(ARG_OLD_NAME) ? NULL :
								PG_GETARG_TEXT_PP(ARG_OLD_NAME));
	why = cutover_check_local(job, PG_GETARG_DATUM(ARG_ACCEPT), PG_ARGISNULL(ARG_ACCEPT),
							  old_name);

	dst_name = cutover_rel_name(job->downstream);
	dst_schema = get_rel_namespace(job->downstream);
	up_text = backfill_regclass_text(job->upstream);
	down_text = backfill_regclass_text(job->downstream);
	if (verify)
		cutover_verify_gate(job->job_id);
	cutover_swap_attempts(job, old_name, fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS, &swapped);
	if (why == NULL)
	{
		cutover_statement_begin();
		cutover_turn_job(job->job_id, true);
		cutover_statement_end();
		/* the job of a role cut over by another belongs to its tables' owner now */
		cutover_statement_begin();
		cutover_hand_over_job(job->job_id);
		cutover_statement_end();
	}
	else
	{
		/* the old table no longer takes writes: the job has nothing to follow */
		backfill_let_job_go(job->job_id, job->job);
	}

	record(job, old_name, dst_name, dst_schema, &swapped, why == NULL);
	ereport(LOG,
			(errmsg("cutover of backfill job " INT64_FORMAT ": table %s swapped with table %s (renamed %s) after %d attempts, lock held %s ms",
					job->job_id, down_text, up_text, old_name, swapped.tries,
					cutover_ms_text(&swapped))));
	cutover_report(job->job_id, "cut over");

	result->state = "cut_over";
	result->values[OUT_ATTEMPTS_MADE] = Int32GetDatum(swapped.tries);
	result->values[OUT_LOCK_HELD_MS] = Float8GetDatum(swapped.lock_held_ms);
	result->values[OUT_OLD_TABLE] = ObjectIdGetDatum(job->upstream);
	result->values[OUT_ROLLBACK_POSSIBLE] = BoolGetDatum(why == NULL);
	result->nulls[OUT_ATTEMPTS_MADE] = false;
	result->nulls[OUT_LOCK_HELD_MS] = swapped.lock_held_null;
	result->nulls[OUT_OLD_TABLE] = false;
	result->nulls[OUT_ROLLBACK_POSSIBLE] = false;
}

/*
 * backfill.cutover(job_id bigint, old_name text, lock_timeout interval,
 *					attempts integer, fence boolean, accept text[],
 *					verify boolean, OUT state text, OUT attempts_made integer,
 *					OUT lock_held_ms double precision, OUT old_table regclass,
 *					OUT rollback_possible boolean, OUT source_lsn pg_lsn)
 *		Cut a finished job over (see the file header).
 */
Datum
backfill_cutover(PG_FUNCTION_ARGS)
{
	CutoverJobRow job;
	CutoverResult		result;
	TupleDesc	desc;
	bool		fence;
	bool		verify;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(&job, 0, sizeof(CutoverJobRow));
	for (int i = 0; i < OUT_COLUMNS; i++)
	{
		result.values[i] = (Datum) 0;
		result.nulls[i] = true;
	}
	job.job_id = PG_ARGISNULL(ARG_JOB_ID) ? 0 : PG_GETARG_INT64(ARG_JOB_ID);

	backfill_spi_enter();
	cutover_read_job(&job, PG_ARGISNULL(ARG_JOB_ID));
	cutover_require_read_committed("cutover");
	cutover_check_arguments(fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS);
	cutover_refuse_null(fcinfo, ARG_FENCE, "fence");
	cutover_refuse_null(fcinfo, ARG_VERIFY, "verify");
	fence = PG_GETARG_BOOL(ARG_FENCE);
	verify = PG_GETARG_BOOL(ARG_VERIFY);

	/*
	 * One cutover of a job at a time; rollback and finish take it too.  The
	 * job is read again once it is held: a rollback that held it meanwhile
	 * has turned the job back
	 */
	backfill_lock_job_cutover(job.job_id);
	cutover_read_job(&job, false);
	cutover_check_not_cut_over(&job);
	if (job.remote)
		switch_over(fcinfo, &job, verify, &result);
	else
	{
		if (fence)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("fence applies only to a job whose upstream is on another server"),
					 errdetail("A local cutover locks the upstream itself.")));
		cut_over(fcinfo, &job, verify, &result);
	}
	backfill_spi_leave();
	result.values[OUT_STATE] = CStringGetTextDatum(result.state);
	result.nulls[OUT_STATE] = false;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, result.values, result.nulls)));
}
