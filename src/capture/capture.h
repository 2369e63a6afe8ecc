/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  The changes of a job's upstream: its triggers (triggers.c), its change
 *	  table (capture_change.c), the rows of a partition that joins or leaves
 *	  it (partitions.c), the statement batching of the apply trigger
 *	  (apply_change.c), a cdc job's replication slot and origin (slot.c).
 *
 * What the layers above this folder may call (doc/layers.md); what the
 * files of the folder share among themselves is in capture_internal.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CAPTURE_CAPTURE_H
#define BACKFILL_CAPTURE_CAPTURE_H

#include "backfill.h"

/* capture_change.c: the change table, as each kind wants it */
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

/* triggers.c: the triggers on a job's upstream, their names and lifecycle */
extern void backfill_capture_install(Relation upstream, const char *upstream_sql,
									 int64 job_id, CaptureMode mode);
extern void backfill_capture_switch_to_apply(BackfillJob *job);
extern void backfill_assert_triggers(BackfillJob *job);
extern bool backfill_has_job_triggers(Oid upstream, int64 job_id);
extern void backfill_drop_triggers(int64 job_id);
extern void backfill_lock_writers(Oid upstream);
extern int64 backfill_trigger_job(const char *tgname);
extern int64 backfill_any_trigger_job(const char *tgname);

/* partitions.c: a partition joining or leaving a job's upstream */
extern void backfill_capture_partition(BackfillJob *job, Oid partition, bool attached);

/* apply_change.c: the hook that applies a statement's rows at once */
extern void backfill_capture_init(void);

/* slot.c: a cdc job's replication slot and origin */
extern char *backfill_slot_name(int64 job_id);
extern bool backfill_plugin_approved(void);
extern void backfill_lock_slot_of(int64 job_id);
extern void backfill_drop_slot_at_commit(int64 job_id);
extern void backfill_origin_enter(int64 job_id);
extern void backfill_origin_leave(void);
extern void backfill_drop_slot_now(int64 job_id);
extern void backfill_drop_leftover_slots(void);
extern XLogRecPtr backfill_flush_wal_upto(void);
extern XLogRecPtr backfill_flush_wal_to_peek(void);

#endif							/* BACKFILL_CAPTURE_CAPTURE_H */
