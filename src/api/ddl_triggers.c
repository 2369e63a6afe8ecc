/*-------------------------------------------------------------------------
 *
 * ddl_triggers.c
 *	  DDL checks of a job's triggers on its upstream or a partition of it:
 *	  switched off or on (ddl_command_start of ALTER TABLE), dropped
 *	  (sql_drop of DROP TRIGGER).
 *
 * Only the job switches its triggers (capture/triggers.c): the writes they would
 * miss would never reach the downstream.  What is let through, and why, is
 * told in event_trigger.c, which calls these checks as the extension's
 * owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

#include "backfill.h"
#include "api/ddl.h"
#include "capture/capture.h"
#include "catalog/job_holdings.h"

/*
 * Whether job_id is a job, not cancelled, over relid (its upstream, or an
 * ancestor of it)
 */
static bool
job_over(Oid relid, int64 job_id)
{
	int64	   *ids;
	int			n = backfill_jobs_over(relid, false, &ids);

	for (int i = 0; i < n; i++)
		if (ids[i] == job_id)
			return true;
	return false;
}

static void
refuse_trigger_change(int64 job_id, const char *table, const char *what, bool one)
{
	ereport(ERROR,
			(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
			 one ?
			 errmsg("cannot %s on table \"%s\" because backfill job %lld uses it",
					what, table, (long long) job_id) :
			 errmsg("cannot %s on table \"%s\" because backfill job %lld uses them",
					what, table, (long long) job_id),
			 errdetail("Backfill job %lld keeps its downstream equal to table \"%s\" through its triggers; the writes they would miss would never reach the downstream.",
					   (long long) job_id, table),
			 errhint("Drop the job first with backfill.drop_job(%lld), or cancel it with backfill.cancel_job(%lld).",
					 (long long) job_id, (long long) job_id)));
}

/*
 * ddl_command_start of ALTER TABLE ... ENABLE or DISABLE TRIGGER under the
 * upstream of a job: a job's own trigger named, which only the job switches
 * (capture/triggers.c), or DISABLE TRIGGER ALL or USER, which would switch them off
 * too, is refused.  ENABLE TRIGGER ALL or USER is let through: it is how a
 * data-only restore ends, and every run puts the job's triggers back as its
 * status says (backfill_assert_triggers).
 */
static void
check_trigger_switch(AlterTableStmt *stmt, AlterTableCmd *cmd)
{
	Oid			relid;
	int64		job_id;
	int64	   *ids;

	switch (cmd->subtype)
	{
		case AT_EnableTrig:
		case AT_EnableAlwaysTrig:
		case AT_EnableReplicaTrig:
		case AT_DisableTrig:
			job_id = backfill_any_trigger_job(cmd->name);
			if (job_id == 0)
				return;
			relid = backfill_command_relid(stmt->relation, true);
			if (!OidIsValid(relid) || !job_over(relid, job_id))
				return;
			refuse_trigger_change(job_id, get_rel_name(relid),
								  psprintf("%s trigger \"%s\"",
										   cmd->subtype == AT_DisableTrig ? "disable" : "enable",
										   cmd->name), true);
			break;
		case AT_DisableTrigAll:
		case AT_DisableTrigUser:
			relid = backfill_command_relid(stmt->relation, true);
			if (!OidIsValid(relid) || backfill_jobs_over(relid, false, &ids) == 0)
				return;
			refuse_trigger_change(ids[0], get_rel_name(relid), "disable the triggers", false);
			break;
		default:
			break;
	}
}

void
backfill_check_trigger_switches(EventTriggerData *trigdata)
{
	backfill_foreach_alter_cmd(trigdata, check_trigger_switch);
}

/*
 * sql_drop of DROP TRIGGER: a trigger of a job, not cancelled, on its
 * upstream or a partition of it, is refused.  drop_job and cancel_job take
 * the job out of the catalog before they drop its triggers; a partition
 * detached has left the upstream before its own trigger is dropped.
 */
void
backfill_check_trigger_drops(void)
{
	SPITupleTable *dropped;
	uint64		ndropped;

	if (SPI_execute("SELECT address_names[1] AS schema_name, address_names[2] AS table_name, address_names[3] AS trigger_name "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type = 'trigger'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	dropped = SPI_tuptable;
	ndropped = SPI_processed;
	for (uint64 d = 0; d < ndropped; d++)
	{
		char	   *schema = backfill_spi_column_text(dropped, d, "schema_name");
		char	   *table = backfill_spi_column_text(dropped, d, "table_name");
		char	   *name = backfill_spi_column_text(dropped, d, "trigger_name");
		int64		job_id = name ? backfill_any_trigger_job(name) : 0;
		Oid			nsp;
		Oid			relid;

		if (job_id == 0 || schema == NULL || table == NULL)
			continue;
		nsp = get_namespace_oid(schema, true);
		relid = OidIsValid(nsp) ? get_relname_relid(table, nsp) : InvalidOid;
		if (!OidIsValid(relid) || !job_over(relid, job_id))
			continue;
		refuse_trigger_change(job_id, table, psprintf("drop trigger \"%s\"", name), true);
	}
}
