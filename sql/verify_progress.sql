-- The last verify and the last repair of each job, in backfill.verification
-- and backfill.verifications: written by verify_job at its end (in its
-- caller's transaction, nothing when read-only) and by repair_job as it
-- goes; seen by the job's owner and by monitoring roles only; dropped with
-- the job.  (A repair seen running from another session, and one killed,
-- are in t/047_repair_progress.pl.)
SET backfill.barrier_interval_ms = 0;
CREATE ROLE regress_vp_owner;
CREATE ROLE regress_vp_other;
CREATE ROLE regress_vp_mon IN ROLE pg_monitor;
GRANT CREATE ON SCHEMA public TO regress_vp_owner;

-- a superuser's job, finished
CREATE TABLE vp_up (id int PRIMARY KEY, v text);
INSERT INTO vp_up SELECT g, 'v' || g FROM generate_series(1, 2000) g;
SELECT backfill.create_job('vp_mv', 'vp_up') AS job \gset
CALL backfill.run_job(:job);
-- never verified: no row
SELECT count(*) FROM backfill.verification WHERE job_id = :job;

-- 1. a clean job: a verify by checksums, 0 differences
SELECT count(*) FROM backfill.verify_job(:job);
SELECT operation, method, range_rows, pid = pg_backend_pid() AS mine,
       started_at <= finished_at AS timed, ranges_done > 0 AS ranges, ranges_done = ranges_total AS all_ranges,
       rows_read, differences, missing, extra, different, clean
  FROM backfill.verification WHERE job_id = :job;

-- 2. three differences, by checksums then row by row: the last one stands
UPDATE vp_mv SET v = 'changed' WHERE id = 10;
DELETE FROM vp_mv WHERE id = 700;
INSERT INTO vp_mv VALUES (5000, 'extra');
SELECT count(*) FROM backfill.verify_job(:job, range_rows => 100);
SELECT method, range_rows, ranges_done > 1 AS ranges, rows_read >= 100 AS rows_read, differences
  FROM backfill.verification WHERE job_id = :job AND operation = 'verify';
SELECT count(*) FROM backfill.verify_job(:job, 'rows');
SELECT method, range_rows, ranges_done, ranges_total, rows_read, differences
  FROM backfill.verification WHERE job_id = :job AND operation = 'verify';
-- the view: the job's name, not running
SELECT job_name, operation, method, running, differences FROM backfill.verifications WHERE job_id = :job;

-- 3. in the caller's transaction: rolled back with it
BEGIN;
SELECT count(*) FROM backfill.verify_job(:job, 'rows', 7);
SELECT range_rows FROM backfill.verification WHERE job_id = :job AND operation = 'verify';
ROLLBACK;
SELECT range_rows FROM backfill.verification WHERE job_id = :job AND operation = 'verify';

-- 4. read-only: the verify works, nothing is recorded, no error
BEGIN READ ONLY;
SELECT count(*) FROM backfill.verify_job(:job, 'checksum', 5);
SELECT count(*) FROM backfill.verify_job(:job, 'rows', 5);
COMMIT;
SET default_transaction_read_only = on;
SELECT count(*) FROM backfill.verify_job(:job, range_rows => 6);
RESET default_transaction_read_only;
SELECT method, range_rows, differences FROM backfill.verification WHERE job_id = :job AND operation = 'verify';

-- 5. a repair: its ranges, its rows per kind, clean; and the verify it
-- made last (clean too)
CALL backfill.repair_job(:job, 2);
SELECT operation, method, range_rows, pid = pg_backend_pid() AS mine, started_at <= finished_at AS timed,
       ranges_done, ranges_total, rows_read IS NULL AS no_rows_read, differences, missing, extra, different, clean
  FROM backfill.verification WHERE job_id = :job ORDER BY operation;
SELECT operation, running, finished_at IS NOT NULL AS finished FROM backfill.verifications
 WHERE job_id = :job ORDER BY operation;
-- no repair runs: backfill.progress shows none
SELECT count(*) FROM backfill.progress WHERE job_id = :job;
-- nothing to repair: no range, clean, the figures of before gone
CALL backfill.repair_job(:job);
SELECT ranges_done, ranges_total, differences, missing, extra, different, clean
  FROM backfill.verification WHERE job_id = :job AND operation = 'repair';

-- 6. a plain role's job, verified by a superuser: the record is the
-- role's job's, and the role sees its own rows only
SET ROLE regress_vp_owner;
CREATE TABLE vp_up2 (id int PRIMARY KEY, v int);
INSERT INTO vp_up2 SELECT g, g FROM generate_series(1, 100) g;
SELECT backfill.create_job('vp_mv2', 'vp_up2') AS job2 \gset
CALL backfill.run_job(:job2);
DELETE FROM vp_mv2 WHERE id IN (1, 2);
RESET ROLE;
SELECT count(*) FROM backfill.verify_job(:job2);
SELECT job_id = :job2 AS theirs, operation, differences FROM backfill.verification WHERE job_id = :job2;
SET ROLE regress_vp_owner;
-- its own rows only: the superuser's job's are not there
SELECT job_id = :job2 AS own, operation, differences FROM backfill.verification ORDER BY job_id, operation;
SELECT job_id = :job2 AS own, operation, differences FROM backfill.verifications ORDER BY job_id, operation;
-- and its own verify and repair
SELECT count(*) FROM backfill.verify_job(:job2, 'rows');
CALL backfill.repair_job(:job2);
SELECT operation, method, differences, missing, extra, different, clean
  FROM backfill.verification ORDER BY operation;
-- it writes no row itself, nor another role's through verify_job
INSERT INTO backfill.verification (job_id, operation, pid, started_at) VALUES (:job2, 'verify', 1, now());
UPDATE backfill.verification SET differences = 0;
SELECT job_error(format('SELECT count(*) FROM backfill.verify_job(%s)', :job), :job);
RESET ROLE;
SELECT differences FROM backfill.verification WHERE job_id = :job AND operation = 'verify';
-- another plain role sees none; a monitoring role sees every job's
SET ROLE regress_vp_other;
SELECT count(*) FROM backfill.verification;
SELECT count(*) FROM backfill.verifications;
SET ROLE regress_vp_mon;
SELECT job_name, operation, differences, clean FROM backfill.verifications
 WHERE job_id IN (:job, :job2) ORDER BY job_id, operation;
RESET ROLE;

-- 7. (the record is written by verify_job itself: no function of its own
-- takes its figures)

-- 8. a refused cutover(verify => true) rolls its verify's record back
DELETE FROM vp_mv WHERE id = 3;
SELECT job_error(format('SELECT backfill.cutover(%s, verify => true)', :job), :job);
SELECT range_rows, differences FROM backfill.verification WHERE job_id = :job AND operation = 'verify';

-- 9. dropping a job drops its rows
SELECT backfill.drop_job(:job);
SELECT backfill.drop_job(:job2);
SELECT count(*) FROM backfill.verification WHERE job_id IN (:job, :job2);
DROP TABLE vp_up, vp_up2;
REVOKE CREATE ON SCHEMA public FROM regress_vp_owner;
DROP ROLE regress_vp_owner, regress_vp_other, regress_vp_mon;
