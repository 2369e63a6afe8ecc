/*-------------------------------------------------------------------------
 *
 * steps.c
 *	  The steps backfill.cutover(), rollback_cutover() and finish_cutover()
 *	  share (src/api/cutover_start.c, cutover_rollback.c, cutover_finish.c):
 *	  the job's row read as the caller, the cutover's advisory lock on it,
 *	  the checks of their common arguments, the swap's attempts and the
 *	  line in pg_stat_activity.
 *
 * Every step runs as the caller, under the search_path of the function's
 * SET clause (pg_catalog, pg_temp), through SPI or by a direct call of the
 * C behind an internal function (which PUBLIC may not execute), as the
 * PL/pgSQL versions of cutover and rollback called those functions: each
 * checks its own arguments and the caller's rights, so the caller needs
 * what it needed then, and a regclass prints as it printed.
 * Each statement takes a new snapshot (READ COMMITTED, which all three
 * require): a job read after the advisory lock is held shows
 * what a cutover or rollback that held it before has committed.  The
 * caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/datum.h"

#include "cutover/steps.h"
#include "lib/lib.h"

/* a field of the job's row */
static Datum
job_field(CutoverJobRow *job, const char *field, bool *isnull)
{
	return GetAttributeByName(DatumGetHeapTupleHeader(job->job), field, isnull);
}

static Oid
job_oid(CutoverJobRow *job, const char *field)
{
	bool		isnull;
	Datum		d = job_field(job, field, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

static bool
job_bool(CutoverJobRow *job, const char *field)
{
	bool		isnull;
	Datum		d = job_field(job, field, &isnull);

	return !isnull && DatumGetBool(d);
}

/*
 * cutover_get_job
 *		The job's row (backfill.job) as the caller sees it, with its type
 *		into *type, as backfill._get_job gave it: an error if job_null, or
 *		if there is no such job or row-level security on backfill.job hides
 *		it from the caller (another role's job).  Read by a query of the
 *		caller's, not by a call of _get_job, which PUBLIC may not execute.
 */
Datum
cutover_get_job(int64 job_id, bool job_null, Oid *type)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;
	Datum		d;

	if (job_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "job_id")));
	backfill_spi_exec_args("SELECT j FROM backfill.job j WHERE j.job_id = $1", 1, types, values,
						   NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	*type = SPI_gettypeid(SPI_tuptable->tupdesc, 1);
	return datumCopy(d, false, -1);
}

/*
 * cutover_read_job
 *		The job's row (cutover_get_job) and the fields the steps read of it.
 */
void
cutover_read_job(CutoverJobRow *job, bool job_null)
{
	bool		isnull;
	Datum		status;

	job->job = cutover_get_job(job->job_id, job_null, &job->job_type);
	job->upstream = job_oid(job, "upstream");
	job->downstream = job_oid(job, "downstream");
	job->owner = job_oid(job, "owner");
	job->remote = job_bool(job, "remote");
	job->into_existing = job_bool(job, "into_existing");
	status = job_field(job, "status", &isnull);
	/* NOT NULL in the catalog; a NULL would compare as neither */
	job->status = isnull ? "cancelled" : TextDatumGetCString(status);
}

/*
 * cutover_require_read_committed
 *		Each of the three reads the job as the cutover calls it waited for
 *		left it, which only READ COMMITTED shows it.
 */
void
cutover_require_read_committed(const char *function)
{
	if (XactIsoLevel != XACT_READ_COMMITTED)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("backfill.%s() must run at isolation level READ COMMITTED", function),
				 errdetail("It reads the job as the cutover calls it waited for left it.")));
}

/*
 * cutover_refuse_null
 *		An argument of the caller's that must not be NULL.
 */
void
cutover_refuse_null(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/*
 * cutover_check_arguments
 *		The lock_timeout and attempts of the caller's arguments, checked as
 *		backfill._cutover_arguments checks them (cutover_lock_arguments).
 */
void
cutover_check_arguments(FunctionCallInfo fcinfo, int timeout_arg, int attempts_arg)
{
	cutover_lock_arguments(PG_GETARG_DATUM(timeout_arg), PG_ARGISNULL(timeout_arg),
						   PG_GETARG_INT32(attempts_arg), PG_ARGISNULL(attempts_arg));
}

/*
 * cutover_job_id_query
 *		A query whose $1 is the job id, its rows in SPI_tuptable.
 */
void
cutover_job_id_query(const char *sql, int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};

	backfill_spi_exec_args(sql, 1, types, values, NULL, SPI_OK_SELECT);
}

/*
 * cutover_job_query
 *		A query about the job, its rows in SPI_tuptable: $1 is the job id,
 *		$2 its row, $3 its upstream and $4 its downstream (regclass), $5
 *		arg of type arg_type (InvalidOid: none).  Returns the number of rows.
 */
int
cutover_job_query(const char *sql, CutoverJobRow *job, Oid arg_type, Datum arg, bool arg_null)
{
	Oid			types[5] = {INT8OID, job->job_type, REGCLASSOID, REGCLASSOID, arg_type};
	Datum		values[5] = {Int64GetDatum(job->job_id), job->job,
		ObjectIdGetDatum(job->upstream), ObjectIdGetDatum(job->downstream), arg};
	char		nulls[5] = {' ', ' ', OidIsValid(job->upstream) ? ' ' : 'n',
		OidIsValid(job->downstream) ? ' ' : 'n', arg_null ? 'n' : ' '};

	backfill_spi_exec_args(sql, OidIsValid(arg_type) ? 5 : 4, types, values, nulls, SPI_OK_SELECT);
	return (int) SPI_processed;
}

/*
 * cutover_swap_attempts
 *		backfill._cutover_attempts of the job's tables, the upstream to be
 *		renamed new_name, with the caller's lock_timeout and attempts.
 */
void
cutover_swap_attempts(CutoverJobRow *job, const char *new_name, FunctionCallInfo fcinfo,
					  int timeout_arg, int attempts_arg, CutoverSwapped *swapped)
{
	Oid			types[6] = {INT8OID, REGCLASSOID, REGCLASSOID, TEXTOID, INTERVALOID, INT4OID};
	Datum		values[6] = {Int64GetDatum(job->job_id), ObjectIdGetDatum(job->upstream),
		ObjectIdGetDatum(job->downstream), CStringGetTextDatum(new_name),
	PG_GETARG_DATUM(timeout_arg), PG_GETARG_DATUM(attempts_arg)};
	char		nulls[6] = {' ', OidIsValid(job->upstream) ? ' ' : 'n',
		OidIsValid(job->downstream) ? ' ' : 'n', ' ',
		PG_ARGISNULL(timeout_arg) ? 'n' : ' ', PG_ARGISNULL(attempts_arg) ? 'n' : ' '};
	HeapTuple	row;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	backfill_spi_exec_args("SELECT s.tries, s.lock_held_ms, s.to_validate"
						   "  FROM backfill._cutover_attempts($1, $2, $3, $4, $5, $6) s",
						   6, types, values, nulls, SPI_OK_SELECT);
	row = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	d = SPI_getbinval(row, desc, 1, &isnull);
	swapped->tries = isnull ? 0 : DatumGetInt32(d);
	d = SPI_getbinval(row, desc, 2, &swapped->lock_held_null);
	swapped->lock_held_ms = swapped->lock_held_null ? 0 : DatumGetFloat8(d);
	d = SPI_getbinval(row, desc, 3, &swapped->to_validate_null);
	swapped->to_validate = swapped->to_validate_null ? (Datum) 0 : datumCopy(d, false, -1);
}

/*
 * cutover_ms_text
 *		How long the swap held its lock, in ms to one decimal, as the log
 *		line shows it (numeric rounding, half away from zero).
 */
char *
cutover_ms_text(CutoverSwapped *swapped)
{
	Oid			types[1] = {FLOAT8OID};
	Datum		values[1] = {Float8GetDatum(swapped->lock_held_ms)};
	char		nulls[1] = {swapped->lock_held_null ? 'n' : ' '};
	char	   *text;

	backfill_spi_exec_args("SELECT round($1::numeric, 1)::text", 1, types, values, nulls,
						   SPI_OK_SELECT);
	text = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return text ? text : "<NULL>";
}

/*
 * cutover_rel_name
 *		A relation's name (pg_class.relname), or NULL when there is none.
 */
char *
cutover_rel_name(Oid relid)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char		nulls[1] = {OidIsValid(relid) ? ' ' : 'n'};

	backfill_spi_exec_args("SELECT (SELECT relname FROM pg_class WHERE oid = $1)::text", 1, types,
						   values, nulls, SPI_OK_SELECT);
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * cutover_state_words
 *		A cutover's state in words: rolled_back is "rolled back".
 */
char *
cutover_state_words(const char *state)
{
	char	   *words = pstrdup(state);

	for (char *c = words; *c; c++)
		if (*c == '_')
			*c = ' ';
	return words;
}
