/*-------------------------------------------------------------------------
 *
 * ddl_owners.c
 *	  A job's owner under the commands that empty a role: DROP OWNED
 *	  (ddl_command_start), REASSIGN OWNED (the utility hook, since it fires
 *	  no event trigger), and the policy that records the owner (sql_drop of
 *	  DROP POLICY).
 *
 * A job's owner is a role's object, as its tables are.  DROP ROLE sees it
 * through the policy on its state table (catalog/job_owner.c), which
 * REASSIGN OWNED leaves alone, so the role cannot be dropped while it owns
 * a job; the whole story is told in event_trigger.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/array.h"

#include "backfill.h"
#include "api/ddl.h"
#include "catalog/catalog_access.h"
#include "catalog/job_holdings.h"
#include "lib/lib.h"

/*
 * The roles of DROP OWNED or REASSIGN OWNED, as an oid[] Datum
 */
static Datum
owned_roles(List *rolespecs)
{
	Datum	   *oids = palloc(sizeof(Datum) * Max(list_length(rolespecs), 1));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, rolespecs)
		oids[n++] = ObjectIdGetDatum(get_rolespec_oid(lfirst(lc), false));
	return PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/*
 * The jobs of roles whose state table another role owns now (REASSIGN OWNED
 * gave it away): theirs.  Acts as the extension's owner.
 */
static void
follow_reassigned(Datum roles)
{
	int64	   *ids;
	Oid		   *state_tables;
	Oid		   *owners;
	int			njobs;
	RoleContext rc;

	backfill_catalog_enter(&rc);
	njobs = backfill_jobs_given_away(roles, &ids, &state_tables, &owners);
	for (int i = 0; i < njobs; i++)
		backfill_move_owner(ids[i], state_tables[i], owners[i]);
	backfill_role_leave(&rc);
}

/*
 * ddl_command_start of DROP OWNED: a job is dropped with its owner's
 * objects, as a table is.  One whose state table REASSIGN OWNED gave to
 * another role first goes with its tables to that role, as it would have
 * at the REASSIGN OWNED itself with the library loaded (see
 * backfill_reassign_owned); the others, cancelled ones too, are dropped by
 * drop_job, as the caller, who has the privileges of the roles (DROP OWNED
 * requires them), before DROP OWNED drops their tables.
 */
void
backfill_drop_owned(DropOwnedStmt *stmt)
{
	Datum		roles = owned_roles(stmt->roles);
	int64	   *ids;
	int			n;

	follow_reassigned(roles);
	n = backfill_jobs_owned(roles, &ids);
	for (int i = 0; i < n; i++)
	{
		Oid			types[1] = {INT8OID};
		Datum		values[1] = {Int64GetDatum(ids[i])};

		backfill_spi_exec_args("SELECT backfill.drop_job($1)", 1, types, values, NULL,
							   SPI_OK_SELECT);
	}
}

/*
 * backfill_reassign_owned
 *		After REASSIGN OWNED, in this database: the jobs whose state table
 *		it gave to another role are that role's.  REASSIGN OWNED fires no
 *		event trigger, so this runs from the utility hook below, in a
 *		backend that has loaded the library (every backend, when it is
 *		preloaded); otherwise the next DROP OWNED does it, and until then
 *		DROP ROLE is refused (the owner's policy, catalog/job_owner.c).
 */
void
backfill_reassign_owned(ReassignOwnedStmt *stmt)
{
	if (!OidIsValid(get_extension_oid(BACKFILL_SCHEMA, true)))
		return;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	follow_reassigned(owned_roles(stmt->roles));
	SPI_finish();
}

static ProcessUtility_hook_type prev_process_utility = NULL;

/* REASSIGN OWNED, then its jobs (backfill_reassign_owned) */
static void
reassign_owned_hook(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
							 dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
	if (IsA(pstmt->utilityStmt, ReassignOwnedStmt))
		backfill_reassign_owned((ReassignOwnedStmt *) pstmt->utilityStmt);
}

/* install the utility hook; from _PG_init */
void
backfill_ddl_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = reassign_owned_hook;
}

/*
 * sql_drop of DROP POLICY: the policy that records a job's owner
 * (catalog/job_owner.c) goes only with the job.
 */
void
backfill_check_policy_drops(void)
{
	if (SPI_execute("SELECT address_names[3] AS policy_name, address_names[1] AS schema_name, address_names[2] AS table_name "
					"FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE object_type = 'policy'", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the dropped objects");
	for (uint64 d = 0; d < SPI_processed; d++)
	{
		char	   *name = backfill_spi_column_text(SPI_tuptable, d, "policy_name");
		long long	job_id;
		int			len;

		if (name == NULL || sscanf(name, "backfill_job_%lld_owner%n", &job_id, &len) != 1 ||
			len != (int) strlen(name) ||
			strcmp(backfill_spi_column_text(SPI_tuptable, d, "schema_name"), BACKFILL_SCHEMA) != 0)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot drop policy \"%s\" on table %s.%s because backfill job %lld uses it",
						name, BACKFILL_SCHEMA,
						backfill_spi_column_text(SPI_tuptable, d, "table_name"), job_id),
				 errdetail("It records the owner of backfill job %lld, so that the role cannot be dropped while it owns the job.",
						   job_id),
				 errhint("Drop the job with backfill.drop_job(%lld), or give it to another role with REASSIGN OWNED.",
						 job_id)));
	}
}
