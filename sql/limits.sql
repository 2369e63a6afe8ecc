-- Caps a superuser sets: backfill.max_jobs_per_upstream and
-- backfill.max_jobs_per_role at create_job (SQLSTATE 53000, with a hint
-- naming the setting); the jobs that are not cancelled count, those of
-- superusers do not count against the cap per role; -1 lifts either.  The
-- caps on background workers (backfill.max_workers, _per_role) are tested
-- in t/023_registry_databases.pl; here only that they exist and who may set
-- them.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
-- the settings are defined when the library loads
LOAD 'backfill';

SHOW backfill.max_jobs_per_upstream;
SHOW backfill.max_jobs_per_role;
SHOW backfill.max_workers;
SHOW backfill.max_workers_per_role;
SELECT name, context, min_val, max_val FROM pg_settings
 WHERE name IN ('backfill.max_jobs_per_upstream', 'backfill.max_jobs_per_role',
                'backfill.max_workers', 'backfill.max_workers_per_role')
 ORDER BY name;

CREATE ROLE regress_lim_user;
CREATE SCHEMA regress_lim AUTHORIZATION regress_lim_user;
CREATE TABLE regress_lim.up (id int PRIMARY KEY, v text);
INSERT INTO regress_lim.up SELECT g, 'v' || g FROM generate_series(1, 10) g;

-- a plain role may not lift them
SET ROLE regress_lim_user;
SET backfill.max_jobs_per_upstream = -1;
SET backfill.max_jobs_per_role = -1;
SET backfill.max_workers = 100;
SET backfill.max_workers_per_role = -1;
RESET ROLE;

-- per upstream: binds a superuser too
SET backfill.max_jobs_per_upstream = 2;
SELECT backfill.create_job('regress_lim.d1', 'regress_lim.up') AS j1 \gset
SELECT backfill.create_job('regress_lim.d2', 'regress_lim.up') AS j2 \gset
\set VERBOSITY default
SELECT backfill.create_job('regress_lim.d3', 'regress_lim.up');
\echo :SQLSTATE
-- nothing of the refused job is left
SELECT count(*) FROM backfill.job WHERE upstream = 'regress_lim.up'::regclass;
SELECT to_regclass('regress_lim.d3');
-- a cancelled job's triggers are gone: it does not count
SELECT backfill.cancel_job(:j2) IS NOT NULL AS cancelled;
SELECT backfill.create_job('regress_lim.d3', 'regress_lim.up') AS j3 \gset
SELECT backfill.create_job('regress_lim.d4', 'regress_lim.up');
-- a failed one does: its triggers are still there
UPDATE backfill.job SET status = 'failed' WHERE job_id = :j3;
SELECT backfill.create_job('regress_lim.d4', 'regress_lim.up');
-- dropping one makes room
SELECT backfill.drop_job(:j3);
SELECT backfill.create_job('regress_lim.d4', 'regress_lim.up') AS j4 \gset
-- recreate_job cancels the old job first, so it fits
SELECT backfill.recreate_job(:j4) AS j5 \gset
SELECT job_id = :j5 AS recreated, status FROM backfill.job
 WHERE upstream = 'regress_lim.up'::regclass AND status <> 'cancelled' ORDER BY job_id;
-- -1: no cap
SET backfill.max_jobs_per_upstream = -1;
SELECT backfill.create_job('regress_lim.d6', 'regress_lim.up') IS NOT NULL AS created;
RESET backfill.max_jobs_per_upstream;

-- per role: the owner's jobs on any table
SET backfill.max_jobs_per_role = 1;
SET ROLE regress_lim_user;
CREATE TABLE regress_lim.up2 (id int PRIMARY KEY);
CREATE TABLE regress_lim.up3 (id int PRIMARY KEY);
SELECT backfill.create_job('regress_lim.e1', 'regress_lim.up2') AS k1 \gset
SELECT backfill.create_job('regress_lim.e2', 'regress_lim.up3');
\echo :SQLSTATE
SELECT count(*) FROM backfill.job WHERE owner = 'regress_lim_user'::regrole;
SELECT backfill.drop_job(:k1);
SELECT backfill.create_job('regress_lim.e2', 'regress_lim.up3') IS NOT NULL AS created;
RESET ROLE;
-- a superuser's jobs are not capped per role (it owns more than one here)
SELECT backfill.create_job('regress_lim.e3', 'regress_lim.up2') IS NOT NULL AS created;
SET backfill.max_jobs_per_role = 0;
SET ROLE regress_lim_user;
SELECT backfill.create_job('regress_lim.e4', 'regress_lim.up2');
RESET ROLE;
SET backfill.max_jobs_per_role = -1;
SET ROLE regress_lim_user;
SELECT backfill.create_job('regress_lim.e4', 'regress_lim.up2') IS NOT NULL AS created;
RESET ROLE;
RESET backfill.max_jobs_per_role;

-- clean up
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job
          WHERE upstream::oid IN (SELECT oid FROM pg_class
                                   WHERE relnamespace = 'regress_lim'::regnamespace); END$$;
DROP SCHEMA regress_lim CASCADE;
DROP ROLE regress_lim_user;
