/*
 * src/sql/event_triggers.sql
 *	  The event triggers that guard a job's tables against DDL and DROP
 *	  EXTENSION.
 *
 * Part of the install script (install.sql) only: a catalog upgraded from
 * 1.3 has these already.
 */

-- The event triggers fire in the order of their names.  sql_drop: dropping
-- a job's tables or the columns it reads is refused.  ALTER TABLE and
-- CREATE TABLE at ddl_command_end: a partition created, attached or
-- detached under a job's upstream; ALTER TABLE at ddl_command_start: a
-- concurrent detach, refused before it starts.  ALTER TYPE: RENAME VALUE of
-- an enum that the key of an unfinished job with range vnodes contains is
-- refused (the bounds are keys stored as text, which the renamed label
-- would make unreadable).  DROP OWNED drops a role's jobs as it drops its
-- tables, and first gives a job whose tables REASSIGN OWNED gave to another
-- role to that role.
CREATE EVENT TRIGGER backfill_ddl_drop ON sql_drop
    EXECUTE FUNCTION backfill._on_ddl();

CREATE EVENT TRIGGER backfill_ddl_alter ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE FOREIGN TABLE')
    EXECUTE FUNCTION backfill._on_ddl();

CREATE EVENT TRIGGER backfill_ddl_start ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION backfill._on_ddl();

CREATE EVENT TRIGGER backfill_ddl_type ON ddl_command_start
    WHEN TAG IN ('ALTER TYPE')
    EXECUTE FUNCTION backfill._on_ddl();

CREATE EVENT TRIGGER backfill_ddl_owned ON ddl_command_start
    WHEN TAG IN ('DROP OWNED')
    EXECUTE FUNCTION backfill._on_ddl();

CREATE EVENT TRIGGER backfill_drop_extension ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION')
    EXECUTE FUNCTION backfill._on_drop_extension();
