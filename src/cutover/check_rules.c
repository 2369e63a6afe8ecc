/*-------------------------------------------------------------------------
 *
 * check_rules.c
 *	  The rules that name the old table of a cutover, and whether the swap
 *	  can carry each over to the new one.
 *
 * src's own rules are check_names.c's.  A view's SELECT rule is carried:
 * CREATE OR REPLACE VIEW makes it again over the new table, so a view
 * that selects a column the new table lacks is refused; a view's rule
 * that writes is not carried.  A materialized view is made again over the
 * new table, when its definition fits it.  A rule on another table is
 * refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"

#include "cutover/check.h"

/*
 * cutover_check_rule
 *		Refuse what cannot be carried of a rule that names src: row i of
 *		tab, a row of check_depend.c's query of the objects that name src,
 *		whose columns it reads by number.
 */
void
cutover_check_rule(SPITupleTable *tab, int i, Oid src, Oid dst)
{
	HeapTuple	row = tab->vals[i];
	char	   *what = SPI_getvalue(row, tab->tupdesc, 2);
	char	   *view = SPI_getvalue(row, tab->tupdesc, 7);
	bool		isnull;
	Oid			mv;

#define COL(n) (DatumGetBool(SPI_getbinval(row, tab->tupdesc, (n), &isnull)) && !isnull)
	if (COL(3))
		return;
	if (COL(4))
		/* CREATE OR REPLACE VIEW carries a view's SELECT rule only */
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry %s over to table %s", what, cutover_rel_raise(dst)),
				 errdetail("The rule writes to table %s, and would go on writing to it under its new name.",
						   cutover_rel_format(src)),
				 errhint("Drop the rule before the cutover and create it again after it.")));
	else if (COL(5))
	{
		/* made again over dst */
		mv = DatumGetObjectId(SPI_getbinval(row, tab->tupdesc, 8, &isnull));
		cutover_statement_begin();
		cutover_check_matview(isnull ? InvalidOid : mv, dst);
		cutover_statement_end();
	}
	else if (COL(6))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry %s over to table %s", what, cutover_rel_raise(dst)),
				 errdetail("Only views and materialized views are carried; a rule on another table is not."),
				 errhint("Drop the rule before the cutover and create it again after it.")));
	if (COL(9))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry view %s over to table %s",
						view ? view : "<NULL>", cutover_rel_raise(dst)),
				 errdetail("View %s selects column %s of table %s, which table %s does not have.",
						   view ? view : "", cutover_ident(SPI_getvalue(row, tab->tupdesc, 10)),
						   cutover_rel_format(src), cutover_rel_format(dst)),
				 errhint("Drop or redefine view %s before the cutover.", view ? view : "")));
#undef COL
}
