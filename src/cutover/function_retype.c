/*-------------------------------------------------------------------------
 *
 * function_retype.c
 *	  One function's row types re-pointed in pg_proc, from the old table's
 *	  to the new table's, for carry_functions.c.  A function in C or
 *	  internal reads its rows by position, which dropped columns shift, and
 *	  is refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "cutover/carry_internal.h"

static Oid
map_type(const CutoverTypeMap *map, Oid typid)
{
	if (typid == map->from_row)
		return map->to_row;
	if (typid == map->from_array)
		return map->to_array;
	return typid;
}

/*
 * cutover_retype_function
 *		Re-point function procoid from the types of map to the others: its
 *		result, its arguments, OUT ones too, and its dependencies.  Refused
 *		for a function in C or internal, and where a function of the same
 *		name and new argument types exists already.
 */
void
cutover_retype_function(Relation pg_proc, Oid procoid, const CutoverTypeMap *map)
{
	HeapTuple	tup = SearchSysCacheCopy1(PROCOID, ObjectIdGetDatum(procoid));
	Form_pg_proc proc;
	Datum		values[Natts_pg_proc] = {0};
	bool		nulls[Natts_pg_proc] = {0};
	bool		replaces[Natts_pg_proc] = {0};
	Oid		   *args;
	oidvector  *argtypes;
	Datum		all;
	bool		isnull;
	HeapTuple	newtup;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for function %u", procoid);
	proc = (Form_pg_proc) GETSTRUCT(tup);
	if (proc->prolang == ClanguageId || proc->prolang == INTERNALlanguageId)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry function %s over to table \"%s\"",
						format_procedure(procoid), get_rel_name(get_typ_typrelid(map->to_row))),
				 errdetail("A function in C reads the rows of a table's row type by position."),
				 errhint("Drop the function before the cutover and create it again after it.")));

	args = palloc(sizeof(Oid) * Max(proc->pronargs, 1));
	for (int i = 0; i < proc->pronargs; i++)
		args[i] = map_type(map, proc->proargtypes.values[i]);
	argtypes = buildoidvector(args, proc->pronargs);
	if (memcmp(args, proc->proargtypes.values, sizeof(Oid) * proc->pronargs) != 0 &&
		SearchSysCacheExists3(PROCNAMEARGSNSP, NameGetDatum(&proc->proname),
							  PointerGetDatum(argtypes), ObjectIdGetDatum(proc->pronamespace)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_FUNCTION),
				 errmsg("cannot carry function %s over to table \"%s\"",
						format_procedure(procoid), get_rel_name(get_typ_typrelid(map->to_row))),
				 errdetail("A function of the same name takes the row type of table \"%s\" already.",
						   get_rel_name(get_typ_typrelid(map->to_row))),
				 errhint("Drop one of the two functions before the cutover.")));

	values[Anum_pg_proc_prorettype - 1] = ObjectIdGetDatum(map_type(map, proc->prorettype));
	replaces[Anum_pg_proc_prorettype - 1] = true;
	values[Anum_pg_proc_proargtypes - 1] = PointerGetDatum(argtypes);
	replaces[Anum_pg_proc_proargtypes - 1] = true;
	all = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_proallargtypes, &isnull);
	if (!isnull)
	{
		ArrayType  *arr = DatumGetArrayTypePCopy(all);
		Oid		   *elems = (Oid *) ARR_DATA_PTR(arr);

		if (ARR_NDIM(arr) != 1 || ARR_HASNULL(arr) || ARR_ELEMTYPE(arr) != OIDOID)
			elog(ERROR, "proallargtypes of function %u is not a 1-D Oid array", procoid);
		for (int i = 0; i < ARR_DIMS(arr)[0]; i++)
			elems[i] = map_type(map, elems[i]);
		values[Anum_pg_proc_proallargtypes - 1] = PointerGetDatum(arr);
		replaces[Anum_pg_proc_proallargtypes - 1] = true;
	}
	newtup = heap_modify_tuple(tup, RelationGetDescr(pg_proc), values, nulls, replaces);
	CatalogTupleUpdate(pg_proc, &newtup->t_self, newtup);
	changeDependencyFor(ProcedureRelationId, procoid, TypeRelationId, map->from_row, map->to_row);
	if (OidIsValid(map->from_array) && OidIsValid(map->to_array))
		changeDependencyFor(ProcedureRelationId, procoid, TypeRelationId,
							map->from_array, map->to_array);
	InvokeObjectPostAlterHook(ProcedureRelationId, procoid, 0);
	heap_freetuple(newtup);
	heap_freetuple(tup);
}
