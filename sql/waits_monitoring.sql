-- Waits and monitoring roles: wait_job is refused in the transaction that
-- holds the job's lock; CALL backfill.wait_for_job() waits as wait_job does;
-- a member of pg_monitor sees every job of the database in the views,
-- without the values of other roles' upstreams.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;

CREATE ROLE regress_wm_alice;
CREATE ROLE regress_wm_mon IN ROLE pg_monitor;
CREATE ROLE regress_wm_plain;
CREATE SCHEMA regress_wm_a AUTHORIZATION regress_wm_alice;

-- a superuser's job, with a filter, half run
CREATE TABLE wm_up (id int PRIMARY KEY, v text);
INSERT INTO wm_up SELECT g, 'v' || g FROM generate_series(1, 500) g;
SELECT backfill.create_job('wm_down', 'wm_up', chunk_size => 50, filter => 'id <> 4242') AS su_job \gset
CALL backfill.run_job(:su_job, 1);
-- alice's job, which failed on a key
SET ROLE regress_wm_alice;
CREATE TABLE regress_wm_a.up (id int PRIMARY KEY, v text);
INSERT INTO regress_wm_a.up SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT backfill.create_job('regress_wm_a.down', 'regress_wm_a.up', filter => 'id > 7') AS a_job \gset
RESET ROLE;
UPDATE backfill.job SET status = 'failed', last_error = 'duplicate key value violates unique constraint',
       last_error_detail = 'Key (id)=(42) already exists.', last_sqlstate = '23505'
 WHERE job_id = :a_job;
-- what the owners see
SELECT job_id = :su_job AS su, kind, status, row_count > 0 AS copied, last_error
  FROM backfill.jobs WHERE job_id IN (:su_job, :a_job) ORDER BY job_id;
SELECT vnode_bounds IS NOT NULL AS su_bounds FROM backfill.job WHERE job_id = :su_job;

-- 1. a member of pg_monitor: every job, its progress, no value of the
-- upstream
SET ROLE regress_wm_mon;
SELECT job_id = :su_job AS su, job_name, kind, status, owner = 'regress_wm_alice'::regrole AS alices, row_count > 0 AS copied,
       progress IS NOT NULL AS has_progress, last_error, worker_pids
  FROM backfill.jobs WHERE job_id IN (:su_job, :a_job) ORDER BY job_id;
SELECT count(*) AS actors FROM backfill.actor WHERE job_id IN (:su_job, :a_job);
SELECT ddl_id = :su_job AS su, ddl_statement, create_type, progress IS NOT NULL AS has_progress
  FROM backfill.ddl_progress WHERE ddl_id IN (:su_job, :a_job);
SELECT job_id = :su_job AS su, filter, expressions, vnode_bounds, remote_splits,
       last_error, last_error_detail, ddl_statement, last_sqlstate, pk_columns
  FROM backfill._monitored_jobs() WHERE job_id IN (:su_job, :a_job) ORDER BY job_id;
-- the catalog table and the functions that show keys still hide the jobs
SELECT count(*) AS jobs FROM backfill.job WHERE job_id IN (:su_job, :a_job);
\set VERBOSITY sqlstate
SELECT * FROM backfill.job_state(:su_job);
SELECT backfill.wait_job(:su_job);
CALL backfill.wait_for_job(:a_job);
\set VERBOSITY default
RESET ROLE;

-- 2. a plain role sees nothing of the others' jobs
SET ROLE regress_wm_plain;
SELECT count(*) AS jobs FROM backfill.jobs WHERE job_id IN (:su_job, :a_job);
SELECT count(*) AS monitored FROM backfill._monitored_jobs();
SELECT count(*) AS actors FROM backfill.actor WHERE job_id IN (:su_job, :a_job);
SELECT count(*) AS ddl FROM backfill.ddl_progress WHERE ddl_id IN (:su_job, :a_job);
RESET ROLE;

-- 3. no wait in the transaction that holds the job's lock: its workers
-- would wait for its end (reschedule takes the lock as start_job does)
-- (the job's id as N)
CREATE FUNCTION pg_temp.error_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    msg text; detail text; hint text;
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    RETURN regexp_replace(format(E'%s: %s\nDETAIL: %s\nHINT: %s', SQLSTATE, msg, detail, hint),
                          '(job |wait_job\(|start_job\(|run_job\()\d+', '\1N', 'g');
END
$$;
BEGIN;
SELECT backfill.reschedule(:su_job, 2);
SELECT pg_temp.error_of(format('SELECT backfill.wait_job(%s)', :su_job));
ROLLBACK;
SELECT backfill.wait_job(NULL::bigint);
SELECT backfill.wait_job(-1);

-- 4. CALL backfill.wait_for_job(): as wait_job, outside a transaction block
BEGIN;
CALL backfill.wait_for_job(:su_job);
ROLLBACK;
CALL backfill.wait_for_job(NULL);
CALL backfill.wait_for_job(-1);
\set VERBOSITY sqlstate
CALL backfill.wait_for_job(:su_job);
\set VERBOSITY default
SELECT pg_temp.error_of(format('SELECT backfill.wait_job(%s)', :su_job));
CALL backfill.run_job(:su_job);
CALL backfill.wait_for_job(:su_job);
SELECT backfill.wait_job(:su_job);
CALL backfill.wait_for_job(:a_job);

SELECT backfill.drop_job(:su_job), backfill.drop_job(:a_job);
DROP TABLE wm_up;
DROP SCHEMA regress_wm_a CASCADE;
DROP ROLE regress_wm_alice, regress_wm_mon, regress_wm_plain;
