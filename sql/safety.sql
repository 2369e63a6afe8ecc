-- Writers the job must not miss or trust: replica-role sessions, a changed
-- key, writers without rights, a hostile search_path; inputs refused early.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE s (id int PRIMARY KEY, v text);
INSERT INTO s SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT backfill.create_job('s_mv', 's', chunk_size => 40) AS job \gset
CALL backfill.run_job(:job, 1);

-- a replica-role session (a subscriber's apply, a restore) is captured too
SET session_replication_role = replica;
UPDATE s SET v = 'written as replica' WHERE id IN (5, 60);
RESET session_replication_role;
CALL backfill.run_job(:job);
SELECT * FROM s_mv WHERE id IN (5, 60) ORDER BY id;
SET session_replication_role = replica;
UPDATE s SET v = 'replica after the finish' WHERE id = 7;
RESET session_replication_role;
SELECT * FROM s_mv WHERE id = 7;
SELECT * FROM backfill.verify_job(:job);

-- TRUNCATE: refused while backfilling, followed once finished
CREATE TABLE tr (id int PRIMARY KEY, v text);
INSERT INTO tr SELECT g, 'v' || g FROM generate_series(1, 30) g;
SELECT backfill.create_job('tr_mv', 'tr', chunk_size => 10) AS tjob \gset
CALL backfill.run_job(:tjob, 1);
TRUNCATE tr;
CALL backfill.run_job(:tjob);
TRUNCATE tr;
INSERT INTO tr VALUES (1, 'after the truncate');
SELECT * FROM tr_mv;
SELECT * FROM backfill.verify_job(:tjob);
SELECT backfill.drop_job(:tjob);
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgrelid = 'tr'::regclass;

-- a writer with rights on the upstream only, and a search_path of its own
CREATE ROLE regress_backfill_writer;
GRANT INSERT, UPDATE, DELETE, SELECT ON s TO regress_backfill_writer;
CREATE SCHEMA regress_evil;
GRANT USAGE, CREATE ON SCHEMA regress_evil TO regress_backfill_writer;
SET ROLE regress_backfill_writer;
CREATE FUNCTION regress_evil.int4eq_evil(int, int) RETURNS boolean
    LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_evil.= (LEFTARG = int, RIGHTARG = int, FUNCTION = regress_evil.int4eq_evil);
SET search_path = regress_evil, public;
INSERT INTO s VALUES (1000, 'by the writer');
UPDATE s SET v = 'updated by the writer' WHERE id = 8;
DELETE FROM s WHERE id = 9;
RESET search_path;
RESET ROLE;
-- the downstream took exactly those rows, matched with pg_catalog's =
SELECT * FROM s_mv WHERE id IN (8, 9, 1000) ORDER BY id;
SELECT count(*) FROM s_mv;
SELECT * FROM backfill.verify_job(:job);
DROP SCHEMA regress_evil CASCADE;

-- the key changes under a job: refused (ddl.sql); and where the event
-- trigger does not fire (disabled, or single-user mode), writes and runs are
-- refused, so nothing is misread
CREATE TABLE k (id int PRIMARY KEY, v text);
INSERT INTO k SELECT g, 'v' || g FROM generate_series(1, 50) g;
SELECT backfill.create_job('k_mv', 'k', chunk_size => 20) AS kjob \gset
CALL backfill.run_job(:kjob, 1);
ALTER TABLE k ALTER COLUMN id TYPE bigint;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
ALTER TABLE k ALTER COLUMN id TYPE bigint;
ALTER EVENT TRIGGER backfill_ddl_alter ENABLE;
INSERT INTO k VALUES (51, 'after the retype');
CALL backfill.run_job(:kjob);
SELECT backfill.cancel_job(:kjob);
INSERT INTO k VALUES (51, 'after the cancel');

-- refused before anything is locked or created: no TRIGGER privilege
GRANT USAGE ON SCHEMA backfill TO regress_backfill_writer;
SET ROLE regress_backfill_writer;
SELECT backfill.create_job('x', 's');
SELECT backfill.create_job('x', 'pg_authid');
RESET ROLE;
REVOKE USAGE ON SCHEMA backfill FROM regress_backfill_writer;
CREATE TABLE vb (b varbit PRIMARY KEY);
SELECT backfill.create_job('x', 'vb');
CREATE COLLATION regress_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE ci (t text COLLATE regress_ci PRIMARY KEY);
SELECT backfill.create_job('x', 'ci');
SELECT count(*) AS jobs FROM backfill.job WHERE job_name = 'x';

DROP TABLE vb, ci;
DROP COLLATION regress_ci;
SELECT backfill.drop_job(job_id) FROM backfill.job;
REVOKE ALL ON s FROM regress_backfill_writer;
DROP ROLE regress_backfill_writer;
