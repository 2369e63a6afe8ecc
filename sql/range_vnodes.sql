-- Range vnodes: a new job's vnodes are ranges of keys cut from a sample of
-- its upstream, so that each actor reads only its own rows.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);

-- the rows read from a table (or a partitioned table's partitions) so far,
-- as the statistics counters show them once this backend has flushed its own
CREATE FUNCTION rows_read(t regclass) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(coalesce(s.seq_tup_read, 0) + coalesce(s.idx_tup_fetch, 0))::bigint
    FROM pg_stat_user_tables s
   WHERE s.relid = t OR s.relid IN (SELECT relid FROM pg_partition_tree(t) WHERE isleaf)
$$;

CREATE TABLE ru (id int PRIMARY KEY, v text);
INSERT INTO ru SELECT g, 'v' || g FROM generate_series(1, 10000) g;

-- the cuts are stored with the job: 255 bounds of one key column each; the
-- table is small, so the sample is all of it and bound i is the key at
-- position floor(i * 10000 / 256) of the sorted keys
SELECT backfill.create_job('ru_mv', 'ru', parallelism => 4, chunk_size => 1000) AS job \gset
SELECT vnode_mapping, array_dims(vnode_bounds) AS dims,
       vnode_bounds[1][1] AS first_bound, vnode_bounds[128][1] AS middle_bound,
       vnode_bounds[255][1] AS last_bound
  FROM backfill.job WHERE job_id = :job;
SELECT count(*) AS bounds_off_the_quantiles
  FROM generate_series(1, 255) i, backfill.job j
 WHERE j.job_id = :job AND j.vnode_bounds[i][1]::int <> (i * 10000) / 256 + 1;

-- every key has one vnode, the vnodes follow the keys' order, each vnode
-- starts at its bound; keys below the first bound and above the last one
-- (never sampled) go to the first and the last vnode
SELECT count(*) AS keys, count(DISTINCT v) AS vnodes, min(v), max(v),
       count(*) FILTER (WHERE v < pv) AS out_of_order
  FROM (SELECT backfill.job_vnode(:job, id) AS v,
               lag(backfill.job_vnode(:job, id)) OVER (ORDER BY id) AS pv FROM ru) x;
SELECT count(*) AS vnodes_not_starting_at_their_bound
  FROM generate_series(1, 255) i, backfill.job j
 WHERE j.job_id = :job
   AND (backfill.job_vnode(:job, j.vnode_bounds[i][1]::int) <> i
        OR backfill.job_vnode(:job, j.vnode_bounds[i][1]::int - 1) <> i - 1);
SELECT backfill.job_vnode(:job, -2147483648) AS lowest, backfill.job_vnode(:job, 0) AS zero,
       backfill.job_vnode(:job, 10001) AS above, backfill.job_vnode(:job, 2147483647) AS highest;

-- keys beyond the sampled range, written after create_job, are copied too
INSERT INTO ru VALUES (-5, 'below'), (0, 'zero'), (20000, 'above');
DELETE FROM ru WHERE id = 5000;

-- four actors read the table once between them, each its own range
SELECT pg_stat_force_next_flush();
SELECT rows_read('ru') AS before_run \gset
CALL backfill.run_job(:job);
SELECT pg_stat_force_next_flush();
SELECT rows_read('ru') - :before_run AS rows_read, count(*) AS upstream_rows,
       rows_read('ru') - :before_run <= 1.05 * count(*) AS at_most_105_percent
  FROM ru;
SELECT actor_id - min(actor_id) OVER () AS actor, vnode_start, vnode_end, row_count
  FROM backfill.actor WHERE job_id = :job ORDER BY actor_id;
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
-- state rows keep RisingWave's layout: one per vnode, its own count
SELECT count(*) AS state_rows, sum(row_count) AS rows, bool_and(backfill_finished) AS finished
  FROM backfill.job_state(:job);

-- a snapshot job reads the table once too, merged with its log of changes
SELECT backfill.create_job('ru_snap_mv', 'ru', kind => 'snapshot', parallelism => 4, chunk_size => 1000) AS sjob \gset
SELECT pg_stat_force_next_flush();
SELECT rows_read('ru') AS before_run \gset
CALL backfill.run_job(:sjob);
SELECT pg_stat_force_next_flush();
-- a few rows more than the table, as many chunks end a row past their range
-- and their number depends on the barriers: bounded, not exact
SELECT rows_read('ru') - :before_run BETWEEN count(*) AND count(*) * 1.05 AS reads_each_row_once,
       count(*) AS upstream_rows FROM ru;
SELECT * FROM backfill.verify_job(:sjob);
SELECT backfill.drop_job(:sjob);

-- a job with hashed vnodes, as before 1.2: each of its four actors reads
-- every row and keeps a quarter
SET backfill.vnode_mapping = hash;
SELECT backfill.create_job('ru_hash_mv', 'ru', parallelism => 4, chunk_size => 1000) AS hjob \gset
RESET backfill.vnode_mapping;
SELECT vnode_mapping, vnode_bounds FROM backfill.job WHERE job_id = :hjob;
SELECT count(*) AS keys_off_the_hash FROM ru
 WHERE backfill.job_vnode(:hjob, id) <> backfill.vnode(id);
SELECT pg_stat_force_next_flush();
SELECT rows_read('ru') AS before_run \gset
CALL backfill.run_job(:hjob);
SELECT pg_stat_force_next_flush();
SELECT (rows_read('ru') - :before_run) / count(*) AS rows_read_per_row FROM ru;
SELECT * FROM backfill.verify_job(:hjob);
SELECT backfill.drop_job(:hjob);

-- reschedule halfway: the new actors get consecutive vnodes again, each
-- goes on from the position within its range, and the table is still read
-- once in all
CREATE TABLE rr (id bigint PRIMARY KEY, v text);
INSERT INTO rr SELECT g * 3, 'v' || g FROM generate_series(1, 6000) g;
SELECT backfill.create_job('rr_mv', 'rr', chunk_size => 500) AS rjob \gset
SELECT pg_stat_force_next_flush();
SELECT rows_read('rr') AS before_run \gset
CALL backfill.run_job(:rjob, 4);
SELECT pg_stat_force_next_flush();
SELECT rows_read('rr') - :before_run AS first_part \gset
SELECT row_count FROM backfill.jobs WHERE job_id = :rjob;
SELECT backfill.reschedule(:rjob, 3);
UPDATE rr SET v = 'moved' || id, id = id + 1 WHERE id % 999 = 0;   -- keys move between vnodes
INSERT INTO rr VALUES (1, 'first'), (100000, 'last');
SELECT pg_stat_force_next_flush();
SELECT rows_read('rr') AS before_run \gset
CALL backfill.run_job(:rjob);
SELECT pg_stat_force_next_flush();
-- a restart counts the upstream again, for the progress total
SELECT :first_part + rows_read('rr') - :before_run - count(*) <= 1.05 * count(*) AS at_most_105_percent
  FROM rr;
SELECT actor_id - min(actor_id) OVER () AS actor, vnode_start, vnode_end, row_count
  FROM backfill.actor WHERE job_id = :rjob ORDER BY actor_id;
SELECT status FROM backfill.jobs WHERE job_id = :rjob;
SELECT * FROM backfill.verify_job(:rjob);

-- a key of two columns compares as a row, text under its collation
CREATE TABLE rc (a int, b text COLLATE "C", x int, PRIMARY KEY (a, b));
INSERT INTO rc SELECT g % 7, 'k' || g, g FROM generate_series(1, 3000) g;
SELECT backfill.create_job('rc_mv', 'rc', kind => 'snapshot', parallelism => 3, chunk_size => 200) AS cjob \gset
SELECT array_dims(vnode_bounds) AS dims, vnode_bounds[1:2] AS first_bounds
  FROM backfill.job WHERE job_id = :cjob;
SELECT count(*) FILTER (WHERE v < pv) AS out_of_order, count(DISTINCT v) AS vnodes
  FROM (SELECT backfill.job_vnode(:cjob, a, b) AS v,
               lag(backfill.job_vnode(:cjob, a, b)) OVER (ORDER BY a, b) AS pv FROM rc) x;
CALL backfill.run_job(:cjob, 3);
UPDATE rc SET x = -x WHERE a = 3;
DELETE FROM rc WHERE a = 5 AND x < 1000;
INSERT INTO rc VALUES (-1, 'z', 0), (99, '', 0), (4, 'k1', 1);
CALL backfill.run_job(:cjob);
SELECT status FROM backfill.jobs WHERE job_id = :cjob;
SELECT * FROM backfill.verify_job(:cjob);

-- a partitioned upstream: each actor merges the partitions' key indexes
-- over its own range
CREATE TABLE rp (id int PRIMARY KEY, v text) PARTITION BY HASH (id);
CREATE TABLE rp0 PARTITION OF rp FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE rp1 PARTITION OF rp FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE rp2 PARTITION OF rp FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO rp SELECT g, 'v' || g FROM generate_series(1, 6000) g;
SELECT backfill.create_job('rp_mv', 'rp', parallelism => 2, chunk_size => 700) AS pjob \gset
SELECT vnode_mapping FROM backfill.job WHERE job_id = :pjob;
SELECT pg_stat_force_next_flush();
SELECT rows_read('rp') AS before_run \gset
CALL backfill.run_job(:pjob);
SELECT pg_stat_force_next_flush();
SELECT rows_read('rp') - :before_run <= 1.05 * 6000 AS at_most_105_percent;
SELECT row_count FROM backfill.actor WHERE job_id = :pjob ORDER BY actor_id;
SELECT * FROM backfill.verify_job(:pjob);

-- an upstream without rows has nothing to cut: hashed vnodes
CREATE TABLE r_empty (id int PRIMARY KEY);
SELECT backfill.create_job('r_empty_mv', 'r_empty') AS ejob \gset
SELECT vnode_mapping, vnode_bounds FROM backfill.job WHERE job_id = :ejob;

-- a row filter: the ranges split the rows the job copies
CREATE TABLE rf (id int PRIMARY KEY, keep boolean);
INSERT INTO rf SELECT g, g > 9000 FROM generate_series(1, 10000) g;
SELECT backfill.create_job('rf_mv', 'rf', filter => 'keep', parallelism => 2) AS fjob \gset
SELECT vnode_bounds[1][1] AS first_bound, vnode_bounds[255][1] AS last_bound
  FROM backfill.job WHERE job_id = :fjob;

-- backfill.job_vnode(): bad input
SELECT backfill.job_vnode(999, 1);
SELECT backfill.job_vnode(:job, 1, 2);
SELECT backfill.job_vnode(:job, 1::bigint);
SELECT backfill.job_vnode(:job, VARIADIC ARRAY[1]);
SELECT backfill.job_vnode(NULL, 1) IS NULL AS null_job, backfill.job_vnode(:job, NULL::int) IS NULL AS null_key;
-- another role's job does not exist for a role without its owner's privileges
CREATE ROLE regress_range_other;
SET ROLE regress_range_other;
SELECT backfill.job_vnode(:job, 1);
RESET ROLE;
DROP ROLE regress_range_other;
