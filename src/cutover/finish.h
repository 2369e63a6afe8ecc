/*-------------------------------------------------------------------------
 *
 * finish.h
 *	  The steps of backfill.finish_cutover() (src/api/cutover_finish.c):
 *	  its reads and checks of the cutover row, the foreign keys it
 *	  validates, the drop of the old table and the row it writes
 *	  (finish_steps.c), and the lock of both tables under which the job
 *	  lets go of the old one (finish_lock.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_FINISH_H
#define BACKFILL_CUTOVER_FINISH_H

#include "access/htup.h"
#include "access/tupdesc.h"

#include "cutover/steps.h"

/* one finish: the job's row as read under the advisory lock, and its cutover row */
typedef struct CutoverFinish
{
	CutoverJobRow job;
	bool		keep;
	HeapTuple	row;			/* the cutover row, or NULL */
	TupleDesc	row_desc;
	char	   *referenced;		/* the tables to lock first; NULL: none */
} CutoverFinish;

/* finish_steps.c */
extern void cutover_finish_read_row(CutoverFinish *f);
extern void cutover_finish_check_cut_over(CutoverFinish *f);
extern void cutover_finish_check_old_table(CutoverFinish *f);
extern Oid	cutover_finish_old_table(CutoverFinish *f);
extern bool cutover_finish_old_table_exists(CutoverFinish *f);
extern void cutover_finish_validate_keys(CutoverFinish *f);
extern void cutover_finish_drop_old_table(CutoverFinish *f);
extern void cutover_finish_record(CutoverFinish *f);

/* finish_lock.c */
extern void cutover_finish_lock_tables(CutoverFinish *f);

#endif							/* BACKFILL_CUTOVER_FINISH_H */
