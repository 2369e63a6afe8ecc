/* backfill--1.2--1.3.sql */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.3'" to load this file. \quit

-- ---- a job's owner in pg_shdepend (src/catalog.c, src/ddl.c) ----

-- DROP OWNED drops a role's jobs as it drops its tables, and first gives a
-- job whose tables REASSIGN OWNED gave to another role to that role
CREATE EVENT TRIGGER backfill_ddl_owned ON ddl_command_start
    WHEN TAG IN ('DROP OWNED')
    EXECUTE FUNCTION backfill._on_ddl();
COMMENT ON FUNCTION backfill._on_ddl() IS
'Internal: event trigger that refuses dropping a job''s tables, triggers or owner''s policy, dropping, renaming or retyping the columns it reads, and an unlogged table under a cdc job; keeps its downstream right when partitions of its upstream are created, attached or detached; drops or moves a role''s jobs at DROP OWNED.';

-- each job records its owner with a policy on its state table, which DROP
-- ROLE sees and REASSIGN OWNED leaves alone: the jobs made by an older
-- library too (a newer one makes it even under an older catalog)
DO $$
DECLARE
    j record;
BEGIN
    FOR j IN SELECT job_id, state_table, owner FROM backfill.job
              WHERE state_table IS NOT NULL
                AND EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) state_table)
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_policy p
                                 WHERE p.polrelid OPERATOR(pg_catalog.=) state_table
                                   AND p.polname OPERATOR(pg_catalog.=)
                                       pg_catalog.format('backfill_job_%s_owner', job_id)::pg_catalog.name)
              ORDER BY job_id
    LOOP
        EXECUTE pg_catalog.format('CREATE POLICY %I ON %s FOR SELECT TO %s USING (false)',
                                  pg_catalog.format('backfill_job_%s_owner', j.job_id),
                                  j.state_table, j.owner);
    END LOOP;
END
$$;
