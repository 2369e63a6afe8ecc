/*-------------------------------------------------------------------------
 *
 * backfill.c
 *	  Module entry point of the backfill extension: settings only.
 *
 * Everything else lives in the files named in backfill.h.  _PG_init only
 * defines the settings, so that loading the library has no other effect.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "backfill.h"

PG_MODULE_MAGIC;

/*
 * backfill.barrier_interval_ms: how long an executor reads snapshot chunks
 * before it commits a barrier.  RisingWave's default barrier interval is one
 * second.  Zero means exactly one chunk per actor per barrier, which makes
 * tests deterministic.
 */
int			backfill_barrier_interval_ms = 1000;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("backfill.barrier_interval_ms",
							"Time an executor reads the snapshot between two barriers.",
							"Every unfinished actor reads at least one chunk per barrier. "
							"Zero means exactly one chunk per actor per barrier.",
							&backfill_barrier_interval_ms,
							1000,
							0,
							3600 * 1000,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("backfill");
}
