/*-------------------------------------------------------------------------
 *
 * cutover_rows.h
 *	  A job's row of backfill.job_cutover, and its row of backfill.job as a
 *	  cutover turns it around (cutover_rows.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CATALOG_CUTOVER_ROWS_H
#define BACKFILL_CATALOG_CUTOVER_ROWS_H

#include "backfill.h"

/* the values of a job's cutover row, in the order of _cutover_record's arguments */
#define CUTOVER_RECORD_ARGS 13

extern void backfill_record_cutover(Datum *values, const char *nulls);
extern void backfill_hide_job_status(int64 job_id);
extern void backfill_turn_job_row(int64 job_id, bool into_existing);
extern bool backfill_cutover_row_tables(int64 job_id, Oid *old_table, Oid *new_table,
										bool *swapped);
extern bool backfill_cutover_row_into_existing(int64 job_id);

#endif							/* BACKFILL_CATALOG_CUTOVER_ROWS_H */
