/*-------------------------------------------------------------------------
 *
 * check_schema.c
 *	  What a real schema has that the cutover cannot carry, refused before
 *	  anything changes: a subscription still copying the old table (or
 *	  writing to the new one too), and functions of the old table's row
 *	  type that could not follow it.
 *
 * Functions of src's row type go over to dst's when the columns are the
 * same (carry_functions.c); else they would keep the old table's type,
 * which finish_cutover could then not drop.  A function in C reads the
 * rows of a row type by position, so it is refused whatever the columns.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "cutover/check.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_check_schema);

/* the functions of src's row type or its array type, qualified by a condition */
#define ROW_TYPE_FUNCTIONS(cond) \
	"SELECT string_agg(DISTINCT dep.objid::pg_catalog.regprocedure::pg_catalog.text, ', ')" \
	"  FROM pg_catalog.pg_depend dep, pg_catalog.pg_class c" cond

/* a subscription that writes to dst, or has not finished copying src */
static void
check_subscriptions(CutoverJob *job, Oid src, Oid dst)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	char	   *subname;

	if (cutover_query("SELECT s.subname, sr.srrelid = $2, sr.srsubstate"
					  "  FROM pg_catalog.pg_subscription_rel sr"
					  "  JOIN pg_catalog.pg_subscription s ON s.oid = sr.srsubid"
					  " WHERE sr.srrelid IN ($1, $2) AND (sr.srrelid = $2 OR sr.srsubstate <> 'r')"
					  " ORDER BY s.subname LIMIT 1",
					  true, 2, types, values) == 0)
		return;
	subname = cutover_value(0, 1);
	if (cutover_bool(0, 2))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot cut over backfill job %s because subscription %s writes to table %s",
						job->id_raise, subname, cutover_rel_raise(dst)),
				 errdetail("Table %s would take the place of table %s, and the changes subscription %s applies to it would go on reaching it under the name of table %s.",
						   cutover_rel_format(dst), cutover_rel_format(src),
						   quote_identifier(subname), cutover_rel_format(src)),
				 errhint("Remove table %s from the publications of subscription %s and refresh it (ALTER SUBSCRIPTION %s REFRESH PUBLICATION) before the cutover.",
						 cutover_rel_format(dst), quote_identifier(subname),
						 quote_identifier(subname))));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot cut over backfill job %s because subscription %s has not finished copying table %s",
					job->id_raise, subname, cutover_rel_raise(src)),
			 errdetail("The table is in state \"%s\" in pg_subscription_rel; the cutover carries only a table that is ready (\"r\"), whose changes the apply worker writes.",
					   cutover_value(0, 3)),
			 errhint("Wait until the subscription has synchronised the table, then try again.")));
}

/* functions of src's row type, when dst's columns are not src's */
static void
check_row_type_functions(Oid src, Oid dst)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	char	   *what;

	cutover_query("SELECT w, w IS NOT NULL"
				  "   AND ARRAY(SELECT row(attname, atttypid, atttypmod, attcollation)::pg_catalog.text"
				  "               FROM pg_catalog.pg_attribute"
				  "              WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum)"
				  "       IS DISTINCT FROM"
				  "       ARRAY(SELECT row(attname, atttypid, atttypmod, attcollation)::pg_catalog.text"
				  "               FROM pg_catalog.pg_attribute"
				  "              WHERE attrelid = $2 AND attnum > 0 AND NOT attisdropped ORDER BY attnum)"
				  "  FROM (" ROW_TYPE_FUNCTIONS(
				  " WHERE c.oid = $1 AND dep.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
				  "   AND dep.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass"
				  "   AND dep.refobjid IN (c.reltype, (SELECT typarray FROM pg_catalog.pg_type"
				  "                                     WHERE oid = c.reltype))") ") f(w)",
				  true, 2, types, values);
	what = cutover_value(0, 1);
	if (cutover_bool(0, 2))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry the functions of the row type of table %s over to table %s",
						cutover_rel_raise(src), cutover_rel_raise(dst)),
				 errdetail("Functions %s take or return rows of table %s, and the columns of table %s are not the same (names, types and collations, in order): they would keep the type of the old table.",
						   what, cutover_rel_format(src), cutover_rel_format(dst)),
				 errhint("Drop the functions before the cutover and create them again after it.")));

	cutover_query(ROW_TYPE_FUNCTIONS(", pg_catalog.pg_proc p")
				  " WHERE c.oid = $1 AND dep.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass"
				  "   AND dep.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass"
				  "   AND dep.refobjid IN (c.reltype, (SELECT typarray FROM pg_catalog.pg_type"
				  "                                     WHERE oid = c.reltype))"
				  "   AND p.oid = dep.objid AND p.prolang IN (SELECT oid FROM pg_catalog.pg_language"
				  "                                            WHERE lanname IN ('c', 'internal'))",
				  true, 1, types, values);
	what = cutover_value(0, 1);
	if (what != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry the functions of the row type of table %s over to table %s",
						cutover_rel_raise(src), cutover_rel_raise(dst)),
				 errdetail("Functions %s are written in C, which reads the rows of a table's row type by position.",
						   what),
				 errhint("Drop the functions before the cutover and create them again after it.")));
}

/*
 * cutover_check_schema
 *		Refuse a cutover of a table a subscription is still copying, or of
 *		two tables one subscription writes to, and of functions of the row
 *		type of src that could not follow it to dst.
 */
void
cutover_check_schema(CutoverJob *job, Oid src, Oid dst)
{
	backfill_spi_enter();
	check_subscriptions(job, src, dst);
	check_row_type_functions(src, dst);
	backfill_spi_leave();
}

/*
 * backfill._cutover_check_schema(j backfill.job, src regclass, dst regclass)
 * RETURNS void
 */
Datum
backfill_cutover_check_schema(PG_FUNCTION_ARGS)
{
	CutoverJob	job;

	cutover_job_arg(fcinfo, 0, &job);
	cutover_check_schema(&job, cutover_oid_arg(fcinfo, 1), cutover_oid_arg(fcinfo, 2));
	PG_RETURN_VOID();
}
