/*-------------------------------------------------------------------------
 *
 * ddl_job_tables.c
 *	  DDL on a job's own tables and type: refused, but for the extension's.
 *
 * A job's state table, its change table (a log, for the snapshot kind) and
 * its image type, backfill.image_<id>, belong to the job's owner, as
 * PostgreSQL's rules for tables in a schema want, but they are the
 * extension's: it reads and writes them, in the barriers, the capture
 * trigger, the event trigger and the views, whoever runs those.  A trigger,
 * a rule, a policy, an index expression, a column retyped to a type with an
 * implicit cast of the owner's, a table inheriting from them: each would be
 * the owner's code in the middle of the extension's statements, and a
 * change table turned into a view would not even be a table.  So an event
 * trigger, backfill._on_job_table_ddl() at ddl_command_end, refuses every
 * command that created or altered such an object on them (CREATE TRIGGER,
 * CREATE RULE, CREATE POLICY, CREATE INDEX, CREATE STATISTICS, ALTER TABLE
 * with any subcommand, ALTER TYPE of the image type, ALTER of their
 * triggers, rules, policies and indexes, CREATE TABLE ... INHERITS and
 * ALTER TABLE ... INHERIT, a foreign key that references them), as
 * PostgreSQL refuses a trigger on a system catalog: "permission denied".
 * COMMENT and GRANT change nothing that runs, and are let through.
 *
 * Let through too: a role with the privileges of the extension's owner (a
 * superuser), which may write the catalogs anyway; the extension makes and
 * changes these objects as the extension's owner (create_job, the owner's
 * policy, REASSIGN OWNED), and a restore by such a role makes them again
 * before their job's row is loaded or after (event_trigger.c).
 *
 * What an older version let an owner put there runs as that owner only:
 * the extension writes these tables as the job's owner in a
 * security-restricted operation (privilege.c; capture/partitions.c for the
 * rows of a partition that joins or leaves the upstream); job_state(),
 * which the views call with the reader's rights, first checks that the
 * state table is an ordinary table without rules or row-level security
 * whose columns have the types the extension gave them
 * (backfill._check_state_table), so that no implicit cast of the owner's
 * runs in its comparisons; and ALTER EXTENSION UPDATE warns of the
 * triggers, rules, policies and inheritance it finds.
 *
 * A partitioned upstream's partitions are the upstream owner's, though: a
 * partition created or attached under it gets clones of the job's row
 * triggers, which PostgreSQL makes as the role running the command, and
 * only after checking that this role may execute their functions,
 * backfill.capture_change() and apply_change().  Those are revoked from
 * PUBLIC, so that no one attaches them to a table by hand.  A second event
 * trigger, backfill._before_partition_ddl() at ddl_command_start of CREATE
 * TABLE ... PARTITION OF and ALTER TABLE ... ATTACH PARTITION under a job's
 * upstream, grants them, as the extension's owner, to the role running the
 * command, which owns the partitioned table.  Such a grant opens nothing:
 * each trigger function checks, each time it fires, that it fires on its
 * job's upstream or a partition of it (capture/firing.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "backfill.h"
#include "api/ddl.h"
#include "catalog/job_holdings.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_on_job_table_ddl);
PG_FUNCTION_INFO_V1(backfill_before_partition_ddl);

/* the row trigger functions PostgreSQL clones to a partition */
static const char *const cloned_trigger_functions[] = {"capture_change", "apply_change"};

/*
 * The objects the commands of this event created or altered, each as the
 * relation it is on (a trigger's, rule's, policy's, index's or extended
 * statistics' table; a table itself, the tables it inherits from and those
 * its foreign keys reference, which get triggers of their own), or
 * as a type (a composite type is altered through its relation); the first
 * that belongs to a job that is not cancelled, the lowest job first, then
 * the command that came first, so that the refusal names the same command
 * whatever plan the query gets.
 */
#define JOB_TABLE_COMMANDS_SQL \
	"WITH c AS (SELECT d.command_tag, d.classid, d.objid, d.ordinality AS ord " \
	"             FROM pg_catalog.pg_event_trigger_ddl_commands() WITH ORDINALITY d), " \
	"r AS (SELECT c.command_tag, c.ord, CASE c.classid " \
	"          WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN " \
	"               coalesce((SELECT i.indrelid FROM pg_catalog.pg_index i " \
	"                          WHERE i.indexrelid OPERATOR(pg_catalog.=) c.objid), c.objid) " \
	"          WHEN 'pg_catalog.pg_trigger'::pg_catalog.regclass THEN " \
	"               (SELECT t.tgrelid FROM pg_catalog.pg_trigger t WHERE t.oid OPERATOR(pg_catalog.=) c.objid) " \
	"          WHEN 'pg_catalog.pg_rewrite'::pg_catalog.regclass THEN " \
	"               (SELECT w.ev_class FROM pg_catalog.pg_rewrite w WHERE w.oid OPERATOR(pg_catalog.=) c.objid) " \
	"          WHEN 'pg_catalog.pg_policy'::pg_catalog.regclass THEN " \
	"               (SELECT p.polrelid FROM pg_catalog.pg_policy p WHERE p.oid OPERATOR(pg_catalog.=) c.objid) " \
	"          WHEN 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass THEN " \
	"               (SELECT s.stxrelid FROM pg_catalog.pg_statistic_ext s WHERE s.oid OPERATOR(pg_catalog.=) c.objid) " \
	"          END AS relid, " \
	"          CASE c.classid WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN c.objid " \
	"          WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN " \
	"               (SELECT t.reltype FROM pg_catalog.pg_class t " \
	"                 WHERE t.oid OPERATOR(pg_catalog.=) c.objid AND t.relkind OPERATOR(pg_catalog.=) 'c') " \
	"          END AS typid " \
	"     FROM c), " \
	"o AS (SELECT r.command_tag, r.ord, r.relid, r.typid FROM r " \
	"      UNION ALL " \
	"      SELECT r.command_tag, r.ord, h.inhparent, NULL FROM r " \
	"        JOIN pg_catalog.pg_inherits h ON h.inhrelid OPERATOR(pg_catalog.=) r.relid " \
	"      UNION ALL " \
	"      SELECT r.command_tag, r.ord, f.confrelid, NULL FROM r " \
	"        JOIN pg_catalog.pg_constraint f ON f.conrelid OPERATOR(pg_catalog.=) r.relid " \
	"                                      AND f.contype OPERATOR(pg_catalog.=) 'f') " \
	"SELECT o.command_tag, j.job_id, " \
	"       coalesce(o.relid::pg_catalog.regclass::pg_catalog.text, " \
	"                o.typid::pg_catalog.regtype::pg_catalog.text) AS object_name, " \
	"       o.typid IS NOT NULL AS is_type " \
	"  FROM o JOIN backfill.job j " \
	"    ON o.relid OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[]) " \
	"    OR o.typid OPERATOR(pg_catalog.=) " \
	"       pg_catalog.to_regtype(pg_catalog.format('backfill.%I', 'image_' OPERATOR(pg_catalog.||) j.job_id)) " \
	" WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled' " \
	" ORDER BY j.job_id, o.ord LIMIT 1"

/*
 * Refuse the command if it created or altered something on a job's own
 * tables or type (the file header says why).  Caller acts as the
 * extension's owner, connected to SPI.
 */
static void
check_job_table_commands(void)
{
	if (SPI_execute(JOB_TABLE_COMMANDS_SQL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the DDL commands");
	if (SPI_processed == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied: \"%s\" is a %s of backfill job %s",
					backfill_spi_column_text(SPI_tuptable, 0, "object_name"),
					strcmp(backfill_spi_column_text(SPI_tuptable, 0, "is_type"), "t") == 0 ?
					"type" : "table",
					backfill_spi_column_text(SPI_tuptable, 0, "job_id")),
			 errdetail("A job's state and change tables and its image type are the extension's; %s is refused on them.",
					   backfill_spi_column_text(SPI_tuptable, 0, "command_tag")),
			 errhint("Only the extension's owner may change them.")));
}

/*
 * backfill._on_job_table_ddl() event trigger, ON ddl_command_end of the
 * commands that create or alter triggers, rules, policies, indexes,
 * statistics, tables and types (src/sql/functions/job_tables.sql)
 */
Datum
backfill_on_job_table_ddl(PG_FUNCTION_ARGS)
{
	RoleContext rc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill._on_job_table_ddl() was not called by the event trigger manager")));
	/* the extension's own commands, a superuser's, a restore's */
	if (backfill_may_write_catalogs())
		PG_RETURN_NULL();

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backfill_catalog_enter(&rc);
	check_job_table_commands();
	backfill_role_leave(&rc);
	SPI_finish();
	PG_RETURN_NULL();
}

/*
 * The role running the command may execute the functions of the job's row
 * triggers, whose clones it is about to make under parent (the file header
 * says why).  Caller acts as the extension's owner, connected to SPI.
 */
static void
grant_cloned_trigger_functions(Oid parent, Oid role)
{
	int64	   *ids;

	if (!OidIsValid(parent) || backfill_jobs_over(parent, false, &ids) == 0)
		return;
	for (int i = 0; i < lengthof(cloned_trigger_functions); i++)
	{
		List	   *name = list_make2(makeString(BACKFILL_SCHEMA),
									  makeString(pstrdup(cloned_trigger_functions[i])));
		Oid			func = LookupFuncName(name, 0, NULL, false);

		if (pg_proc_aclcheck(func, role, ACL_EXECUTE) == ACLCHECK_OK)
			continue;
		backfill_spi_exec(psprintf("GRANT EXECUTE ON FUNCTION %s.%s() TO %s",
								   quote_identifier(BACKFILL_SCHEMA),
								   quote_identifier(cloned_trigger_functions[i]),
								   quote_identifier(GetUserNameFromId(role, false))),
						  SPI_OK_UTILITY);
	}
}

/* ALTER TABLE ... ATTACH PARTITION: its table is the parent */
static Oid	attach_role;

static void
attach_partition_cmd(AlterTableStmt *stmt, AlterTableCmd *cmd)
{
	if (cmd->subtype == AT_AttachPartition)
		grant_cloned_trigger_functions(backfill_command_relid(stmt->relation, true),
									   attach_role);
}

/*
 * backfill._before_partition_ddl() event trigger, ON ddl_command_start of
 * CREATE TABLE, CREATE FOREIGN TABLE and ALTER TABLE: for a partition made
 * or attached under a job's upstream, the grants of
 * grant_cloned_trigger_functions
 */
Datum
backfill_before_partition_ddl(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Oid			role = GetUserId();
	RoleContext rc;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill._before_partition_ddl() was not called by the event trigger manager")));
	trigdata = (EventTriggerData *) fcinfo->context;
	if (superuser())
		PG_RETURN_NULL();

	backfill_command_begin();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backfill_catalog_enter(&rc);
	if (IsA(trigdata->parsetree, CreateStmt) &&
		((CreateStmt *) trigdata->parsetree)->partbound != NULL)
	{
		CreateStmt *stmt = (CreateStmt *) trigdata->parsetree;

		grant_cloned_trigger_functions(backfill_command_relid(linitial_node(RangeVar, stmt->inhRelations),
															  true),
									   role);
	}
	else
	{
		attach_role = role;
		backfill_foreach_alter_cmd(trigdata, attach_partition_cmd);
	}
	backfill_role_leave(&rc);
	SPI_finish();
	PG_RETURN_NULL();
}
