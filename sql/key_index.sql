-- Tables without a primary key, keyed by a unique index over NOT NULL
-- columns (src/lib/key_index.c): each kind, with writes between barriers,
-- verified, cut over and finished; the tables refused; the key that changes
-- under a job.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;   -- one chunk per barrier
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

-- which index is the key: the replica identity index, else the unique
-- index over NOT NULL columns with the fewest columns, then the oldest
CREATE TABLE ki_pick (a int NOT NULL, b int NOT NULL, c int NOT NULL, d int, e int NOT NULL);
CREATE UNIQUE INDEX ki_pick_ab ON ki_pick (a, b);
CREATE UNIQUE INDEX ki_pick_d ON ki_pick (d);                        -- nullable
CREATE UNIQUE INDEX ki_pick_c_partial ON ki_pick (c) WHERE c > 0;    -- partial
CREATE UNIQUE INDEX ki_pick_expr ON ki_pick ((c + 1));               -- an expression
CREATE UNIQUE INDEX ki_pick_cb ON ki_pick (c, b);
SELECT backfill.create_job('ki_pick_1', 'ki_pick') AS job \gset
SELECT pk_columns FROM backfill.job WHERE job_id = :job;
SELECT backfill.drop_job(:job);
CREATE UNIQUE INDEX ki_pick_e ON ki_pick (e);
SELECT backfill.create_job('ki_pick_2', 'ki_pick') AS job \gset
SELECT pk_columns FROM backfill.job WHERE job_id = :job;
SELECT backfill.drop_job(:job);
ALTER TABLE ki_pick REPLICA IDENTITY USING INDEX ki_pick_cb;
SELECT backfill.create_job('ki_pick_3', 'ki_pick') AS job \gset
SELECT pk_columns FROM backfill.job WHERE job_id = :job;
-- the downstream's primary key is on those columns
SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
 WHERE conrelid = 'ki_pick_3'::regclass AND contype = 'p';
SELECT backfill.drop_job(:job);

-- refused: no unique index, a nullable one, a partial one, a deferrable one
CREATE TABLE ki_none (a int NOT NULL, b text);
SELECT backfill.create_job('x', 'ki_none');
CREATE TABLE ki_nullable (a int UNIQUE, b text);
SELECT backfill.create_job('x', 'ki_nullable');
CREATE TABLE ki_partial (a int NOT NULL, b text);
CREATE UNIQUE INDEX ki_partial_a ON ki_partial (a) WHERE a > 0;
SELECT backfill.create_job('x', 'ki_partial');
CREATE TABLE ki_deferrable (a int NOT NULL UNIQUE DEFERRABLE, b text);
SELECT backfill.create_job('x', 'ki_deferrable');
-- a partitioned table is keyed by its primary key only
CREATE TABLE ki_parted (a int NOT NULL, b text) PARTITION BY RANGE (a);
CREATE UNIQUE INDEX ki_parted_a ON ki_parted (a);
SELECT backfill.create_job('x', 'ki_parted');
SELECT count(*) AS jobs FROM backfill.job;

-- kind arrangement: a unique index over NOT NULL columns, writes between barriers
CREATE TABLE ki_arr (code text NOT NULL, n int NOT NULL, v text, note text UNIQUE);
CREATE UNIQUE INDEX ki_arr_key ON ki_arr (code, n);
INSERT INTO ki_arr SELECT 'c' || (g % 3), g, 'v' || g FROM generate_series(1, 60) g;
SELECT backfill.create_job('ki_arr_new', 'ki_arr', chunk_size => 10) AS job \gset
SELECT pk_columns FROM backfill.job WHERE job_id = :job;
CALL backfill.run_job(:job, 2);
UPDATE ki_arr SET v = 'changed' WHERE n IN (1, 30, 59);
UPDATE ki_arr SET n = 1000 WHERE n = 2;               -- the key changes
DELETE FROM ki_arr WHERE n IN (3, 40);
INSERT INTO ki_arr VALUES ('c0', 0, 'new below'), ('zz', 2000, 'new above');
SELECT * FROM backfill.verify_job(:job);
CALL backfill.run_job(:job, 2);
UPDATE ki_arr SET v = 'again', note = 'noted' WHERE n = 30;
DELETE FROM ki_arr WHERE code = 'c1' AND n < 20;
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM (TABLE ki_arr EXCEPT TABLE ki_arr_new) x) AS only_up,
       (SELECT count(*) FROM (TABLE ki_arr_new EXCEPT TABLE ki_arr) x) AS only_down,
       (SELECT count(*) FROM ki_arr_new) AS downstream;
-- finished: the apply trigger upserts on the key
UPDATE ki_arr SET v = 'after finish' WHERE n = 5;
UPDATE ki_arr SET code = 'moved' WHERE n = 6;
DELETE FROM ki_arr WHERE n = 7;
SELECT * FROM ki_arr_new WHERE n IN (5, 6, 7) ORDER BY n;
SELECT * FROM backfill.verify_job(:job);
-- the cutover: the new table (its primary key on the key) takes the name
SELECT state, old_table, rollback_possible FROM backfill.cutover(:job);
SELECT c.relname, i.indisprimary, pg_get_indexdef(i.indexrelid) AS def
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'ki_arr'::regclass ORDER BY 1;
INSERT INTO ki_arr VALUES ('after', 1, 'cut over');
DELETE FROM ki_arr WHERE n = 8;
SELECT count(*) AS old_rows, count(*) FILTER (WHERE code = 'after') AS new_row
  FROM ki_arr_before_cutover_:job;
SELECT backfill.finish_cutover(:job);
SELECT to_regclass('ki_arr_before_cutover_' || :job) AS old_table, count(*) AS rows FROM ki_arr;

-- kind snapshot
CREATE TABLE ki_snap (k1 int NOT NULL, k2 text NOT NULL, v int, UNIQUE (k1, k2));
INSERT INTO ki_snap SELECT g, 'x', g FROM generate_series(1, 40) g;
SELECT backfill.create_job('ki_snap_new', 'ki_snap', kind => 'snapshot', chunk_size => 10) AS job \gset
CALL backfill.run_job(:job, 1);
UPDATE ki_snap SET v = -v WHERE k1 IN (1, 20, 39);
UPDATE ki_snap SET k2 = 'y' WHERE k1 = 2;
DELETE FROM ki_snap WHERE k1 = 3;
INSERT INTO ki_snap VALUES (0, 'new', 0);
CALL backfill.run_job(:job, 2);
DELETE FROM ki_snap WHERE k1 = 30;
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM (TABLE ki_snap EXCEPT TABLE ki_snap_new) x) AS only_up,
       (SELECT count(*) FROM (TABLE ki_snap_new EXCEPT TABLE ki_snap) x) AS only_down;
SELECT state, rollback_possible FROM backfill.cutover(:job);
SELECT backfill.finish_cutover(:job);
SELECT count(*) AS rows FROM ki_snap;

-- kind cdc: the replica identity must be the key (or the full row)
CREATE TABLE ki_cdc (id bigint NOT NULL, region text NOT NULL, v text);
CREATE UNIQUE INDEX ki_cdc_key ON ki_cdc (region, id);
INSERT INTO ki_cdc SELECT g, 'r' || (g % 2), 'v' || g FROM generate_series(1, 40) g;
SELECT backfill.create_job('x', 'ki_cdc', kind => 'cdc');
ALTER TABLE ki_cdc REPLICA IDENTITY NOTHING;
SELECT backfill.create_job('x', 'ki_cdc', kind => 'cdc');
ALTER TABLE ki_cdc REPLICA IDENTITY FULL;
SELECT backfill.create_job('ki_cdc_full', 'ki_cdc', kind => 'cdc') AS job \gset
SELECT backfill.drop_job(:job);
ALTER TABLE ki_cdc REPLICA IDENTITY USING INDEX ki_cdc_key;
SELECT backfill.create_job('ki_cdc_new', 'ki_cdc', kind => 'cdc', chunk_size => 10) AS job \gset
SELECT pk_columns FROM backfill.job WHERE job_id = :job;
CALL backfill.run_job(:job, 1);
UPDATE ki_cdc SET v = 'changed' WHERE id IN (1, 2, 35);
UPDATE ki_cdc SET region = 'moved' WHERE id = 4;     -- the key changes
DELETE FROM ki_cdc WHERE id IN (5, 36);
INSERT INTO ki_cdc VALUES (0, 'r0', 'new');
CALL backfill.run_job(:job, 2);
DELETE FROM ki_cdc WHERE id = 6;
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM (TABLE ki_cdc EXCEPT TABLE ki_cdc_new) x) AS only_up,
       (SELECT count(*) FROM (TABLE ki_cdc_new EXCEPT TABLE ki_cdc) x) AS only_down;
SELECT state, rollback_possible FROM backfill.cutover(:job);
-- the replica identity went over to the new table, through its index on the key
SELECT relreplident, (SELECT pg_get_indexdef(indexrelid) FROM pg_index
                       WHERE indrelid = 'ki_cdc'::regclass AND indisreplident) AS identity_index
  FROM pg_class WHERE oid = 'ki_cdc'::regclass;
SELECT backfill.finish_cutover(:job);

-- the key index dropped under a running job: the run fails, and says why
CREATE TABLE ki_drop (a int NOT NULL, b text);
CREATE UNIQUE INDEX ki_drop_a ON ki_drop (a);
INSERT INTO ki_drop SELECT g, 'b' FROM generate_series(1, 30) g;
SELECT backfill.create_job('ki_drop_new', 'ki_drop', chunk_size => 10) AS job \gset
CALL backfill.run_job(:job, 1);
DROP INDEX ki_drop_a;
CALL backfill.run_job(:job, 1);
-- a write would be captured without a key: refused
INSERT INTO ki_drop VALUES (100, 'b');
-- another unique index on the same columns is the same key again
CREATE UNIQUE INDEX ki_drop_a2 ON ki_drop (a);
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);

-- a plain role's table and job; the superuser writes to it and cuts it over
CREATE ROLE ki_plain LOGIN;
GRANT CREATE ON SCHEMA public TO ki_plain;
SET ROLE ki_plain;
CREATE TABLE ki_plain_t (sku text NOT NULL, qty int NOT NULL DEFAULT 0);
CREATE UNIQUE INDEX ki_plain_sku ON ki_plain_t (sku);
INSERT INTO ki_plain_t SELECT 's' || g, g FROM generate_series(1, 25) g;
SELECT backfill.create_job('ki_plain_new', 'ki_plain_t', chunk_size => 10) AS job \gset
CALL backfill.run_job(:job, 1);
RESET ROLE;
UPDATE ki_plain_t SET qty = -1 WHERE sku IN ('s1', 's20');
DELETE FROM ki_plain_t WHERE sku = 's2';
SET ROLE ki_plain;
CALL backfill.run_job(:job);
RESET ROLE;
SELECT * FROM backfill.verify_job(:job);
SELECT state, rollback_possible FROM backfill.cutover(:job);
SELECT backfill.finish_cutover(:job);
SELECT relowner::regrole AS owner, (SELECT count(*) FROM ki_plain_t) AS rows
  FROM pg_class WHERE oid = 'ki_plain_t'::regclass;
SELECT backfill.drop_job(:job);
DROP TABLE ki_plain_t;
REVOKE CREATE ON SCHEMA public FROM ki_plain;
DROP ROLE ki_plain;

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
DROP TABLE ki_pick, ki_none, ki_nullable, ki_partial, ki_deferrable, ki_parted,
           ki_arr, ki_snap, ki_cdc, ki_drop;
