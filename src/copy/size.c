/*-------------------------------------------------------------------------
 *
 * size.c
 *	  An upstream's size from the catalog: its blocks and an estimate of
 *	  its rows, the totals of backfill.progress and of a restarted job.
 *
 * pg_stat_progress_create_index counts a table scan in blocks, of the
 * table's size when the scan began.  A job reads its upstream in key order,
 * not in block order, so its blocks done are its rows done over the rows
 * per block; the rows themselves are reltuples scaled to the table's
 * current size, as the planner scales them (estimate_rel_size), summed over
 * the partitions of a partitioned table.  A table that neither VACUUM nor
 * ANALYZE has seen yet has no such estimate (reltuples -1) unless it is
 * empty: the caller keeps the total it has then.  Nothing here reads a
 * row, so the totals cost no more than a look at pg_class and at each
 * table's size, at every restart too (create_job counted the rows once;
 * it is that count a restart used to repeat).
 *
 * A foreign table (a remote job's upstream, or a foreign partition) has no
 * blocks here and no estimate: the totals are those of the local
 * partitions, and unknown when there is none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "copy/copy.h"

/* let go of the ACCESS SHARE locks of relids, taken here */
static void
unlock_all(List *relids)
{
	ListCell   *lc;

	foreach(lc, relids)
		UnlockRelationOid(lfirst_oid(lc), AccessShareLock);
}

/*
 * backfill_measure_upstream
 *		The blocks of relation relid (of its partitions, for a partitioned
 *		table) and the estimate of its rows, into *blocks and *tuples (-1
 *		when some table has none).  Returns false, leaving both -1, when the
 *		relation is gone or nothing of it is stored here.  Takes ACCESS
 *		SHARE locks on the relation and its partitions, as pg_relation_size
 *		does, held to the end of the transaction.  With nowait, for a view,
 *		returns false instead of waiting for one, and lets them go before it
 *		returns: a monitoring session must neither wait behind a cutover's
 *		ACCESS EXCLUSIVE lock nor make a cutover wait for its transaction.
 */
bool
backfill_measure_upstream(Oid relid, bool nowait, int64 *blocks, int64 *tuples)
{
	List	   *relids;
	ListCell   *lc;
	bool		stored = false;
	bool		estimated = true;
	double		rows = 0;

	*blocks = -1;
	*tuples = -1;
	if (!nowait)
		LockRelationOid(relid, AccessShareLock);
	else if (!ConditionalLockRelationOid(relid, AccessShareLock))
		return false;
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
	{
		UnlockRelationOid(relid, AccessShareLock);
		return false;
	}
	relids = find_all_inheritors(relid, nowait ? NoLock : AccessShareLock, NULL);
	*blocks = 0;
	foreach(lc, relids)
	{
		Relation	rel;
		BlockNumber curpages;

		if (nowait && lfirst_oid(lc) != relid &&
			!ConditionalLockRelationOid(lfirst_oid(lc), AccessShareLock))
		{
			/* those locked so far: the relation and the partitions before */
			unlock_all(list_truncate(relids, foreach_current_index(lc)));
			*blocks = -1;
			return false;
		}
		rel = try_relation_open(lfirst_oid(lc), NoLock);
		if (rel == NULL)
			continue;
		if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE)
			estimated = false;
		if (!RELKIND_HAS_TABLE_AM(rel->rd_rel->relkind))
		{
			relation_close(rel, NoLock);
			continue;
		}
		stored = true;
		curpages = RelationGetNumberOfBlocks(rel);
		*blocks += curpages;
		if (curpages == 0)
			;					/* empty: no rows, whatever pg_class says */
		else if (rel->rd_rel->reltuples < 0 || rel->rd_rel->relpages == 0)
			estimated = false;	/* not seen by VACUUM or ANALYZE yet */
		else
			rows += rint(rel->rd_rel->reltuples / rel->rd_rel->relpages * curpages);
		relation_close(rel, NoLock);
	}
	if (nowait)
		unlock_all(relids);
	if (!stored)
	{
		*blocks = -1;
		return false;
	}
	if (estimated)
		*tuples = (int64) rows;
	return true;
}
