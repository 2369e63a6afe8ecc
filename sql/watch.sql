-- Watching a job: backfill.client_progress_interval, the line that wait_job
-- sends (through backfill._report_progress), backfill.progress without the
-- library preloaded and with no run going on, the failures counted on a job.
-- The lines of a running job depend on timing: t/025_watch.pl captures them.
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);

-- the setting: a time, 10 s by default, 0 for off, never negative
LOAD 'backfill';
SELECT boot_val || unit AS default_interval FROM pg_catalog.pg_settings
 WHERE name = 'backfill.client_progress_interval';
SET backfill.client_progress_interval = '1min';
SHOW backfill.client_progress_interval;
SET backfill.client_progress_interval = -1;
SET backfill.client_progress_interval = 0;
SHOW backfill.client_progress_interval;
RESET backfill.client_progress_interval;

CREATE TABLE w_up (id int PRIMARY KEY, v text);
INSERT INTO w_up SELECT g, 'v' || g FROM generate_series(1, 40) g;
SELECT backfill.create_job('w_mv', 'w_up', parallelism => 2, chunk_size => 10) AS job \gset

-- a line is due once the interval has passed since the last one (or the
-- start of the watch): then it is sent, as an INFO, and its time returned
SELECT backfill._report_progress(:job, now()) = now() AS not_due;
SET backfill.client_progress_interval = '1ms';
SELECT backfill._report_progress(:job, now() - interval '1 s') > now() - interval '1 s' AS sent;
-- sent whatever client_min_messages says
SET client_min_messages = error;
SELECT backfill._report_progress(:job, now() - interval '1 s') > now() - interval '1 s' AS sent;
RESET client_min_messages;
SET backfill.client_progress_interval = 0;
SELECT backfill._report_progress(:job, now() - interval '1 s') = now() - interval '1 s' AS off;
SET backfill.client_progress_interval = '1ms';
-- no line for a job that does not exist, or NULL arguments
SELECT backfill._report_progress(999, now() - interval '1 s') = now() - interval '1 s' AS no_job;
SELECT backfill._report_progress(NULL, now()) IS NULL AS null_job,
       backfill._report_progress(:job, NULL) IS NULL AS null_since;

-- part of the job read: its progress in the line; a run that ends before
-- the interval has passed sends nothing
RESET backfill.client_progress_interval;
CALL backfill.run_job(:job, 1);
SET backfill.client_progress_interval = '1ms';
SELECT backfill._report_progress(:job, now() - interval '1 s') > now() - interval '1 s' AS sent;
-- nor does one with the setting at 0
SET backfill.client_progress_interval = 0;
CALL backfill.run_job(:job);
SELECT backfill._report_progress(:job, now() - interval '1 s') = now() - interval '1 s' AS off;
SET backfill.client_progress_interval = '1ms';
SELECT backfill._report_progress(:job, now() - interval '1 s') > now() - interval '1 s' AS sent;
RESET backfill.client_progress_interval;

-- backfill.progress: its columns; no row while nothing runs, and without
-- the library preloaded, none from shared memory
SELECT * FROM backfill.progress;
SELECT count(*) FROM backfill._live_actors();

-- failures are counted: a legacy job cannot resume, each restart fails
SELECT backfill.create_job('w_legacy', 'w_up', kind => 'no_shuffle', chunk_size => 10) AS legacy \gset
CALL backfill.run_job(:legacy, 1);
SELECT status, failures FROM backfill.job WHERE job_id = :legacy;
\set VERBOSITY sqlstate
CALL backfill.run_job(:legacy);
CALL backfill.run_job(:legacy);
\set VERBOSITY default
SELECT status, failures, runs FROM backfill.job WHERE job_id = :legacy;
SELECT failures FROM backfill.job WHERE job_id = :job;

SELECT backfill.drop_job(:job), backfill.drop_job(:legacy);
DROP TABLE w_up;
