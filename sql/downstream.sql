-- What the downstream may carry.  Chunks go in in batches (sink.c) while an
-- INSERT would do nothing more than add the rows and their index entries;
-- anything more, and they go through INSERT.  Either way the downstream ends
-- up as an INSERT would leave it, with the same errors.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
CREATE EXTENSION amcheck;

CREATE ROLE regress_bf_sink;
CREATE SCHEMA regress_bf_s AUTHORIZATION regress_bf_sink;
SET ROLE regress_bf_sink;
SET search_path = regress_bf_s;
-- rows of 10 kB that do not compress, stored out of line
CREATE TABLE up (id int PRIMARY KEY, v text, n int, big text);
INSERT INTO up SELECT g, 'v' || g, g % 7,
       CASE WHEN g % 50 = 0 THEN (SELECT string_agg(md5(g::text || i), '') FROM generate_series(1, 320) i) END
  FROM generate_series(1, 400) g;

-- indexes and constraints added to the downstream: all its indexes hold
-- every row, the constraints are checked
SELECT backfill.create_job('mv', 'up', chunk_size => 64) AS job \gset
SELECT backfill.create_job('mv_snap', 'up', kind => 'snapshot', chunk_size => 64) AS snap \gset
CALL backfill.run_job(:job, 1);
CALL backfill.run_job(:snap, 1);
CREATE INDEX mv_expr ON mv (lower(v)) WHERE n > 2;
CREATE UNIQUE INDEX mv_v ON mv (v);
ALTER TABLE mv ADD CONSTRAINT small_n CHECK (n < 6) NOT VALID;
CREATE INDEX mv_snap_expr ON mv_snap (lower(v)) WHERE n > 2;
ALTER TABLE mv_snap ADD CONSTRAINT small_n CHECK (n < 6) NOT VALID;
CALL backfill.run_job(:job, 1);
CALL backfill.run_job(:snap, 1);
ALTER TABLE mv DROP CONSTRAINT small_n;
ALTER TABLE mv_snap DROP CONSTRAINT small_n;
UPDATE up SET v = 'v1' WHERE id = 399;
CALL backfill.run_job(:job);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :job;
UPDATE up SET v = 'v399' WHERE id = 399;
CALL backfill.run_job(:job);
CALL backfill.run_job(:snap);
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM backfill.verify_job(:snap);
SELECT count(*), count(big), sum(length(big)) FROM mv;
SELECT count(*), count(big), sum(length(big)) FROM mv_snap;

-- a column added and dropped again leaves a hole in the row (dropping it is
-- refused while the job exists, but not where event triggers do not fire, as
-- a superuser may arrange with session_replication_role)
SELECT backfill.create_job('mv_hole', 'up', chunk_size => 64) AS job \gset
CALL backfill.run_job(:job, 1);
ALTER TABLE mv_hole ADD COLUMN gone int DEFAULT 5;
RESET ROLE;
SET session_replication_role = replica;
ALTER TABLE mv_hole DROP COLUMN gone;
RESET session_replication_role;
SET ROLE regress_bf_sink;
UPDATE up SET n = n + 10 WHERE id % 40 = 0;
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);
SELECT count(*) FROM mv_hole WHERE n >= 10;

RESET ROLE;
SELECT i, public.bt_index_check(i, true)
  FROM unnest('{mv_pkey,mv_expr,mv_v,mv_snap_pkey,mv_snap_expr,mv_hole_pkey}'::regclass[]) i;
SET ROLE regress_bf_sink;

-- a column the job does not fill gets its default, through INSERT
SELECT backfill.create_job('mv_extra', 'up', columns => '{id,v}', chunk_size => 64) AS job \gset
CALL backfill.run_job(:job, 1);
ALTER TABLE mv_extra ADD COLUMN added_at int DEFAULT 7;
ALTER TABLE mv_extra ALTER COLUMN added_at SET DEFAULT 8;
CALL backfill.run_job(:job);
SELECT added_at, count(*) FROM mv_extra GROUP BY 1 ORDER BY 1;

-- row triggers fire once per row, through INSERT, for every kind
CREATE TABLE seen (job text, id int);
CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_bf_s.seen VALUES (TG_TABLE_NAME, NEW.id);
    RETURN NEW;
END $$;
SELECT backfill.create_job('mv_trig_' || k, 'up', kind => k, chunk_size => 64)
  FROM unnest('{no_shuffle,arrangement,snapshot}'::text[]) k;
CREATE TRIGGER note BEFORE INSERT ON mv_trig_no_shuffle FOR EACH ROW EXECUTE FUNCTION note();
CREATE TRIGGER note BEFORE INSERT ON mv_trig_arrangement FOR EACH ROW EXECUTE FUNCTION note();
CREATE TRIGGER note BEFORE INSERT ON mv_trig_snapshot FOR EACH ROW EXECUTE FUNCTION note();
SELECT job_id AS j FROM backfill.jobs WHERE job_name = 'mv_trig_no_shuffle' \gset
CALL backfill.run_job(:j);
SELECT job_id AS j FROM backfill.jobs WHERE job_name = 'mv_trig_arrangement' \gset
CALL backfill.run_job(:j);
SELECT job_id AS j FROM backfill.jobs WHERE job_name = 'mv_trig_snapshot' \gset
CALL backfill.run_job(:j);
SELECT job, count(*), count(DISTINCT id) FROM seen GROUP BY 1 ORDER BY 1;

-- row-level security the owner is subject to, through INSERT
SELECT backfill.create_job('mv_rls', 'up', chunk_size => 64) AS job \gset
CALL backfill.run_job(:job, 1);
ALTER TABLE mv_rls ENABLE ROW LEVEL SECURITY;
ALTER TABLE mv_rls FORCE ROW LEVEL SECURITY;
CREATE POLICY all_rows ON mv_rls USING (true) WITH CHECK (id <= 300);
CALL backfill.run_job(:job);
ALTER TABLE mv_rls NO FORCE ROW LEVEL SECURITY;
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);

-- the owner's privileges on the downstream are those of an INSERT
SELECT backfill.create_job('mv_priv', 'up', chunk_size => 64) AS job \gset
CALL backfill.run_job(:job, 1);
REVOKE INSERT ON mv_priv FROM regress_bf_sink;
CALL backfill.run_job(:job);
GRANT INSERT ON mv_priv TO regress_bf_sink;
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);

SELECT job_name, kind, status, row_count FROM backfill.jobs ORDER BY job_id;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
RESET ROLE;
RESET search_path;
DROP SCHEMA regress_bf_s CASCADE;
DROP ROLE regress_bf_sink;
DROP EXTENSION amcheck;

-- the change table is a heap whatever the default table access method says:
-- the capture trigger writes it with heap functions
CREATE ACCESS METHOD heap_alias TYPE TABLE HANDLER heap_tableam_handler;
CREATE TABLE am_up (id int PRIMARY KEY, v text);
SET default_table_access_method = heap_alias;
SELECT backfill.create_job('am_mv', 'am_up') AS am_job \gset
RESET default_table_access_method;
SELECT a.amname FROM backfill.job j JOIN pg_class c ON c.oid = j.change_table
  JOIN pg_am a ON a.oid = c.relam WHERE j.job_id = :am_job;
INSERT INTO am_up VALUES (1, 'captured');
SELECT backfill.drop_job(:am_job);
DROP TABLE am_up;
DROP ACCESS METHOD heap_alias;
