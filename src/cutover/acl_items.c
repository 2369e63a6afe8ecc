/*-------------------------------------------------------------------------
 *
 * acl_items.c
 *	  The ACL items of a catalog row given to another, as ExecGrant_Relation
 *	  writes them: the column of the row replaced, and the shared
 *	  dependencies that keep each grantee from being dropped while it holds
 *	  a privilege moved along (carry_acl.c, which says why they are copied
 *	  rather than granted again).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/indexing.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "cutover/carry_internal.h"

/*
 * The ACL of a catalog tuple's column attno, or NULL for the default
 * privileges.  Points into the tuple, which the caller keeps.
 */
Acl *
cutover_tuple_acl(HeapTuple tuple, TupleDesc desc, int attno)
{
	bool		isnull;
	Datum		acl = heap_getattr(tuple, attno, desc, &isnull);

	return isnull ? NULL : DatumGetAclP(acl);
}

/*
 * Give the object (dst, subid) of catalog the ACL acl (NULL: the default
 * privileges) in place of the one tuple has, in column attno, and move its
 * shared dependencies on the grantees along.
 */
void
cutover_replace_acl(Relation catalog, HeapTuple tuple, int attno, Acl *acl,
			Oid dst, int32 subid, Oid owner)
{
	TupleDesc	desc = RelationGetDescr(catalog);
	Datum	   *values = palloc0(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc0(sizeof(bool) * desc->natts);
	bool	   *replaces = palloc0(sizeof(bool) * desc->natts);
	Oid		   *old_members;
	Oid		   *new_members;
	int			nold = aclmembers(cutover_tuple_acl(tuple, desc, attno), &old_members);
	int			nnew = aclmembers(acl, &new_members);
	HeapTuple	copy;

	values[attno - 1] = PointerGetDatum(acl);
	nulls[attno - 1] = acl == NULL;
	replaces[attno - 1] = true;
	copy = heap_modify_tuple(tuple, desc, values, nulls, replaces);
	CatalogTupleUpdate(catalog, &copy->t_self, copy);
	updateAclDependencies(RelationRelationId, dst, subid, owner,
						  nold, old_members, nnew, new_members);
	heap_freetuple(copy);
}

/*
 * Each column of dst gets the ACL of src's column of the same name, or
 * none when src has no such column
 */
void
cutover_copy_column_acls(Oid src, Oid dst, Oid owner, int natts)
{
	Relation	pg_attribute = table_open(AttributeRelationId, RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(pg_attribute);

	for (AttrNumber attnum = 1; attnum <= natts; attnum++)
	{
		HeapTuple	dst_tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(dst),
												Int16GetDatum(attnum));
		Form_pg_attribute att;
		HeapTuple	src_tuple;
		Acl		   *acl;

		if (!HeapTupleIsValid(dst_tuple))
			elog(ERROR, "cache lookup failed for attribute %d of relation %u", attnum, dst);
		att = (Form_pg_attribute) GETSTRUCT(dst_tuple);
		if (att->attisdropped)
		{
			ReleaseSysCache(dst_tuple);
			continue;
		}
		src_tuple = SearchSysCacheAttName(src, NameStr(att->attname));
		acl = HeapTupleIsValid(src_tuple) ?
			cutover_tuple_acl(src_tuple, desc, Anum_pg_attribute_attacl) : NULL;
		if (acl != NULL || cutover_tuple_acl(dst_tuple, desc, Anum_pg_attribute_attacl) != NULL)
			cutover_replace_acl(pg_attribute, dst_tuple, Anum_pg_attribute_attacl, acl,
						dst, attnum, owner);
		if (HeapTupleIsValid(src_tuple))
			ReleaseSysCache(src_tuple);
		ReleaseSysCache(dst_tuple);
	}
	table_close(pg_attribute, RowExclusiveLock);
}
