-- The legacy error as RisingWave prints it: current_pos is its {:?} of an
-- Option<OwnedRow>, each key value in the variant RisingWave stores its type
-- in; the DETAIL keeps the position as a row literal.  One legacy job per
-- key type reads one row (chunk_size 1, one barrier) and restarts.
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);

CREATE TYPE lm_pair AS (a int, b text);
CREATE TYPE lm_mood AS ENUM ('sad', 'ok');
CREATE DOMAIN lm_positive AS int CHECK (VALUE > 0);

-- each upstream has one row, its key: a full chunk, so not finished
CREATE TABLE lm_case (n int PRIMARY KEY, name text NOT NULL, type text NOT NULL, key text NOT NULL);
INSERT INTO lm_case VALUES
    (1, 'int2', 'smallint', '-32768'),
    (2, 'int4', 'int', '2147483647'),
    (3, 'int8', 'bigint', '96322'),
    (4, 'bool', 'boolean', 'false'),
    (5, 'float4', 'real', '-1.5'),
    (6, 'float4 small', 'real', '0.00001'),
    (7, 'float8', 'double precision', '0.1'),
    (8, 'float8 whole', 'double precision', '100'),
    (9, 'float8 1e16', 'double precision', '1e16'),
    (10, 'float8 -inf', 'double precision', '''-Infinity'''),
    (11, 'numeric', 'numeric', '1.50'),
    (12, 'numeric NaN', 'numeric', '''NaN'''),
    (13, 'numeric 2^96', 'numeric', '79228162514264337593543950336'),
    (14, 'date', 'date', '''2024-01-31'''),
    (15, 'date BC', 'date', '''0044-03-15 BC'''),
    (16, 'date infinity', 'date', '''infinity'''),
    (17, 'time', 'time', '''12:30:00.25'''),
    (18, 'time us', 'time', '''01:02:03.000004'''),
    (19, 'timestamp', 'timestamp', '''2024-01-31 12:30:00'''),
    (20, 'timestamptz', 'timestamptz', '''2024-01-31 12:30:00+00'''),
    (21, 'timestamptz 1969', 'timestamptz', '''1969-12-31 23:59:59.5+00'''),
    (22, 'interval', 'interval', '''1 mon 2 days 3 s'''),
    (23, 'bytea', 'bytea', '''\x00ff41'''),
    (24, 'text', 'text COLLATE "C"', $$E'it''s a "quote" and a \\ backslash'$$),
    (25, 'text escapes', 'text COLLATE "C"', $$E'tab\there\nline\r\x01\x7f é' || U&'\0301 \200B \00A0'$$),
    (26, 'varchar', 'varchar(10)', '''abc'''),
    (27, 'char(5)', 'char(5)', '''ab'''),
    (28, 'uuid', 'uuid', '''00000000-0000-0000-0000-00000000002a'''),
    (29, 'jsonb', 'jsonb', $$'{"a": [1, "x"]}'$$),
    (30, 'int[]', 'int[]', '''{1,NULL,3}'''),
    (31, 'int[][]', 'int[]', '''{{1,2},{3,4}}'''),
    (32, 'composite type', 'lm_pair', $$ROW(1, 'x')$$),
    (33, 'composite[]', 'lm_pair[]', $$ARRAY[ROW(2, NULL)::lm_pair]$$),
    (34, 'domain', 'lm_positive', '5'),
    (35, 'oid', 'oid', '16384'),
    (36, 'enum', 'lm_mood', '''sad''');
SELECT format('CREATE TABLE %I (k %s PRIMARY KEY, v int)', 'lm_' || n, type),
       format('INSERT INTO %I VALUES (%s, 1)', 'lm_' || n, key)
  FROM lm_case ORDER BY n \gexec
-- and a composite key, declared in another order than the columns
CREATE TABLE lm_37 (kc date, v int, kb text COLLATE "C", ka int, PRIMARY KEY (ka, kb, kc));
INSERT INTO lm_37 VALUES ('2000-01-01', 1, 'a b', 7);
INSERT INTO lm_case VALUES (37, 'composite key', '(int, text, date)', '');

SET client_min_messages = error;    -- the warnings of creating legacy jobs
SELECT format('SELECT backfill.create_job(%L, %L, kind => %L, chunk_size => 1)',
              'lm_' || n || '_down', 'lm_' || n, 'no_shuffle')
  FROM lm_case ORDER BY n \gexec
RESET client_min_messages;
SELECT count(*) AS jobs FROM backfill.job j JOIN lm_case c ON j.job_id = c.n
 WHERE j.upstream = ('lm_' || c.n)::regclass;

-- one barrier, then the restart fails (its message below, the OID masked)
\set VERBOSITY sqlstate
SELECT format('CALL backfill.run_job(%s, 1)', n), format('CALL backfill.run_job(%s)', n)
  FROM lm_case ORDER BY n \gexec
\set VERBOSITY default
SELECT c.name, j.last_sqlstate,
       replace(j.last_error, 'upstream_table_id=' || j.upstream::oid, 'upstream_table_id=<oid>') AS message
  FROM backfill.job j JOIN lm_case c ON j.job_id = c.n ORDER BY c.n;
SELECT c.name, j.last_error_detail FROM backfill.job j JOIN lm_case c ON j.job_id = c.n
 WHERE c.n IN (3, 24, 37) ORDER BY c.n;
-- the message names the upstream's OID, the fragment and the actor
SELECT count(*) AS exact FROM backfill.job j JOIN backfill.actor a USING (job_id)
 WHERE j.last_error LIKE format('legacy no-shuffle backfill recovered unfinished progress; cancel and recreate the streaming job. upstream_table_id=%s, fragment_id=%s, actor_id=%s, current_pos=Some(OwnedRow([%%])), row_count=1',
                                j.upstream::oid, j.fragment_id, a.actor_id);

-- State rows decoded as the legacy executor decodes them (recover_backfill_state):
-- a NULL backfill_finished is unfinished, a NULL row_count is 0, a negative
-- one is the u64 RisingWave makes of it, a position is taken as it is.
CREATE TABLE lm_up (a int, b text, PRIMARY KEY (a, b));
INSERT INTO lm_up SELECT g, 'r' || g FROM generate_series(1, 50) g;
SELECT backfill.create_job('lm_up_down', 'lm_up', kind => 'no_shuffle', chunk_size => 10) AS job \gset
CALL backfill.run_job(:job, 1);
\set st 'backfill.state_' :job
SELECT DISTINCT b, backfill_finished, row_count FROM :st;
UPDATE :st SET backfill_finished = NULL;
\set VERBOSITY sqlstate
CALL backfill.run_job(:job);
\set VERBOSITY default
SELECT last_sqlstate, replace(last_error, 'upstream_table_id=' || upstream::oid, 'upstream_table_id=<oid>') AS message
  FROM backfill.job WHERE job_id = :job;
UPDATE :st SET row_count = NULL;
\set VERBOSITY sqlstate
CALL backfill.run_job(:job);
\set VERBOSITY default
SELECT replace(last_error, 'upstream_table_id=' || upstream::oid, 'upstream_table_id=<oid>') AS message
  FROM backfill.job WHERE job_id = :job;
UPDATE :st SET row_count = -1, backfill_finished = false, b = NULL;
\set VERBOSITY sqlstate
CALL backfill.run_job(:job);
\set VERBOSITY default
SELECT replace(last_error, 'upstream_table_id=' || upstream::oid, 'upstream_table_id=<oid>') AS message,
       last_error_detail
  FROM backfill.job WHERE job_id = :job;
-- a row whose position is all NULL: Some, with None for each column
UPDATE :st SET row_count = 0, a = NULL;
\set VERBOSITY sqlstate
CALL backfill.run_job(:job);
\set VERBOSITY default
SELECT replace(last_error, 'upstream_table_id=' || upstream::oid, 'upstream_table_id=<oid>') AS message,
       last_error_detail
  FROM backfill.job WHERE job_id = :job;
-- no row at all: None
DELETE FROM :st;
\set VERBOSITY sqlstate
CALL backfill.run_job(:job);
\set VERBOSITY default
SELECT replace(last_error, 'upstream_table_id=' || upstream::oid, 'upstream_table_id=<oid>') AS message,
       last_error_detail
  FROM backfill.job WHERE job_id = :job;
-- finished, with a NULL row_count: runs on (killed after its snapshot
-- ended, before its final barrier)
SELECT backfill.drop_job(:job);
SELECT backfill.create_job('lm_up_down', 'lm_up', kind => 'no_shuffle', chunk_size => 100) AS job \gset
CALL backfill.run_job(:job, 1);
\set st 'backfill.state_' :job
SELECT status, (SELECT bool_and(backfill_finished) FROM :st) AS all_finished
  FROM backfill.jobs WHERE job_id = :job;
UPDATE :st SET row_count = NULL;
CALL backfill.run_job(:job);
SELECT status, last_error FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT backfill.drop_job(:job);

-- ids: each taken with nextval() and set again with setval(), whose WAL
-- record holds the id itself: nothing is logged ahead (log_cnt 0) that a
-- crash would skip, so ids stay dense
SELECT last_value AS last_job FROM backfill.job_id_seq \gset
SELECT last_value AS last_actor FROM backfill.actor_id_seq \gset
SELECT backfill.create_job('lm_ids', 'lm_up', parallelism => 3) AS ids_job \gset
SELECT backfill.reschedule(:ids_job, 2);
SELECT :ids_job - :last_job AS job_step,
       (SELECT array_agg(actor_id - :last_actor ORDER BY actor_id) FROM backfill.actor WHERE job_id = :ids_job) AS actor_steps,
       (SELECT log_cnt FROM backfill.job_id_seq) AS job_log_cnt,
       (SELECT log_cnt FROM backfill.fragment_id_seq) AS fragment_log_cnt,
       (SELECT log_cnt FROM backfill.actor_id_seq) AS actor_log_cnt;
SELECT backfill.drop_job(:ids_job);

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
SELECT format('DROP TABLE %I', 'lm_' || n) FROM lm_case ORDER BY n \gexec
DROP TABLE lm_up, lm_case;
DROP TYPE lm_pair, lm_mood;
DROP DOMAIN lm_positive;
