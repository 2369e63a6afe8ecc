/*-------------------------------------------------------------------------
 *
 * index_rows.h
 *	  The rows of backfill.job_index, the indexes of a job's downstream
 *	  still to build, and the job's indexes flag (index_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_INDEX_ROWS_H
#define BACKFILL_CATALOG_INDEX_ROWS_H

#include "backfill.h"

/* an index a job is to build: head || the downstream's name || tail */
typedef struct PendingIndex
{
	char	   *name;
	char	   *head;
	char	   *tail;
} PendingIndex;

extern void backfill_record_pending_index(int64 job_id, int position, const char *name,
										  const char *head, const char *tail);
extern int	backfill_pending_indexes(int64 job_id, PendingIndex **pending);
extern void backfill_forget_pending_indexes(int64 job_id);
extern void backfill_mark_job_indexes(int64 job_id);
extern void backfill_mark_job_indexes_default(int64 job_id);
extern bool backfill_job_gives_foreign_keys(int64 job_id);

#endif							/* BACKFILL_CATALOG_INDEX_ROWS_H */
