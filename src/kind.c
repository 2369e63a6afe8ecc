/*-------------------------------------------------------------------------
 *
 * kind.c
 *	  The routine of each kind of job.
 *
 * May call: the kinds' files (their routines only).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kind.h"

static const KindRoutine *const routines[BACKFILL_NUM_KINDS] = {
	[BACKFILL_KIND_NO_SHUFFLE] = &backfill_no_shuffle_routine,
	[BACKFILL_KIND_ARRANGEMENT] = &backfill_arrangement_routine,
	[BACKFILL_KIND_SNAPSHOT] = &backfill_snapshot_routine,
	[BACKFILL_KIND_CDC] = &backfill_cdc_routine,
};

/* the routine of a kind */
const KindRoutine *
backfill_kind_routine(BackfillKind kind)
{
	if ((int) kind < 0 || (int) kind >= BACKFILL_NUM_KINDS)
		elog(ERROR, "unrecognized backfill kind %d", (int) kind);
	return routines[kind];
}
