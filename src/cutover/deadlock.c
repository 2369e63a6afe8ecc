/*-------------------------------------------------------------------------
 *
 * deadlock.c
 *	  When the waits of the cutover's lock step look for a deadlock.
 *
 * An application that takes src before a child table or a view (it writes
 * the parent row first) can meet the cutover in a deadlock: the cutover
 * holds the child and waits for src, the application holds src and waits
 * for the child.  PostgreSQL fails the process whose own deadlock_timeout
 * runs out first, so the lock step's waits check after half the
 * lock_timeout (deadlock_timeout at most): the cutover finds a deadlock
 * with a writer that waited before it half a lock_timeout before the
 * writer would, and gives up a wait the writer joined later when its
 * lock_timeout runs out, before the writer's check.  The cutover's attempt
 * is the one that fails, and is tried again; the writer goes on.
 *
 * deadlock_timeout is a superuser's setting: it is set here for the
 * cutover's own waits only, whoever calls it, and changes nothing of
 * another session's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/proc.h"
#include "utils/guc.h"

#include "cutover/lock_step.h"

/*
 * backfill_cutover_deadlock_begin, backfill_cutover_deadlock_end
 *		Around the waits of a lock step: deadlock_timeout at most half the
 *		lock_timeout in force, so that a deadlock with an application that
 *		waited first fails the cutover's wait, not the application's (the
 *		file header says why).  begin returns the GUC nest level that end
 *		pops; an error's rollback pops it too.  finish_cutover's lock loop
 *		waits the same way.
 */
int
backfill_cutover_deadlock_begin(void)
{
	int			level = NewGUCNestLevel();

	if (LockTimeout > 0 && LockTimeout / 2 < DeadlockTimeout)
		(void) set_config_option("deadlock_timeout", psprintf("%d", Max(LockTimeout / 2, 1)),
								 PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

void
backfill_cutover_deadlock_end(int level)
{
	AtEOXact_GUC(true, level);
}
