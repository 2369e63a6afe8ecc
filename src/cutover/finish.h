/*-------------------------------------------------------------------------
 *
 * finish.h
 *	  The steps of backfill.finish_cutover() (src/api/cutover_finish.c):
 *	  its reads and checks of the cutover row and the row it writes
 *	  (finish_row.c), the check of the old table, the foreign keys it
 *	  validates and the drop of the old table (finish_steps.c), and the
 *	  lock of both tables under which the job lets go of the old one
 *	  (finish_lock.c).
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

/* the fields of the cutover row finish_row.c reads, in their order */
enum
{
	FINISH_ROW_ATTEMPTS = 1, FINISH_ROW_OLD_TABLE, FINISH_ROW_NEW_TABLE, FINISH_ROW_OLD_NAME,
	FINISH_ROW_NEW_SCHEMA, FINISH_ROW_NEW_NAME, FINISH_ROW_INTO_EXISTING, FINISH_ROW_LOCK_HELD_MS,
	FINISH_ROW_STATE, FINISH_ROW_TO_VALIDATE
};

/* finish_row.c */
extern Datum cutover_finish_row_field(CutoverFinish *f, int field, bool *isnull);
extern Oid	cutover_finish_row_oid(CutoverFinish *f, int field);
extern void cutover_finish_read_row(CutoverFinish *f);
extern Oid	cutover_finish_old_table(CutoverFinish *f);
extern void cutover_finish_check_cut_over(CutoverFinish *f);
extern void cutover_finish_record(CutoverFinish *f);

/* finish_steps.c */
extern void cutover_finish_check_old_table(CutoverFinish *f);
extern bool cutover_finish_old_table_exists(CutoverFinish *f);
extern void cutover_finish_validate_keys(CutoverFinish *f);
extern void cutover_finish_drop_old_table(CutoverFinish *f);

/* finish_lock.c */
extern void cutover_finish_lock_tables(CutoverFinish *f);

#endif							/* BACKFILL_CUTOVER_FINISH_H */
