/*-------------------------------------------------------------------------
 *
 * check.c
 *	  What refuses a swap of src (which has the name) for dst, before
 *	  anything is locked or changed: a caller without the privileges of both
 *	  owners, a dst whose owner's code src's writers do not already run, a
 *	  partition or a table in an inheritance tree, another job over either
 *	  table, and the objects that name src and cannot be carried
 *	  (check_depend.c, check_names.c, check_schema.c).
 *
 * dst goes into production with its triggers, defaults, check constraints,
 * rules and policies, which run in the transactions of src's writers: its
 * owner must be one whose code they already run (check_owner.c).  The
 * checks run as the caller, in the order the PL/pgSQL they replace ran
 * them, each query with a snapshot of its own as in a VOLATILE function,
 * and each check made through a STABLE one with the snapshot of its call.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"

#include "cutover/check.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_check);

/* the caller must have the privileges of the owner of rel; detail says why */
static void
require_owner(Oid rel, const char *detail)
{
	Oid			owner = backfill_relation_owner(rel);

	if (OidIsValid(owner) && !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", cutover_rel_raise(rel)),
				 errdetail("%s", detail)));
}

/* the caller must have the privileges of the owners of src and dst */
static void
check_owners(CutoverJob *job, Oid src, Oid dst)
{
	require_owner(src, psprintf("The cutover of backfill job %s renames table %s and carries its privileges, owner and dependent objects over to table %s.",
								job->id_format, cutover_rel_format(src), cutover_rel_format(dst)));
	require_owner(dst, psprintf("The cutover of backfill job %s renames table %s and gives it the owner of table %s.",
								job->id_format, cutover_rel_format(dst), cutover_rel_format(src)));
}

/* dst's owner must be one whose code the writers of src already run */
static void
check_trust(CutoverJob *job, Oid src, Oid dst)
{
	bool		isnull;
	bool		trusted;
	char	   *src_owner;
	char	   *dst_owner;

	cutover_statement_begin();
	trusted = cutover_trusts(src, dst, &isnull);
	cutover_statement_end();
	if (trusted || isnull)
		return;
	src_owner = cutover_role(backfill_relation_owner(src));
	dst_owner = cutover_role(backfill_relation_owner(dst));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("cannot cut over backfill job %s because table %s is owned by role %s, which the owner of table %s does not trust",
					job->id_raise, cutover_rel_raise(dst), dst_owner, cutover_rel_raise(src)),
			 errdetail("Table %s would take the place of table %s, owned by role %s, with its triggers, defaults, check constraints, rules and policies, which would run in the transactions of its writers. Role %s is neither role %s nor a superuser, and role %s is not a member of it.",
					   cutover_rel_format(dst), cutover_rel_format(src), src_owner,
					   dst_owner, src_owner, src_owner),
			 errhint("Review the triggers, defaults, rules and policies of table %s, then give it to the owner of table %s: ALTER TABLE %s OWNER TO %s.",
					 cutover_rel_format(dst), cutover_rel_format(src),
					 cutover_rel_format(dst), src_owner)));
}

/* replica identity through an index: dst needs one on the same columns */
static void
check_replica_identity(Oid src, Oid dst)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};

	cutover_query(psprintf("SELECT (SELECT relreplident FROM pg_catalog.pg_class WHERE oid = $1) = 'i'"
						   "   AND (%s) IS NULL", cutover_identity_index_sql),
				  false, 2, types, values);
	if (cutover_bool(0, 1))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry the replica identity of table %s over to table %s",
						cutover_rel_raise(src), cutover_rel_raise(dst)),
				 errdetail("Table %s has no unique index on the columns of the replica identity index of table %s.",
						   cutover_rel_format(dst), cutover_rel_format(src)),
				 errhint("Create such an index on table %s first.", cutover_rel_format(dst))));
}

/*
 * cutover_check
 *		Refuse a cutover of tables whose owners do not trust each other, of
 *		a partition or a table in an inheritance tree, over which another
 *		job runs, or whose dependent objects cannot be carried.  The caller
 *		is connected to SPI.
 */
void
cutover_check(CutoverJob *job, Oid src, Oid dst)
{
	check_owners(job, src, dst);
	check_trust(job, src, dst);
	/*
	 * a partition is renamed out of its parent's sight, and rows of an
	 * inheritance child would vanish from the table that takes the name
	 */
	cutover_statement_begin();
	cutover_whole_table(job, src);
	cutover_statement_end();
	cutover_statement_begin();
	cutover_whole_table(job, dst);
	cutover_statement_end();
	cutover_refuse_other_job(job, src, dst);
	cutover_check_dependents(job, src, dst);
	cutover_check_names(job, src, dst);
	/* subscriptions, functions of the row type */
	cutover_statement_begin();
	cutover_check_schema(job, src, dst);
	cutover_statement_end();
	check_replica_identity(src, dst);
}

/*
 * backfill._cutover_check(j backfill.job, src regclass, dst regclass)
 * RETURNS void
 *		cutover_check, for a caller of SQL.
 */
Datum
backfill_cutover_check(PG_FUNCTION_ARGS)
{
	CutoverJob	job;

	cutover_job_arg(fcinfo, 0, &job);
	backfill_spi_enter();
	cutover_check(&job, cutover_oid_arg(fcinfo, 1), cutover_oid_arg(fcinfo, 2));
	backfill_spi_leave();
	PG_RETURN_VOID();
}
