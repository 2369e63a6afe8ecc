/*-------------------------------------------------------------------------
 *
 * key_index.c
 *	  Which index of a table is its key to a job: the one rule that
 *	  create_job, the capture and apply triggers, the output plugin of the
 *	  cdc kind and every run's check that the key has not changed share.
 *
 * A job reads its upstream in key order, merges rows by key with
 * INSERT ... ON CONFLICT and records its progress as keys: its key must be
 * unique, never NULL, and usable as an arbiter.  The key is, in this order:
 *
 *	1. the primary key;
 *	2. else the replica identity index, when the table has REPLICA
 *	   IDENTITY USING INDEX (the index its logical replication already
 *	   identifies rows by, and the one the cdc kind finds in the WAL);
 *	3. else, among the unique btree indexes that are valid, immediate, not
 *	   partial, without expressions, and whose columns are all NOT NULL:
 *	   the one with the fewest columns, then the lowest OID (the oldest),
 *	   so that the choice is the same whenever it is made again.
 *
 * A unique index over nullable columns is no key: two rows may both hold
 * NULL there.  A partitioned table and its partitions are keyed by their
 * primary key only: a partition may have unique indexes of its own, and the
 * rule would then pick another key for it than for its parent.
 *
 * The choice is made again whenever the key is needed: a job whose
 * upstream's choice changes (its index dropped, a primary key or a
 * narrower unique index added) finds its key changed and fails its run
 * rather than misread positions (catalog/job_tables.c,
 * backfill_check_key_unchanged).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "backfill.h"
#include "lib/lib.h"

/* the access method of an index */
static Oid
index_am(Oid indexoid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
	Oid			am;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	am = ((Form_pg_class) GETSTRUCT(tup))->relam;
	ReleaseSysCache(tup);
	return am;
}

/*
 * Whether index indexoid of rel can be a key: a valid, immediate, unique
 * btree index without expressions or predicate, every column of which is
 * NOT NULL.  Its number of key columns in *ncols.
 */
static bool
usable_key_index(Relation rel, Oid indexoid, int *ncols)
{
	HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	Form_pg_index form;
	bool		ok;

	if (!HeapTupleIsValid(tup))
		return false;
	form = (Form_pg_index) GETSTRUCT(tup);
	ok = form->indisunique && form->indimmediate && form->indisvalid &&
		form->indnkeyatts == form->indnatts &&
		heap_attisnull(tup, Anum_pg_index_indexprs, NULL) &&
		heap_attisnull(tup, Anum_pg_index_indpred, NULL) &&
		index_am(indexoid) == BTREE_AM_OID;
	for (int k = 0; ok && k < form->indnkeyatts; k++)
	{
		AttrNumber	attnum = form->indkey.values[k];

		ok = attnum > 0 &&
			TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attnotnull;
	}
	*ncols = form->indnkeyatts;
	ReleaseSysCache(tup);
	return ok;
}

/*
 * backfill_key_index
 *		The index that is rel's key, as the file header says, or InvalidOid
 *		when it has none.  The caller holds a lock on rel.
 */
Oid
backfill_key_index(Relation rel)
{
	List	   *indexes = RelationGetIndexList(rel);	/* sets rd_pkindex */
	Oid			replica;
	Oid			best = InvalidOid;
	int			best_ncols = 0;
	ListCell   *lc;

	if (OidIsValid(rel->rd_pkindex))
		return rel->rd_pkindex;
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE || rel->rd_rel->relispartition)
		return InvalidOid;
	replica = RelationGetReplicaIndex(rel);
	if (rel->rd_rel->relreplident == REPLICA_IDENTITY_INDEX && OidIsValid(replica) &&
		usable_key_index(rel, replica, &best_ncols))
		return replica;
	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		int			ncols;

		if (!usable_key_index(rel, indexoid, &ncols))
			continue;
		if (!OidIsValid(best) || ncols < best_ncols ||
			(ncols == best_ncols && indexoid < best))
		{
			best = indexoid;
			best_ncols = ncols;
		}
	}
	return best;
}
