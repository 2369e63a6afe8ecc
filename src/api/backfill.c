/*-------------------------------------------------------------------------
 *
 * backfill.c
 *	  Module entry point of the backfill extension.
 *
 * _PG_init only delegates: each file defines the settings it reads.  When
 * the library is in shared_preload_libraries, the worker registry (registry.c)
 * requests its shared memory and the launcher (worker.c) is registered.
 * Loaded any other way, run_job works and start_job says what is missing.
 * The files and their layers are listed in backfill.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "api/create.h"
#include "api/ddl.h"
#include "capture/capture.h"
#include "copy/copy.h"
#include "runtime/driver.h"
#include "runtime/pacing.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	backfill_driver_init();
	backfill_progress_init();
	backfill_pacing_init();
	backfill_capture_init();
	backfill_ranges_init();
	backfill_create_init();
	backfill_worker_caps_init();
	backfill_ddl_init();

	/*
	 * Workers and their registry need the library preloaded; so does a
	 * setting read only at server start, which cannot be defined later.
	 */
	if (process_shared_preload_libraries_in_progress)
	{
		backfill_worker_init();
		backfill_shmem_init();
		backfill_extension_ddl_init();
	}

	/* last: reserving the prefix drops placeholders not defined by then */
	MarkGUCPrefixReserved("backfill");
}
