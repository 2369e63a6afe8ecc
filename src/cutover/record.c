/*-------------------------------------------------------------------------
 *
 * record.c
 *	  A job's cutover row (backfill.job_cutover), written for a caller who
 *	  owns the job, after its arguments are checked (record_checks.c): the
 *	  row names tables that rollback_cutover renames and finish_cutover
 *	  drops.
 *
 * cutover, rollback_cutover and finish_cutover call cutover_record
 * directly, not backfill._cutover_record through SPI: the SQL function is
 * not PUBLIC's, and the executor would check the caller's right to execute
 * it.  Both check the same things.  The row is written as the extension's
 * owner (catalog/cutover_rows.c), as the control functions write the job's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "catalog/catalog_access.h"
#include "catalog/cutover_rows.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_record);

/*
 * cutover_record_attempts
 *		A swap's figures in the values of a cutover row (cutover_record's
 *		order): its attempts, how long it held the lock, and the foreign
 *		keys it left to validate.
 */
void
cutover_record_attempts(Datum *values, bool *nulls, const CutoverSwapped *swapped)
{
	values[2] = Int32GetDatum(swapped->tries);
	nulls[2] = false;
	values[10] = Float8GetDatum(swapped->lock_held_ms);
	nulls[10] = swapped->lock_held_null;
	values[11] = swapped->to_validate;
	nulls[11] = swapped->to_validate_null;
}

/*
 * cutover_record
 *		The job's cutover row, inserted or replaced, for a caller who owns
 *		the job: values and nulls in the order of _cutover_record's
 *		arguments (job_id, state, attempts, old_table, new_table, old_name,
 *		new_schema, new_name, reversible, into_existing, lock_held_ms,
 *		to_validate, finished).
 */
void
cutover_record(const Datum *values, const bool *nulls)
{
	char		spi_nulls[CUTOVER_RECORD_ARGS];
	RoleContext rc;
	int			guc_level;

	if (nulls[0])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "job_id")));
	(void) backfill_require_job_owner(DatumGetInt64(values[0]));
	cutover_check_record_arguments(values, nulls);
	for (int i = 0; i < CUTOVER_RECORD_ARGS; i++)
		spi_nulls[i] = nulls[i] ? 'n' : ' ';

	backfill_catalog_enter(&rc);
	guc_level = backfill_pin_catalog_path();
	backfill_spi_enter();
	backfill_record_cutover((Datum *) values, spi_nulls);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
}

/*
 * backfill._cutover_record(job_id bigint, state text, attempts int,
 *							old_table oid, new_table oid, old_name text,
 *							new_schema oid, new_name text, reversible boolean,
 *							into_existing boolean, lock_held_ms float8,
 *							to_validate oid[], finished boolean)
 *		RETURNS void
 *
 * cutover_record, for the tests of its checks (a superuser's: PUBLIC may
 * not execute it).
 */
Datum
backfill_cutover_record(PG_FUNCTION_ARGS)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS];

	for (int i = 0; i < CUTOVER_RECORD_ARGS; i++)
	{
		nulls[i] = PG_ARGISNULL(i);
		values[i] = nulls[i] ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	cutover_record(values, nulls);
	PG_RETURN_VOID();
}
