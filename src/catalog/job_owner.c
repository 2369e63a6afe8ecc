/*-------------------------------------------------------------------------
 *
 * job_owner.c
 *	  A job's owner: the caller must have its privileges (another role's
 *	  job does not exist for it), and the owner is recorded with a policy
 *	  on the job's state table, which moves with the job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/*
 * backfill_require_job_owner
 *		The job must exist and the current user must have the privileges of
 *		its owner, else it does not exist for the caller, as in the views.
 *		Returns the owner.
 */
Oid
backfill_require_job_owner(int64 job_id)
{
	Oid			owner = backfill_job_owner(job_id);

	/* as row-level security hides it: another role's job does not exist */
	if (!OidIsValid(owner) || !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));
	return owner;
}

/*
 * backfill_owned_job_arg
 *		Argument argno (named argname) of a SQL function: a job id, not
 *		NULL, of a job whose owner's privileges the caller has.
 */
int64
backfill_owned_job_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	int64		job_id;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
	job_id = PG_GETARG_INT64(argno);
	(void) backfill_require_job_owner(job_id);
	return job_id;
}

/*
 * A job's owner, as pg_shdepend knows it.  A job is a row of backfill.job,
 * not an object PostgreSQL knows, but its state table is one, owned by the
 * job's owner; REASSIGN OWNED gives it to another role without a word to
 * the extension, though, and would leave the job with an owner that DROP
 * ROLE may then drop.  So each job also has a policy on its state table,
 * "backfill_job_<id>_owner", FOR SELECT TO its owner: a shared dependency
 * that REASSIGN OWNED leaves alone, and DROP ROLE refuses while it exists,
 * naming it (and so the job).  DROP OWNED and REASSIGN OWNED move or drop it
 * with the job (api/ddl_owners.c).  Row-level security is not enabled on a state table,
 * so the policy is never applied; USING (false) grants nothing were it
 * enabled.
 */
static char *
owner_policy_name(int64 job_id)
{
	return psprintf("backfill_job_%lld_owner", (long long) job_id);
}

/*
 * backfill_record_owner
 *		Record the job's owner with a policy on its state table (above).
 *		Caller acts as the extension's owner, connected to SPI.
 */
void
backfill_record_owner(int64 job_id, const char *state_sql, Oid owner)
{
	backfill_spi_exec(psprintf("CREATE POLICY %s ON %s FOR SELECT TO %s USING (false)",
							   quote_identifier(owner_policy_name(job_id)), state_sql,
							   quote_identifier(GetUserNameFromId(owner, false))),
					  SPI_OK_UTILITY);
}

/*
 * backfill_move_owner
 *		Give the job to owner, who has been given its state table: the
 *		catalog's owner, and the policy that records it (made if the job,
 *		made before 1.3, had none).  Caller acts as the extension's owner,
 *		connected to SPI.
 */
void
backfill_move_owner(int64 job_id, Oid state_table, Oid owner)
{
	Oid			types[2] = {INT8OID, OIDOID};
	Datum		values[2] = {Int64GetDatum(job_id), ObjectIdGetDatum(owner)};
	Oid			policy_types[2] = {OIDOID, TEXTOID};
	Datum		policy_values[2] = {ObjectIdGetDatum(state_table),
	CStringGetTextDatum(owner_policy_name(job_id))};
	char	   *state_sql = backfill_relation_sql(state_table);
	const char *role = quote_identifier(GetUserNameFromId(owner, false));

	backfill_spi_exec_args("UPDATE backfill.job SET owner = $2::pg_catalog.regrole "
						   "WHERE job_id OPERATOR(pg_catalog.=) $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
	backfill_spi_exec_args("SELECT FROM pg_catalog.pg_policy "
						   "WHERE polrelid OPERATOR(pg_catalog.=) $1 "
						   "AND polname OPERATOR(pg_catalog.=) $2::pg_catalog.name",
						   2, policy_types, policy_values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		backfill_spi_exec(psprintf("ALTER POLICY %s ON %s TO %s",
								   quote_identifier(owner_policy_name(job_id)), state_sql, role),
						  SPI_OK_UTILITY);
	else
		backfill_record_owner(job_id, state_sql, owner);
}
