/*-------------------------------------------------------------------------
 *
 * remote_rows.h
 *	  A remote job's columns of backfill.job (its splits' bounds, its offset
 *	  on the source) and its actors' rows (remote_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_REMOTE_ROWS_H
#define BACKFILL_CATALOG_REMOTE_ROWS_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"

#include "backfill.h"

extern char **backfill_job_split_bounds(int64 job_id, int *nbounds);
extern void backfill_job_set_splits(int64 job_id, Datum bounds);
extern void backfill_job_set_partitions(int64 job_id, Datum partitions, Datum servers);
extern Oid *backfill_job_remote_partitions(int64 job_id, int *npartitions);
extern bool backfill_job_remote_offset(int64 job_id, int source, XLogRecPtr *offset);
extern bool backfill_job_remote_offset_seen(int64 job_id, int source, XLogRecPtr *offset);
extern void backfill_job_record_remote_offset(int64 job_id, int source, XLogRecPtr offset,
											  XLogRecPtr source_end, TimestampTz commit_time);
extern char *backfill_remote_live_jobs(void);
extern void backfill_actor_rows_reset(int64 job_id);

#endif							/* BACKFILL_CATALOG_REMOTE_ROWS_H */
