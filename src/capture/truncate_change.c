/*-------------------------------------------------------------------------
 *
 * truncate_change.c
 *	  The truncate triggers, backfill.truncate_change().
 *
 * TRUNCATE has a statement trigger of each kind.  While the job backfills,
 * backfill_capture_truncate_<id> refuses it: the positions of a running
 * executor would no longer mean anything.  Once it has finished,
 * backfill_apply_truncate_<id> truncates the downstream in the same
 * transaction.
 *
 * TRUNCATE of a leaf partition fires no trigger of the partitioned table,
 * so each leaf of a partitioned upstream has its own,
 * backfill_partition_truncate_<id> (triggers.c): refused while the job
 * backfills, the partition's rows deleted downstream once it has finished.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "backfill.h"
#include "capture/capture_internal.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/*
 * TRUNCATE of a leaf partition of the upstream, BEFORE: refused while the
 * job backfills; once it has finished, the downstream rows of the
 * partition's keys go, as the job's owner.  A TRUNCATE of the partitioned
 * table fires this too, before its own triggers: it is refused there while
 * the job backfills, and truncates the whole downstream once finished.
 */
static void
truncate_partition(TriggerData *trigdata, int64 job_id)
{
	Relation	rel = trigdata->tg_relation;
	RoleContext oc;
	BackfillJob *job;
	char	   *matching;
	int			guc_level;
	Oid			argtype = OIDOID;
	Datum		partition = ObjectIdGetDatum(RelationGetRelid(rel));

	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event))
		elog(ERROR, "trigger \"%s\" must fire BEFORE TRUNCATE", trigdata->tg_trigger->tgname);
	if (!backfill_trigger_job_finished(job_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot truncate partition \"%s\" while backfill job %lld backfills its table",
						RelationGetRelationName(rel), (long long) job_id),
				 errdetail("The job's positions would no longer describe its downstream table."),
				 errhint("Wait until the job has finished, or cancel it with backfill.cancel_job(%lld).",
						 (long long) job_id)));
	backfill_trigger_enter_owner(trigdata, job_id, InvalidOid, &oc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	job = backfill_load_job_latest(job_id, CurrentMemoryContext);
	guc_level = backfill_pin_search_path(job);
	/* read through the upstream: the owner may have no right on the partition */
	matching = psprintf("SELECT %s FROM %s WHERE u.tableoid OPERATOR(pg_catalog.=) $1",
						backfill_pk_list(job, "u"), backfill_job_scan(job));
	backfill_spi_exec_args(backfill_sync_delete_sql(job, matching, false), 1, &argtype,
						   &partition, NULL, SPI_OK_DELETE);
	backfill_unpin_search_path(guc_level);
	SPI_finish();
	backfill_role_leave(&oc);
}

PG_FUNCTION_INFO_V1(backfill_truncate_change);

/*
 * backfill.truncate_change() trigger, FOR EACH STATEMENT on TRUNCATE:
 * BEFORE while the job backfills (refuse), AFTER once it has finished
 * (truncate the downstream too); on a leaf partition, see
 * truncate_partition().
 */
Datum
backfill_truncate_change(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	int64		job_id;
	RoleContext oc;
	BackfillJob *job;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill.truncate_change() must be fired by TRUNCATE")));
	trigger = trigdata->tg_trigger;
	if (trigger->tgnargs != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill.truncate_change() needs the job id as its only argument")));
	job_id = pg_strtoint64(trigger->tgargs[0]);

	backfill_check_trigger_relation(trigdata, job_id, InvalidOid);
	if (RelationGetRelid(trigdata->tg_relation) != backfill_job_upstream(job_id))
	{
		truncate_partition(trigdata, job_id);
		return PointerGetDatum(NULL);
	}
	if (!backfill_side_in_charge(trigdata->tg_relation, job_id,
						TRIGGER_FIRED_BEFORE(trigdata->tg_event), false))
		return PointerGetDatum(NULL);
	if (TRIGGER_FIRED_BEFORE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot truncate table \"%s\" while backfill job %lld backfills it",
						RelationGetRelationName(trigdata->tg_relation), (long long) job_id),
				 errdetail("The job's positions would no longer describe its downstream table."),
				 errhint("Wait until the job has finished, or cancel it with backfill.cancel_job(%lld).",
						 (long long) job_id)));

	/* finished: the downstream follows, as the job's owner */
	backfill_trigger_enter_owner(trigdata, job_id, InvalidOid, &oc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	job = backfill_load_job_latest(job_id, CurrentMemoryContext);
	if (SPI_execute(psprintf("TRUNCATE %s", job->downstream_sql), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not truncate %s", job->downstream_sql);
	SPI_finish();
	backfill_role_leave(&oc);
	return PointerGetDatum(NULL);
}
