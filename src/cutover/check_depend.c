/*-------------------------------------------------------------------------
 *
 * check_depend.c
 *	  The objects that name the old table of a cutover, and whether the
 *	  swap can carry each over to the new one: views (their SELECT rule
 *	  only), materialized views (made again over the new table), foreign
 *	  keys, triggers, policies, sequences and publications.  Anything else
 *	  refuses the cutover, before anything is locked or changed.  What
 *	  names src otherwise (its own rules, foreign keys, columns of its row
 *	  type, publications) is check_names.c's.
 *
 * Each object is read from pg_depend, in the order of its description,
 * and the first that cannot be carried is the error; a rule's checks are
 * check_rules.c's, which reads the same row.  A foreign key of a
 * partitioned table is added only by checking every row of it (PostgreSQL
 * has no NOT VALID one there): the swap would hold its lock for that long,
 * so it is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "cutover/check.h"

/* each object that names src, and what the checks need of it */
static const char dependents_sql[] =
	"SELECT dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass,"	/* 1 rule */
	"       pg_catalog.pg_describe_object(dep.classid, dep.objid, dep.objsubid) AS what,"	/* 2 */
	"       rw.ev_class = $1,"		/* 3 src's own rule */
	"       v.relkind = 'v' AND rw.ev_type <> '1',"	/* 4 a view's rule that writes */
	"       v.relkind = 'm',"		/* 5 */
	"       v.relkind <> 'v',"		/* 6 */
	"       rw.ev_class::pg_catalog.regclass::pg_catalog.text,"	/* 7 the view */
	"       rw.ev_class,"			/* 8 */
	"       dep.refobjsubid > 0 AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute b"
	"          WHERE b.attrelid = $2 AND b.attnum > 0 AND NOT b.attisdropped"
	"            AND b.attname = (SELECT attname FROM pg_catalog.pg_attribute"
	"                              WHERE attrelid = $1 AND attnum = dep.refobjsubid)),"	/* 9 */
	"       (SELECT attname FROM pg_catalog.pg_attribute"
	"         WHERE attrelid = $1 AND attnum = dep.refobjsubid),"	/* 10 */
	"       dep.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass,"	/* 11 */
	"       (SELECT k.contype = 'f' AND k.conrelid <> $1 AND k.conparentid = 0 AND r.relkind = 'p'"
	"          FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class r ON r.oid = k.conrelid"
	"         WHERE k.oid = dep.objid),"	/* 12 */
	"       (SELECT conrelid::pg_catalog.regclass::pg_catalog.text"
	"          FROM pg_catalog.pg_constraint WHERE oid = dep.objid),"	/* 13 */
	"       dep.classid = 'pg_catalog.pg_policy'::pg_catalog.regclass"
	"         AND (SELECT polrelid FROM pg_catalog.pg_policy WHERE oid = dep.objid) = $1,"	/* 14 */
	"       dep.classid IN ('pg_catalog.pg_trigger'::pg_catalog.regclass,"
	"                       'pg_catalog.pg_attrdef'::pg_catalog.regclass,"
	"                       'pg_catalog.pg_class'::pg_catalog.regclass,"
	"                       'pg_catalog.pg_type'::pg_catalog.regclass,"
	"                       'pg_catalog.pg_statistic_ext'::pg_catalog.regclass)"	/* 15 */
	"  FROM pg_catalog.pg_depend dep"
	"  LEFT JOIN pg_catalog.pg_rewrite rw"
	"         ON dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND rw.oid = dep.objid"
	"  LEFT JOIN pg_catalog.pg_class v ON v.oid = rw.ev_class"
	" WHERE dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass"
	"   AND dep.refobjid = $1 AND dep.deptype = 'n'"
	" ORDER BY 2";

/* refuse what cannot be carried of one object that names src */
static void
check_dependent(SPITupleTable *tab, int i, Oid src, Oid dst)
{
	HeapTuple	row = tab->vals[i];
	char	   *what = SPI_getvalue(row, tab->tupdesc, 2);
	bool		isnull;

#define COL(n) (DatumGetBool(SPI_getbinval(row, tab->tupdesc, (n), &isnull)) && !isnull)
	if (COL(1))
		cutover_check_rule(tab, i, src, dst);
	else if (COL(11))
	{
		if (COL(12))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot carry %s over to table %s", what, cutover_rel_raise(dst)),
					 errdetail("Table %s is partitioned; a foreign key of a partitioned table is added only by checking all its rows, which the swap would do under its lock.",
							   SPI_getvalue(row, tab->tupdesc, 13)),
					 errhint("Define the foreign key on each partition instead, or drop it before the cutover and add it again after it.")));
	}
	else if (COL(14) || COL(15))
		return;					/* src's own policies move; carried, or the table's own */
	else
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry %s over to table %s", what, cutover_rel_raise(dst)),
				 errdetail("Only views, foreign keys, triggers, policies, sequences and publications that name table %s are carried.",
						   cutover_rel_format(src)),
				 errhint("Drop it before the cutover and create it again after it.")));
#undef COL
}

/*
 * cutover_check_dependents
 *		Refuse the cutover of job when an object that names src cannot be
 *		carried over to dst (see the file header).  Caller is connected to
 *		SPI.
 */
void
cutover_check_dependents(CutoverJob *job, Oid src, Oid dst)
{
	Oid			types[3] = {REGCLASSOID, REGCLASSOID, REGCLASSOID};
	Datum		values[3] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst),
	ObjectIdGetDatum(job->change_table)};
	SPITupleTable *tab;
	int			n;

	n = cutover_query(dependents_sql, false, 2, types, values);
	/* the checks of a materialized view run queries of their own */
	tab = SPI_tuptable;
	for (int i = 0; i < n; i++)
		check_dependent(tab, i, src, dst);
}
