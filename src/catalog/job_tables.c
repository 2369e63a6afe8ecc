/*-------------------------------------------------------------------------
 *
 * job_tables.c
 *	  A loaded job against its tables as they are now: whether its key is
 *	  still the upstream's, whether its tables were renamed, and whether a
 *	  relation is a partition of its upstream.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "catalog/partition.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/* "a, b": the job's key columns, for a message */
static char *
key_names_list(BackfillJob *job)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&buf, "%s%s", k > 0 ? ", " : "", quote_identifier(job->pk_names[k]));
	return buf.data;
}

/*
 * backfill_check_key_unchanged
 *		The job's key must still be the upstream's key (backfill_key_index:
 *		its primary key, or the unique index over NOT NULL columns it was
 *		created with), on the same columns, of the types of the table
 *		made_with, which the job's kind made with it (its state table, or
 * its change log): positions are compared, and bound as parameters, as those
 * types.  A key that changed (retyped, another primary key, its unique
 * index dropped) is refused here rather than misread.
 */
void
backfill_check_key_unchanged(BackfillJob *job, Oid made_with)
{
	Relation	rel = table_open(job->upstream, AccessShareLock);
	bool		ok;
	Relation	index;
	Oid			key_index = backfill_key_index(rel);
	bool		has_pk = OidIsValid(rel->rd_pkindex);

	ok = OidIsValid(key_index);
	if (ok)
	{
		index = index_open(key_index, AccessShareLock);
		ok = index->rd_index->indnkeyatts == job->npk;
		for (int k = 0; ok && k < job->npk; k++)
		{
			AttrNumber	made_attnum = get_attnum(made_with, job->pk_names[k]);

			ok = index->rd_index->indkey.values[k] == get_attnum(job->upstream, job->pk_names[k]) &&
				made_attnum != InvalidAttrNumber &&
				get_atttype(made_with, made_attnum) == job->pk_types[k];
		}
		index_close(index, AccessShareLock);
	}
	table_close(rel, AccessShareLock);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 has_pk ?
				 errmsg("the primary key of table %s has changed since backfill job %lld was created",
						job->upstream_sql, (long long) job->job_id) :
				 errmsg("the key of table %s has changed since backfill job %lld was created",
						job->upstream_sql, (long long) job->job_id),
				 has_pk ?
				 errdetail("The job's positions are keys of the primary key it was created with.") :
				 errdetail("The job's positions are keys of its columns (%s), and the table has no primary key nor a unique index over NOT NULL columns that is its key on exactly those columns.",
						   key_names_list(job)),
				 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again.",
						 (long long) job->job_id)));
}

/*
 * backfill_partition_of
 *		Whether relid is a partition of ancestor, at any level.
 */
bool
backfill_partition_of(Oid relid, Oid ancestor)
{
	return get_rel_relispartition(relid) &&
		list_member_oid(get_partition_ancestors(relid), ancestor);
}

/*
 * backfill_names_changed
 *		Whether a table of the job got another name or schema since the job
 *		was loaded: the executor's plans name them, so the caller makes them
 *		again.  Locks the tables and reads the syscache only, so a barrier
 *		that has not taken its snapshot yet has not taken it after this
 *		either.
 */
bool
backfill_names_changed(BackfillJob *job)
{
	Oid			rels[4] = {job->upstream, job->downstream, job->state_table, job->change_table};
	char	  **names[4] = {&job->upstream_sql, &job->downstream_sql,
	&job->state_sql, &job->changes_sql};
	bool		changed = false;

	/*
	 * Called at every barrier, and a worker's current context lives as long
	 * as its run: the names are read in a context of their own, and only a
	 * changed one is kept, in the job's.
	 */
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "backfill names",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);

	for (int i = 0; i < 4; i++)
	{
		char	   *name;

		/*
		 * Locked first, till the barrier's end: a rename that waited for the
		 * last barrier has committed by now (and the lock made us read its
		 * invalidation), and one that comes later waits for this barrier.
		 */
		backfill_lock_relation(rels[i], AccessShareLock);
		if (get_rel_name(rels[i]) == NULL)
			continue;			/* dropped: the barrier will say so */
		name = backfill_relation_sql(rels[i]);
		if (strcmp(*names[i], name) != 0)
		{
			*names[i] = MemoryContextStrdup(GetMemoryChunkContext(job), name);
			changed = true;
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
	return changed;
}
