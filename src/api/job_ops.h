/*-------------------------------------------------------------------------
 *
 * job_ops.h
 *	  What the job operations (job_drop.c, job_ops.c) share with the
 *	  catalog writes of control.c and with create_job (create.c), and the
 *	  switchover (switchover.c) with cutover.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_JOB_OPS_H
#define BACKFILL_API_JOB_OPS_H

#include "access/xlogdefs.h"
#include "datatype/timestamp.h"
#include "fmgr.h"

/* the catalog writes of control.c, by what they are called in a 1.0 or 1.1 catalog */
typedef enum CatalogOp
{
	OP_CANCEL,
	OP_DELETE,
	OP_FOREGROUND,
	OP_RATE_LIMIT,
	OP_RESCHEDULE,
	OP_COPY_NAMES,
	OP_DROP_TRIGGERS
} CatalogOp;

/* control.c */
extern void backfill_catalog_op(CatalogOp op, int64 job_id, bool arg_null, int64 arg);
extern void backfill_drop_kind_objects_of(int64 job_id);

/* control.c: reschedule, which alter_job calls */
extern Datum backfill_reschedule_1_4(PG_FUNCTION_ARGS);

/* job_drop.c */
extern int64 backfill_cancel_job_owned(int64 job_id);

/* create.c: recreate_job's create_job, on behalf of the old job's owner */
extern Datum backfill_create_job_as(PG_FUNCTION_ARGS);

/* switchover.c: a job that follows another server stops following it */
extern XLogRecPtr backfill_switch_over(int64 job_id, bool fence, const Interval *lock_timeout,
									   int attempts);

#endif							/* BACKFILL_API_JOB_OPS_H */
