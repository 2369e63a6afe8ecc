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

/* kind_remote.c, for the switchover: its RemoteJob is opaque here */
struct RemoteJob;
struct RemoteConn;
extern char *remote_object_name(int64 job_id, bool prefix_only);
extern struct RemoteJob *remote_job_make(BackfillJob *job);
extern struct RemoteConn *remote_job_connect(struct RemoteJob *rj);
extern void prepare_apply(struct RemoteJob *rj);
extern void prepare_insert(struct RemoteJob *rj);
extern bool fetch_once(struct RemoteJob *rj, bool first);
extern void apply_changes(struct RemoteJob *rj, int actor);

#endif							/* BACKFILL_SWITCHOVER_H */
