/*-------------------------------------------------------------------------
 *
 * lock_step.h
 *	  The cutover's lock step: what the swap alters locked before it, in
 *	  one order (lock.c, lock_one.c), waits that look for a deadlock early
 *	  (deadlock.c), an index built concurrently refused (index_wait.c), the
 *	  partitions paired (partition_pairs.c, partition_keys.c), the attempts
 *	  (attempts.c) and the pause between them (attempt_pause.c), and the
 *	  swap they make (swap.c, carry_partitions.c).
 *
 * The SQL-callable functions are bound by the extension's script; these
 * are what the files of the lock step call of each other.  Each connects
 * to SPI itself, and runs as its caller.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_LOCK_STEP_H
#define BACKFILL_CUTOVER_LOCK_STEP_H

#include "backfill.h"

/* attempt_pause.c: the pause after a failed attempt */
extern void backfill_cutover_pause(int32 tries);

/* lock.c */
extern void backfill_cutover_lock_all(Oid src, Oid dst);

/* lock_one.c */
extern void backfill_cutover_lock_one(Oid relid);
extern void backfill_cutover_require_locks(Oid src, Oid dst, const char *what);

/* deadlock.c */
extern int	backfill_cutover_deadlock_begin(void);
extern void backfill_cutover_deadlock_end(int level);

/* index_wait.c */
extern bool backfill_cutover_find_build(Oid src, Oid dst, int32 *pid, Oid *rel);
extern void backfill_cutover_refuse_build(int64 job_id, Oid src, Oid dst);

/* swap.c, carry_partitions.c: the swap, and the partitions' names after it */
extern Datum cutover_swap(Oid src, Oid dst, const char *src_new_name);
extern void cutover_rename_partitions(Oid src, Oid dst, const char *src_name,
									  const char *dst_name);

/* partition_pairs.c, partition_keys.c */
extern void backfill_cutover_pair_partitions(Oid src, Oid dst, bool read_only,
											 List **old_parts, List **new_parts);
extern void backfill_cutover_check_partition_keys(Oid src, Oid dst, bool read_only);

#endif							/* BACKFILL_CUTOVER_LOCK_STEP_H */
