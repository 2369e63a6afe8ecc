-- Who may do what: a plain role runs its own jobs; others cannot see or
-- touch them; only the extension's owner writes the catalogs; executors run
-- as the job's owner.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE ROLE regress_bf_alice;
CREATE ROLE regress_bf_bob;
CREATE SCHEMA regress_bf_a AUTHORIZATION regress_bf_alice;
CREATE SCHEMA regress_bf_b AUTHORIZATION regress_bf_bob;

-- alice, no superuser, owns her upstream and runs a job over it
SET ROLE regress_bf_alice;
CREATE TABLE regress_bf_a.up (id int PRIMARY KEY, v text);
INSERT INTO regress_bf_a.up SELECT g, 'v' || g FROM generate_series(1, 50) g;
SELECT backfill.create_job('regress_bf_a.up_mv', 'regress_bf_a.up', chunk_size => 20) AS a_job \gset
-- user code on her downstream sees who the executor runs as
CREATE TABLE regress_bf_a.who (who name);
CREATE FUNCTION regress_bf_a.note_who() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_bf_a.who VALUES (current_user);
    RETURN NULL;
END $$;
CREATE TRIGGER note_who AFTER INSERT ON regress_bf_a.up_mv
    FOR EACH STATEMENT EXECUTE FUNCTION regress_bf_a.note_who();
CALL backfill.run_job(:a_job, 1);
UPDATE regress_bf_a.up SET v = 'by alice' WHERE id = 3;
SELECT job_id, kind, status, row_count FROM backfill.jobs;
SELECT count(*) AS vnodes FROM backfill.job_state(:a_job);
SELECT tablename, tableowner FROM pg_tables WHERE schemaname = 'backfill' ORDER BY tablename;
-- the catalogs are hers to read, not to write
UPDATE backfill.job SET status = 'finished';
DELETE FROM backfill.actor;
INSERT INTO backfill.job (job_id) VALUES (99);
SELECT pg_catalog.nextval('backfill.job_id_seq');
-- the trigger functions are not for her tables
CREATE TRIGGER fake AFTER INSERT ON regress_bf_a.up
    FOR EACH ROW EXECUTE FUNCTION backfill.capture_change('1');
-- a cdc job needs REPLICATION
SELECT backfill.create_job('regress_bf_a.up_cdc', 'regress_bf_a.up', kind => 'cdc');
RESET ROLE;

-- bob sees none of it and can touch none of it.  PUBLIC may not execute
-- _stop_and_lock_job: bob may here, so that what is tested is its own check
-- that the caller owns the job
GRANT EXECUTE ON FUNCTION backfill._stop_and_lock_job(bigint) TO regress_bf_bob;
SET ROLE regress_bf_bob;
SELECT count(*) AS jobs FROM backfill.jobs;
SELECT count(*) AS jobs FROM backfill.job;
SELECT count(*) AS actors FROM backfill.actor;
SELECT count(*) AS progress FROM backfill.ddl_progress;
SELECT count(*) AS workers FROM backfill.workers;
CALL backfill.run_job(:a_job);
SELECT backfill.cancel_job(:a_job);
SELECT backfill.drop_job(:a_job);
SELECT backfill.stop_job(:a_job);
SELECT backfill.alter_rate_limit(:a_job, 5);
SELECT backfill.reschedule(:a_job, 2);
SELECT backfill.recreate_job(:a_job);
SELECT * FROM backfill.verify_job(:a_job);
SELECT * FROM backfill.job_state(:a_job);
SELECT backfill.wait_job(:a_job);
-- nor through the internal functions
SELECT backfill._stop_and_lock_job(:a_job);
SELECT backfill._drop_slot(:a_job);
SELECT * FROM backfill.state_1;
SELECT * FROM backfill.changes_1;
INSERT INTO backfill.changes_1 VALUES (1);
-- nor alice's upstream
SELECT backfill.create_job('regress_bf_b.mv', 'regress_bf_a.up');
RESET ROLE;
REVOKE EXECUTE ON FUNCTION backfill._stop_and_lock_job(bigint) FROM regress_bf_bob;

-- with SELECT and TRIGGER on it, bob can make his own job over alice's table
GRANT USAGE ON SCHEMA regress_bf_a TO regress_bf_bob;
GRANT SELECT ON regress_bf_a.up TO regress_bf_bob;
SET ROLE regress_bf_bob;
SELECT backfill.create_job('regress_bf_b.mv', 'regress_bf_a.up');
RESET ROLE;
GRANT TRIGGER ON regress_bf_a.up TO regress_bf_bob;
SET ROLE regress_bf_bob;
SELECT backfill.create_job('regress_bf_b.mv', 'regress_bf_a.up', chunk_size => 20) AS b_job \gset
CALL backfill.run_job(:b_job, 1);
SELECT job_id, status, owner FROM backfill.jobs;
-- and cancel it, though the triggers on alice's table are not his to drop
SELECT backfill.recreate_job(:b_job) AS b_job2 \gset
CALL backfill.run_job(:b_job2);
SELECT job_id, status FROM backfill.jobs ORDER BY job_id;
SELECT * FROM backfill.verify_job(:b_job2);
SELECT backfill.drop_job(:b_job2);
RESET ROLE;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'regress_bf_a.up'::regclass ORDER BY tgname;

-- a superuser sees every job, and runs alice's as alice
SELECT job_id, owner FROM backfill.jobs ORDER BY job_id;
TRUNCATE regress_bf_a.who;
CALL backfill.run_job(:a_job);
SELECT DISTINCT who FROM regress_bf_a.who;
SELECT * FROM backfill.verify_job(:a_job);
SELECT status FROM backfill.jobs WHERE job_id = :a_job;

-- after the finish, a writer without rights on the downstream still keeps it
-- in step: the apply trigger writes as alice
GRANT UPDATE, SELECT ON regress_bf_a.up TO regress_bf_bob;
SET ROLE regress_bf_bob;
UPDATE regress_bf_a.up SET v = 'by bob' WHERE id = 4;
SELECT * FROM regress_bf_a.up_mv WHERE id = 4;
RESET ROLE;
SELECT * FROM regress_bf_a.up_mv WHERE id = 4;

-- what PUBLIC may execute: the API and the internal functions the views
-- call; not the trigger functions nor the other internal functions
SELECT p.oid::regprocedure AS function
  FROM pg_proc p
 WHERE p.pronamespace = 'backfill'::regnamespace
   AND NOT has_function_privilege('regress_bf_bob', p.oid, 'EXECUTE')
 ORDER BY p.oid::regprocedure::text;
-- no SECURITY DEFINER function; every SQL function pins its search_path
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'backfill'::regnamespace AND p.prosecdef;
SELECT p.oid::regprocedure AS without_search_path
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'backfill'::regnamespace AND l.lanname IN ('sql', 'plpgsql')
   AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%');
-- row-level security on both catalogs
SELECT relname, relrowsecurity FROM pg_class
 WHERE oid IN ('backfill.job'::regclass, 'backfill.actor'::regclass) ORDER BY relname;

-- row-level security that applies to the owner would make the copy the
-- rows the owner sees: create_job refuses it (row_security tests the rest)
CREATE TABLE regress_bf_b.rls (id int PRIMARY KEY, v text);
INSERT INTO regress_bf_b.rls SELECT g, 'v' || g FROM generate_series(1, 30) g;
ALTER TABLE regress_bf_b.rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY alice_sees_ten ON regress_bf_b.rls FOR SELECT TO regress_bf_alice USING (id <= 10);
GRANT USAGE ON SCHEMA regress_bf_b TO regress_bf_alice;
GRANT SELECT, TRIGGER ON regress_bf_b.rls TO regress_bf_alice;
SET ROLE regress_bf_alice;
SELECT backfill.create_job('regress_bf_a.rls_mv', 'regress_bf_b.rls', chunk_size => 4);
SELECT to_regclass('regress_bf_a.rls_mv') AS downstream;
RESET ROLE;

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
DROP SCHEMA regress_bf_a CASCADE;
DROP SCHEMA regress_bf_b CASCADE;
DROP ROLE regress_bf_alice;
DROP ROLE regress_bf_bob;
