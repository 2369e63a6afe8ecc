-- verify_job asks a job's kind what to compare of it (its verify_source
-- callback): a job of each local kind stopped halfway is compared on the
-- keys it has copied, the keys written since (pending) are no difference,
-- and a row taken from its downstream is one, by checksums and row by row;
-- as a plain role its own jobs, and as a superuser the same jobs.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
CREATE ROLE regress_vk_plain;
CREATE SCHEMA regress_vk AUTHORIZATION regress_vk_plain;

SET ROLE regress_vk_plain;
CREATE TABLE regress_vk.up (id int PRIMARY KEY, v text);
INSERT INTO regress_vk.up SELECT g, 'v' || g FROM generate_series(1, 2000) g;
SELECT backfill.create_job('regress_vk.arr', 'regress_vk.up', kind => 'arrangement', chunk_size => 10) AS arr \gset
SET client_min_messages = error;   -- the legacy kind's warning names the job's id
SELECT backfill.create_job('regress_vk.ns', 'regress_vk.up', kind => 'no_shuffle', chunk_size => 10) AS ns \gset
RESET client_min_messages;
SELECT backfill.create_job('regress_vk.snap', 'regress_vk.up', kind => 'snapshot', chunk_size => 10) AS snap \gset
CALL backfill.run_job(:arr, max_barriers => 1);
CALL backfill.run_job(:ns, max_barriers => 1);
CALL backfill.run_job(:snap, max_barriers => 1);
SELECT job_name, status FROM backfill.jobs WHERE job_id IN (:arr, :ns, :snap) ORDER BY job_id;
-- written since their last barrier: pending, whether copied or not
UPDATE regress_vk.up SET v = v || '!' WHERE id % 10 = 0;
SELECT count(*) AS differences FROM backfill.verify_job(:arr);
SELECT count(*) AS differences FROM backfill.verify_job(:ns, 'rows');
SELECT count(*) AS differences FROM backfill.verify_job(:snap, 'checksum', 5);
-- a copied row taken from each downstream, its key not pending
DELETE FROM regress_vk.arr WHERE id = (SELECT min(id) FROM regress_vk.arr WHERE id % 10 <> 0)
RETURNING id AS arr_gone \gset
DELETE FROM regress_vk.ns WHERE id = (SELECT min(id) FROM regress_vk.ns WHERE id % 10 <> 0)
RETURNING id AS ns_gone \gset
DELETE FROM regress_vk.snap WHERE id = (SELECT min(id) FROM regress_vk.snap WHERE id % 10 <> 0)
RETURNING id AS snap_gone \gset
SELECT pk = format('(%s)', :arr_gone) AS gone, problem FROM backfill.verify_job(:arr);
SELECT pk = format('(%s)', :arr_gone) AS gone, problem FROM backfill.verify_job(:arr, 'rows');
SELECT pk = format('(%s)', :ns_gone) AS gone, problem FROM backfill.verify_job(:ns, 'checksum', 1);
SELECT pk = format('(%s)', :snap_gone) AS gone, problem FROM backfill.verify_job(:snap);
SELECT pk = format('(%s)', :snap_gone) AS gone, problem FROM backfill.verify_job(:snap, 'rows');
-- a superuser finds the same in the plain role's jobs
RESET ROLE;
SELECT pk = format('(%s)', :arr_gone) AS gone, problem FROM backfill.verify_job(:arr);
SELECT pk = format('(%s)', :snap_gone) AS gone, problem FROM backfill.verify_job(:snap, 'rows');

-- a cdc job (its slot is the superuser's to make): the changes its slot
-- has decoded and not delivered are pending too
CREATE TABLE vk_up (id int PRIMARY KEY, v text);
INSERT INTO vk_up SELECT g, 'v' || g FROM generate_series(1, 2000) g;
SELECT backfill.create_job('vk_cdc', 'vk_up', kind => 'cdc', chunk_size => 10) AS cdc \gset
CALL backfill.run_job(:cdc, max_barriers => 1);
SELECT status FROM backfill.jobs WHERE job_id = :cdc;
UPDATE vk_up SET v = v || '!' WHERE id % 10 = 0;
SELECT count(*) AS differences FROM backfill.verify_job(:cdc);
SELECT count(*) AS differences FROM backfill.verify_job(:cdc, 'rows');
DELETE FROM vk_cdc WHERE id = (SELECT min(id) FROM vk_cdc WHERE id % 10 <> 0) RETURNING id AS cdc_gone \gset
SELECT pk = format('(%s)', :cdc_gone) AS gone, problem FROM backfill.verify_job(:cdc, 'checksum', 3);
SELECT pk = format('(%s)', :cdc_gone) AS gone, problem FROM backfill.verify_job(:cdc, 'rows');

-- run to the end: every key compared, the taken rows still missing
SET ROLE regress_vk_plain;
CALL backfill.run_job(:arr);
CALL backfill.run_job(:snap);
SELECT pk = format('(%s)', :arr_gone) AS gone, problem FROM backfill.verify_job(:arr);
SELECT pk = format('(%s)', :snap_gone) AS gone, problem FROM backfill.verify_job(:snap, 'checksum', 7);
RESET ROLE;
CALL backfill.run_job(:cdc);
SELECT pk = format('(%s)', :cdc_gone) AS gone, problem FROM backfill.verify_job(:cdc);

SELECT backfill.drop_job(:cdc);
SELECT backfill.drop_job(:arr);
SELECT backfill.drop_job(:ns);
SELECT backfill.drop_job(:snap);
DROP TABLE vk_up;
DROP SCHEMA regress_vk CASCADE;
DROP ROLE regress_vk_plain;
