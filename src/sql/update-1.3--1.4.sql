/* update-1.3--1.4.sql: from version 1.3 to 1.4 */

-- ALTER EXTENSION backfill UPDATE reads the script assembled from this file
-- (scripts/assemble_sql.sh), as CREATE EXTENSION reads install.sql's.  What
-- a 1.3 catalog needs first is written here: the objects 1.4 drops or whose
-- signature or result it changes, the columns it alters.  Then the parts of
-- install.sql that may be read again over a 1.3 catalog: every function (the
-- parts say CREATE OR REPLACE), the views, and the catalogs, comments and
-- policies new in 1.4.  Not the tables, sequences and event triggers of 1.3,
-- which are there already.  sql/upgrade.sql compares a catalog walked up from
-- 1.0 with a new one, member by member.

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.4'" to load this file. \quit

-- What version 1.3 let a job's owner put on the job's state and change
-- tables (1.4 refuses it: functions/job_tables.sql) stays, and runs as that
-- owner only; say so, for its owner or a superuser to drop
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT j.job_id, o.what
          FROM backfill.job j
          CROSS JOIN LATERAL (
                SELECT pg_catalog.format('trigger %I on %s', t.tgname, t.tgrelid::pg_catalog.regclass) AS what
                  FROM pg_catalog.pg_trigger t
                 WHERE t.tgrelid OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                   AND NOT t.tgisinternal
                UNION ALL
                SELECT pg_catalog.format('rule %I on %s', w.rulename, w.ev_class::pg_catalog.regclass)
                  FROM pg_catalog.pg_rewrite w
                 WHERE w.ev_class OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                UNION ALL
                SELECT pg_catalog.format('policy %I on %s', p.polname, p.polrelid::pg_catalog.regclass)
                  FROM pg_catalog.pg_policy p
                 WHERE p.polrelid OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                   AND p.polname OPERATOR(pg_catalog.<>) pg_catalog.format('backfill_job_%s_owner', j.job_id)
                UNION ALL
                SELECT pg_catalog.format('row-level security on %s', c.oid::pg_catalog.regclass)
                  FROM pg_catalog.pg_class c
                 WHERE c.oid OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                   AND c.relrowsecurity
                UNION ALL
                SELECT pg_catalog.format('table %s inheriting from %s', h.inhrelid::pg_catalog.regclass,
                                         h.inhparent::pg_catalog.regclass)
                  FROM pg_catalog.pg_inherits h
                 WHERE h.inhparent OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])) o
         WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled'
         ORDER BY j.job_id, o.what
    LOOP
        RAISE WARNING 'backfill job % has a % that the extension did not make', r.job_id, r.what
            USING DETAIL = 'A job''s state and change tables are the extension''s; it runs what their owner put there as that owner only.',
                  HINT = 'Drop it; the extension refuses new ones.';
    END LOOP;
END
$$;

-- what reschedule and the start of background workers called when they
-- were SQL; they are C, and nothing calls these any more
DROP FUNCTION backfill._check_reschedule(bigint);
DROP FUNCTION backfill._check_workers(bigint, integer);
DROP FUNCTION backfill._rebuild_actors(bigint, integer);

-- indexes now defaults to NULL: a job that copies the whole of a table
-- gives its downstream the upstream's NOT NULL columns, CHECK, UNIQUE and
-- EXCLUDE constraints and other indexes (src/copy/index_build.c); false
-- still makes a bare copy.  A job made with indexes NULL says so, and
-- recreate_job passes it on
ALTER TABLE backfill.job ALTER COLUMN indexes DROP NOT NULL;

-- accept and verify join the arguments: the function is made again, with
-- the rights it had (EXECUTE to PUBLIC, as in 1.3) and its comment.  With
-- verify, the checksum verify_job runs just before the lock is taken (the
-- switchover, for a remote job), and a difference refuses the cutover
DROP FUNCTION backfill.cutover(bigint, text, interval, integer, boolean);

-- what only cancel_job, drop_job, recreate_job and alter_rate_limit
-- called, which are C now.  _create_job_as stays, as
-- _report_progress does: the one checks its caller as create_job's does for
-- a job's owner, the other shows what wait_job sends
DROP FUNCTION backfill._delete_job(bigint);
DROP FUNCTION backfill._set_rate_limit(bigint, integer);
DROP FUNCTION backfill._copy_names(bigint, bigint);
DROP FUNCTION backfill._drop_triggers(bigint);
DROP FUNCTION backfill._drop_kind_objects(bigint);

-- verify_job takes a method and the size of its ranges, and is C
DROP FUNCTION backfill.verify_job(bigint);

-- what ran its comparison as the job's owner: verify_job does it itself
DROP FUNCTION backfill._verify_rows(bigint, text);

-- stop_job returns whether it stopped workers (1.3: void, and a NOTICE
-- when there were none, which it still raises)
DROP FUNCTION backfill.stop_job(bigint);

-- what stop_job called when it was PL/pgSQL; it is C, and so is alter_job
DROP FUNCTION backfill._set_foreground(bigint);
DROP FUNCTION backfill._stop_workers(bigint, boolean);

-- then every part that can be read again over a 1.3 catalog
\ir catalog/comments.sql
\ir catalog/job_settings.sql
\ir catalog/verification.sql
\ir catalog/monitor_policies.sql
\ir functions/keys.sql
\ir functions/capture.sql
\ir functions/workers.sql
\ir functions/job_rows.sql
\ir functions/slots.sql
\ir functions/ddl.sql
\ir functions/job_tables.sql
\ir functions/risingwave_text.sql
\ir functions/background.sql
\ir functions/jobs.sql
\ir functions/switchover.sql
\ir functions/cutover.sql
\ir functions/cutover_lock.sql
\ir functions/observe.sql
\ir functions/monitoring.sql
\ir functions/verify.sql
\ir functions/vocabulary.sql
\ir functions/view_jobs.sql
\ir views.sql
