/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  The event trigger and utility hook that keep jobs in step with DDL
 *	  (event_trigger.c), and the checks it runs, one file per concern:
 *	  ddl_columns.c, ddl_partitions.c, ddl_triggers.c, ddl_owners.c, over
 *	  the command's names (ddl_command.c).
 *
 * The first section is what the rest of this folder may call (_PG_init);
 * the others are shared between the event trigger's files only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_DDL_H
#define BACKFILL_API_DDL_H

#include "commands/event_trigger.h"
#include "nodes/parsenodes.h"

#include "backfill.h"

/* ddl_owners.c: from _PG_init (backfill.c) */
extern void backfill_ddl_init(void);
extern void backfill_reassign_owned(ReassignOwnedStmt *stmt);

/* ddl_command.c: the command's names, as its caller wrote them */
typedef void (*AlterTableCmdCheck) (AlterTableStmt *stmt, AlterTableCmd *cmd);
extern void backfill_command_begin(void);
extern Oid	backfill_command_relid(const RangeVar *rv, bool missing_ok);
extern Oid	backfill_command_typid(List *names);
extern void backfill_foreach_alter_cmd(EventTriggerData *trigdata, AlterTableCmdCheck check);

/* ddl_columns.c: what a job reads and writes, by name and type */
extern void backfill_check_drops(bool restoring);
extern void backfill_check_alters(bool restoring);
extern void backfill_check_enum_rename(EventTriggerData *trigdata);

/* ddl_partitions.c: partitions that join or leave an upstream */
extern void backfill_partition_changes(EventTriggerData *trigdata);
extern void backfill_check_set_unlogged(EventTriggerData *trigdata);
extern void backfill_check_detach_concurrently(EventTriggerData *trigdata);
extern void backfill_check_partition_drops(void);

/* ddl_triggers.c: the job's triggers on its upstream */
extern void backfill_check_trigger_switches(EventTriggerData *trigdata);
extern void backfill_check_trigger_drops(void);

/* ddl_owners.c: a job's owner, DROP OWNED and REASSIGN OWNED */
extern void backfill_drop_owned(DropOwnedStmt *stmt);
extern void backfill_check_policy_drops(void);

#endif							/* BACKFILL_API_DDL_H */
