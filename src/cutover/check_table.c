/*-------------------------------------------------------------------------
 *
 * check_table.c
 *	  The cutover's checks of one table at a time: whether the owner of the
 *	  new table is one whose code the writers of the old one already run,
 *	  whether a table is whole on its own, whether row-level security
 *	  filtered what a job read, and whether a materialized view over the
 *	  old table can be made again over the new one.
 *
 * A cutover renames whole tables: a partition would be left detached from
 * its parent (whose writes go on reaching the old one), and the rows of an
 * inheritance child would not follow the name.  A partitioned table is
 * whole, its partitions with it.  A superuser's rights over every role do
 * not count as trust: pg_has_role would say yes to any role for a
 * superuser's table, so the roles whose privileges the old table's owner
 * has are walked through pg_auth_members, as they are inherited.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/syscache.h"

#include "cutover/check.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_trusts);
PG_FUNCTION_INFO_V1(backfill_cutover_whole_table);
PG_FUNCTION_INFO_V1(backfill_cutover_filtered_by_rls);
PG_FUNCTION_INFO_V1(backfill_cutover_check_matview);

/*
 * cutover_trusts
 *		True when dst's owner is src's, a superuser, or a role whose
 *		privileges src's owner has through its memberships; *isnull when
 *		dst or its owner is not found.
 */
bool
cutover_trusts(Oid src, Oid dst, bool *isnull)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	bool		result = false;

	cutover_spi_begin();
	*isnull = true;
	if (cutover_query("WITH RECURSIVE held(role) AS ("
					  " SELECT relowner FROM pg_catalog.pg_class WHERE oid = $1"
					  " UNION"
					  " SELECT m.roleid FROM held h"
					  " JOIN pg_catalog.pg_roles r ON r.oid = h.role AND r.rolinherit"
					  " JOIN pg_catalog.pg_auth_members m ON m.member = h.role) "
					  "SELECT o.rolsuper OR EXISTS (SELECT FROM held WHERE role = d.relowner)"
					  " FROM pg_catalog.pg_class d, pg_catalog.pg_roles o"
					  " WHERE d.oid = $2 AND o.oid = d.relowner",
					  true, 2, types, values) > 0)
	{
		result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											1, isnull));
	}
	cutover_spi_end();
	return result;
}

/*
 * backfill._cutover_trusts(src regclass, dst regclass) RETURNS boolean
 */
Datum
backfill_cutover_trusts(PG_FUNCTION_ARGS)
{
	bool		isnull;
	bool		result = cutover_trusts(cutover_oid_arg(fcinfo, 0),
										cutover_oid_arg(fcinfo, 1), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_BOOL(result);
}

/*
 * cutover_whole_table
 *		Refuse the cutover of job when rel is a partition, inherits from a
 *		table, or has inheritance children and is not partitioned.
 */
void
cutover_whole_table(CutoverJob *job, Oid rel)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(rel)};
	char	   *parent;
	char	   *name = cutover_rel_raise(rel);

	cutover_spi_begin();
	if (cutover_query("SELECT (SELECT inhparent::pg_catalog.regclass::pg_catalog.text"
					  "          FROM pg_catalog.pg_inherits WHERE inhrelid = $1"
					  "         ORDER BY inhseqno LIMIT 1),"
					  "       c.relispartition,"
					  "       c.relkind <> 'p' AND EXISTS (SELECT FROM pg_catalog.pg_inherits"
					  "                                     WHERE inhparent = $1),"
					  "       (SELECT string_agg(inhrelid::pg_catalog.regclass::pg_catalog.text, ', '"
					  "                          ORDER BY inhrelid::pg_catalog.regclass::pg_catalog.text)"
					  "          FROM pg_catalog.pg_inherits WHERE inhparent = $1)"
					  "  FROM pg_catalog.pg_class c WHERE c.oid = $1",
					  true, 1, types, values) == 0)
	{
		cutover_spi_end();
		return;
	}
	parent = cutover_value(0, 1);
	if (cutover_bool(0, 2))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cut over backfill job %s because table %s is a partition",
						job->id_raise, name),
				 errdetail("Table %s is a partition of table %s. The table that takes its name would not be attached in its place, and the rows written through table %s would go on reaching the old one.",
						   name, parent ? parent : "", parent ? parent : ""),
				 errhint("Cut over table %s as a whole, or detach the partition before the cutover and attach the new table after it.",
						 parent ? parent : "")));
	if (parent != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cut over backfill job %s because table %s inherits from table %s",
						job->id_raise, name, parent),
				 errdetail("The rows of table %s are rows of table %s too; the table that takes its name would not inherit in its place.",
						   name, parent),
				 errhint("Use ALTER TABLE %s NO INHERIT %s before the cutover.", name, parent)));
	if (cutover_bool(0, 3))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cut over backfill job %s because table %s has inheritance children",
						job->id_raise, name),
				 errdetail("The rows of table %s include those of its children, %s, which would not follow its name.",
						   name, cutover_value(0, 4)),
				 errhint("Move the children's rows into the table and detach them with ALTER TABLE ... NO INHERIT before the cutover.")));
	cutover_spi_end();
}

/*
 * backfill._cutover_whole_table(j backfill.job, rel regclass) RETURNS void
 */
Datum
backfill_cutover_whole_table(PG_FUNCTION_ARGS)
{
	CutoverJob	job;

	cutover_job_arg(fcinfo, 0, &job);
	cutover_whole_table(&job, cutover_oid_arg(fcinfo, 1));
	PG_RETURN_VOID();
}

/*
 * backfill._cutover_filtered_by_rls(j backfill.job) RETURNS boolean
 *		Whether row-level security filtered what the job's owner read of its
 *		upstream: enabled on it, and the owner neither bypasses it nor owns
 *		the table without FORCE ROW LEVEL SECURITY.  NULL when the table or
 *		the role is not found.
 */
Datum
backfill_cutover_filtered_by_rls(PG_FUNCTION_ARGS)
{
	CutoverJob	job;
	HeapTuple	reltup;
	HeapTuple	roletup;
	Form_pg_class rel;
	Form_pg_authid role;
	bool		result;

	cutover_job_arg(fcinfo, 0, &job);
	reltup = SearchSysCache1(RELOID, ObjectIdGetDatum(job.upstream));
	if (!HeapTupleIsValid(reltup))
		PG_RETURN_NULL();
	roletup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(job.owner));
	if (!HeapTupleIsValid(roletup))
	{
		ReleaseSysCache(reltup);
		PG_RETURN_NULL();
	}
	rel = (Form_pg_class) GETSTRUCT(reltup);
	role = (Form_pg_authid) GETSTRUCT(roletup);
	result = rel->relrowsecurity && !role->rolsuper && !role->rolbypassrls &&
		(rel->relforcerowsecurity || !has_privs_of_role(job.owner, rel->relowner));
	ReleaseSysCache(roletup);
	ReleaseSysCache(reltup);
	PG_RETURN_BOOL(result);
}

/*
 * cutover_check_matview
 *		Refuse to carry materialized view mv over to dst when another object
 *		depends on it (it would have to be dropped with it), or when the
 *		caller lacks the privileges of its owner, which the swap gives the
 *		new one.
 */
void
cutover_check_matview(Oid mv, Oid dst)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(mv)};
	Oid			owner;

	cutover_spi_begin();
	/* a view or materialized view by its name, not its rule's */
	if (cutover_query("SELECT coalesce((SELECT pg_catalog.format('%s %s',"
					  "     CASE c.relkind WHEN 'm' THEN 'materialized view' ELSE 'view' END,"
					  "     c.oid::pg_catalog.regclass)"
					  "       FROM pg_catalog.pg_rewrite rw JOIN pg_catalog.pg_class c ON c.oid = rw.ev_class"
					  "      WHERE dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass"
					  "        AND rw.oid = dep.objid),"
					  "     pg_catalog.pg_describe_object(dep.classid, dep.objid, dep.objsubid))"
					  "  FROM pg_catalog.pg_depend dep"
					  " WHERE dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
					  "   AND dep.refobjid = $1 AND dep.deptype = 'n'"
					  "   AND NOT (dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass"
					  "            AND (SELECT ev_class FROM pg_catalog.pg_rewrite"
					  "                  WHERE oid = dep.objid) = $1)"
					  " ORDER BY 1 LIMIT 1",
					  true, 1, types, values) > 0)
	{
		char	   *what = cutover_value(0, 1);

		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry materialized view %s over to table %s",
						cutover_rel_raise(mv), cutover_rel_raise(dst)),
				 errdetail("The cutover makes the materialized view again, and %s depends on it.",
						   what ? what : ""),
				 errhint("Drop %s before the cutover and create it again after it.",
						 what ? what : "")));
	}
	cutover_spi_end();
	owner = backfill_relation_owner(mv);
	if (OidIsValid(owner) && !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of materialized view %s", cutover_rel_raise(mv)),
				 errdetail("The cutover makes materialized view %s again over table %s, owned by its owner.",
						   cutover_rel_format(mv), cutover_rel_format(dst))));
}

/*
 * backfill._cutover_check_matview(mv regclass, dst regclass) RETURNS void
 */
Datum
backfill_cutover_check_matview(PG_FUNCTION_ARGS)
{
	cutover_check_matview(cutover_oid_arg(fcinfo, 0), cutover_oid_arg(fcinfo, 1));
	PG_RETURN_VOID();
}
