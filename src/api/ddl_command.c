/*-------------------------------------------------------------------------
 *
 * ddl_command.c
 *	  The command the event trigger fired for, as its caller wrote it: the
 *	  relations and types it names, looked up under the caller's
 *	  search_path, and the subcommands of an ALTER TABLE, one at a time.
 *
 * The event trigger (event_trigger.c) runs its checks in a catalog context
 * that pins the extension's own search_path; the checks of the command's
 * parse tree (ddl_partitions.c, ddl_triggers.c, ddl_columns.c) resolve its
 * names here, as the command resolved them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "nodes/makefuncs.h"
#include "parser/parse_type.h"
#include "utils/guc.h"

#include "backfill.h"
#include "api/ddl.h"

/*
 * The caller's search_path when the event trigger fired: the catalog context
 * pins the extension's own, but the names of the command's parse tree are
 * the caller's, resolved as the command resolved them.
 */
static char *caller_search_path = NULL;

/* the event trigger fired: remember its caller's search_path */
void
backfill_command_begin(void)
{
	caller_search_path = pstrdup(namespace_search_path);
}

/* a relation the command names, looked up under the caller's search_path */
Oid
backfill_command_relid(const RangeVar *rv, bool missing_ok)
{
	int			level = NewGUCNestLevel();
	Oid			relid;

	(void) set_config_option("search_path", caller_search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	relid = RangeVarGetRelid(rv, NoLock, missing_ok);
	AtEOXact_GUC(true, level);
	return relid;
}

/* a type the command names, looked up under the caller's search_path */
Oid
backfill_command_typid(List *names)
{
	int			level = NewGUCNestLevel();
	Oid			typid;

	(void) set_config_option("search_path", caller_search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	typid = LookupTypeNameOid(NULL, makeTypeNameFromNameList(names), true);
	AtEOXact_GUC(true, level);
	return typid;
}

/*
 * backfill_foreach_alter_cmd
 *		Each command of the ALTER TABLE the event trigger fired for, in the
 *		order written, to check(stmt, cmd); nothing when the command is not
 *		an ALTER TABLE of a table's subcommands (a rename, say).  A check
 *		that refuses the command raises its error.
 */
void
backfill_foreach_alter_cmd(EventTriggerData *trigdata, AlterTableCmdCheck check)
{
	AlterTableStmt *stmt;
	ListCell   *lc;

	if (!IsA(trigdata->parsetree, AlterTableStmt))
		return;
	stmt = (AlterTableStmt *) trigdata->parsetree;
	foreach(lc, stmt->cmds)
		check(stmt, lfirst_node(AlterTableCmd, lc));
}
