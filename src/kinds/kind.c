/*-------------------------------------------------------------------------
 *
 * kind.c
 *	  The routine of each kind of job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "utils/lsyscache.h"

#include "catalog/catalog_access.h"
#include "kinds/kind.h"
#include "remote/remote.h"

static const KindRoutine *const routines[BACKFILL_NUM_KINDS] = {
	[BACKFILL_KIND_NO_SHUFFLE] = &backfill_no_shuffle_routine,
	[BACKFILL_KIND_ARRANGEMENT] = &backfill_arrangement_routine,
	[BACKFILL_KIND_SNAPSHOT] = &backfill_snapshot_routine,
	[BACKFILL_KIND_CDC] = &backfill_cdc_routine,
	[BACKFILL_KIND_REMOTE_CDC] = &backfill_remote_cdc_routine,
};

/*
 * Check, once per kind and backend, that a routine sets every callback the
 * executor and the entry points call without testing it (as
 * GetTableAmRoutine does for a table access method); the others are
 * optional and tested where they are called.
 */
static void
validate_routine(BackfillKind kind, const KindRoutine *r)
{
	const char *missing = NULL;

	if (r->create_state_table == NULL)
		missing = "create_state_table";
	else if (r->load_state == NULL)
		missing = "load_state";
	else if (r->prepare == NULL)
		missing = "prepare";
	else if (r->barrier_changes == NULL)
		missing = "barrier_changes";
	else if (r->read_chunk == NULL)
		missing = "read_chunk";
	else if (r->persist == NULL)
		missing = "persist";
	else if (r->update_actor == NULL)
		missing = "update_actor";
	else if (r->actor_finished == NULL)
		missing = "actor_finished";
	else if (r->finished_everywhere == NULL)
		missing = "finished_everywhere";
	else if (r->recount_actors == NULL)
		missing = "recount_actors";
	else if (r->state_query == NULL)
		missing = "state_query";
	else if (r->verify_source == NULL)
		missing = "verify_source";
	else if (r->check_switchover != NULL && r->switchover == NULL)
		missing = "switchover";
	else if (r->switchover != NULL && r->check_switchover == NULL)
		missing = "check_switchover";
	if (missing != NULL)
		elog(ERROR, "routine of backfill kind %d does not set callback %s",
			 (int) kind, missing);
}

/* the routine of a kind */
const KindRoutine *
backfill_kind_routine(BackfillKind kind)
{
	static bool validated[BACKFILL_NUM_KINDS];

	if ((int) kind < 0 || (int) kind >= BACKFILL_NUM_KINDS)
		elog(ERROR, "unrecognized backfill kind %d", (int) kind);
	if (!validated[kind])
	{
		validate_routine(kind, routines[kind]);
		validated[kind] = true;
	}
	return routines[kind];
}

/*
 * The optional callbacks of the entry points that change or show a job,
 * called only through these, each doing what a kind that does not set the
 * callback means (those the executor calls are kind.h's inline wrappers).
 */

/* refuse a parallelism for reschedule; a kind without a rule refuses none */
void
backfill_kind_check_parallelism(const KindRoutine *kind, int parallelism)
{
	if (kind->check_parallelism)
		kind->check_parallelism(parallelism);
}

/* the splits of a job, JobSplit's; none for a kind that cuts none */
List *
backfill_kind_splits(const KindRoutine *kind, const JobView *job)
{
	return kind->splits ? kind->splits(job) : NIL;
}

/*
 * Refuse the switchover of a job, loaded to run, whose kind follows no
 * other server, or that its kind cannot switch over now
 */
void
backfill_kind_check_switchover(const KindRoutine *kind, BackfillJob *job)
{
	if (kind->check_switchover == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("backfill job %lld does not copy a table of another server", (long long) job->job_id),
				 errdetail("Only a cdc job on a foreign table of postgres_fdw follows another server.")));
	kind->check_switchover(job);
}

/*
 * Switch a job over from the server it follows, once
 * backfill_kind_check_switchover has let it and the caller has stopped its
 * workers and holds the job lock; the source's LSN it switched at
 */
XLogRecPtr
backfill_kind_switchover(const KindRoutine *kind, int64 job_id, bool fence,
						 int lock_timeout_ms, int attempts)
{
	Assert(kind->switchover != NULL);
	return kind->switchover(job_id, fence, lock_timeout_ms, attempts);
}

/*
 * What verify_job compares of a job now: all of it, nothing pending, unless
 * its kind says otherwise.
 */
void
backfill_kind_verify_source(const KindRoutine *kind, const VerifyJob *job,
							VerifySource *source)
{
	source->covered = "true";
	source->scan_d = job->downstream_sql;
	source->decoded = "SELECT NULL::record AS k WHERE false";
	source->settled = "true";
	source->decoded_param = NULL;
	kind->verify_source(job, source);
}

/*
 * The kind a job of kind "kind" has when its upstream is the relation
 * upstream: on a foreign table, or a partitioned table whose leaves are
 * foreign tables (a sharded upstream, remote.c's backfill_remote_leaves),
 * the remote kind backfill_remote_kind() says (cdc's); no other kind reads
 * a foreign table.
 */
BackfillKind
backfill_kind_for_upstream(BackfillKind kind, Oid upstream)
{
	if (backfill_remote_leaves(upstream) == NIL)
		return kind;
	if (backfill_remote_kind(kind) == kind)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 get_rel_relkind(upstream) == RELKIND_FOREIGN_TABLE ?
				 errmsg("a backfill job of kind \"%s\" cannot read foreign table \"%s\"",
						backfill_kind_name(kind), get_rel_name(upstream)) :
				 errmsg("a backfill job of kind \"%s\" cannot read table \"%s\", whose partitions are on other servers",
						backfill_kind_name(kind), get_rel_name(upstream)),
				 errdetail("Only a cdc job follows another server's changes, through its logical replication."),
				 errhint("Use kind \"cdc\" to copy a table of another PostgreSQL server through postgres_fdw.")));
	return backfill_remote_kind(kind);
}
