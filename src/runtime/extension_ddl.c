/*-------------------------------------------------------------------------
 *
 * extension_ddl.c
 *	  The guard of DROP EXTENSION backfill and ALTER EXTENSION backfill
 *	  UPDATE against the workers that run the jobs.
 *
 * DROP EXTENSION and ALTER EXTENSION UPDATE would take locks on the
 * extension's catalogs and functions in an order the workers' barriers take
 * them the other way round, and deadlock with them: a ProcessUtility hook
 * (installed with the registry, which is where workers can exist) stops the
 * workers of this database first for DROP EXTENSION backfill CASCADE, as
 * drop_job stops a job's, and locks the jobs' upstreams against writers
 * (whose triggers would deadlock with the drop as well); it refuses a DROP
 * without CASCADE and an ALTER EXTENSION UPDATE while workers run, naming
 * the jobs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"

#include "catalog/job_run_rows.h"
#include "runtime/driver.h"
#include "runtime/registry_internal.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

static void extension_ddl_process_utility(PlannedStmt *pstmt, const char *queryString,
										  bool readOnlyTree, ProcessUtilityContext context,
										  ParamListInfo params, QueryEnvironment *queryEnv,
										  DestReceiver *dest, QueryCompletion *qc);

/*
 * backfill_extension_ddl_init
 *		Install the guard; with the registry (which is where workers can
 *		exist), from _PG_init while shared_preload_libraries is processed.
 */
void
backfill_extension_ddl_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = extension_ddl_process_utility;
}

/*
 * The jobs of this database that run in background workers now, as "3, 5",
 * and how many; NULL when none does.
 */
static char *
running_jobs(int *njobs)
{
	StringInfoData buf;
	int64	   *job_ids = backfill_running_jobs(njobs);

	initStringInfo(&buf);
	for (int i = 0; i < *njobs; i++)
		appendStringInfo(&buf, "%s%lld", i > 0 ? ", " : "", (long long) job_ids[i]);
	pfree(job_ids);
	return *njobs > 0 ? buf.data : NULL;
}

/*
 * The start of both guards: whether the current user owns the extension
 * (anyone else is refused by the command itself, and must not stop anything
 * first), and if so, in *list, the jobs of this database that workers run
 * (NULL when none does) and how many.
 */
static bool
owner_sees_running_jobs(char **list, int *njobs)
{
	Oid			extoid = get_extension_oid(BACKFILL_SCHEMA, true);

	*list = NULL;
	*njobs = 0;
	if (!OidIsValid(extoid) || !pg_extension_ownercheck(extoid, GetUserId()))
		return false;
	*list = running_jobs(njobs);
	return true;
}

/*
 * Lock the upstream of every job that is not cancelled, and its partitions,
 * root to leaves, in the mode DROP TRIGGER takes, before DROP EXTENSION
 * CASCADE drops the jobs' tables and triggers: it may reach a change table
 * before its upstream's trigger, which a writer in flight, holding the
 * upstream and wanting the change table, would deadlock with.  Writers wait
 * for the drop instead, as drop_job makes them, which drops the triggers
 * first.
 */
static void
lock_upstreams_for_drop(void)
{
	uint64		n;
	Oid		   *upstreams = backfill_live_job_upstreams(&n);

	for (uint64 i = 0; i < n; i++)
	{
		if (get_rel_relkind(upstreams[i]) == RELKIND_PARTITIONED_TABLE)
			(void) find_all_inheritors(upstreams[i], AccessExclusiveLock, NULL);
		else
			LockRelationOid(upstreams[i], AccessExclusiveLock);
	}
}

/*
 * Before DROP EXTENSION backfill: with CASCADE, stop the workers of this
 * database's jobs at once, as drop_job does (the barrier in flight rolls
 * back; the jobs go with the extension anyway); without it, refuse while
 * they run.  Only for the extension's owner: anyone else is refused by the
 * command itself, and must not stop anything first.
 */
static void
before_drop_extension(DropBehavior behavior)
{
	int64	   *job_ids;
	int			njobs;
	char	   *list;

	if (!owner_sees_running_jobs(&list, &njobs))
		return;
	if (list == NULL)
	{
		if (behavior == DROP_CASCADE)
			lock_upstreams_for_drop();
		return;
	}
	if (behavior != DROP_CASCADE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("cannot drop extension \"%s\" while background workers run its jobs",
						BACKFILL_SCHEMA),
				 errdetail_plural("Backfill job %s runs in background workers in this database.",
								  "Backfill jobs %s run in background workers in this database.",
								  njobs, list),
				 errhint("Stop them with backfill.stop_job() first, or drop the extension with CASCADE, which stops them.")));

	/* stop each; one started meanwhile is stopped by the next round */
	for (;;)
	{
		job_ids = backfill_running_jobs(&njobs);
		if (njobs == 0)
			break;
		for (int i = 0; i < njobs; i++)
			(void) backfill_stop_workers(job_ids[i], true);
		pfree(job_ids);
	}
	lock_upstreams_for_drop();
}

/*
 * Before ALTER EXTENSION backfill UPDATE: refuse while workers run this
 * database's jobs, naming them.  The workers run the barriers of the old
 * catalog with the new library, and a restart under the new one is for
 * their user to choose: stop_job, then start_job after the update.
 */
static void
before_update_extension(void)
{
	int			njobs;
	char	   *list;

	if (!owner_sees_running_jobs(&list, &njobs) || list == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("cannot update extension \"%s\" while background workers run its jobs",
					BACKFILL_SCHEMA),
			 errdetail_plural("Backfill job %s runs in background workers in this database.",
							  "Backfill jobs %s run in background workers in this database.",
							  njobs, list),
			 errhint("Stop them with backfill.stop_job(), update the extension, then start them again with backfill.start_job().")));
}

static void
extension_ddl_process_utility(PlannedStmt *pstmt, const char *queryString,
						 bool readOnlyTree, ProcessUtilityContext context,
						 ParamListInfo params, QueryEnvironment *queryEnv,
						 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;

	if (backfill_registry_attached() && IsA(parsetree, DropStmt) &&
		((DropStmt *) parsetree)->removeType == OBJECT_EXTENSION)
	{
		DropStmt   *stmt = (DropStmt *) parsetree;
		ListCell   *lc;

		foreach(lc, stmt->objects)
			if (strcmp(strVal(lfirst(lc)), BACKFILL_SCHEMA) == 0)
				before_drop_extension(stmt->behavior);
	}
	else if (backfill_registry_attached() && IsA(parsetree, AlterExtensionStmt) &&
			 strcmp(((AlterExtensionStmt *) parsetree)->extname, BACKFILL_SCHEMA) == 0)
		before_update_extension();

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}
