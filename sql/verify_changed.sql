-- verify_job(method => 'changed'): a finished job compared again only in
-- the ranges of keys written since its last check, found from the pages'
-- LSNs and the ranges each page held (backfill.verification_state and
-- verification_range).  Autovacuum is off for these tables: a vacuum writes
-- pages, which makes their ranges compared again, and the figures below
-- would move with it.  (A writer the check waits for is in
-- specs/verify_changed_wait.spec.)
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
CREATE TABLE vch_up (id int PRIMARY KEY, v int, t text) WITH (autovacuum_enabled = off);
INSERT INTO vch_up SELECT g, g, 't' || g FROM generate_series(1, 20000) g;
SELECT backfill.create_job('vch_mv', 'vch_up') AS job \gset
ALTER TABLE vch_mv SET (autovacuum_enabled = off);

-- a job that copies writes everywhere: refused until it has finished
SELECT * FROM backfill.verify_job(:job, 'changed');
CALL backfill.run_job(:job);

-- the last check's figures: ranges compared of those kept, rows, differences
CREATE FUNCTION vch_last(job bigint) RETURNS TABLE (ranges bigint, of_ranges bigint, rows_read bigint, differences bigint)
LANGUAGE sql AS $$
  SELECT ranges_done, ranges_total, rows_read, differences FROM backfill.verification
   WHERE job_id = job AND operation = 'verify' AND method = 'changed'
$$;
-- the ranges the last check compared: those with its time
CREATE FUNCTION vch_compared(job bigint) RETURNS TABLE (range_no int, lower_key text[], upper_key text[])
LANGUAGE sql AS $$
  SELECT range_no, lower_key, upper_key FROM backfill.verification_range
   WHERE job_id = job AND checked_at = (SELECT checked_at FROM backfill.verification_state s
                                         WHERE s.job_id = job)
   ORDER BY range_no
$$;
-- the range of a key
CREATE FUNCTION vch_range_of(job bigint, key int) RETURNS int
LANGUAGE sql AS $$
  SELECT range_no FROM backfill.verification_range
   WHERE job_id = job AND (lower_key IS NULL OR lower_key[1]::int <= key)
     AND (upper_key IS NULL OR upper_key[1]::int > key)
$$;

-- the page of a row
CREATE FUNCTION vch_page(t regclass, key int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE p int;
BEGIN
  EXECUTE format('SELECT (ctid::text::point)[0]::int FROM %s WHERE id = $1', t) INTO p USING key;
  RETURN p;
END $$;
-- the ranges a check must compare after writes to these pages of each
-- side, of these keys: those of the rows the pages hold, and the keys'
-- (it may compare more: a vacuum may write a page again with the same rows)
CREATE FUNCTION vch_expected(job bigint, up_pages int[], mv_pages int[], keys int[]) RETURNS int[]
LANGUAGE sql AS $$
  SELECT array_agg(DISTINCT r ORDER BY r) FROM (
    SELECT vch_range_of(job, id) r FROM vch_up WHERE (ctid::text::point)[0]::int = ANY (up_pages)
    UNION SELECT vch_range_of(job, id) FROM vch_mv WHERE (ctid::text::point)[0]::int = ANY (mv_pages)
    UNION SELECT vch_range_of(job, k) FROM unnest(keys) k) s
$$;

-- the first check compares every range, the job's range vnodes, all at
-- once: equal, none has counts or a sum of its own yet
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT ranges = of_ranges AS all_compared, of_ranges = 256 AS vnodes, rows_read, differences FROM vch_last(:job);
SELECT count(*) AS ranges, count(*) FILTER (WHERE NOT differs) AS equal, count(checksum) AS summed,
       bool_and(lower_key IS NOT DISTINCT FROM (SELECT r2.upper_key FROM backfill.verification_range r2
                                                 WHERE r2.job_id = r.job_id AND r2.range_no = r.range_no - 1)
                OR range_no = 0) AS contiguous
  FROM backfill.verification_range r WHERE job_id = :job;
SELECT checked_lsn <= pg_current_wal_insert_lsn() AS lsn_kept, relations = ARRAY['vch_up'::regclass, 'vch_mv'::regclass]::oid[] AS relations,
       array_length(pages, 1) AS page_lists
  FROM backfill.verification_state WHERE job_id = :job;

-- nothing written since: nothing compared
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT * FROM vch_last(:job);

-- a write through the job (the apply trigger keeps the downstream equal):
-- only the ranges of the pages written are compared, the key's among them
SELECT vch_page('vch_up', 5000) AS up_old, vch_page('vch_mv', 5000) AS mv_old \gset
UPDATE vch_up SET v = -v WHERE id = 5000;
VACUUM vch_up, vch_mv;     -- pruned now, not by the check's reads (which would write the pages again)
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT vch_expected(:job, ARRAY[:up_old, vch_page('vch_up', 5000)], ARRAY[:mv_old, vch_page('vch_mv', 5000)],
                    '{5000}') <@ (SELECT array_agg(range_no) FROM vch_compared(:job)) AS those_compared,
       vch_range_of(:job, 5000) IN (SELECT range_no FROM vch_compared(:job)) AS key_compared,
       ranges < 8 AS few, differences
  FROM vch_last(:job);

-- differences written to the downstream behind the job's back: a changed
-- value, a row gone, a row added, a NULL for a value
SELECT ARRAY[vch_page('vch_mv', 12000), vch_page('vch_mv', 15000), vch_page('vch_mv', 18000)] AS pages \gset
UPDATE vch_mv SET t = 'changed' WHERE id = 12000;
DELETE FROM vch_mv WHERE id = 15000;
INSERT INTO vch_mv VALUES (25000, 1, 'extra');
UPDATE vch_mv SET t = NULL WHERE id = 18000;
VACUUM vch_up, vch_mv;
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT vch_expected(:job, '{}', :'pages'::int[] || ARRAY[vch_page('vch_mv', 12000), vch_page('vch_mv', 18000),
                                                     vch_page('vch_mv', 25000)],
                    '{12000, 15000, 18000, 25000}') <@ (SELECT array_agg(range_no) FROM vch_compared(:job)) AS those_compared,
       ranges < 20 AS few, differences
  FROM vch_last(:job);
-- what method rows finds
SELECT * FROM backfill.verify_job(:job, 'rows');
-- a range that differs is compared at every check until it no longer does
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT ranges, differences FROM vch_last(:job);
SELECT count(*) FILTER (WHERE differs) AS differing_ranges FROM backfill.verification_range WHERE job_id = :job;

-- a row deleted and vacuumed away leaves no key on its page: the page's
-- list, kept from the last check, names its range
DELETE FROM vch_mv WHERE id = 3000;
VACUUM vch_mv;
SELECT count(*) FROM vch_mv WHERE id = 3000;
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT vch_range_of(:job, 3000) IN (SELECT range_no FROM vch_compared(:job)) AS key_compared;

-- repaired: the ranges that differed are compared again, and found equal
CALL backfill.repair_job(:job);
VACUUM vch_up, vch_mv;
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT differences FROM vch_last(:job);
SELECT count(*) FILTER (WHERE differs) AS differing_ranges FROM backfill.verification_range WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT * FROM vch_last(:job);

-- a table in a new file (VACUUM FULL, CLUSTER, a rewrite): every range again,
-- all in one pass, then those that differ as the checksum method compares them
UPDATE vch_mv SET t = 'x' WHERE id = 9000;
VACUUM FULL vch_up;
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT ranges = of_ranges AS all_compared, differences FROM vch_last(:job);
UPDATE vch_mv SET t = 't9000' WHERE id = 9000;
SELECT * FROM backfill.verify_job(:job, 'changed');

-- a table that grows at its end grows its last range: one that held more
-- than 16 * range_rows rows at its last comparison is cut in parts of a
-- quarter of that before it is compared again, and the next check compares
-- the last part only
INSERT INTO vch_up SELECT g, g, 't' || g FROM generate_series(20001, 25000) g;
VACUUM vch_up, vch_mv;
SELECT * FROM backfill.verify_job(:job, 'changed', range_rows => 100);
SELECT ranges < 16 AS few, of_ranges, rows_read > 5000 AS last_range_read FROM vch_last(:job);
INSERT INTO vch_up SELECT g, g, 't' || g FROM generate_series(25001, 25100) g;
VACUUM vch_up, vch_mv;
SELECT * FROM backfill.verify_job(:job, 'changed', range_rows => 100);
SELECT of_ranges - 256 BETWEEN 10 AND 14 AS parts_added, rows_read > 5000 AS last_range_read FROM vch_last(:job);
-- the parts compared each on its own: their rows and sums are known
SELECT count(*) AS ranges, count(*) FILTER (WHERE NOT differs) AS equal,
       sum(upstream_rows) FILTER (WHERE range_no >= 255) AS last_range_rows,
       bool_and(checksum IS NOT NULL) FILTER (WHERE range_no >= 255) AS parts_summed,
       bool_and(lower_key IS NOT DISTINCT FROM (SELECT r2.upper_key FROM backfill.verification_range r2
                                                 WHERE r2.job_id = r.job_id AND r2.range_no = r.range_no - 1)
                OR range_no = 0) AS contiguous
  FROM backfill.verification_range r WHERE job_id = :job;
INSERT INTO vch_up SELECT g, g, 't' || g FROM generate_series(25101, 25200) g;
VACUUM vch_up, vch_mv;
SELECT * FROM backfill.verify_job(:job, 'changed', range_rows => 100);
SELECT ranges < 4 AS few, rows_read < 1000 AS little_read FROM vch_last(:job);
-- a row changed in a range now cut: found
UPDATE vch_mv SET v = 0 WHERE id = 23000;
SELECT * FROM backfill.verify_job(:job, 'changed');
UPDATE vch_mv SET v = 23000 WHERE id = 23000;
VACUUM vch_up, vch_mv;
SELECT * FROM backfill.verify_job(:job, 'changed');

-- the lines of progress, when asked for
SET backfill.client_progress_interval = '10s';
SELECT * FROM backfill.verify_job(:job, 'changed');
RESET backfill.client_progress_interval;

-- refused where a write could be missed, or nothing kept
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM backfill.verify_job(:job, 'changed');
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM backfill.verify_job(:job, 'changed');
ROLLBACK;
ALTER TABLE vch_mv SET UNLOGGED;
SELECT * FROM backfill.verify_job(:job, 'changed');
ALTER TABLE vch_mv SET LOGGED;
-- (the downstream is in a new file again)
SELECT * FROM backfill.verify_job(:job, 'changed');
SELECT ranges = of_ranges AS all_compared FROM vch_last(:job);
-- in a transaction that has written: its own writes are compared, and kept
BEGIN;
UPDATE vch_mv SET t = 'mine' WHERE id = 7000;
SELECT * FROM backfill.verify_job(:job, 'changed');
ROLLBACK;
SELECT * FROM backfill.verify_job(:job, 'changed');

-- a job whose keys map to vnodes by hash, a key of two columns, a text
-- under a collation of its own: ranges of range_rows * 16 keys of the
-- downstream
SET backfill.vnode_mapping = hash;
CREATE TABLE vch2_up (a int, b text COLLATE "C", v int, PRIMARY KEY (a, b)) WITH (autovacuum_enabled = off);
INSERT INTO vch2_up SELECT g % 50, 'k' || g, g FROM generate_series(1, 5000) g;
SELECT backfill.create_job('vch2_mv', 'vch2_up') AS job2 \gset
RESET backfill.vnode_mapping;
ALTER TABLE vch2_mv SET (autovacuum_enabled = off);
CALL backfill.run_job(:job2);
SELECT * FROM backfill.verify_job(:job2, 'changed', range_rows => 20);
SELECT ranges = of_ranges AS all_compared, of_ranges BETWEEN 14 AND 17 AS ranges_of_320_keys FROM vch_last(:job2);
SELECT count(*) FILTER (WHERE array_length(lower_key, 1) = 2) AS two_columns FROM backfill.verification_range WHERE job_id = :job2;
SELECT * FROM backfill.verify_job(:job2, 'changed', range_rows => 20);
SELECT ranges FROM vch_last(:job2);
UPDATE vch2_mv SET v = 0 WHERE a = 7 AND b = 'k4007';
VACUUM vch2_mv;
SELECT * FROM backfill.verify_job(:job2, 'changed');
SELECT ranges BETWEEN 1 AND 3 AS few FROM vch_last(:job2);

-- a partitioned upstream: the pages of each partition
CREATE TABLE vch3_up (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);
CREATE TABLE vch3_up_1 PARTITION OF vch3_up FOR VALUES FROM (0) TO (5000) WITH (autovacuum_enabled = off);
CREATE TABLE vch3_up_2 PARTITION OF vch3_up FOR VALUES FROM (5000) TO (10000) WITH (autovacuum_enabled = off);
INSERT INTO vch3_up SELECT g, g FROM generate_series(1, 9999) g;
SELECT backfill.create_job('vch3_mv', 'vch3_up') AS job3 \gset
SELECT format('ALTER TABLE %s SET (autovacuum_enabled = off)', inhrelid::regclass)
  FROM pg_inherits WHERE inhparent = 'vch3_mv'::regclass \gexec
CALL backfill.run_job(:job3);
SELECT * FROM backfill.verify_job(:job3, 'changed');
SELECT relations::regclass[] AS leaves FROM backfill.verification_state WHERE job_id = :job3;
UPDATE vch3_up SET v = -v WHERE id = 7500;     -- through the job
UPDATE vch3_mv SET v = 0 WHERE id = 2500;      -- behind its back
VACUUM vch3_up, vch3_mv;
SELECT * FROM backfill.verify_job(:job3, 'changed');
SELECT ranges < 30 AS few, differences FROM vch_last(:job3);
SELECT backfill.drop_job(:job3);
DROP TABLE vch3_up;

-- seen by the job's owner only: the bounds are keys
CREATE ROLE regress_vch_other;
SET ROLE regress_vch_other;
SELECT count(*) FROM backfill.verification_state;
SELECT count(*) FROM backfill.verification_range;
SELECT * FROM backfill.verify_job(:job, 'changed');
RESET ROLE;
DROP ROLE regress_vch_other;

-- dropped with the job
SELECT backfill.drop_job(:job2);
SELECT count(*) FROM backfill.verification_range WHERE job_id = :job2;
SELECT backfill.drop_job(:job);
SELECT count(*) FROM backfill.verification_state;
DROP FUNCTION vch_last(bigint), vch_compared(bigint), vch_range_of(bigint, int), vch_page(regclass, int),
  vch_expected(bigint, int[], int[], int[]);
DROP TABLE vch_up, vch2_up;
