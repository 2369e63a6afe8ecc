/*-------------------------------------------------------------------------
 *
 * job_ops.c
 *	  stop_job, alter_rate_limit, alter_job and recreate_job: the job
 *	  operations that change how a job runs or make it again.
 *
 * Each runs with its caller's rights, checks once that the caller has the
 * privileges of the job's owner (another role's job does not exist for it,
 * as in the views), then makes its catalog writes through control.c, as
 * the extension's owner.
 *
 * recreate_job hands the old job's filter and computed columns back to
 * create_job.  They are SQL text written under standard_conforming_strings
 * = on, DateStyle = 'ISO, MDY' and IntervalStyle = postgres (copy/shape.c);
 * its SQL declaration sets those for the call.  The new job is the old
 * job's owner's, made on the owner's behalf (create.c, create_job_as),
 * whoever recreates it.
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

#include "api/job_ops.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PG_FUNCTION_INFO_V1(backfill_stop_job_1_4);
PG_FUNCTION_INFO_V1(backfill_alter_rate_limit);
PG_FUNCTION_INFO_V1(backfill_alter_job);
PG_FUNCTION_INFO_V1(backfill_recreate_job);

/*
 * backfill.stop_job(job_id bigint) RETURNS boolean
 *		Stop the job's background workers at their next barrier and wait
 *		until they have exited; returns whether it had any.  The launcher
 *		no longer restarts the job: it runs again by run_job or start_job.
 */
Datum
backfill_stop_job_1_4(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	bool		stopped = backfill_stop_workers(job_id, false);

	if (!stopped)
		ereport(NOTICE,
				(errmsg("backfill job %lld is not running in the background",
						(long long) job_id)));
	backfill_catalog_op(OP_FOREGROUND, job_id, true, 0);
	PG_RETURN_BOOL(stopped);
}

/*
 * backfill.alter_rate_limit(job_id bigint, rows_per_second integer)
 *		RETURNS void
 *		The snapshot rows each actor reads per second from the next
 *		barrier: NULL no limit, 0 paused.
 */
Datum
backfill_alter_rate_limit(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	bool		none = PG_ARGISNULL(1);

	if (!none && PG_GETARG_INT32(1) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rows_per_second must not be negative"),
				 errhint("Pass NULL for no limit, or 0 to pause the snapshot.")));
	backfill_catalog_op(OP_RATE_LIMIT, job_id, none, none ? 0 : PG_GETARG_INT32(1));
	PG_RETURN_VOID();
}

/* a job's settings, as the caller reads its row: backfill.job_settings */
static const char *const settings_sql =
"SELECT job_id, job_name, status, run_mode, rate_limit, parallelism "
"FROM backfill.job WHERE job_id OPERATOR(pg_catalog.=) $1";

/*
 * read_settings
 *		The job's settings as a row of the function's result type, in the
 *		function's memory; the caller has checked that the job is one it
 *		owns.  A job dropped meanwhile does not exist.
 */
static Datum
read_settings(int64 job_id, FunctionCallInfo fcinfo)
{
	TupleDesc	result_desc;
	HeapTuple	row;
	Datum		values[6];
	bool		nulls[6];
	Datum		result;

	if (get_call_result_type(fcinfo, NULL, &result_desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backfill_spi_exec_args(settings_sql, 1, (Oid[]) {INT8OID},
						   (Datum[]) {Int64GetDatum(job_id)}, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		(void) backfill_require_job_owner(job_id);
	for (int i = 0; i < 6; i++)
		values[i] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, i + 1, &nulls[i]);
	row = heap_form_tuple(BlessTupleDesc(result_desc), values, nulls);
	/* out of SPI's memory, which SPI_finish frees */
	result = PointerGetDatum(SPI_returntuple(row, result_desc));
	SPI_finish();
	return result;
}

/* the job's parallelism, as the caller reads its row */
static int32
read_parallelism(int64 job_id)
{
	bool		isnull;
	Datum		value = backfill_job_column(job_id, "parallelism", &isnull);

	return isnull ? 0 : DatumGetInt32(value);
}

/*
 * backfill.alter_job(job_id bigint, rate_limit integer DEFAULT NULL,
 *					  parallelism integer DEFAULT NULL)
 *		RETURNS backfill.job_settings
 *		PostgreSQL's ALTER beside RisingWave's verbs: each setting given
 *		goes through its own operation and its checks (alter_rate_limit,
 *		then reschedule when the parallelism differs from the job's); NULL
 *		leaves a setting as it is.  Returns the job's settings after.
 */
Datum
backfill_alter_job(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");

	if (!PG_ARGISNULL(1))
		DirectFunctionCall2(backfill_alter_rate_limit,
							Int64GetDatum(job_id), PG_GETARG_DATUM(1));
	if (!PG_ARGISNULL(2) && read_parallelism(job_id) != PG_GETARG_INT32(2))
		DirectFunctionCall2(backfill_reschedule_1_4,
							Int64GetDatum(job_id), PG_GETARG_DATUM(2));
	PG_RETURN_DATUM(read_settings(job_id, fcinfo));
}

/*
 * The old job's arguments to create_job, as create_job_as takes them after
 * from_job_id: its columns again, "expression AS name" for a computed one.
 * unnest of two arrays is FROM-clause syntax that only the unqualified name
 * has; the function's search_path is pg_catalog, pg_temp.
 */
#define RECREATE_NARGS 10
static const char *const recreate_sql =
"SELECT downstream_name, upstream, kind, "
"       CASE WHEN expressions IS NULL THEN columns "
"            ELSE ARRAY(SELECT coalesce(t.e OPERATOR(pg_catalog.||) ' AS ' "
"                                OPERATOR(pg_catalog.||) pg_catalog.quote_ident(t.c), t.c) "
"                         FROM unnest(columns, expressions) "
"                              WITH ORDINALITY AS t(c, e, o) "
"                        ORDER BY t.o) END, "
"       parallelism, chunk_size, rate_limit, filter, into_existing, indexes, status "
"FROM backfill.job WHERE job_id OPERATOR(pg_catalog.=) $1";

/*
 * read_recreate_args
 *		Fill args[1..RECREATE_NARGS] of create_fcinfo from the job's row;
 *		returns its status.  Caller is connected to SPI, and the values live
 *		until it disconnects.
 */
static char *
read_recreate_args(int64 job_id, FunctionCallInfo create_fcinfo)
{
	HeapTuple	tup;
	TupleDesc	desc;

	backfill_spi_exec_args(recreate_sql, 1, (Oid[]) {INT8OID},
						   (Datum[]) {Int64GetDatum(job_id)}, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		(void) backfill_require_job_owner(job_id);	/* gone: it does not exist */
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	for (int i = 0; i < RECREATE_NARGS; i++)
		create_fcinfo->args[i + 1].value =
			SPI_getbinval(tup, desc, i + 1, &create_fcinfo->args[i + 1].isnull);
	return SPI_getvalue(tup, desc, RECREATE_NARGS + 1);
}

/*
 * backfill.recreate_job(job_id bigint, kind text DEFAULT NULL) RETURNS bigint
 *		Cancel a job if needed and create it again, of the same kind or of
 *		the given one; returns the new job id.
 */
Datum
backfill_recreate_job(PG_FUNCTION_ARGS)
{
	LOCAL_FCINFO(create_fcinfo, RECREATE_NARGS + 1);
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	char	   *status;
	int64		new_id;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	InitFunctionCallInfoData(*create_fcinfo, NULL, RECREATE_NARGS + 1, InvalidOid, NULL, NULL);
	create_fcinfo->args[0].value = Int64GetDatum(job_id);
	create_fcinfo->args[0].isnull = false;
	/* the row before the cancel, which empties its tables */
	status = read_recreate_args(job_id, create_fcinfo);
	if (strcmp(status, "finished") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot recreate backfill job %lld because it has finished",
						(long long) job_id),
				 errhint("Use backfill.drop_job(%lld), then backfill.create_job().",
						 (long long) job_id)));
	if (strcmp(status, "cancelled") != 0)
		(void) backfill_cancel_job_owned(job_id);
	if (!PG_ARGISNULL(1))
	{
		create_fcinfo->args[3].value = PG_GETARG_DATUM(1);
		create_fcinfo->args[3].isnull = false;
	}

	/*
	 * on behalf of the job's owner, who owns the new job and whose filter
	 * and expressions it runs, whoever recreates it
	 */
	new_id = DatumGetInt64(backfill_create_job_as(create_fcinfo));
	backfill_catalog_op(OP_COPY_NAMES, new_id, false, job_id);
	SPI_finish();
	PG_RETURN_INT64(new_id);
}
