/*-------------------------------------------------------------------------
 *
 * same_row_type.c
 *	  Whether the old table's row type and the new table's are one to the
 *	  functions that read them by name, for carry_functions.c: a function
 *	  of the old table's row type is carried over only then.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "utils/rel.h"

#include "cutover/carry_internal.h"

/*
 * cutover_same_row_type
 *		Whether the live columns of src and dst are the same, by name, type,
 *		typmod and collation, in order: a value of one row type is then a
 *		value of the other to every function that reads it by name.
 */
bool
cutover_same_row_type(Oid src, Oid dst)
{
	Relation	s = relation_open(src, NoLock);
	Relation	d = relation_open(dst, NoLock);
	TupleDesc	sd = RelationGetDescr(s);
	TupleDesc	dd = RelationGetDescr(d);
	int			i = 0;
	int			j = 0;
	bool		same = true;

	while (same)
	{
		Form_pg_attribute sa;
		Form_pg_attribute da;

		while (i < sd->natts && TupleDescAttr(sd, i)->attisdropped)
			i++;
		while (j < dd->natts && TupleDescAttr(dd, j)->attisdropped)
			j++;
		if (i >= sd->natts || j >= dd->natts)
		{
			same = i >= sd->natts && j >= dd->natts;
			break;
		}
		sa = TupleDescAttr(sd, i++);
		da = TupleDescAttr(dd, j++);
		same = strcmp(NameStr(sa->attname), NameStr(da->attname)) == 0 &&
			sa->atttypid == da->atttypid && sa->atttypmod == da->atttypmod &&
			sa->attcollation == da->attcollation;
	}
	relation_close(d, NoLock);
	relation_close(s, NoLock);
	return same;
}
