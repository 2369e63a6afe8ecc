/*
 * src/sql/functions/job_tables.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- A job's own tables: the extension's, not a place for its owner's code
-- ---------------------------------------------------------------------------

-- A job's state and change tables and its image type belong to its owner,
-- but only the extension changes them: what created or altered a trigger,
-- a rule, a policy, an index, statistics, a column or an inheritance on
-- them, or altered the type, is refused at its end (src/api/ddl_job_tables.c)
CREATE OR REPLACE FUNCTION backfill._on_job_table_ddl()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_on_job_table_ddl'
LANGUAGE C
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._on_job_table_ddl() IS
'Internal: event trigger that refuses triggers, rules, policies, indexes, statistics and ALTER TABLE on a job''s state and change tables, tables inheriting from them, and ALTER TYPE of its image type, unless run by a role with the privileges of the extension''s owner.';
REVOKE ALL ON FUNCTION backfill._on_job_table_ddl() FROM PUBLIC;

CREATE EVENT TRIGGER backfill_ddl_job_tables ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE TRIGGER', 'ALTER TRIGGER',
                 'CREATE RULE', 'ALTER RULE', 'CREATE POLICY', 'ALTER POLICY',
                 'CREATE INDEX', 'ALTER INDEX', 'CREATE STATISTICS', 'ALTER STATISTICS',
                 'ALTER TYPE')
    EXECUTE FUNCTION backfill._on_job_table_ddl();

-- A partition created or attached under a job's upstream gets clones of
-- the job's row triggers, which PostgreSQL makes only for a role that may
-- execute their functions: granted to the role that runs the command (it
-- owns the partitioned table), since each function checks where it fires
CREATE OR REPLACE FUNCTION backfill._before_partition_ddl()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_before_partition_ddl'
LANGUAGE C
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._before_partition_ddl() IS
'Internal: event trigger that, before a partition is created or attached under a job''s upstream, grants the functions of the job''s row triggers to the role that runs the command, for PostgreSQL to clone those triggers.';
REVOKE ALL ON FUNCTION backfill._before_partition_ddl() FROM PUBLIC;

CREATE EVENT TRIGGER backfill_ddl_partition_start ON ddl_command_start
    WHEN TAG IN ('CREATE TABLE', 'CREATE FOREIGN TABLE', 'ALTER TABLE')
    EXECUTE FUNCTION backfill._before_partition_ddl();
