-- Pacing: its settings (their units, bad values, who may set them), what a
-- barrier records of each actor's pace and what backfill.jobs shows of it,
-- and estimate_job.  Standbys, the archiver and the WAL rate over time are
-- measured in t/014_pacing.pl, estimates against real runs in
-- t/015_estimate.pl.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);
-- the settings exist once the library is loaded (by a function of it, or
-- at server start when preloaded)
LOAD 'backfill';

-- the settings: off by default, with units, for superusers
SELECT name, setting, unit, context, vartype, min_val, max_val FROM pg_settings
 WHERE name IN ('backfill.max_replica_lag', 'backfill.max_wal_rate',
                'backfill.max_retained_wal', 'backfill.log_progress_interval')
 ORDER BY name;
SET backfill.max_replica_lag = '5s';
SET backfill.max_wal_rate = '8MB';
SET backfill.max_retained_wal = '4GB';
SET backfill.log_progress_interval = '30s';
SHOW backfill.max_replica_lag;
SHOW backfill.max_wal_rate;
SHOW backfill.max_retained_wal;
SHOW backfill.log_progress_interval;

-- bad values: each refused, the setting left as it was
SET backfill.max_replica_lag = '-1';
\echo :SQLSTATE
SET backfill.max_replica_lag = 'soon';
\echo :SQLSTATE
SET backfill.max_replica_lag = '5 parsecs';
\echo :SQLSTATE
SET backfill.max_replica_lag = '';
\echo :SQLSTATE
SET backfill.max_wal_rate = '-8MB';
\echo :SQLSTATE
SET backfill.max_wal_rate = '8MB/s';
\echo :SQLSTATE
SET backfill.max_wal_rate = '2TB';
\echo :SQLSTATE
SET backfill.max_retained_wal = '1e30';
\echo :SQLSTATE
SET backfill.max_retained_wal = 'lots';
\echo :SQLSTATE
SET backfill.log_progress_interval = '-1s';
\echo :SQLSTATE
SET backfill.log_progress_interval = '30d';
\echo :SQLSTATE
SET backfill.no_such_setting = 1;
\echo :SQLSTATE
SHOW backfill.max_replica_lag;
SHOW backfill.max_wal_rate;
SHOW backfill.max_retained_wal;
SHOW backfill.log_progress_interval;
RESET backfill.max_replica_lag;
RESET backfill.max_wal_rate;
RESET backfill.max_retained_wal;
RESET backfill.log_progress_interval;

-- a plain role may not lift them, in its session or for itself; a superuser
-- sets them per role (or database), or lets a role set one
CREATE ROLE regress_pacing_user;
SET ROLE regress_pacing_user;
SET backfill.max_replica_lag = 0;
\echo :SQLSTATE
ALTER ROLE regress_pacing_user SET backfill.max_wal_rate = 0;
\echo :SQLSTATE
RESET ROLE;
ALTER ROLE regress_pacing_user SET backfill.max_wal_rate = '8MB';
SELECT setconfig FROM pg_db_role_setting WHERE setrole = 'regress_pacing_user'::regrole;
GRANT SET ON PARAMETER backfill.max_replica_lag TO regress_pacing_user;
SET ROLE regress_pacing_user;
SET backfill.max_replica_lag = '10s';
SHOW backfill.max_replica_lag;
RESET ROLE;
RESET backfill.max_replica_lag;
ALTER ROLE regress_pacing_user RESET ALL;
REVOKE SET ON PARAMETER backfill.max_replica_lag FROM regress_pacing_user;

-- what a barrier records: paused
CREATE TABLE pace (id int PRIMARY KEY, v text);
INSERT INTO pace SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT backfill.create_job('pace_mv', 'pace', chunk_size => 10, rate_limit => 0) AS job \gset
CALL backfill.run_job(:job, 2);
SELECT throttled_by, rows_per_second, row_count FROM backfill.actor WHERE job_id = :job;
-- nobody runs the job now: backfill.jobs shows no pace
SELECT status, throttled_by, rows_per_second, eta FROM backfill.jobs WHERE job_id = :job;

-- a rate limit the actor waits for: one chunk of 5 rows, then the limiter
SELECT backfill.alter_rate_limit(:job, 5);
CALL backfill.run_job(:job, 3);
SELECT throttled_by, row_count FROM backfill.actor WHERE job_id = :job;

-- unlimited: nothing held it back; its rows per second
SELECT backfill.alter_rate_limit(:job, NULL);
CALL backfill.run_job(:job, 2);
SELECT throttled_by, rows_per_second > 0 AS has_rate, row_count FROM backfill.actor WHERE job_id = :job;

-- retained WAL: a slot that retains more than the limit holds the actor
-- back; its barriers go on, changes below its position reach the downstream
SELECT slot_name FROM pg_create_physical_replication_slot('regress_pacing_slot', true);
SET backfill.max_retained_wal = '1kB';
SELECT epoch AS epoch_before FROM backfill.jobs WHERE job_id = :job \gset
UPDATE pace SET v = 'changed while held' WHERE id = 2;
CALL backfill.run_job(:job, 1);
SELECT regexp_replace(throttled_by, '^retained WAL [0-9.]+ (bytes|kB|MB|GB) ', 'retained WAL <n> ') AS throttled_by,
       row_count, epoch > :epoch_before AS barriers_went_on
  FROM backfill.actor WHERE job_id = :job;
-- held, the threshold is 80% of the limit until the slot retains less
CALL backfill.run_job(:job, 2);
SELECT regexp_replace(throttled_by, '^retained WAL [0-9.]+ (bytes|kB|MB|GB) ', 'retained WAL <n> ') AS throttled_by,
       row_count FROM backfill.actor WHERE job_id = :job;
SELECT * FROM pace_mv WHERE id = 2;
SELECT * FROM backfill.verify_job(:job);
SELECT pg_drop_replication_slot('regress_pacing_slot');
CALL backfill.run_job(:job, 1);
SELECT throttled_by, row_count FROM backfill.actor WHERE job_id = :job;
RESET backfill.max_retained_wal;
CALL backfill.run_job(:job);
SELECT status, row_count, throttled_by, rows_per_second, eta FROM backfill.jobs WHERE job_id = :job;
SELECT throttled_by, rows_per_second FROM backfill.actor WHERE job_id = :job;

-- the WAL rate: a chunk's WAL and a barrier's own (its commit, its actor's
-- row) are far more than 1 kB a second, so the actor gets to read one
-- chunk at most (the first, if it comes before the run's first commit is
-- paid for)
SELECT backfill.create_job('pace_wal', 'pace', chunk_size => 10) AS wal_job \gset
SET backfill.max_wal_rate = '1kB';
CALL backfill.run_job(:wal_job, 3);
SELECT throttled_by, row_count <= 10 AS at_most_one_chunk FROM backfill.actor WHERE job_id = :wal_job;
RESET backfill.max_wal_rate;
CALL backfill.run_job(:wal_job);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :wal_job;
SELECT * FROM backfill.verify_job(:wal_job);

-- estimate_job: a table that fits in the sample is counted exactly, its
-- downstream is what create_job makes, and nothing is left behind
CREATE TABLE est (id bigint PRIMARY KEY, a int, b text);
INSERT INTO est SELECT g, g % 10, md5(g::text) FROM generate_series(1, 2000) g;
CREATE TEMP TABLE est_before AS SELECT oid FROM pg_class;
SELECT rows, downstream_bytes > 0 AS has_bytes, wal_bytes > 0 AS has_wal,
       duration >= '0'::interval AS has_duration
  FROM backfill.estimate_job('est');
SELECT rows FROM backfill.estimate_job('est', 'snapshot', '{a}', 2);
SELECT count(*) AS new_relations FROM pg_class
 WHERE oid NOT IN (SELECT oid FROM est_before) AND relname <> 'est_before';
SELECT count(*) AS extension_members FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND classid = 'pg_class'::regclass
   AND objid NOT IN (SELECT oid FROM est_before);
SELECT backfill.create_job('est_mv', 'est') AS est_job \gset
CALL backfill.run_job(:est_job);
SELECT e.rows = j.row_count AS rows_exact,
       abs(e.downstream_bytes - pg_total_relation_size('est_mv')) <= pg_total_relation_size('est_mv') / 10
           AS bytes_within_10_percent
  FROM backfill.estimate_job('est') e, backfill.jobs j WHERE j.job_id = :est_job;
-- a partitioned upstream is estimated over its partitions, and computed
-- columns as create_job computes them
CREATE TABLE est_parts (id bigint PRIMARY KEY, a int, b text) PARTITION BY RANGE (id);
CREATE TABLE est_parts_1 PARTITION OF est_parts FOR VALUES FROM (1) TO (1001);
CREATE TABLE est_parts_2 PARTITION OF est_parts FOR VALUES FROM (1001) TO (3001);
INSERT INTO est_parts SELECT * FROM est;
SELECT rows, downstream_bytes > 0 AS has_bytes
  FROM backfill.estimate_job('est_parts', columns => '{a, upper(b) AS b}');
SELECT rows FROM backfill.estimate_job('est_parts', columns => '{random() AS r}');
\echo :SQLSTATE
-- an empty table
CREATE TABLE est_empty (id int PRIMARY KEY);
SELECT rows, wal_bytes, duration FROM backfill.estimate_job('est_empty');
-- the caller needs SELECT on the upstream, nothing more
SET ROLE regress_pacing_user;
SELECT rows FROM backfill.estimate_job('est');
\echo :SQLSTATE
RESET ROLE;
GRANT SELECT ON est TO regress_pacing_user;
SET ROLE regress_pacing_user;
SELECT rows FROM backfill.estimate_job('est', columns => '{b}');
RESET ROLE;
-- an error within the sample copy (here a policy of the upstream that
-- fails) is the caller's; the session goes on, nothing is left behind
CREATE FUNCTION est_no() RETURNS boolean LANGUAGE plpgsql AS
$$BEGIN RAISE EXCEPTION 'policy says no'; END$$;
ALTER TABLE est ENABLE ROW LEVEL SECURITY;
CREATE POLICY est_no ON est FOR SELECT USING (est_no());
SET ROLE regress_pacing_user;
SELECT rows FROM backfill.estimate_job('est');
\echo :SQLSTATE
SELECT current_user, 1 AS still_usable;
RESET ROLE;
DROP POLICY est_no ON est;
ALTER TABLE est DISABLE ROW LEVEL SECURITY;
DROP FUNCTION est_no();
SELECT count(*) AS new_relations FROM pg_class
 WHERE oid NOT IN (SELECT oid FROM est_before) AND relname <> 'est_before'
   AND relnamespace = 'backfill'::regnamespace AND relname LIKE 'estimate%';
REVOKE SELECT ON est FROM regress_pacing_user;
DROP ROLE regress_pacing_user;

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
DROP TABLE pace, est, est_parts, est_empty;
