/*-------------------------------------------------------------------------
 *
 * verification_rows.h
 *	  A job's rows of backfill.verification: its last verify and its last
 *	  repair (verification_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_VERIFICATION_ROWS_H
#define BACKFILL_CATALOG_VERIFICATION_ROWS_H

#include "backfill.h"

#include "datatype/timestamp.h"

/* what a repair has done so far, as its row records it */
typedef struct RepairFigures
{
	int64		ranges_total;	/* the ranges to repair; -1 until known */
	int64		differences;	/* the rows to repair; -1 until known */
	int64		ranges;			/* the ranges repaired and committed */
	int64		missing;		/* rows repaired, by kind */
	int64		extra;
	int64		different;
} RepairFigures;

extern bool backfill_record_verify_row(int64 job_id, const char *method, int range_rows,
									   TimestampTz started, const Datum *figures,
									   const bool *figure_nulls);
extern void backfill_repair_row_start(int64 job_id, int range_rows);
extern void backfill_repair_row_progress(int64 job_id, const RepairFigures *figures);
extern void backfill_repair_row_finish(int64 job_id, const RepairFigures *figures, bool clean);

#endif							/* BACKFILL_CATALOG_VERIFICATION_ROWS_H */
