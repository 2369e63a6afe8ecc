/*-------------------------------------------------------------------------
 *
 * switchover.h
 *	  The switchover of a remote job (cdc on a foreign table): the last
 *	  step of moving a table from another server (switchover.c), and its
 *	  fence on the source tables (fence.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_SWITCHOVER_H
#define BACKFILL_SWITCHOVER_H

#include "access/xlogdefs.h"

#include "kinds/remote/job.h"

/* one write privilege the fence revoked, to give back on failure */
typedef struct FenceGrant
{
	char	   *grantee;		/* NULL: PUBLIC */
	char	   *privilege;
	char	   *column;			/* NULL: on the table */
	bool		grantable;
} FenceGrant;

/*
 * A table the switchover fences: the job's foreign table, or each foreign
 * partition of a sharded upstream, on its server
 */
typedef struct FenceTarget
{
	Oid			relid;			/* the foreign table here */
	RemoteTable table;
	int			source;			/* its server among the job's */
	char	   *display;		/* "nsp.rel", for messages */
	List	   *revoked;		/* FenceGrant *, once the fence committed */
	bool		fenced;
	RemoteConn *conn;			/* of the fence's transaction */
} FenceTarget;

typedef struct Switchover
{
	BackfillJob *job;
	struct RemoteJob *rj;
	int			ntargets;
	FenceTarget *targets;
	char	   *pubname;		/* the job's publication and slot on each source */
	int			lock_timeout_ms;
	int			sequences;		/* set here */
} Switchover;

/* switchover.c: kind.h's check_switchover and switchover */
extern void remote_check_switchover(BackfillJob *job);
extern XLogRecPtr backfill_remote_switchover(int64 job_id, bool fence, int lock_timeout_ms, int attempts);

/* fence.c: the fence, and giving it back */
extern int	give_back(RemoteConn *conn, const char *pubname, const char *qualified);
extern void fence(Switchover *sw, FenceTarget *t, int attempts);
extern void unfence(Switchover *sw);
extern void unfence_at_abort(Switchover *sw);

#endif							/* BACKFILL_SWITCHOVER_H */
