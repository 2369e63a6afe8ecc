/*-------------------------------------------------------------------------
 *
 * attempt_pause.c
 *	  The pause after a failed attempt of the cutover (attempts.c) or of
 *	  its finish (finish_lock.c).
 *
 * The attempt has given its locks up; the pause lets the writers queued
 * behind it through before the next one queues again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/pg_prng.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "cutover/lock_step.h"

/*
 * backfill_cutover_pause
 *		The pause after a failed attempt of the cutover or of its finish,
 *		that lets the queued writers through: 10 ms, doubling, at most a
 *		second, with jitter.
 */
void
backfill_cutover_pause(int32 tries)
{
	double		pause = Min(0.01 * pow(2, tries - 1), 1.0) *
		(0.5 + pg_prng_double(&pg_global_prng_state) / 2);

	DirectFunctionCall1(pg_sleep, Float8GetDatum(pause));
}
