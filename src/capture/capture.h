/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  The changes of a job's upstream: its triggers and change table
 *	  (capture.c), a finished job's keys applied without SQL (apply.c), a cdc
 *	  job's replication slot and origin (slot.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CAPTURE_CAPTURE_H
#define BACKFILL_CAPTURE_CAPTURE_H

#include "backfill.h"

/* capture.c: the triggers on a job's upstream and its change table */
typedef enum CaptureMode
{
	CAPTURE_KEYS,				/* a row trigger logs the keys written */
	CAPTURE_LOG,				/* ... with the rows' images before the write */
	CAPTURE_WAL,				/* the keys come from the WAL (slot.c) */
	CAPTURE_STREAM				/* another server's changes: no trigger; the
								 * kind makes its change table */
} CaptureMode;

extern void backfill_capture_create_table(CaptureMode mode,
										  const char *changes_sql, const char *key_ddl,
										  const char *key_list, const char *image_sql,
										  const char *image_ddl, Oid owner);
extern void backfill_capture_install(Relation upstream, const char *upstream_sql,
									 int64 job_id, CaptureMode mode);
extern void backfill_capture_switch_to_apply(BackfillJob *job);
extern void backfill_capture_init(void);
extern void backfill_assert_triggers(BackfillJob *job);
extern void backfill_drop_triggers(int64 job_id);
extern void backfill_lock_writers(Oid upstream);
extern int64 backfill_trigger_job(const char *tgname);
extern int64 backfill_any_trigger_job(const char *tgname);
extern void backfill_capture_partition(BackfillJob *job, Oid partition, bool attached);

/* apply.c: a statement's keys applied to a finished job's downstream directly */
typedef struct DirectApply DirectApply;

extern DirectApply *backfill_apply_direct_prepare(BackfillJob *job, MemoryContext cxt);
extern void backfill_apply_direct_free(DirectApply *da);
extern bool backfill_apply_direct_permitted(DirectApply *da);
extern bool backfill_apply_direct_evaluates(DirectApply *da);
extern void backfill_apply_direct(DirectApply *da, int nkeys, Datum **keys,
								  ItemPointerData *written_tids);

/* slot.c: a cdc job's replication slot and origin */
extern char *backfill_slot_name(int64 job_id);
extern bool backfill_plugin_approved(void);
extern void backfill_lock_slot_of(int64 job_id);
extern void backfill_origin_enter(int64 job_id);
extern void backfill_origin_leave(void);
extern void backfill_drop_slot_now(int64 job_id);
extern void backfill_drop_leftover_slots(void);
extern XLogRecPtr backfill_flush_wal_upto(void);

#endif							/* BACKFILL_CAPTURE_CAPTURE_H */
