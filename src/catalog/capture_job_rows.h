/*-------------------------------------------------------------------------
 *
 * capture_job_rows.h
 *	  The rows of backfill.job that the capture layer reads with SQL
 *	  (capture_job_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_CAPTURE_JOB_ROWS_H
#define BACKFILL_CATALOG_CAPTURE_JOB_ROWS_H

#include "backfill.h"

extern Oid	backfill_job_upstream_present(int64 job_id);
extern bool backfill_ended_cdc_job(int64 job_id, TransactionId *xmin, char **status);

#endif							/* BACKFILL_CATALOG_CAPTURE_JOB_ROWS_H */
