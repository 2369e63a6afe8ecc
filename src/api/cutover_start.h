/*-------------------------------------------------------------------------
 *
 * cutover_start.h
 *	  What backfill.cutover() (cutover_start.c) shares with its two ways:
 *	  the local cutover (cutover_local.c) and the switchover of a job that
 *	  follows another server (cutover_switchover.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_CUTOVER_START_H
#define BACKFILL_API_CUTOVER_START_H

#include "fmgr.h"

#include "cutover/steps.h"

/* the arguments, in the order of the SQL signature */
enum
{
	ARG_JOB_ID, ARG_OLD_NAME, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS, ARG_FENCE, ARG_ACCEPT, ARG_VERIFY
};

/* the OUT columns */
enum
{
	OUT_STATE, OUT_ATTEMPTS_MADE, OUT_LOCK_HELD_MS, OUT_OLD_TABLE, OUT_ROLLBACK_POSSIBLE,
	OUT_SOURCE_LSN, OUT_COLUMNS
};

/* what the call returns */
typedef struct CutoverResult
{
	const char *state;			/* made a text once out of SPI */
	Datum		values[OUT_COLUMNS];
	bool		nulls[OUT_COLUMNS];
} CutoverResult;

/* cutover_local.c */
extern Datum cutover_text_or_null(const char *str, bool *isnull);
extern Datum cutover_oid_or_null(Oid oid, bool *isnull);
extern void cutover_local(FunctionCallInfo fcinfo, CutoverJobRow *job, bool verify,
						  CutoverResult *result);

/* cutover_switchover.c */
extern void cutover_switch_over(FunctionCallInfo fcinfo, CutoverJobRow *job, bool verify,
								CutoverResult *result);

#endif							/* BACKFILL_API_CUTOVER_START_H */
