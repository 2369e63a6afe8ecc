-- Partitioned upstreams, for every kind: writes through the partitioned
-- table and straight into partitions at every level, partitions created,
-- attached, detached, truncated and dropped while a job backfills and once
-- it has finished.
\set VERBOSITY default
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

-- two levels: [10, 100) a table; [100, 200) hashed into two, one of them
-- attached with its own column order and a dropped column; [0, 10) free
CREATE TABLE pt (id int PRIMARY KEY, v text NOT NULL, keep boolean NOT NULL DEFAULT true)
    PARTITION BY RANGE (id);
CREATE TABLE pt_a PARTITION OF pt FOR VALUES FROM (10) TO (100);
CREATE TABLE pt_b PARTITION OF pt FOR VALUES FROM (100) TO (200) PARTITION BY HASH (id);
CREATE TABLE pt_b0 PARTITION OF pt_b FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt_b1 (gone int, keep boolean NOT NULL DEFAULT true, v text NOT NULL, id int PRIMARY KEY);
ALTER TABLE pt_b1 DROP COLUMN gone;
ALTER TABLE pt_b ATTACH PARTITION pt_b1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO pt SELECT g, 'r' || g, g % 5 <> 0 FROM generate_series(10, 150) g;

-- the filtered projection a job's downstream must equal: differences both ways
CREATE FUNCTION pt_diff(down regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((SELECT id, upper(v) FROM pt WHERE keep EXCEPT ALL SELECT id, big FROM %s) '
                   'UNION ALL (SELECT id, big FROM %s EXCEPT ALL SELECT id, upper(v) FROM pt WHERE keep)) x', down, down)
        INTO n;
    RETURN n;
END
$$;
-- the job's triggers, on every table
CREATE FUNCTION pt_triggers(job bigint) RETURNS TABLE (rel regclass, triggers text)
LANGUAGE sql AS $$
SELECT tgrelid::regclass, string_agg(regexp_replace(tgname, '_\d+$', '') || ' ' || tgenabled::text, ', ' ORDER BY tgname)
  FROM pg_trigger WHERE tgname ~ ('^backfill_.*_' || job || '$')
 GROUP BY 1 ORDER BY tgrelid::regclass::text
$$;

-- an arrangement job: the row triggers are cloned to every partition, a
-- truncate trigger put on every leaf; the total counts the rows that pass
SELECT backfill.create_job('pt_down', 'pt', columns => ARRAY['upper(v) AS big'], filter => 'keep',
                           chunk_size => 20) AS job \gset
SELECT * FROM pt_triggers(:job);
SELECT total_rows, (SELECT count(*) FROM pt WHERE keep) AS expected FROM backfill.job WHERE job_id = :job;

-- barrier 1 reads ids 11 to 34 (20 rows that keep)
CALL backfill.run_job(:job, 1);
SELECT current_pos, count(*) FROM backfill.job_state(:job) GROUP BY 1;
UPDATE pt SET v = 'routed' WHERE id IN (11, 120);          -- through the table
UPDATE pt_a SET v = 'direct' WHERE id IN (12, 50);         -- into a leaf
UPDATE pt_b SET v = 'level 1' WHERE id IN (101, 102);      -- into a partitioned partition
INSERT INTO pt_b VALUES (151, 'new', true);
UPDATE pt SET id = 160 WHERE id = 13;                      -- a key that moves to another partition
DELETE FROM pt_a WHERE id = 14;
UPDATE pt SET keep = false WHERE id = 16;                  -- out of the filter
SELECT * FROM backfill.verify_job(:job);

-- a partition attached with rows below the position, and one created
CREATE TABLE pt_z (id int PRIMARY KEY, v text NOT NULL, keep boolean NOT NULL DEFAULT true);
INSERT INTO pt_z SELECT g, 'z' || g, true FROM generate_series(1, 9) g;
ALTER TABLE pt ATTACH PARTITION pt_z FOR VALUES FROM (0) TO (10);
CREATE TABLE pt_c PARTITION OF pt FOR VALUES FROM (200) TO (300);
INSERT INTO pt_c VALUES (201, 'c', true);
SELECT * FROM pt_triggers(:job) WHERE rel::text IN ('pt_z', 'pt_c');
SELECT * FROM backfill.verify_job(:job);
CALL backfill.run_job(:job, 1);
SELECT * FROM backfill.verify_job(:job);
SELECT id, big FROM pt_down WHERE id < 10 ORDER BY id;

-- a partition detached with rows below and above the position
ALTER TABLE pt DETACH PARTITION pt_a;
SELECT * FROM pt_triggers(:job) WHERE rel::text = 'pt_a';
CALL backfill.run_job(:job, 1);
SELECT * FROM backfill.verify_job(:job);
SELECT count(*) AS rows_of_pt_a FROM pt_down WHERE id BETWEEN 10 AND 99;

-- refused while it backfills: a partition's TRUNCATE, a concurrent detach,
-- dropping a partition (at any level)
TRUNCATE pt_b0;
TRUNCATE pt;
ALTER TABLE pt DETACH PARTITION pt_z CONCURRENTLY;
DROP TABLE pt_b1;
DROP TABLE pt_b;

CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT pt_diff('pt_down') AS differences;
SELECT * FROM pt_triggers(:job) WHERE rel::text IN ('pt', 'pt_b0');

-- once it has finished: writes, a partition attached and one detached, a
-- partition truncated, a partition detached then dropped
UPDATE pt SET v = 'after' WHERE id IN (1, 130);
INSERT INTO pt_c VALUES (202, 'c2', true), (203, 'c3', false);
ALTER TABLE pt ATTACH PARTITION pt_a FOR VALUES FROM (10) TO (100);
SELECT count(*) AS rows_of_pt_a FROM pt_down WHERE id BETWEEN 10 AND 99;
SELECT * FROM backfill.verify_job(:job);
ALTER TABLE pt DETACH PARTITION pt_z;
SELECT count(*) AS rows_of_pt_z FROM pt_down WHERE id < 10;
TRUNCATE pt_b0;
SELECT * FROM backfill.verify_job(:job);
SELECT pt_diff('pt_down') AS differences;
ALTER TABLE pt_b DETACH PARTITION pt_b1;
DROP TABLE pt_b1;
SELECT * FROM backfill.verify_job(:job);
SELECT pt_diff('pt_down') AS differences;
TRUNCATE pt;
SELECT count(*) AS rows_left FROM pt_down;

-- the snapshot kind reads the upstream as of its epoch: an attached
-- partition's rows are not in it, a detached one's are, until its log
-- store phase
DROP TABLE pt_z;
CREATE TABLE pt_b1 PARTITION OF pt_b FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO pt SELECT g, 'r' || g, g % 5 <> 0 FROM generate_series(10, 150) g;
SELECT backfill.create_job('pt_snap', 'pt', kind => 'snapshot', columns => ARRAY['upper(v) AS big'],
                           filter => 'keep', chunk_size => 20) AS snap \gset
CALL backfill.run_job(:snap, 1);
CREATE TABLE pt_z (id int PRIMARY KEY, v text NOT NULL, keep boolean NOT NULL DEFAULT true);
INSERT INTO pt_z SELECT g, 'z' || g, true FROM generate_series(1, 9) g;
ALTER TABLE pt ATTACH PARTITION pt_z FOR VALUES FROM (0) TO (10);
ALTER TABLE pt DETACH PARTITION pt_a;
CALL backfill.run_job(:snap, 3);
SELECT (SELECT count(*) FROM pt_snap WHERE id < 10) AS attached_rows_in_phase_1,
       (SELECT count(*) FROM pt_snap WHERE id BETWEEN 10 AND 99) AS detached_rows_in_phase_1;
CALL backfill.run_job(:snap);
SELECT status FROM backfill.jobs WHERE job_id = :snap;
SELECT * FROM backfill.verify_job(:snap);
SELECT pt_diff('pt_snap') AS differences;

-- the cdc kind decodes the partitions' changes as the partitioned table's
ALTER TABLE pt ATTACH PARTITION pt_a FOR VALUES FROM (10) TO (100);
SELECT backfill.create_job('pt_cdc', 'pt', kind => 'cdc', columns => ARRAY['upper(v) AS big'],
                           filter => 'keep', chunk_size => 20) AS cdc \gset
CALL backfill.run_job(:cdc, 2);
UPDATE pt_a SET v = 'cdc direct' WHERE id IN (11, 90);
UPDATE pt_b SET v = 'cdc level 1' WHERE id IN (101, 140);
UPDATE pt SET keep = false WHERE id IN (12, 141);
DELETE FROM pt_z WHERE id = 1;
CALL backfill.run_job(:cdc, 1);
SELECT * FROM backfill.verify_job(:cdc);
CALL backfill.run_job(:cdc);
SELECT * FROM backfill.verify_job(:cdc);
SELECT pt_diff('pt_cdc') AS differences;

-- a job's owner needs no right on the partitions, which the table's owner
-- attaches, detaches and truncates
CREATE ROLE regress_pt_user;
CREATE SCHEMA regress_pt AUTHORIZATION regress_pt_user;
CREATE TABLE pt2 (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE pt2_a PARTITION OF pt2 FOR VALUES FROM (0) TO (100);
CREATE TABLE pt2_b PARTITION OF pt2 FOR VALUES FROM (100) TO (200);
INSERT INTO pt2 SELECT g, 'v' || g FROM generate_series(1, 199) g;
GRANT SELECT, TRIGGER ON pt2 TO regress_pt_user;
SET ROLE regress_pt_user;
SELECT backfill.create_job('regress_pt.pt2_down', 'pt2', chunk_size => 50) AS job2 \gset
CALL backfill.run_job(:job2, 1);
RESET ROLE;
CREATE TABLE pt2_c (id int PRIMARY KEY, v text);
INSERT INTO pt2_c SELECT g, 'c' || g FROM generate_series(200, 210) g;
ALTER TABLE pt2 ATTACH PARTITION pt2_c FOR VALUES FROM (200) TO (300);
ALTER TABLE pt2 DETACH PARTITION pt2_a;
SET ROLE regress_pt_user;
CALL backfill.run_job(:job2);
SELECT * FROM backfill.verify_job(:job2);
RESET ROLE;
ALTER TABLE pt2 ATTACH PARTITION pt2_a FOR VALUES FROM (0) TO (100);
ALTER TABLE pt2 DETACH PARTITION pt2_c;
TRUNCATE pt2_b;
SET ROLE regress_pt_user;
SELECT * FROM backfill.verify_job(:job2);
SELECT count(*) AS rows, min(id), max(id) FROM regress_pt.pt2_down;
SELECT backfill.drop_job(:job2);
RESET ROLE;
DROP TABLE pt2, pt2_c;
DROP SCHEMA regress_pt CASCADE;
DROP ROLE regress_pt_user;

-- dropping the jobs takes their triggers off every table
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgname LIKE 'backfill%';
DROP TABLE pt, pt_a, pt_c;
DROP FUNCTION pt_diff(regclass), pt_triggers(bigint);
