/*-------------------------------------------------------------------------
 *
 * check_owner.c
 *	  Whose code and whose objects a cutover hands over: whether the owner
 *	  of the new table is one whose code the writers of the old one already
 *	  run, and whether a materialized view over the old table can be made
 *	  again over the new one, under its owner.
 *
 * A superuser's rights over every role do not count as trust: pg_has_role
 * would say yes to any role for a superuser's table, so the roles whose
 * privileges the old table's owner has are walked through pg_auth_members,
 * as they are inherited.  A materialized view is made again, and given
 * back to its owner: nothing else may depend on it (a view over it would
 * have to be dropped with it), and the caller must have the privileges of
 * that owner.
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

PG_FUNCTION_INFO_V1(backfill_cutover_trusts);
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

	backfill_spi_enter();
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
	backfill_spi_leave();
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

	backfill_spi_enter();
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
	backfill_spi_leave();
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
