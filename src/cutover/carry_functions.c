/*-------------------------------------------------------------------------
 *
 * carry_functions.c
 *	  The functions declared with the old table's row type, which a cutover
 *	  re-points to the new table's (swap.c calls cutover_carry_functions;
 *	  backfill._cutover_carry_functions is its SQL face).
 *
 * A function RETURNS SETOF customer, or taking a customer (or an array of
 * them), is declared with the row type of table customer, which the rename
 * takes along: after the swap the function would return rows of the old
 * table's type while its body reads the new table, and depend on the old
 * table, which finish_cutover could then not drop.  No ALTER FUNCTION
 * changes a function's argument or result types, and CREATE OR REPLACE
 * cannot either; so pg_proc is re-pointed (function_retype.c), with the
 * function's dependencies on the two types.  Only between two tables whose
 * live columns are the same, by name, type, typmod and collation, in
 * order: the function then reads and returns the same values as before.
 *
 * The caller holds both tables ACCESS EXCLUSIVE and has the privileges of
 * their owners, who may already drop every function declared with their
 * row types (DROP TABLE ... CASCADE); both are checked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "cutover/carry_internal.h"
#include "cutover/lock_step.h"

PG_FUNCTION_INFO_V1(backfill_cutover_carry_functions);

/* the functions that depend on type typid, added to procs */
static List *
functions_of_type(Oid typid, List *procs)
{
	Relation	depend;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;

	if (!OidIsValid(typid))
		return procs;
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(TypeRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(typid));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		if (dep->classid == ProcedureRelationId && dep->objsubid == 0)
			procs = list_append_unique_oid(procs, dep->objid);
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	return procs;
}

/*
 * cutover_carry_functions
 *		Re-point every function declared with the row type of src, or its
 *		array type, to dst's (see the file header).  The caller holds both
 *		tables ACCESS EXCLUSIVE and has the privileges of their owners.
 */
void
cutover_carry_functions(Oid src, Oid dst)
{
	CutoverTypeMap map;
	List	   *procs;
	ListCell   *lc;
	Relation	pg_proc;

	backfill_cutover_require_locks(src, dst, "functions");
	map.from_row = get_rel_type_id(src);
	map.to_row = get_rel_type_id(dst);
	if (!OidIsValid(map.from_row) || !OidIsValid(map.to_row))
		return;					/* a table without a row type has no function of it */
	map.from_array = get_array_type(map.from_row);
	map.to_array = get_array_type(map.to_row);
	procs = functions_of_type(map.from_row, NIL);
	procs = functions_of_type(map.from_array, procs);
	if (procs == NIL)
		return;
	if (!cutover_same_row_type(src, dst))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry the functions of the row type of table \"%s\" over to table \"%s\"",
						get_rel_name(src), get_rel_name(dst)),
				 errdetail("The columns of the two tables differ.")));

	pg_proc = table_open(ProcedureRelationId, RowExclusiveLock);
	foreach(lc, procs)
		cutover_retype_function(pg_proc, lfirst_oid(lc), &map);
	table_close(pg_proc, RowExclusiveLock);
	CommandCounterIncrement();
}

/*
 * backfill._cutover_carry_functions(src regclass, dst regclass) RETURNS void
 *		cutover_carry_functions, STRICT.
 */
Datum
backfill_cutover_carry_functions(PG_FUNCTION_ARGS)
{
	cutover_carry_functions(PG_GETARG_OID(0), PG_GETARG_OID(1));
	PG_RETURN_VOID();
}
