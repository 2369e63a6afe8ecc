/*-------------------------------------------------------------------------
 *
 * cutover_hand_over.c
 *	  The job handed over to the owner of its tables once backfill.cutover()
 *	  has turned it around (cutover.c).
 *
 * A job cut over by another role than its owner (a superuser, or the
 * upstream's owner) would go on belonging to its owner, who would keep the
 * rights of a job over a table that is no longer its downstream.  After the
 * turn the job goes to the owner of its tables (the upstream's owner, which
 * the swap gave the new table): its state and change tables, its row image
 * type, its catalog row and the policy that records its owner.
 *
 * Who may.  cutover calls the hand-over directly, as its caller
 * (cutover_hand_over_job); the SQL function _cutover_hand_over is not
 * PUBLIC's.  It checks its arguments itself: the caller must have the
 * privileges of the job's owner and of the role it hands the job over to.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "api/cutover.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_hand_over);

/*
 * A job's catalog row, read as the extension's owner
 */
static BackfillJob *
load_job_as_catalog(int64 job_id)
{
	MemoryContext caller_context = CurrentMemoryContext;
	BackfillJob *job;
	RoleContext rc;
	int			guc_level;

	backfill_catalog_enter(&rc);
	guc_level = backfill_pin_catalog_path();
	backfill_spi_enter();
	job = backfill_load_job(job_id, caller_context);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
	return job;
}

/*
 * Give the job's own objects to owner: its state and change tables and its
 * row image type, then the job itself.  Caller acts as the extension's
 * owner, connected to SPI.
 */
static void
give_job(BackfillJob *job, Oid owner)
{
	const char *role = quote_identifier(GetUserNameFromId(owner, false));
	char	   *image = psprintf("image_%lld", (long long) job->job_id);
	Oid			image_type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
											 CStringGetDatum(image),
											 ObjectIdGetDatum(get_namespace_oid(BACKFILL_SCHEMA, false)));

	backfill_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s",
							   backfill_relation_sql(job->state_table), role),
					  SPI_OK_UTILITY);
	if (OidIsValid(job->change_table))
		backfill_spi_exec(psprintf("ALTER TABLE %s OWNER TO %s",
								   backfill_relation_sql(job->change_table), role),
						  SPI_OK_UTILITY);
	if (OidIsValid(image_type))
		backfill_spi_exec(psprintf("ALTER TYPE %s.%s OWNER TO %s",
								   quote_identifier(BACKFILL_SCHEMA), quote_identifier(image), role),
						  SPI_OK_UTILITY);
	backfill_move_owner(job->job_id, job->state_table, owner);
}

/*
 * cutover_hand_over_job, backfill._cutover_hand_over(job_id bigint)
 *		RETURNS void
 *		Give a job that has just been turned around to the owner of its
 *		upstream (see the file header).  The caller has the privileges of
 *		both, and holds the upstream ACCESS EXCLUSIVE: only the cutover
 *		hands a job over, under the lock of its swap.
 */
void
cutover_hand_over_job(int64 job_id)
{
	BackfillJob *job;
	Oid			owner;
	RoleContext rc;
	int			guc_level;

	(void) backfill_require_job_owner(job_id);
	job = load_job_as_catalog(job_id);
	if (job->status != BACKFILL_STATUS_FINISHED || !OidIsValid(job->state_table) ||
		!CheckRelationOidLockedByMe(job->upstream, AccessExclusiveLock, false))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld cannot be handed over", (long long) job_id),
				 errdetail("Only backfill.cutover() hands a job over, to the owner of its tables, under the lock of its swap.")));
	/* the upstream is locked: it is there */
	owner = backfill_relation_owner(job->upstream);
	if (owner == job->owner)
		return;
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must have the privileges of role \"%s\" to hand backfill job %lld over to it",
						GetUserNameFromId(owner, false), (long long) job_id)));

	backfill_catalog_enter(&rc);
	guc_level = backfill_pin_catalog_path();
	backfill_spi_enter();
	give_job(job, owner);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
}

Datum
backfill_cutover_hand_over(PG_FUNCTION_ARGS)
{
	cutover_hand_over_job(PG_GETARG_INT64(0));
	PG_RETURN_VOID();
}
