/*-------------------------------------------------------------------------
 *
 * registry_internal.h
 *	  What the files around the worker registry need of it (registry.c):
 *	  its runs, for the guard of DROP / ALTER EXTENSION (extension_ddl.c)
 *	  and the SQL functions that start and stop workers (worker_control.c);
 *	  and what it needs of the live actors (live_actors.c), whose entries
 *	  follow its own in shared memory under its lock.
 *
 * Only the files of src/runtime/ include it: the layers above call what
 * driver.h declares.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_RUNTIME_REGISTRY_INTERNAL_H
#define BACKFILL_RUNTIME_REGISTRY_INTERNAL_H

#include "backfill.h"
#include "storage/lwlock.h"

/* registry.c */
extern void backfill_require_preloaded(const char *funcname);
extern bool backfill_registry_attached(void);
extern bool backfill_job_runs_in_background(int64 job_id);
extern void backfill_check_worker_caps(BackfillJob *job, int nworkers, bool capped);
extern int64 *backfill_running_jobs(int *njobs);

/* live_actors.c: their entries follow the registry's in shared memory */
extern Size backfill_live_shmem_size(void);
extern void backfill_live_attach(char *entries, LWLock *lock);

#endif							/* BACKFILL_RUNTIME_REGISTRY_INTERNAL_H */
