/*-------------------------------------------------------------------------
 *
 * cutover.h
 *	  What cutover.c gives backfill.cutover() and rollback_cutover()
 *	  (cutover_start.c, cutover_rollback.c), and what job_drop.c gives them
 *	  and finish_cutover (cutover_finish.c): the C behind the internal
 *	  functions they called through SPI, which PUBLIC may not execute.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_CUTOVER_H
#define BACKFILL_API_CUTOVER_H

#include "fmgr.h"

/* cutover.c */
extern void cutover_turn_job(int64 job_id, bool into_existing);
extern void cutover_hand_over_job(int64 job_id);

/* job_drop.c */
extern void backfill_let_job_go(int64 job_id, Datum job_row);

#endif							/* BACKFILL_API_CUTOVER_H */
