-- Observing jobs: backfill.jobs, backfill.ddl_progress, job_state, verify_job.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE obs (id int PRIMARY KEY, v text, n numeric);
INSERT INTO obs SELECT g, 'v' || g, g / 3.0 FROM generate_series(1, 3000) g;
SELECT backfill.create_job('obs_mv', 'obs', chunk_size => 7) AS job \gset

-- progress as RisingWave formats it: two decimals, consumed/total
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
CALL backfill.run_job(:job, 1);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
CALL backfill.run_job(:job, 2);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
-- as RisingWave's calculate_progress: a float rounded as Rust's {:.2}
-- rounds (65.625 to even), N/N is 100.00% until the job is done, more rows
-- than the total are forced to 99.99%, a total of 0 is 99.99%
UPDATE backfill.job SET total_rows = 32 WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
UPDATE backfill.job SET total_rows = 21 WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
UPDATE backfill.job SET total_rows = 20 WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
UPDATE backfill.job SET total_rows = 0 WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
-- RisingWave's columns: is_serverless_backfill, backfill_type
SELECT ddl_id, create_type, is_serverless_backfill, backfill_type,
       initialized_at = (SELECT created_at FROM backfill.job WHERE job_id = :job) AS initialized_at_creation
  FROM backfill.ddl_progress;
-- a lag as Rust's Debug prints a Duration
SELECT ms, backfill._rw_duration(ms)
  FROM unnest(ARRAY[-1, 0, 1, 800, 999, 1000, 1200, 1050, 1005, 61000, 3600123]::bigint[]) ms;
-- a restart takes the upstream's rows again, from the catalog's estimate
-- (reltuples, here of an ANALYZE that saw every row), counting none
INSERT INTO obs SELECT g, 'late', 0 FROM generate_series(3001, 3500) g;
ANALYZE obs;
CALL backfill.run_job(:job, 1);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;

-- epochs: RisingWave's layout (milliseconds since 2021-04-01 << 16), increasing
SELECT epoch > (((extract(epoch FROM now() - interval '1 day') * 1000)::bigint - 1617235200000) << 16) AS epoch_is_recent
  FROM backfill.jobs WHERE job_id = :job;
CREATE TEMP TABLE e1 AS SELECT epoch FROM backfill.jobs WHERE job_id = :job;
CALL backfill.run_job(:job, 1);
SELECT j.epoch > e1.epoch AS epoch_increased FROM backfill.jobs j, e1 WHERE j.job_id = :job;

-- job_state: one row per vnode, the actor that owns it
SELECT count(*), count(DISTINCT actor_id), min(vnode), max(vnode) FROM backfill.job_state(:job);
SELECT DISTINCT current_pos, backfill_finished FROM backfill.job_state(:job);

-- verify_job finds every kind of difference
UPDATE obs_mv SET v = 'tampered' WHERE id = 3;
DELETE FROM obs_mv WHERE id = 4;
INSERT INTO obs_mv VALUES (2999, 'beyond the position', 0);
UPDATE obs_mv SET n = n + 0.0 WHERE id = 5;     -- 5/3.0 kept exactly: no difference
SELECT * FROM backfill.verify_job(:job);
-- keys written since the last barrier are pending, not differences
UPDATE obs SET v = 'pending' WHERE id IN (3, 10);
SELECT * FROM backfill.verify_job(:job);
UPDATE obs_mv SET v = 'v3' WHERE id = 3;
INSERT INTO obs_mv VALUES (4, 'v4', 4 / 3.0);
DELETE FROM obs_mv WHERE id = 2999;
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);
-- finished: no longer listed in ddl_progress; 100% in backfill.jobs
SELECT count(*) AS in_ddl_progress FROM backfill.ddl_progress WHERE ddl_id = :job;
SELECT status, progress FROM backfill.jobs WHERE job_id = :job;
-- once finished, every row is covered
DELETE FROM obs_mv WHERE id = 3500;
SELECT * FROM backfill.verify_job(:job);
INSERT INTO obs_mv SELECT * FROM obs WHERE id = 3500;
SELECT * FROM backfill.verify_job(:job);

-- the views' columns
\d backfill.jobs
\d backfill.ddl_progress
SELECT job_id, job_name, kind, status, upstream, downstream, parallelism, chunk_size, row_count, last_error, state_table
  FROM backfill.jobs;

-- bad calls
SELECT * FROM backfill.verify_job(NULL);
SELECT * FROM backfill.verify_job(42);
SELECT * FROM backfill.job_state(42);
