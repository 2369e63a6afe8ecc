/*-------------------------------------------------------------------------
 *
 * check_names.c
 *	  What names the old table of a cutover besides the objects of
 *	  pg_depend (check_depend.c), and cannot be carried: its own rules other
 *	  than SELECT, foreign keys that need columns the new table lacks,
 *	  columns of its row type, publications that filter it.
 *
 * Foreign keys from other tables are carried, and so is one of src to
 * itself (dst gets its own, to itself); they need the referenced columns
 * on dst, and one of src to itself its referencing columns too.  A column
 * of src's row type elsewhere would keep the old table's type (the job's
 * own change table excepted: its images are of the type of the job's
 * downstream, which the rollback of a cutover makes src).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "cutover/check.h"

/* src's own rules other than SELECT stay on the old table */
static void
check_own_rules(Oid src, Oid dst, Oid *types, Datum *values)
{
	if (cutover_query("SELECT pg_catalog.format('rule %I on table %s', rw.rulename, $1::pg_catalog.regclass)"
					  "  FROM pg_catalog.pg_rewrite rw WHERE rw.ev_class = $1 AND rw.ev_type <> '1'"
					  " ORDER BY rw.rulename LIMIT 1",
					  false, 1, types, values) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry %s over to table %s", cutover_value(0, 1), cutover_rel_raise(dst)),
				 errdetail("The rule would stay on table %s under its new name.", cutover_rel_format(src)),
				 errhint("Drop the rule before the cutover and create it again after it.")));
}

/* foreign keys from other tables need the referenced columns on dst; one of src to itself, its referencing columns too */
static void
check_foreign_keys(Oid dst, Oid *types, Datum *values)
{
	if (cutover_query("SELECT c.conname, c.conrelid::pg_catalog.regclass::pg_catalog.text, a.attname"
					  "  FROM pg_catalog.pg_constraint c"
					  "  CROSS JOIN LATERAL pg_catalog.unnest(c.confkey || CASE WHEN c.conrelid = $1"
					  "                                          THEN c.conkey ELSE '{}' END) AS k(attnum)"
					  "  JOIN pg_catalog.pg_attribute a ON a.attrelid = $1 AND a.attnum = k.attnum"
					  " WHERE c.contype = 'f' AND c.confrelid = $1"
					  "   AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute b"
					  "                    WHERE b.attrelid = $2 AND b.attname = a.attname"
					  "                      AND b.attnum > 0 AND NOT b.attisdropped)",
					  false, 2, types, values) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry foreign key %s of table %s over to table %s",
						cutover_value(0, 1), cutover_value(0, 2), cutover_rel_raise(dst)),
				 errdetail("It references column %s, which table %s does not have.",
						   cutover_ident(cutover_value(0, 3)), cutover_rel_format(dst))));
}

/* a column of src's row type elsewhere than the job's change table */
static void
check_row_type_columns(Oid src, Oid *types, Datum *values)
{
	if (cutover_query("SELECT pg_catalog.format('%s.%I', a.attrelid::pg_catalog.regclass, a.attname)"
					  "  FROM pg_catalog.pg_attribute a"
					  " WHERE a.atttypid = (SELECT reltype FROM pg_catalog.pg_class WHERE oid = $1)"
					  "   AND a.attrelid <> $1 AND a.attrelid IS DISTINCT FROM $3"
					  "   AND NOT a.attisdropped LIMIT 1",
					  false, 3, types, values) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cut over table %s because column %s is of its row type",
						cutover_rel_raise(src), cutover_value(0, 1)),
				 errdetail("A column's type cannot move from one table's row type to another's.")));
}

/* publications with a row filter or a column list are not carried */
static void
check_publications(Oid src, Oid dst, Oid *types, Datum *values)
{
	if (cutover_query("SELECT p.pubname"
					  "  FROM pg_catalog.pg_publication_rel r"
					  "  JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid"
					  " WHERE r.prrelid = $1 AND (r.prqual IS NOT NULL OR r.prattrs IS NOT NULL) LIMIT 1",
					  false, 1, types, values) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry the membership of table %s in publication %s over to table %s",
						cutover_rel_raise(src), cutover_value(0, 1), cutover_rel_raise(dst)),
				 errdetail("The table is published with a row filter or a column list."),
				 errhint("Publish table %s as a whole before the cutover, and filter again after it.",
						 cutover_rel_format(src))));
}

/*
 * cutover_check_names
 *		Refuse the cutover of job when src's own rules, a foreign key, a
 *		column of its row type or a publication cannot be carried over to
 *		dst.  Caller is connected to SPI.
 */
void
cutover_check_names(CutoverJob *job, Oid src, Oid dst)
{
	Oid			types[3] = {REGCLASSOID, REGCLASSOID, REGCLASSOID};
	Datum		values[3] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst),
	ObjectIdGetDatum(job->change_table)};

	check_own_rules(src, dst, types, values);
	check_foreign_keys(dst, types, values);
	check_row_type_columns(src, types, values);
	check_publications(src, dst, types, values);
}
