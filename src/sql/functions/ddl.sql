/*
 * src/sql/functions/ddl.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- DDL on a job's tables (src/api/event_trigger.c, ddl_*.c)
-- ---------------------------------------------------------------------------

-- DDL that would break a job is refused while it exists
CREATE OR REPLACE FUNCTION backfill._on_ddl()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_on_ddl'
LANGUAGE C;
COMMENT ON FUNCTION backfill._on_ddl() IS
'Internal: event trigger that refuses dropping a job''s tables, triggers or owner''s policy, dropping, renaming or retyping the columns it reads, and an unlogged table under a cdc job; keeps its downstream right when partitions of its upstream are created, attached or detached; drops or moves a role''s jobs at DROP OWNED.';
REVOKE ALL ON FUNCTION backfill._on_ddl() FROM PUBLIC;

-- DROP EXTENSION ... CASCADE drops the jobs' tables but cannot run
-- drop_job: at commit, if the extension is gone, its slots go too
CREATE OR REPLACE FUNCTION backfill._on_drop_extension()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_on_drop_extension'
LANGUAGE C
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._on_drop_extension() IS
'Internal: event trigger that drops the cdc jobs'' replication slots once extension backfill has been dropped.';
REVOKE ALL ON FUNCTION backfill._on_drop_extension() FROM PUBLIC;
