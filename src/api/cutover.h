/*-------------------------------------------------------------------------
 *
 * cutover.h
 *	  What cutover.c and cutover_hand_over.c give backfill.cutover() and
 *	  rollback_cutover() (cutover_start.c, cutover_rollback.c), and what
 *	  job_drop.c gives them and finish_cutover (cutover_finish.c): the C
 *	  behind the internal functions they called through SPI, which PUBLIC
 *	  may not execute; and the steps of rollback_cutover in files of their
 *	  own (cutover_rollback_row.c, cutover_rollback_put_back.c).
 *
 * The switchover of a job whose upstream is on another server is the
 * remote kind's (kinds/remote/switchover.c), which backfill.cutover()
 * calls.  The lock step, its attempts, the checks of its arguments and the
 * swap itself (the renames and everything that names the upstream carried
 * to the downstream) are C of their own (src/cutover/); the swap runs each
 * of its statements as the caller, with the caller's rights: every ALTER
 * it makes needs the privileges it would need typed by hand.  Only the
 * privileges are copied to the catalog directly (src/cutover/carry_acl.c),
 * with their grantors, which no GRANT the caller could type would keep.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_CUTOVER_H
#define BACKFILL_API_CUTOVER_H

#include "fmgr.h"

#include "cutover/steps.h"

/* cutover.c, cutover_hand_over.c */
extern void cutover_turn_job(int64 job_id, bool into_existing);
extern void cutover_hand_over_job(int64 job_id);

/* the fields of the cutover row rollback_cutover reads, in their order */
enum
{
	ROLLBACK_ROW_STATE = 1, ROLLBACK_ROW_REVERSIBLE, ROLLBACK_ROW_NEW_NAME, ROLLBACK_ROW_NEW_SCHEMA,
	ROLLBACK_ROW_OLD_TABLE, ROLLBACK_ROW_NEW_TABLE, ROLLBACK_ROW_OLD_NAME, ROLLBACK_ROW_INTO_EXISTING,
	ROLLBACK_ROW_TO_VALIDATE, ROLLBACK_ROW_FIELDS = ROLLBACK_ROW_TO_VALIDATE
};

/* the cutover row as rollback_cutover reads it, or none */
typedef struct RollbackRow
{
	bool		found;
	Datum		values[ROLLBACK_ROW_FIELDS];
	bool		nulls[ROLLBACK_ROW_FIELDS];
	Oid			types[ROLLBACK_ROW_FIELDS];
} RollbackRow;

/* cutover_rollback_row.c */
extern void cutover_rollback_read_row(CutoverJobRow *job, RollbackRow *row);
extern char *cutover_rollback_row_text(RollbackRow *row, int field);
extern Oid	cutover_rollback_row_oid(RollbackRow *row, int field);
extern void cutover_rollback_check_reversible(CutoverJobRow *job, RollbackRow *row);
extern void cutover_rollback_record(CutoverJobRow *job, RollbackRow *row,
									CutoverSwapped *swapped);

/* cutover_rollback_put_back.c */
extern void cutover_rollback_check_name_free(RollbackRow *row);
extern void cutover_rollback_put_back(CutoverJobRow *job, RollbackRow *row);

/* job_drop.c */
extern void backfill_let_job_go(int64 job_id, Datum job_row);

#endif							/* BACKFILL_API_CUTOVER_H */
