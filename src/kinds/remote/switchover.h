/*-------------------------------------------------------------------------
 *
 * switchover.h
 *	  The switchover of a remote job (cdc on a foreign table): the last
 *	  step of moving a table from another server (switchover.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_SWITCHOVER_H
#define BACKFILL_SWITCHOVER_H

#include "access/xlogdefs.h"

#include "backfill.h"

extern XLogRecPtr backfill_remote_switchover(int64 job_id, bool fence, int lock_timeout_ms, int attempts);

#endif							/* BACKFILL_SWITCHOVER_H */
