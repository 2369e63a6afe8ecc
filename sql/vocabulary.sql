-- PostgreSQL's vocabulary beside RisingWave's: backfill.progress with the
-- columns of pg_stat_progress_copy, jobs by name, alter_job, what
-- ddl_progress says a job makes, the progress total of a restart from the
-- catalog's estimate, stop_job's result.
SET backfill.barrier_interval_ms = 0;
CREATE ROLE regress_voc_plain LOGIN;
GRANT CREATE ON SCHEMA public TO regress_voc_plain;

-- backfill.progress: the columns of 1.3, then PostgreSQL's
SELECT attnum, attname, atttypid::regtype
  FROM pg_attribute WHERE attrelid = 'backfill.progress'::regclass AND attnum > 0
 ORDER BY attnum;

-- the upstream's size: blocks as pg_relation_size() counts them, rows as
-- the catalog estimates them once VACUUM or ANALYZE has seen the table
-- (autovacuum off: only this test's ANALYZE makes the estimate)
CREATE TABLE voc_up (id int PRIMARY KEY, v text) WITH (autovacuum_enabled = false);
INSERT INTO voc_up SELECT g, repeat('x', 500) FROM generate_series(1, 100) g;
SELECT tuples IS NULL AS not_estimated_yet,
       blocks = pg_relation_size('voc_up') / current_setting('block_size')::int AS blocks
  FROM backfill._upstream_size('voc_up');
ANALYZE voc_up;
SELECT tuples, blocks = pg_relation_size('voc_up') / current_setting('block_size')::int AS blocks
  FROM backfill._upstream_size('voc_up');
CREATE TABLE voc_empty (id int PRIMARY KEY);
SELECT * FROM backfill._upstream_size('voc_empty');
-- a partitioned table: the sum of its partitions
CREATE TABLE voc_parts (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE voc_parts_1 PARTITION OF voc_parts FOR VALUES FROM (1) TO (100);
CREATE TABLE voc_parts_2 PARTITION OF voc_parts FOR VALUES FROM (100) TO (200);
INSERT INTO voc_parts SELECT generate_series(1, 199);
ANALYZE voc_parts;
SELECT tuples, blocks = (pg_relation_size('voc_parts_1') + pg_relation_size('voc_parts_2'))
                        / current_setting('block_size')::int AS blocks
  FROM backfill._upstream_size('voc_parts');
SELECT * FROM backfill._upstream_size(NULL);

-- create_job counts the rows; a restart takes the catalog's estimate
-- instead of counting them again: 100 rows more, narrower, not analyzed,
-- taken at the rows per block ANALYZE saw, so fewer than there are
SELECT backfill.create_job('voc_up_mv', 'voc_up', chunk_size => 30) AS job \gset
SELECT total_rows FROM backfill.job WHERE job_id = :job;
INSERT INTO voc_up SELECT g, 'x' FROM generate_series(101, 200) g;
CALL backfill.run_job(:job, 1);
CALL backfill.run_job(:job, 1);
SELECT j.total_rows = s.tuples AS total_is_estimate, j.total_rows <> 200 AS not_counted
  FROM backfill.job j, backfill._upstream_size('voc_up') s WHERE j.job_id = :job;
-- the percentage stays below 100% while the estimate is short of the rows
CALL backfill.run_job(:job, 5);
SELECT j.status, j.progress, j.row_count > b.total_rows AS more_than_total
  FROM backfill.jobs j JOIN backfill.job b USING (job_id) WHERE job_id = :job;

-- jobs by name: the overloads resolve it to the id
SELECT backfill.job_id('voc_up_mv') = :job AS same_job;
CALL backfill.run_job('voc_up_mv');
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT count(*) AS vnodes FROM backfill.job_state('voc_up_mv');
SELECT * FROM backfill.verify_job('voc_up_mv');
SELECT backfill.wait_job('voc_up_mv');
CALL backfill.wait_for_job('voc_up_mv');
-- an integer literal, a bigint and a quoted literal pick their overload
CALL backfill.run_job(2147483647);
DO $$
DECLARE
    id bigint := backfill.job_id('voc_up_mv');
BEGIN
    CALL backfill.run_job(id);
    PERFORM backfill.job_state(id);
    PERFORM backfill.alter_job(id);
END
$$;
CALL backfill.run_job('x');
SELECT backfill.start_job('x');
SELECT backfill.job_id('x');
SELECT backfill.job_id(NULL);
CALL backfill.run_job(NULL::text);
-- stop_job returns whether it stopped workers (and its NOTICE says so)
SET client_min_messages = warning;
SELECT backfill.stop_job('voc_up_mv');
RESET client_min_messages;

-- two jobs of one name that the caller sees: ambiguous, by name only
SELECT backfill.create_job('voc_dup', 'voc_up') AS dup1 \gset
SELECT backfill.cancel_job('voc_dup') = :dup1 AS cancelled;
SELECT backfill.create_job('voc_dup', 'voc_up') AS dup2 \gset
\set VERBOSITY terse
SELECT backfill.job_id('voc_dup');
SELECT backfill.cancel_job('voc_dup');
\set VERBOSITY default
SELECT backfill.drop_job(:dup1);
SELECT backfill.job_id('voc_dup') = :dup2 AS unique_again;

-- alter_job: NULL leaves a setting as it is; the verbs' checks
SELECT job_name, status, run_mode, rate_limit, parallelism
  FROM backfill.alter_job(:dup2, rate_limit => 500);
SELECT job_name, rate_limit, parallelism
  FROM backfill.alter_job('voc_dup', parallelism => 4);
SELECT job_name, rate_limit, parallelism FROM backfill.alter_job('voc_dup');
SELECT count(*) AS actors FROM backfill.actor WHERE job_id = :dup2;
SELECT backfill.alter_job('voc_dup', parallelism => 0);
SELECT backfill.alter_job('voc_dup', rate_limit => -1);
SELECT backfill.alter_job(NULL::bigint, rate_limit => 1);
SELECT rate_limit, parallelism FROM backfill.job WHERE job_id = :dup2;

-- ddl_progress says what the job makes, and from what
SELECT ddl_statement, create_type, backfill_type FROM backfill.ddl_progress WHERE ddl_id = :dup2;
CREATE TABLE voc_mine (id int PRIMARY KEY, v text);
SELECT backfill.create_job('voc_mine', 'voc_up', kind => 'snapshot', filter => 'id < 10',
                           into_existing => true) AS mine \gset
SELECT ddl_statement, backfill_type FROM backfill.ddl_progress WHERE ddl_id = :mine;
SET client_min_messages = warning;
SELECT backfill.drop_job(:mine);
RESET client_min_messages;

-- a plain role: the superuser's job is unknown to it by name, its own is
-- found, and a name both have is its own job's for it, ambiguous for the
-- superuser, who sees both
CREATE SCHEMA voc_plain AUTHORIZATION regress_voc_plain;
SET ROLE regress_voc_plain;
SET search_path = voc_plain, public;
CREATE TABLE voc_plain_up (id int PRIMARY KEY);
INSERT INTO voc_plain_up SELECT generate_series(1, 10);
SELECT backfill.job_id('voc_up_mv');
CALL backfill.run_job('voc_up_mv');
SELECT backfill.alter_job('voc_up_mv', rate_limit => 1);
SELECT backfill.drop_job('voc_up_mv');
SELECT backfill.create_job('voc_dup', 'voc_plain_up') AS plain_job \gset
SELECT backfill.job_id('voc_dup') = :plain_job AS own_job;
SELECT job_name, rate_limit FROM backfill.alter_job('voc_dup', rate_limit => 7);
CALL backfill.run_job('voc_dup');
SELECT status FROM backfill.jobs WHERE job_id = :plain_job;
RESET ROLE;
RESET search_path;
\set VERBOSITY terse
SELECT backfill.job_id('voc_dup');
\set VERBOSITY default
-- the superuser names the plain role's job by its id
SELECT job_name, rate_limit FROM backfill.alter_job(:plain_job, rate_limit => 8);
SELECT backfill.drop_job(:plain_job);

SELECT backfill.drop_job(:dup2);
SELECT backfill.drop_job(:job);
DROP TABLE voc_up, voc_empty, voc_parts, voc_mine;
DROP SCHEMA voc_plain CASCADE;
REVOKE CREATE ON SCHEMA public FROM regress_voc_plain;
DROP ROLE regress_voc_plain;
