/*-------------------------------------------------------------------------
 *
 * backfill.c
 *	  Module entry point of the backfill extension: settings and hooks.
 *
 * Everything else lives in the files named in backfill.h.  _PG_init defines
 * the settings; when the library is in shared_preload_libraries it also
 * requests the shared memory of the worker registry (shmem.c) and registers
 * the launcher (worker.c).  Loaded any other way, run_job works and
 * start_job says what is missing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
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

	/*
	 * Workers and their registry need the library preloaded; so does a
	 * setting read only at server start, which cannot be defined later.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomStringVariable("backfill.database",
								   "Database in which the launcher restarts background jobs.",
								   "The launcher starts with the server when the library is preloaded.",
								   &backfill_database,
								   "postgres",
								   PGC_POSTMASTER,
								   0,
								   NULL, NULL, NULL);
		backfill_shmem_init();
		backfill_register_launcher();
	}

	/* last: reserving the prefix drops placeholders not defined by then */
	MarkGUCPrefixReserved("backfill");
}
