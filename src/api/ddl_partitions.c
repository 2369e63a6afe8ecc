/*-------------------------------------------------------------------------
 *
 * ddl_partitions.c
 *	  DDL checks of the partitions of a job's upstream: those that join or
 *	  leave it, a concurrent detach, a partition dropped, and an unlogged
 *	  table under the upstream of a cdc job.
 *
 * The partitions of a partitioned upstream come and go (capture/partitions.c does the
 * work, in the DDL's own transaction, so that their rows join or leave the
 * downstream exactly once); what is refused, and why, is told in
 * event_trigger.c, which calls these checks as the extension's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"

#include "backfill.h"
#include "api/ddl.h"
#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/job_holdings.h"
#include "remote/remote.h"

/*
 * A table under the upstream of a cdc job that has not finished (relid
 * itself, or a partition of it at any level) that is unlogged: refused.  The
 * job takes the upstream's changes from the write-ahead log, which holds
 * none of an unlogged table's, and would finish without them.  A finished
 * job follows its upstream through the apply trigger, which sees every
 * write.  set_unlogged says what was done: ALTER TABLE ... SET UNLOGGED, or
 * a partition attached or created.
 */
static void
check_unlogged_under_cdc(Oid relid, bool set_unlogged)
{
	List	   *rels = list_make1_oid(relid);
	ListCell   *lc;
	int64	   *ids;

	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		rels = find_all_inheritors(relid, NoLock, NULL);
	foreach(lc, rels)
	{
		Oid			rel = lfirst_oid(lc);

		if (get_rel_relkind(rel) != RELKIND_RELATION ||
			get_rel_persistence(rel) != RELPERSISTENCE_UNLOGGED)
			continue;
		if (backfill_jobs_over(relid, true, &ids) == 0)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 set_unlogged ?
				 errmsg("cannot change table \"%s\" to unlogged because backfill job %lld takes its changes from the write-ahead log",
						get_rel_name(rel), (long long) ids[0]) :
				 errmsg("unlogged table \"%s\" cannot join the upstream of backfill job %lld",
						get_rel_name(rel), (long long) ids[0]),
				 errdetail("Backfill job %lld, of kind \"cdc\", takes the upstream's changes from the write-ahead log, which holds none of an unlogged table's.",
						   (long long) ids[0]),
				 set_unlogged ?
				 errhint("Drop the job first with backfill.drop_job(%lld), or wait until it has finished.",
						 (long long) ids[0]) :
				 errhint("Use ALTER TABLE ... SET LOGGED first, or wait until the job has finished.")));
	}
}

/*
 * ddl_command_end of ALTER TABLE ... SET UNLOGGED under the upstream of a
 * cdc job (check_unlogged_under_cdc)
 */
static void
check_set_unlogged_cmd(AlterTableStmt *stmt, AlterTableCmd *cmd)
{
	Oid			relid;

	if (cmd->subtype != AT_SetUnLogged)
		return;
	relid = backfill_command_relid(stmt->relation, true);
	if (OidIsValid(relid))
		check_unlogged_under_cdc(relid, true);
}

void
backfill_check_set_unlogged(EventTriggerData *trigdata)
{
	backfill_foreach_alter_cmd(trigdata, check_set_unlogged_cmd);
}

/*
 * A partition joining or leaving the upstream of a job that reads foreign
 * partitions from their servers (a sharded upstream): refused, for as long
 * as the job exists.  The job reads the partitions create_job found, each
 * in splits of its own, and follows their servers through a slot and a
 * publication of their tables; a partition joining would need splits and
 * perhaps a server of its own, and one leaving would leave its rows and
 * its server's changes behind.
 */
static void
check_sharded_partition_moved(BackfillJob *job, Oid relid, Oid partition, bool joined)
{
	if (backfill_remote_leaves(job->upstream) == NIL &&
		get_rel_relkind(partition) != RELKIND_FOREIGN_TABLE)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 joined ?
			 errmsg("cannot add partition \"%s\" to table \"%s\" while backfill job %lld copies it from other servers",
					get_rel_name(partition), get_rel_name(relid), (long long) job->job_id) :
			 errmsg("cannot detach partition \"%s\" from table \"%s\" while backfill job %lld copies it from other servers",
					get_rel_name(partition), get_rel_name(relid), (long long) job->job_id),
			 errdetail("The job reads the partitions it found when it was created, each from its server, and follows those servers' changes to them."),
			 errhint("Change the partitions once the job is dropped with backfill.drop_job(%lld), then create a job again.",
					 (long long) job->job_id)));
}

/* a partition joined (attached, created) or left (detached) relid */
static void
partition_moved(Oid relid, Oid partition, bool joined)
{
	int64	   *ids;
	int			n;

	if (joined)
		check_unlogged_under_cdc(partition, false);
	n = backfill_jobs_over(relid, false, &ids);

	for (int i = 0; i < n; i++)
	{
		BackfillJob *job = backfill_load_job(ids[i], CurrentMemoryContext);

		check_sharded_partition_moved(job, relid, partition, joined);
		backfill_capture_partition(job, partition, joined);
	}
}

/* an ATTACH or DETACH PARTITION of an ALTER TABLE (partition_changes) */
static void
partition_cmd(AlterTableStmt *stmt, AlterTableCmd *cmd)
{
	if (cmd->subtype != AT_AttachPartition && cmd->subtype != AT_DetachPartition)
		return;
	partition_moved(backfill_command_relid(stmt->relation, false),
					backfill_command_relid(((PartitionCmd *) cmd->def)->name, false),
					cmd->subtype == AT_AttachPartition);
}

/*
 * ddl_command_end of ALTER TABLE ... ATTACH or DETACH PARTITION, and of
 * CREATE [FOREIGN] TABLE ... PARTITION OF, under the upstream of a job: the
 * rows that join or leave it do so in the downstream too, exactly once
 * (capture/partitions.c); under a sharded upstream, refused.
 */
void
backfill_partition_changes(EventTriggerData *trigdata)
{
	SPITupleTable *created;
	uint64		ncreated;

	if (trigdata->tag == CMDTAG_ALTER_TABLE && !IsA(trigdata->parsetree, AlterTableStmt))
		return;					/* a rename */
	if (IsA(trigdata->parsetree, AlterTableStmt))
	{
		backfill_foreach_alter_cmd(trigdata, partition_cmd);
		return;
	}
	if (SPI_execute("SELECT objid FROM pg_catalog.pg_event_trigger_ddl_commands() "
					"WHERE (command_tag, object_type) IN (('CREATE TABLE', 'table'), "
					"('CREATE FOREIGN TABLE', 'foreign table'))",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	created = SPI_tuptable;
	ncreated = SPI_processed;
	for (uint64 i = 0; i < ncreated; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(backfill_spi_column(created, i, "objid", &isnull));

		if (get_rel_relispartition(relid))
			partition_moved(get_partition_parent(relid, false), relid, true);
	}
}

/*
 * ddl_command_start of ALTER TABLE ... DETACH PARTITION ... CONCURRENTLY
 * (and FINALIZE) under the upstream of a job: refused.  It detaches in two
 * transactions, between which the partition's rows are neither the
 * upstream's nor gone, so there is no one moment at which they can leave
 * the downstream.
 */
static void
check_detach_concurrently_cmd(AlterTableStmt *stmt, AlterTableCmd *cmd)
{
	Oid			parent;
	int64	   *ids;

	if (!(cmd->subtype == AT_DetachPartition && ((PartitionCmd *) cmd->def)->concurrent) &&
		cmd->subtype != AT_DetachPartitionFinalize)
		return;
	parent = backfill_command_relid(stmt->relation, true);
	if (!OidIsValid(parent) || backfill_jobs_over(parent, false, &ids) == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot detach a partition of table \"%s\" concurrently while backfill job %lld uses it",
					get_rel_name(parent), (long long) ids[0]),
			 errdetail("A concurrent detach takes two transactions, between which the partition's rows could not leave the job's downstream."),
			 errhint("Detach it without CONCURRENTLY.")));
}

void
backfill_check_detach_concurrently(EventTriggerData *trigdata)
{
	backfill_foreach_alter_cmd(trigdata, check_detach_concurrently_cmd);
}

/*
 * sql_drop: a foreign partition of a sharded upstream dropped, for as long
 * as a job reads it (check_sharded_partition_moved says why).
 */
static void
check_sharded_partition_drops(void)
{
	if (!backfill_job_catalog_has("remote_partitions"))
		return;
	if (SPI_execute("SELECT j.job_id, d.object_identity FROM pg_catalog.pg_event_trigger_dropped_objects() d "
					"JOIN backfill.job j ON d.objid OPERATOR(pg_catalog.=) ANY (j.remote_partitions::pg_catalog.oid[]) "
					"WHERE d.object_type = 'foreign table' AND j.status OPERATOR(pg_catalog.<>) 'cancelled' "
					"ORDER BY j.job_id LIMIT 1", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop foreign table %s because backfill job %s reads it from its server",
						backfill_spi_column_text(SPI_tuptable, 0, "object_identity"),
						backfill_spi_column_text(SPI_tuptable, 0, "job_id")),
				 errdetail("It is a partition of the job's upstream, whose rows and changes the job copies."),
				 errhint("Drop the job first with backfill.drop_job(%s).",
						 backfill_spi_column_text(SPI_tuptable, 0, "job_id"))));
}

/*
 * sql_drop: a partition of a job's upstream dropped.  It carries clones of
 * the job's row triggers, dropped with it; a job's trigger dropped with its
 * table, which is not the job's upstream (refused already), tells.  Refused:
 * the partition's rows could no longer leave the downstream, nor be read as
 * of a snapshot job's epoch.
 */
void
backfill_check_partition_drops(void)
{
	SPITupleTable *dropped;
	uint64		ndropped;

	if (SPI_execute("SELECT t.address_names[3] AS trigger_name, d.object_identity AS table_identity "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() t "
					"JOIN pg_catalog.pg_event_trigger_dropped_objects() d "
					"  ON d.object_type = 'table' AND d.address_names = t.address_names[1:2] "
					"WHERE t.object_type = 'trigger'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	dropped = SPI_tuptable;
	ndropped = SPI_processed;
	check_sharded_partition_drops();
	for (uint64 d = 0; d < ndropped; d++)
	{
		int64		job_id = backfill_trigger_job(backfill_spi_column_text(dropped, d, "trigger_name"));

		if (job_id == 0)
			continue;
		if (!backfill_job_not_cancelled(job_id))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop table %s because it is a partition of the upstream of backfill job %lld",
						backfill_spi_column_text(dropped, d, "table_identity"), (long long) job_id),
				 errdetail("Its rows could no longer leave the job's downstream."),
				 errhint("Detach it first with ALTER TABLE ... DETACH PARTITION, then drop it.")));
	}
}
