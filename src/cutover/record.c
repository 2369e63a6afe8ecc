/*-------------------------------------------------------------------------
 *
 * record.c
 *	  A job's cutover row (backfill.job_cutover), written for a caller who
 *	  owns the job, after its arguments are checked: the row names tables
 *	  that rollback_cutover renames and finish_cutover drops.
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

#include "catalog/pg_class.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "catalog/catalog_access.h"
#include "catalog/cutover_rows.h"
#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_record);

/*
 * cutover_require_table_owner
 *		The caller must have the privileges of the owner of table relid
 *		(argname says which argument or which of the job's tables it is).
 *		With missing_ok, a table dropped already passes: finish_cutover
 *		records the end of a cutover once it has dropped the old table.
 */
void
cutover_require_table_owner(Oid relid, const char *argname, bool missing_ok)
{
	Oid			relowner = backfill_relation_owner(relid);

	if (!OidIsValid(relowner) && missing_ok)
		return;
	if (!OidIsValid(relowner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid),
				 errdetail("It is argument \"%s\".", argname)));
	if (!has_privs_of_role(GetUserId(), relowner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid)),
				 errdetail("A cutover changes both tables of the job; %s is one of them.", argname)));
}

/*
 * Whether table relid may stand as a table of job_id's cutover row, in the
 * place of the row's table "recorded": one of the job's two tables, or the
 * table the row has there already.  With any_table, also a table the job no
 * longer names: a cutover that cannot be rolled back, or that switched a
 * job of another server over, has cancelled the job, which then has no
 * downstream, before it writes its row.
 */
static bool
job_own_table(int64 job_id, Oid relid, Oid recorded, bool any_table)
{
	char		relkind = get_rel_relkind(relid);
	Oid			downstream = backfill_job_downstream(job_id);

	if (relid == backfill_job_upstream(job_id) || relid == downstream || relid == recorded)
		return true;
	return any_table && !OidIsValid(downstream) &&
		(relkind == RELKIND_RELATION || relkind == RELKIND_PARTITIONED_TABLE);
}

/*
 * The row's values, checked before anything is written.  The two tables
 * must be the job's own (job_own_table: the old one always one the job or
 * its row names), distinct, and the caller must have the privileges of
 * their owners; the foreign keys to validate a list without NULL.
 */
static void
check_record_arguments(const Datum *values, const bool *nulls)
{
	int64		job_id = DatumGetInt64(values[0]);
	static const char *const notnull[] = {"job_id", "state", "attempts", "old_table", "new_table",
	"old_name", "new_schema", "new_name", "reversible", "into_existing"};
	Oid			old_table;
	Oid			new_table;
	Oid			recorded_old;
	Oid			recorded_new;
	bool		swapped;

	for (int i = 0; i < lengthof(notnull); i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" must not be null", notnull[i])));
	old_table = DatumGetObjectId(values[3]);
	new_table = DatumGetObjectId(values[4]);
	backfill_spi_enter();
	(void) backfill_cutover_row_tables(job_id, &recorded_old, &recorded_new, &swapped);
	backfill_spi_leave();
	if (old_table == new_table ||
		!job_own_table(job_id, old_table, recorded_old, false) ||
		!job_own_table(job_id, new_table, recorded_new, true))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the tables of the cutover row of backfill job %lld must be the job's own",
						(long long) job_id),
				 errdetail("The old and the new table must be the job's upstream and downstream tables.")));
	cutover_require_table_owner(old_table, "old_table", true);
	cutover_require_table_owner(new_table, "new_table", true);
	if (!nulls[11])
	{
		ArrayType  *fks = DatumGetArrayTypeP(values[11]);

		if (ARR_NDIM(fks) > 1 || array_contains_nulls(fks))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("argument \"%s\" must be a one-dimensional array without nulls",
							"to_validate")));
	}
}

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
	check_record_arguments(values, nulls);
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
