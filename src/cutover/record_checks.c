/*-------------------------------------------------------------------------
 *
 * record_checks.c
 *	  What a cutover row (record.c) is checked for before it is written:
 *	  its values not NULL, its two tables the job's own, distinct, and
 *	  owned by roles whose privileges the caller has, and its foreign keys
 *	  to validate a list without NULL.
 *
 * The row names tables that rollback_cutover renames and finish_cutover
 * drops: no role may make another role's table one of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "catalog/catalog_access.h"
#include "catalog/cutover_rows.h"
#include "cutover/steps.h"
#include "lib/lib.h"

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
 * cutover_check_record_arguments
 *		The row's values, checked before anything is written.  The two
 *		tables must be the job's own (job_own_table: the old one always one
 *		the job or its row names), distinct, and the caller must have the
 *		privileges of their owners; the foreign keys to validate a list
 *		without NULL.
 */
void
cutover_check_record_arguments(const Datum *values, const bool *nulls)
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
