/*-------------------------------------------------------------------------
 *
 * check_table.c
 *	  The cutover's checks of one table at a time: whether a table is whole
 *	  on its own, and whether row-level security filtered what a job read
 *	  of its upstream.
 *
 * A cutover renames whole tables: a partition would be left detached from
 * its parent (whose writes go on reaching the old one), and the rows of an
 * inheritance child would not follow the name.  A partitioned table is
 * whole, its partitions with it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/acl.h"
#include "utils/syscache.h"

#include "cutover/check.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_whole_table);
PG_FUNCTION_INFO_V1(backfill_cutover_filtered_by_rls);

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

	backfill_spi_enter();
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
		backfill_spi_leave();
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
	backfill_spi_leave();
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
 * cutover_filtered_by_rls
 *		Whether row-level security filtered what the job's owner read of its
 *		upstream: enabled on it, and the owner neither bypasses it nor owns
 *		the table without FORCE ROW LEVEL SECURITY.  NULL when the table or
 *		the role is not found.
 */
bool
cutover_filtered_by_rls(CutoverJob *job, bool *isnull)
{
	HeapTuple	reltup;
	HeapTuple	roletup;
	Form_pg_class rel;
	Form_pg_authid role;
	bool		result;

	*isnull = true;
	reltup = SearchSysCache1(RELOID, ObjectIdGetDatum(job->upstream));
	if (!HeapTupleIsValid(reltup))
		return false;
	roletup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(job->owner));
	if (!HeapTupleIsValid(roletup))
	{
		ReleaseSysCache(reltup);
		return false;
	}
	rel = (Form_pg_class) GETSTRUCT(reltup);
	role = (Form_pg_authid) GETSTRUCT(roletup);
	result = rel->relrowsecurity && !role->rolsuper && !role->rolbypassrls &&
		(rel->relforcerowsecurity || !has_privs_of_role(job->owner, rel->relowner));
	ReleaseSysCache(roletup);
	ReleaseSysCache(reltup);
	*isnull = false;
	return result;
}

/* backfill._cutover_filtered_by_rls(j backfill.job) RETURNS boolean */
Datum
backfill_cutover_filtered_by_rls(PG_FUNCTION_ARGS)
{
	CutoverJob	job;
	bool		isnull;
	bool		result;

	cutover_job_arg(fcinfo, 0, &job);
	result = cutover_filtered_by_rls(&job, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_BOOL(result);
}
