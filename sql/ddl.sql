-- DDL on a job's tables while it exists: what disturbs nothing, and what is
-- refused because it would break the job.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE ddl_up (id int PRIMARY KEY, v text, n int, extra text);
INSERT INTO ddl_up SELECT g, 'v' || g, g, 'x' FROM generate_series(1, 100) g;
SELECT backfill.create_job('ddl_mv', 'ddl_up', columns => '{id,v,n}', chunk_size => 30) AS job \gset
CALL backfill.run_job(:job, 1);

-- what does not disturb the job: a new column, renamed tables, an index,
-- a column the job does not copy
ALTER TABLE ddl_up ADD COLUMN added int DEFAULT 7;
ALTER TABLE ddl_up RENAME TO ddl_up_renamed;
ALTER TABLE ddl_mv RENAME TO ddl_mv_renamed;
CREATE INDEX ON ddl_up_renamed (n);
ALTER TABLE ddl_up_renamed DROP COLUMN extra;
CREATE SCHEMA ddl_elsewhere;
ALTER TABLE ddl_up_renamed SET SCHEMA ddl_elsewhere;
UPDATE ddl_elsewhere.ddl_up_renamed SET v = 'after the renames' WHERE id IN (1, 99);
CALL backfill.run_job(:job, 1);
SELECT upstream, downstream, status FROM backfill.jobs WHERE job_id = :job;

-- what is refused, and leaves everything as it was
ALTER TABLE ddl_elsewhere.ddl_up_renamed DROP COLUMN v;
ALTER TABLE ddl_elsewhere.ddl_up_renamed RENAME COLUMN n TO m;
ALTER TABLE ddl_elsewhere.ddl_up_renamed ALTER COLUMN n TYPE bigint;
ALTER TABLE ddl_elsewhere.ddl_up_renamed ALTER COLUMN id TYPE bigint;
ALTER TABLE ddl_elsewhere.ddl_up_renamed RENAME COLUMN id TO key;
ALTER TABLE ddl_mv_renamed DROP COLUMN n;
ALTER TABLE ddl_mv_renamed ALTER COLUMN v TYPE varchar(100);
DROP TABLE ddl_elsewhere.ddl_up_renamed;
DROP TABLE ddl_mv_renamed;
DROP SCHEMA ddl_elsewhere CASCADE;
DROP TABLE backfill.state_1;
DROP TABLE backfill.changes_1;
ALTER TABLE backfill.state_1 DROP COLUMN row_count;
-- check_function_bodies = off, as a restore sets it, changes none of that for
-- a role that may not write the catalogs, which no restore of jobs can be
CREATE ROLE regress_ddl_plain;
GRANT USAGE ON SCHEMA ddl_elsewhere TO regress_ddl_plain;
ALTER TABLE ddl_elsewhere.ddl_up_renamed OWNER TO regress_ddl_plain;
ALTER TABLE ddl_mv_renamed OWNER TO regress_ddl_plain;
SET ROLE regress_ddl_plain;
SET check_function_bodies = off;
ALTER TABLE ddl_elsewhere.ddl_up_renamed DROP COLUMN v;
ALTER TABLE ddl_elsewhere.ddl_up_renamed RENAME COLUMN n TO m;
ALTER TABLE ddl_elsewhere.ddl_up_renamed ALTER COLUMN n TYPE bigint;
ALTER TABLE ddl_elsewhere.ddl_up_renamed DROP CONSTRAINT ddl_up_pkey;
ALTER TABLE ddl_mv_renamed DROP COLUMN n;
DROP TABLE ddl_elsewhere.ddl_up_renamed;
DROP TABLE ddl_mv_renamed;
RESET ROLE;
ALTER TABLE ddl_elsewhere.ddl_up_renamed OWNER TO CURRENT_ROLE;
ALTER TABLE ddl_mv_renamed OWNER TO CURRENT_ROLE;
REVOKE USAGE ON SCHEMA ddl_elsewhere FROM regress_ddl_plain;
DROP ROLE regress_ddl_plain;
-- nor, for the columns a job copies, for one that may: a restore drops and
-- alters tables, never a column
ALTER TABLE ddl_elsewhere.ddl_up_renamed DROP COLUMN v;
ALTER TABLE ddl_elsewhere.ddl_up_renamed RENAME COLUMN n TO m;
ALTER TABLE ddl_elsewhere.ddl_up_renamed ALTER COLUMN n TYPE bigint;
ALTER TABLE ddl_mv_renamed DROP COLUMN n;
ALTER TABLE backfill.state_1 DROP COLUMN row_count;
RESET check_function_bodies;
-- an unrelated DROP is not disturbed
CREATE TABLE ddl_other (a int);
DROP TABLE ddl_other;

-- the job goes on and finishes consistent
UPDATE ddl_elsewhere.ddl_up_renamed SET v = 'later' WHERE id = 50;
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);
SELECT count(*) FROM ddl_mv_renamed;
-- finished, it still needs its columns: the apply trigger copies them
ALTER TABLE ddl_elsewhere.ddl_up_renamed DROP COLUMN v;
UPDATE ddl_elsewhere.ddl_up_renamed SET v = 'applied' WHERE id = 2;
SELECT * FROM ddl_mv_renamed WHERE id = 2;

-- once the job is dropped, all of it may go
SELECT backfill.drop_job(:job);
ALTER TABLE ddl_elsewhere.ddl_up_renamed DROP COLUMN v;
DROP SCHEMA ddl_elsewhere CASCADE;

-- a cancelled job holds nothing
CREATE TABLE ddl_up2 (id int PRIMARY KEY, v text);
SELECT backfill.create_job('ddl_mv2', 'ddl_up2') AS job2 \gset
SELECT backfill.cancel_job(:job2);
ALTER TABLE ddl_up2 DROP COLUMN v;
DROP TABLE ddl_up2;
SELECT backfill.drop_job(:job2);

-- a partitioned upstream, and one of its partitions, a plain table, each
-- the upstream of a job of its own
CREATE TABLE ddl_parted (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE ddl_parted_1 PARTITION OF ddl_parted FOR VALUES FROM (0) TO (100);
INSERT INTO ddl_parted SELECT g, 'p' || g FROM generate_series(1, 50) g;
SELECT backfill.create_job('ddl_parted_mv', 'ddl_parted') AS job4 \gset
SELECT backfill.create_job('ddl_part1_mv', 'ddl_parted_1') AS job3 \gset
CALL backfill.run_job(:job3);
SELECT * FROM backfill.verify_job(:job3);
CALL backfill.run_job(:job4);
UPDATE ddl_parted SET v = 'both' WHERE id = 7;
SELECT * FROM backfill.verify_job(:job3);
SELECT * FROM backfill.verify_job(:job4);
SELECT (SELECT v FROM ddl_part1_mv WHERE id = 7) AS partition_job, (SELECT v FROM ddl_parted_mv WHERE id = 7) AS parent_job;
SELECT backfill.drop_job(:job3);
SELECT backfill.drop_job(:job4);
DROP TABLE ddl_parted;
