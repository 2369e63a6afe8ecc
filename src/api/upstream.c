/*-------------------------------------------------------------------------
 *
 * upstream.c
 *	  Which tables may be an upstream, and its key: what create_job
 *	  (create.c) and estimate_job (estimate.c) both ask of the table they
 *	  are given.
 *
 * An upstream is a permanent table, partitioned or not, outside the
 * extension's schema (a foreign table for a kind that reads another
 * server), opened only once the caller's rights on it are checked.  Its key
 * is its primary key, or else a unique index over NOT NULL columns
 * (backfill_key_index, key_index.c): immediate, of default btree operator
 * classes, with deterministic collations, since a job reads the upstream in key order,
 * merges rows by key and cuts keys into vnodes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/catalog.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_opclass.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "api/upstream.h"
#include "lib/lib.h"

static char *
opclass_name(Oid opclass)
{
	HeapTuple	tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclass));
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator class %u", opclass);
	result = pstrdup(NameStr(((Form_pg_opclass) GETSTRUCT(tup))->opcname));
	ReleaseSysCache(tup);
	return result;
}

/*
 * A DEFERRABLE primary key is no key to a job, and the relation cache does
 * not report it as the primary key (rd_pkindex): refuse it as such rather
 * than as a missing one.  It is unique only at commit, and a job reads the
 * upstream by key in the writers' own transactions (the capture and apply
 * triggers, which would find two rows of one key there and fail the
 * writer), merges rows by key with ON CONFLICT, which cannot take a
 * deferrable index as its arbiter, and the cdc kind identifies a row in the
 * write-ahead log by its replica identity, which cannot be a deferrable
 * index either.
 */
static void
check_key_not_deferrable(Relation rel)
{
	ListCell   *lc;

	foreach(lc, RelationGetIndexList(rel))
	{
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));
		bool		deferrable;

		if (!HeapTupleIsValid(tup))
			continue;
		deferrable = ((Form_pg_index) GETSTRUCT(tup))->indisprimary &&
			!((Form_pg_index) GETSTRUCT(tup))->indimmediate;
		ReleaseSysCache(tup);
		if (deferrable)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key of table \"%s\" is deferrable",
							RelationGetRelationName(rel)),
					 errdetail("A deferrable key may hold duplicates until its transaction commits, while a backfill job reads and merges the upstream's rows by key in the writers' transactions, and a deferrable key cannot be a replica identity or the arbiter of ON CONFLICT."),
					 errhint("Recreate the primary key as NOT DEFERRABLE.")));
	}
}

/*
 * backfill_check_key_hashable
 *		A job that maps keys to vnodes by their hash, rather than by ranges
 *		of keys, needs each key column's type to have an extended hash
 *		function; why says when a job does (a sentence), hint what to do
 *		instead (or NULL).
 */
void
backfill_check_key_hashable(Relation rel, int npk, const AttrNumber *pk, const char *why,
							const char *hint)
{
	for (int k = 0; k < npk; k++)
	{
		Oid			atttype = get_atttype(RelationGetRelid(rel), pk[k]);

		if (!OidIsValid(lookup_type_cache(atttype, TYPECACHE_HASH_EXTENDED_PROC)->hash_extended_proc))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key column \"%s\" of table \"%s\" has a type without an extended hash function",
							get_attname(RelationGetRelid(rel), pk[k], false),
							RelationGetRelationName(rel)),
					 errdetail("%s Type %s cannot be hashed.", why, format_type_be(atttype)),
					 hint ? errhint("%s", hint) : 0));
	}
}

/*
 * The first foreign table among the partitions of a partitioned table, at
 * any level, or InvalidOid.  Only for an error's text: the partitions'
 * kinds are read without locking them.
 */
static Oid
first_foreign_partition(Relation rel)
{
	List	   *parts;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return InvalidOid;
	parts = find_all_inheritors(RelationGetRelid(rel), NoLock, NULL);
	foreach(lc, parts)
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE)
			return lfirst_oid(lc);
	return InvalidOid;
}

/*
 * The key of the upstream, from its key index (backfill_key_index): attribute numbers in
 * key order, and the index's collations.  The key must use default btree
 * operator classes, since positions are compared with the types' default
 * ordering (ORDER BY and row comparison).
 */
int
backfill_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations)
{
	Relation	index;
	Form_pg_index indexform;
	int			npk;
	oidvector  *indclass;
	Datum		datum;
	bool		isnull;
	Oid			key_index = backfill_key_index(rel);

	if (!OidIsValid(key_index))
	{
		Oid			foreign_part = first_foreign_partition(rel);

		check_key_not_deferrable(rel);
		/* the hint below cannot be followed for such a table: say why */
		if (OidIsValid(foreign_part))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("table \"%s\" has a partition on another server",
							RelationGetRelationName(rel)),
					 errdetail("Partition \"%s\" is a foreign table. PostgreSQL gives a partitioned table with foreign partitions no primary key, and a backfill reads its upstream in primary key order.",
							   get_rel_name(foreign_part)),
					 errhint("A job of kind \"cdc\" reads a partitioned table whose partitions are all foreign tables of postgres_fdw, each from its server.")));
		if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("table \"%s\" has no primary key",
							RelationGetRelationName(rel)),
					 errdetail("A backfill reads the upstream in key order and records its progress as keys; a partitioned table's key is its primary key."),
					 errhint("Add a primary key to the table.")));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no primary key or unique index over NOT NULL columns",
						RelationGetRelationName(rel)),
				 errdetail("A backfill reads the upstream in key order and records its progress as keys: its key is the primary key, else a unique, immediate btree index without expressions or predicate whose columns are all NOT NULL."),
				 errhint("Add a primary key to the table, or make the columns of one of its unique indexes NOT NULL.")));
	}

	index = index_open(key_index, AccessShareLock);
	indexform = index->rd_index;
	npk = indexform->indnkeyatts;
	datum = SysCacheGetAttr(INDEXRELID, index->rd_indextuple,
							Anum_pg_index_indclass, &isnull);
	Assert(!isnull);
	indclass = (oidvector *) DatumGetPointer(datum);

	*attnums = palloc(npk * sizeof(AttrNumber));
	*collations = palloc(npk * sizeof(Oid));
	for (int i = 0; i < npk; i++)
	{
		AttrNumber	attnum = indexform->indkey.values[i];
		Oid			atttype = get_atttype(RelationGetRelid(rel), attnum);

		if (OidIsValid(index->rd_indcollation[i]) &&
			!get_collation_isdeterministic(index->rd_indcollation[i]))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key column \"%s\" of table \"%s\" has a nondeterministic collation",
							get_attname(RelationGetRelid(rel), attnum, false),
							RelationGetRelationName(rel)),
					 errdetail("Keys that are equal but not identical would fall into different vnodes.")));
		if (indclass->values[i] != GetDefaultOpClass(atttype, BTREE_AM_OID))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("primary key of table \"%s\" uses a non-default operator class",
							RelationGetRelationName(rel)),
					 errdetail("Column \"%s\" is indexed with operator class \"%s\".",
							   get_attname(RelationGetRelid(rel), attnum, false),
							   opclass_name(indclass->values[i]))));
		(*attnums)[i] = attnum;
		(*collations)[i] = index->rd_indcollation[i];
	}
	index_close(index, AccessShareLock);
	return npk;
}

/*
 * An upstream table: a permanent table, partitioned or not, outside the
 * extension's schema, that the caller has each of the rights in "needed" on,
 * checked before any lock (a user who may not use it must not queue on it).
 * Returned open, locked in lockmode until the transaction ends, with its
 * partitions at every level: writers may write straight into them.  With
 * foreign, a foreign table, or a partitioned table of foreign tables,
 * instead (a kind that reads other servers).
 * create_job and estimate_job both open theirs here.
 */
Relation
backfill_open_upstream(Oid upstream_oid, LOCKMODE lockmode,
					   const AclMode *needed, int nneeded, bool foreign)
{
	Relation	rel;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(upstream_oid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", upstream_oid)));
	/* each of them: an aclcheck of several bits passes on any one */
	for (int i = 0; i < nneeded; i++)
	{
		AclResult	aclresult = pg_class_aclcheck(upstream_oid, GetUserId(), needed[i]);

		if (aclresult != ACLCHECK_OK)
			aclcheck_error(aclresult, get_relkind_objtype(get_rel_relkind(upstream_oid)),
						   get_rel_name(upstream_oid));
	}
	rel = try_relation_open(upstream_oid, lockmode);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", upstream_oid)));
	if (foreign ? (rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE &&
				   rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE) :
		(rel->rd_rel->relkind != RELKIND_RELATION &&
		 rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot backfill from relation \"%s\"",
						RelationGetRelationName(rel)),
				 errdetail_relkind_not_supported(rel->rd_rel->relkind)));
	if (IsCatalogRelation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("cannot backfill from system catalog \"%s\"",
						RelationGetRelationName(rel))));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot backfill from temporary table \"%s\"",
						RelationGetRelationName(rel))));
	if (rel->rd_rel->relnamespace == get_namespace_oid(BACKFILL_SCHEMA, false))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot backfill from table \"%s\" of schema \"%s\"",
						RelationGetRelationName(rel), BACKFILL_SCHEMA),
				 errdetail("Schema \"%s\" holds the extension's own tables.", BACKFILL_SCHEMA)));
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		(void) find_all_inheritors(upstream_oid, lockmode, NULL);

	return rel;
}
