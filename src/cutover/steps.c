/*-------------------------------------------------------------------------
 *
 * steps.c
 *	  The steps backfill.cutover(), rollback_cutover() and finish_cutover()
 *	  share (src/api/cutover_start.c, cutover_rollback.c, cutover_finish.c)
 *	  besides the job's row (job_row.c) and the checks of their arguments
 *	  (arguments.c): queries about the job, the swap's attempts and how
 *	  they are reported.
 *
 * Every step runs as the caller, under the search_path of the function's
 * SET clause (pg_catalog, pg_temp), through SPI or by a direct call of the
 * C behind an internal function (which PUBLIC may not execute), as the
 * PL/pgSQL versions of cutover and rollback called those functions: each
 * checks its own arguments and the caller's rights, so the caller needs
 * what it needed then, and a regclass prints as it printed.  The caller
 * is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "cutover/queries.h"
#include "cutover/steps.h"
#include "lib/lib.h"



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
 *		The attempts (attempts.c) of the job's tables, the upstream to be
 *		renamed new_name, with the caller's lock_timeout and attempts, as
 *		a statement of the caller's.
 */
void
cutover_swap_attempts(CutoverJobRow *job, const char *new_name, FunctionCallInfo fcinfo,
					  int timeout_arg, int attempts_arg, CutoverSwapped *swapped)
{
	cutover_statement_begin();
	cutover_attempts(&job->job_id, job->upstream, job->downstream, new_name, fcinfo,
					 timeout_arg, attempts_arg, swapped);
	cutover_statement_end();
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
