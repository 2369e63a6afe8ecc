/*-------------------------------------------------------------------------
 *
 * cutover_carry.c
 *	  What a cutover carries that no command can move: the functions
 *	  declared with the old table's row type, and the subscriptions that
 *	  write to it.
 *
 * Both name the old table by OID, not by name, so the swap's renames
 * leave them behind:
 *
 * - A function RETURNS SETOF customer, or taking a customer (or an array of
 *   them), is declared with the row type of table customer, which the
 *   rename takes along: after the swap the function returns rows of the old
 *   table's type while its body reads the new table, and it depends on the
 *   old table, which finish_cutover could then not drop.  No ALTER FUNCTION
 *   changes a function's argument or result types, and CREATE OR REPLACE
 *   cannot either; so pg_proc is re-pointed here, with the function's
 *   dependencies on the two types.  Only between two tables whose live
 *   columns are the same, by name, type, typmod and collation, in order:
 *   the function then reads and returns the same values as before.  A
 *   function in C or internal reads its rows by position, which dropped
 *   columns shift, and is refused.
 *
 * - pg_subscription_rel maps each table a subscription writes to by OID, with
 *   the state of its initial copy.  The apply worker finds the local table
 *   by name, then skips the changes of a table that has no ready row
 *   there: the table that takes the name would have its changes skipped,
 *   and confirmed to the publisher.  So each row moves to the new table,
 *   as it is.  Only a row whose table is ready (its initial copy done and
 *   caught up): a table still being synchronised is written by a sync
 *   worker, and the cutover refuses it (backfill._cutover_check_schema).
 *
 * Who may.  These functions are executable by every role, as the swap that
 * calls them runs with its caller's rights.  The caller must hold both
 * tables ACCESS EXCLUSIVE (only the swap does) and have the privileges of
 * their owners: the owner of a table may already drop every function
 * declared with its row type (DROP TABLE ... CASCADE) and every write a
 * subscription makes to it goes to whatever table has the name.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_subscription_rel.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(backfill_cutover_carry_functions);
PG_FUNCTION_INFO_V1(backfill_cutover_carry_subscriptions);

/*
 * The caller holds both tables ACCESS EXCLUSIVE and has the privileges of
 * their owners.
 */
static void
check_swap_arguments(Oid src, Oid dst, const char *what)
{
	Oid			tables[2] = {src, dst};

	if (!CheckRelationOidLockedByMe(src, AccessExclusiveLock, false) ||
		!CheckRelationOidLockedByMe(dst, AccessExclusiveLock, false))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot carry %s over without both tables locked", what),
				 errdetail("Only the swap of backfill.cutover() and backfill.rollback_cutover() carries them, under the lock of both tables.")));
	for (int i = 0; i < 2; i++)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(tables[i]));
		Form_pg_class row;

		if (!HeapTupleIsValid(tup))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("relation with OID %u does not exist", tables[i])));
		row = (Form_pg_class) GETSTRUCT(tup);
		if (!has_privs_of_role(GetUserId(), row->relowner))
			aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(row->relkind),
						   NameStr(row->relname));
		ReleaseSysCache(tup);
	}
}

/*
 * Whether the live columns of src and dst are the same, by name, type,
 * typmod and collation, in order: a value of one row type is then a value
 * of the other to every function that reads it by name.
 */
static bool
same_row_type(Oid src, Oid dst)
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

/* the type map of a swap: a row type and its array type, to dst's */
typedef struct TypeMap
{
	Oid			from_row;
	Oid			from_array;
	Oid			to_row;
	Oid			to_array;
} TypeMap;

static Oid
map_type(const TypeMap *map, Oid typid)
{
	if (typid == map->from_row)
		return map->to_row;
	if (typid == map->from_array)
		return map->to_array;
	return typid;
}

/*
 * Re-point function procoid from the types of map to the others: its
 * result, its arguments, OUT ones too, and its dependencies.  Refused for a
 * function in C or internal, and where a function of the same name and new
 * argument types exists already.
 */
static void
retype_function(Relation pg_proc, Oid procoid, const TypeMap *map)
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

/*
 * backfill._cutover_carry_functions(src regclass, dst regclass) RETURNS void
 *		Re-point every function declared with the row type of src, or its
 *		array type, to dst's (see the file header).  The caller holds both
 *		tables ACCESS EXCLUSIVE and has the privileges of their owners.
 */
Datum
backfill_cutover_carry_functions(PG_FUNCTION_ARGS)
{
	Oid			src = PG_GETARG_OID(0);
	Oid			dst = PG_GETARG_OID(1);
	TypeMap		map;
	List	   *procs;
	ListCell   *lc;
	Relation	pg_proc;

	check_swap_arguments(src, dst, "functions");
	map.from_row = get_rel_type_id(src);
	map.to_row = get_rel_type_id(dst);
	if (!OidIsValid(map.from_row) || !OidIsValid(map.to_row))
		PG_RETURN_VOID();		/* a table without a row type has no function of it */
	map.from_array = get_array_type(map.from_row);
	map.to_array = get_array_type(map.to_row);
	procs = functions_of_type(map.from_row, NIL);
	procs = functions_of_type(map.from_array, procs);
	if (procs == NIL)
		PG_RETURN_VOID();
	if (!same_row_type(src, dst))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry the functions of the row type of table \"%s\" over to table \"%s\"",
						get_rel_name(src), get_rel_name(dst)),
				 errdetail("The columns of the two tables differ.")));

	pg_proc = table_open(ProcedureRelationId, RowExclusiveLock);
	foreach(lc, procs)
		retype_function(pg_proc, lfirst_oid(lc), &map);
	table_close(pg_proc, RowExclusiveLock);
	CommandCounterIncrement();
	PG_RETURN_VOID();
}

/*
 * backfill._cutover_carry_subscriptions(src regclass, dst regclass)
 *		RETURNS void
 *		Move every row of pg_subscription_rel of src to dst, as it is (see
 *		the file header); only ready ones.  The caller holds both tables
 *		ACCESS EXCLUSIVE and has the privileges of their owners.
 */
Datum
backfill_cutover_carry_subscriptions(PG_FUNCTION_ARGS)
{
	Oid			src = PG_GETARG_OID(0);
	Oid			dst = PG_GETARG_OID(1);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	List	   *subs = NIL;
	ListCell   *lc;

	check_swap_arguments(src, dst, "subscriptions");
	rel = table_open(SubscriptionRelRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_subscription_rel_srrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(src));
	scan = systable_beginscan(rel, SubscriptionRelSrrelidSrsubidIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
		subs = lappend_oid(subs, ((Form_pg_subscription_rel) GETSTRUCT(tup))->srsubid);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	foreach(lc, subs)
	{
		Oid			subid = lfirst_oid(lc);
		XLogRecPtr	lsn;
		XLogRecPtr	dst_lsn;
		char		state = GetSubscriptionRelState(subid, src, &lsn);

		if (state != SUBREL_STATE_READY)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot carry table \"%s\" of subscription \"%s\" over to table \"%s\"",
							get_rel_name(src), get_subscription_name(subid, false), get_rel_name(dst)),
					 errdetail("The subscription has not finished its initial copy of the table."),
					 errhint("Wait until the table is ready in pg_subscription_rel (srsubstate \"r\").")));
		if (GetSubscriptionRelState(subid, dst, &dst_lsn) != SUBREL_STATE_UNKNOWN)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot carry table \"%s\" of subscription \"%s\" over to table \"%s\"",
							get_rel_name(src), get_subscription_name(subid, false), get_rel_name(dst)),
					 errdetail("The subscription writes to table \"%s\" too.", get_rel_name(dst))));
		RemoveSubscriptionRel(subid, src);
		AddSubscriptionRelState(subid, dst, SUBREL_STATE_READY, lsn);
	}
	CommandCounterIncrement();
	PG_RETURN_VOID();
}
