/*-------------------------------------------------------------------------
 *
 * cutover_start.c
 *	  backfill.cutover(): gives a finished job's downstream its upstream's
 *	  name and what names it, under the upstream's lock taken in bounded
 *	  attempts; the old table then follows the new one until
 *	  finish_cutover.  For a job whose upstream is on another server, the
 *	  switchover (kinds/switchover.c) instead.
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
 * Each step runs as the caller through SPI (src/cutover/steps.c), calling
 * the internal function that checks its own arguments and the caller's
 * rights: the caller needs the privileges the swap's statements need.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/regproc.h"

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

/* a boolean argument that must not be NULL */
static bool
bool_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
	return PG_GETARG_BOOL(argno);
}

/* a job not cut over yet, nor finished */
static void
check_not_cut_over(CutoverJobRow *job)
{
	char	   *state;

	cutover_job_query("SELECT c.state FROM backfill.job_cutover c WHERE c.job_id = $1",
					  job, InvalidOid, (Datum) 0, false);
	state = SPI_processed > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : NULL;
	if (state != NULL && strcmp(state, "cut_over") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has already been cut over", job->job_id),
				 errhint("Use backfill.rollback_cutover(" INT64_FORMAT ") or backfill.finish_cutover(" INT64_FORMAT ").",
						 job->job_id, job->job_id)));
	if (state != NULL && strcmp(state, "finished") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has already been cut over", job->job_id),
				 errdetail("Its cutover has been finished: the job no longer follows any table.")));
}

/*
 * A switchover: the source stops being followed, so the job lets go of the
 * local table at once, as finish_cutover does; there is no rollback to keep
 * it for
 */
static void
switch_over(FunctionCallInfo fcinfo, CutoverJobRow *job, bool verify, CutoverResult *result)
{
	Oid			types[4] = {INT8OID, BOOLOID, INTERVALOID, INT4OID};
	Datum		values[4] = {Int64GetDatum(job->job_id), PG_GETARG_DATUM(ARG_FENCE),
		PG_GETARG_DATUM(ARG_LOCK_TIMEOUT), PG_GETARG_DATUM(ARG_ATTEMPTS)};
	char		nulls[4] = {' ', ' ', PG_ARGISNULL(ARG_LOCK_TIMEOUT) ? 'n' : ' ',
	PG_ARGISNULL(ARG_ATTEMPTS) ? 'n' : ' '};

	if (verify)
		cutover_verify_gate(job->job_id);
	backfill_spi_exec_args("SELECT backfill._remote_switchover($1, $2, $3, $4)", 4, types, values,
						   nulls, SPI_OK_SELECT);
	result->values[OUT_SOURCE_LSN] =
		SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &result->nulls[OUT_SOURCE_LSN]);
	cutover_job_query("SELECT backfill._mark_cancelled($1)", job, InvalidOid, (Datum) 0, false);
	cutover_job_query("SELECT backfill._drop_job_objects($2, false)", job, InvalidOid, (Datum) 0,
					  false);
	cutover_job_query("SELECT backfill._cutover_record($1, 'finished', 1, $3, $4,"
					  "  (SELECT relname FROM pg_class WHERE oid = $3),"
					  "  (SELECT relnamespace FROM pg_class WHERE oid = $4),"
					  "  (SELECT relname FROM pg_class WHERE oid = $4),"
					  "  false, ($2).into_existing, NULL, NULL, true)",
					  job, InvalidOid, (Datum) 0, false);
	result->state = "finished";
	result->values[OUT_ATTEMPTS_MADE] = Int32GetDatum(1);
	result->nulls[OUT_ATTEMPTS_MADE] = false;
}

/* the name the old table gets: old_name, or <name>_before_cutover_<job id> */
static char *
old_name_of(FunctionCallInfo fcinfo, CutoverJobRow *job)
{
	char	   *src_name = cutover_rel_name(job->upstream);
	char	   *old_name;
	bool		isnull;

	if (!PG_ARGISNULL(ARG_OLD_NAME))
		old_name = text_to_cstring(PG_GETARG_TEXT_PP(ARG_OLD_NAME));
	else
		old_name = psprintf("%s_before_cutover_" INT64_FORMAT, src_name ? src_name : "",
							job->job_id);
	if (old_name[0] == '\0' || strlen(old_name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("old name \"%s\" is not a valid table name", old_name),
				 errdetail("A table name is 1 to 63 bytes long."),
				 errhint("Give a shorter name as old_name.")));
	cutover_job_query("SELECT EXISTS (SELECT FROM pg_class WHERE relname = $5"
					  "   AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $3))",
					  job, TEXTOID, CStringGetTextDatum(old_name), false);
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists in the schema of table %s", old_name,
						backfill_regclass_text(job->upstream)),
				 errhint("Give another name as old_name.")));
	return old_name;
}

/*
 * A copy made through row-level security holds only the rows its owner
 * was let see, and would replace every row of the table
 */
static void
check_rls(CutoverJobRow *job)
{
	bool		isnull;
	Datum		filtered;

	cutover_job_query("SELECT backfill._cutover_filtered_by_rls($2)", job, InvalidOid, (Datum) 0,
					  false);
	filtered = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull && DatumGetBool(filtered))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot cut over backfill job " INT64_FORMAT " because row-level security on table %s applies to its owner",
						job->job_id, backfill_regclass_text(job->upstream)),
				 errdetail("Its downstream holds only the rows of table %s that the policies let role %s see, and would take the place of all of them.",
						   backfill_regclass_text(job->upstream),
						   DatumGetCString(DirectFunctionCall1(regroleout,
															   ObjectIdGetDatum(job->owner)))),
				 errhint("Copy the table as its owner (without FORCE ROW LEVEL SECURITY), as a superuser or as a role with BYPASSRLS.")));
}

/*
 * The checks of a local cutover before anything is locked: returns why the
 * job could not follow the new table back, or NULL
 */
static char *
check_local(FunctionCallInfo fcinfo, CutoverJobRow *job, const char *old_name)
{
	char	   *why;

	check_rls(job);
	cutover_job_query("SELECT backfill._cutover_check($2, $3, $4)", job, InvalidOid, (Datum) 0,
					  false);
	cutover_job_query("SELECT backfill._cutover_accepts($2, $5)", job, TEXTARRAYOID,
					  PG_GETARG_DATUM(ARG_ACCEPT), PG_ARGISNULL(ARG_ACCEPT));
	cutover_job_query("SELECT backfill._cutover_irreversible($2)", job, InvalidOid, (Datum) 0,
					  false);
	why = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (why != NULL)
		ereport(NOTICE,
				(errmsg("backfill job " INT64_FORMAT " cannot be rolled back after its cutover: %s",
						job->job_id, why),
				 errdetail("The old table, renamed %s, will no longer follow the new one.", old_name)));
	return why;
}

/* the cutover row: cut over, reversible or not */
static void
record(CutoverJobRow *job, const char *old_name, const char *dst_name, CutoverSwapped *swapped,
	   bool reversible)
{
	Oid			types[10] = {INT8OID, job->job_type, REGCLASSOID, REGCLASSOID, TEXTOID, TEXTOID,
	INT4OID, FLOAT8OID, OIDARRAYOID, BOOLOID};
	Datum		values[10] = {Int64GetDatum(job->job_id), job->job,
		ObjectIdGetDatum(job->upstream), ObjectIdGetDatum(job->downstream),
		CStringGetTextDatum(old_name), dst_name ? CStringGetTextDatum(dst_name) : (Datum) 0,
		Int32GetDatum(swapped->tries), Float8GetDatum(swapped->lock_held_ms),
	swapped->to_validate, BoolGetDatum(reversible)};
	char		nulls[10] = {' ', ' ', ' ', ' ', ' ', dst_name ? ' ' : 'n', ' ',
		swapped->lock_held_null ? 'n' : ' ', swapped->to_validate_null ? 'n' : ' ', ' '};

	backfill_spi_exec_args("SELECT backfill._cutover_record($1, 'cut_over', $7, $3, $4, $5,"
						   "  (SELECT relnamespace FROM pg_class WHERE oid = $4),"
						   "  $6, $10, ($2).into_existing, $8, $9, false)",
						   10, types, values, nulls, SPI_OK_SELECT);
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
	old_name = old_name_of(fcinfo, job);
	why = check_local(fcinfo, job, old_name);

	dst_name = cutover_rel_name(job->downstream);
	up_text = backfill_regclass_text(job->upstream);
	down_text = backfill_regclass_text(job->downstream);
	if (verify)
		cutover_verify_gate(job->job_id);
	cutover_swap_attempts(job, old_name, fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS, &swapped);
	if (why == NULL)
	{
		cutover_job_query("SELECT backfill._cutover_turn($1, true)", job, InvalidOid, (Datum) 0,
						  false);
		/* the job of a role cut over by another belongs to its tables' owner now */
		cutover_job_query("SELECT backfill._cutover_hand_over($1)", job, InvalidOid, (Datum) 0,
						  false);
	}
	else
	{
		/* the old table no longer takes writes: the job has nothing to follow */
		cutover_job_query("SELECT backfill._mark_cancelled($1)", job, InvalidOid, (Datum) 0, false);
		cutover_job_query("SELECT backfill._drop_job_objects($2, false)", job, InvalidOid,
						  (Datum) 0, false);
	}

	record(job, old_name, dst_name, &swapped, why == NULL);
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
	fence = bool_arg(fcinfo, ARG_FENCE, "fence");
	verify = bool_arg(fcinfo, ARG_VERIFY, "verify");

	/*
	 * One cutover of a job at a time; rollback and finish take it too.  The
	 * job is read again once it is held: a rollback that held it meanwhile
	 * has turned the job back
	 */
	cutover_lock_job(job.job_id);
	cutover_read_job(&job, false);
	check_not_cut_over(&job);
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
