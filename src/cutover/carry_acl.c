/*-------------------------------------------------------------------------
 *
 * carry_acl.c
 *	  The privileges a cutover carries: the new table's ACL becomes exactly
 *	  the old table's, grantors included, and so does each column's.  The
 *	  swap (swap.c) and a materialized view made again (matview_parts.c)
 *	  call cutover_copy_acl; backfill._cutover_copy_acl is its SQL face.
 *
 * GRANT cannot carry a privilege that another role granted: in PostgreSQL
 * 15, GRANT ... GRANTED BY accepts only the current user, and a GRANT run
 * by the owner (or by a superuser, who acts as the owner) records the owner
 * as its grantor.  A privilege granted again that way no longer hangs on
 * the grant option it was granted through, and REVOKE ... CASCADE of that
 * option would no longer reach it.  So the ACL items are copied as they
 * are, the way ExecGrant_Relation writes them: pg_class.relacl and
 * pg_attribute.attacl of the new table, and the shared dependencies that
 * keep each grantee from being dropped while it holds a privilege.
 *
 * A whole ACL holds every grant option its items were granted through, and
 * names the owner as the grantor of what the owner granted; so it is
 * copied only between two tables of one owner (the swap first gives the
 * new table the old one's owner).  A column of the new table that the old
 * one lacks is left with no privileges of its own: the new table's own
 * column grants never reach the table that takes the name.
 *
 * The caller holds both tables ACCESS EXCLUSIVE (only the cutover's swap
 * does) and has the privileges of their owner; both are checked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/objectaccess.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "cutover/carry_internal.h"

PG_FUNCTION_INFO_V1(backfill_cutover_copy_acl);

/* a table's pg_class row, copied */
static Form_pg_class
table_row(Oid relid)
{
	HeapTuple	tuple = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(relid));

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return (Form_pg_class) GETSTRUCT(tuple);
}

/*
 * dst's ACL becomes src's
 */
static void
copy_table_acl(Oid src, Oid dst, Oid owner)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	src_tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(src));
	HeapTuple	dst_tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(dst));

	if (!HeapTupleIsValid(src_tuple) || !HeapTupleIsValid(dst_tuple))
		elog(ERROR, "cache lookup failed for relation %u or %u", src, dst);
	cutover_replace_acl(pg_class, dst_tuple, Anum_pg_class_relacl,
				cutover_tuple_acl(src_tuple, RelationGetDescr(pg_class), Anum_pg_class_relacl),
				dst, 0, owner);
	ReleaseSysCache(dst_tuple);
	ReleaseSysCache(src_tuple);
	table_close(pg_class, RowExclusiveLock);
}

/*
 * cutover_copy_acl
 *		Give dst exactly src's privileges, the table's and the columns' (by
 *		name), grantors and grant options included (see the file header).
 *		Both tables must be locked ACCESS EXCLUSIVE by this transaction and
 *		have one owner, whose privileges the caller has.
 */
void
cutover_copy_acl(Oid src, Oid dst)
{
	Form_pg_class src_row;
	Form_pg_class dst_row;

	if (!CheckRelationOidLockedByMe(src, AccessExclusiveLock, false) ||
		!CheckRelationOidLockedByMe(dst, AccessExclusiveLock, false))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot copy the privileges of a table without both tables locked"),
				 errdetail("Only the swap of backfill.cutover() and backfill.rollback_cutover() copies privileges, under the lock of both tables.")));
	src_row = table_row(src);
	dst_row = table_row(dst);
	if (src_row->relowner != dst_row->relowner)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot copy the privileges of table \"%s\" to table \"%s\" of another owner",
						NameStr(src_row->relname), NameStr(dst_row->relname)),
				 errdetail("The privileges of a table name its owner as the grantor of what the owner granted.")));
	if (!has_privs_of_role(GetUserId(), dst_row->relowner))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(dst_row->relkind),
					   NameStr(dst_row->relname));

	copy_table_acl(src, dst, dst_row->relowner);
	cutover_copy_column_acls(src, dst, dst_row->relowner, dst_row->relnatts);
	InvokeObjectPostAlterHook(RelationRelationId, dst, 0);
	CommandCounterIncrement();
}

/*
 * backfill._cutover_copy_acl(src regclass, dst regclass) RETURNS void
 *		cutover_copy_acl, STRICT.
 */
Datum
backfill_cutover_copy_acl(PG_FUNCTION_ARGS)
{
	cutover_copy_acl(PG_GETARG_OID(0), PG_GETARG_OID(1));
	PG_RETURN_VOID();
}
