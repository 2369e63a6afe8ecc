/*-------------------------------------------------------------------------
 *
 * index_build.h
 *	  A downstream's indexes: the upstream's copied at create_job, and those
 *	  a job builds once, after its snapshot (index_build.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_COPY_INDEX_BUILD_H
#define BACKFILL_COPY_INDEX_BUILD_H

#include "backfill.h"
#include "copy/copy.h"

/* what create_job's "indexes" gives a new downstream of the upstream's */
typedef enum DownstreamGift
{
	GIFT_NONE,					/* the key's index alone (indexes => false) */
	GIFT_DEFAULT_NONE,			/* the same, for a copy that is not a whole
								 * table's (indexes => NULL) */
	GIFT_INDEXES,				/* its other indexes (indexes => true) */
	GIFT_MIGRATION				/* its indexes and constraints (indexes => NULL) */
} DownstreamGift;

extern void backfill_create_indexes(int64 job_id, Relation upstream, const char *downstream_sql,
									const JobShape *shape, DownstreamGift gift, bool build_once,
									bool into_existing);
extern bool backfill_indexes_built(BackfillJob *job, bool build);
extern Oid	backfill_untrusted_function(Oid classid, Oid objid, Oid runner, Oid *owner);

/* migration.c: a whole-table copy's generated columns, partitions, foreign keys */
extern char **backfill_generated_columns(Relation upstream, const JobShape *shape);
extern const char *backfill_partition_by(Relation upstream);
extern void backfill_create_partitions(Relation upstream, const char *downstream_sql);
extern void backfill_follow_partition(BackfillJob *job, Oid partition);
extern void backfill_note_foreign_keys(Relation upstream, const char *downstream_sql);
extern void backfill_give_foreign_keys(BackfillJob *job);

#endif							/* BACKFILL_COPY_INDEX_BUILD_H */
