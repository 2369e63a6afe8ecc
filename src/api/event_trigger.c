/*-------------------------------------------------------------------------
 *
 * event_trigger.c
 *	  DDL on the tables of a job: what is refused, and why.
 *
 * A job reads its upstream's key and output columns by name and type, for
 * as long as it exists: while it backfills, and once finished through the
 * apply trigger.  Its downstream, state and change tables are its own.  So
 * an event trigger, backfill._on_ddl(), refuses, while a job that is not
 * cancelled exists:
 *
 *	- dropping its upstream, downstream, state or change table (sql_drop,
 *	  DROP TABLE and DROP SCHEMA ... CASCADE alike);
 *	- dropping a column of the upstream the job reads (the key, the columns
 *	  it copies, those its computed columns and filter use), or of the
 *	  downstream (sql_drop);
 *	- renaming such a column, retyping a copied one, or a column a computed
 *	  column reads so that its type would change, or changing the upstream's
 *	  primary key (ddl_command_end of ALTER TABLE).  The computed columns and
 *	  the filter are analyzed again against the altered table (shape.c), so
 *	  a change that leaves them meaningless is refused with the parser's
 *	  error;
 *	- renaming a value of an enum its key contains, until it has finished,
 *	  when its range vnodes' bounds hold keys as text (ddl_command_start of
 *	  ALTER TYPE; see ddl_columns.c).
 *
 *	- disabling or dropping the job's triggers on its upstream or a
 *	  partition of it (ddl_command_start of ALTER TABLE ... DISABLE TRIGGER
 *	  ALL or USER, or ENABLE/DISABLE [REPLICA | ALWAYS] TRIGGER naming one;
 *	  sql_drop of DROP TRIGGER), whoever owns the upstream: the writes they
 *	  would miss would never reach the downstream.  ENABLE TRIGGER ALL is
 *	  let through, as a data-only restore ends with it; every run puts the
 *	  job's triggers back as its status says (capture/triggers.c);
 *	- an unlogged table under the upstream of a cdc job that has not
 *	  finished (ddl_command_end of ALTER TABLE ... SET UNLOGGED, and of a
 *	  partition attached or created): its changes would never reach the
 *	  write-ahead log the job reads.
 *
 *	- dropping the policy that records a job's owner (sql_drop of DROP
 *	  POLICY; catalog/job_owner.c).
 *
 * The error rolls the command back, so nothing is left half-done: no
 * orphaned trigger, slot or state table.
 *
 * A job's owner is a role's object, as its tables are.  DROP ROLE sees it
 * through the policy on its state table (catalog/job_owner.c), which
 * REASSIGN OWNED leaves alone, so the role cannot be dropped while it owns
 * a job.  The two commands that empty a role handle jobs as they handle
 * tables:
 * REASSIGN OWNED gives the job to the role that got its state table
 * (backfill_reassign_owned, from the utility hook, since REASSIGN OWNED
 * fires no event trigger: in a backend that has not loaded the library,
 * the next DROP OWNED does it), and DROP OWNED, at ddl_command_start, does
 * the same for a job REASSIGN OWNED left behind, then drops the role's
 * other jobs with drop_job, as the caller, before it drops their tables.
 *
 * The partitions of a partitioned upstream come and go (capture/partitions.c does the
 * work, in the DDL's own transaction, so that their rows join or leave the
 * downstream exactly once): CREATE TABLE ... PARTITION OF and ATTACH
 * PARTITION (ddl_command_end) bring theirs, DETACH PARTITION takes them
 * away.  Refused: DETACH PARTITION ... CONCURRENTLY (ddl_command_start,
 * before its first transaction), whose two transactions leave no moment at
 * which the rows could leave; dropping a partition (sql_drop, told by the
 * clones of the job's row triggers dropped with it), whose rows could then
 * never leave.  Adding a column, renaming or
 * moving a table, and building an index disturb nothing, since a job holds
 * its tables by OID and reads their names afresh at each run.
 *
 * The checks read every job, whoever runs the DDL, so they run as the
 * extension's owner; they only ever raise errors.  cancel_job and drop_job
 * take the job out of the catalog before they drop its tables.
 *
 * A restore runs only the checks of columns (and lets the triggers be
 * disabled, enabled and dropped: pg_restore --disable-triggers, --clean).  pg_dump's scripts and
 * pg_restore set check_function_bodies = off, as they restore objects before
 * what they depend on; here, the jobs' rows are loaded with the data, and
 * only then are the tables' constraints added, the upstream's primary key
 * among them and not necessarily first (the downstream's, or another unique
 * constraint of the upstream, may come before it); pg_restore --clean drops
 * the tables before the extension.  Every run, and the capture trigger,
 * check the key again (check_key_unchanged, check_change_table).  A restore
 * never drops, renames or retypes a column, though.  And any session may
 * set check_function_bodies = off, but only a role with the privileges of
 * the extension's owner may write the catalogs, as restoring the jobs' rows
 * does: for any other role, nothing is skipped.
 *
 * The checks live by concern: ddl_columns.c (what a job reads and writes,
 * by name and type), ddl_partitions.c (partitions that join or leave an
 * upstream, unlogged tables under a cdc job), ddl_triggers.c (the job's
 * triggers) and ddl_owners.c (DROP OWNED, REASSIGN OWNED and its utility
 * hook, the owner's policy); they read the jobs through the catalog layer
 * (job_holdings.c).  Here: the event trigger itself, which calls them as
 * the event and the command say; the names the command wrote are looked up
 * under its caller's search_path (ddl_command.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/event_trigger.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "backfill.h"
#include "api/ddl.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_on_ddl);

/*
 * backfill._on_ddl() event trigger, ON sql_drop, ON ddl_command_end WHEN
 * TAG IN ('ALTER TABLE', 'CREATE TABLE') and ON ddl_command_start WHEN TAG
 * IN ('ALTER TABLE'), and ON ddl_command_start WHEN TAG IN ('ALTER TYPE')
 */
Datum
backfill_on_ddl(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	RoleContext rc;
	bool		restoring;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("backfill._on_ddl() was not called by the event trigger manager")));
	trigdata = (EventTriggerData *) fcinfo->context;

	/* a restore, by a role that may write the catalogs: see the file header */
	restoring = !check_function_bodies && backfill_may_write_catalogs();

	backfill_command_begin();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* drop_job runs as the caller */
	if (trigdata->tag == CMDTAG_DROP_OWNED)
	{
		if (strcmp(trigdata->event, "ddl_command_start") == 0 &&
			IsA(trigdata->parsetree, DropOwnedStmt))
			backfill_drop_owned((DropOwnedStmt *) trigdata->parsetree);
		SPI_finish();
		PG_RETURN_NULL();
	}
	backfill_catalog_enter(&rc);
	if (strcmp(trigdata->event, "sql_drop") == 0)
	{
		backfill_check_drops(restoring);
		/* a restore drops tables, partitions too, and pg_restore --clean triggers */
		if (!restoring)
			backfill_check_partition_drops();
		if (!restoring && trigdata->tag == CMDTAG_DROP_TRIGGER)
			backfill_check_trigger_drops();
		if (!restoring && trigdata->tag == CMDTAG_DROP_POLICY)
			backfill_check_policy_drops();
	}
	else if (strcmp(trigdata->event, "ddl_command_start") == 0)
	{
		backfill_check_detach_concurrently(trigdata);
		backfill_check_enum_rename(trigdata);
		/* pg_restore --disable-triggers disables them all, then enables them */
		if (!restoring)
			backfill_check_trigger_switches(trigdata);
	}
	else
	{
		backfill_partition_changes(trigdata);
		if (trigdata->tag == CMDTAG_ALTER_TABLE)
		{
			backfill_check_set_unlogged(trigdata);
			backfill_check_alters(restoring);
		}
	}
	backfill_role_leave(&rc);
	SPI_finish();
	PG_RETURN_NULL();
}
