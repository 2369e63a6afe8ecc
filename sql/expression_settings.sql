-- A job's filter and computed columns mean what they meant to the session
-- that created the job, whatever the settings of the sessions that run it,
-- write its upstream or verify it: standard_conforming_strings, DateStyle,
-- IntervalStyle, extra_float_digits and search_path at create_job, others
-- later.  The catalog shows the text as it is stored: written under pinned
-- settings, names qualified.
\set VERBOSITY default
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE es_up (id int PRIMARY KEY, b text, d date);
INSERT INTO es_up SELECT g, 'r' || g, date '2020-04-01' + g FROM generate_series(1, 100) g;

-- ---- a computed column with a backslash, created with standard_conforming_strings off ----
SET standard_conforming_strings = off;
SET escape_string_warning = off;
-- here '\\x' is the two characters \x, as E'\\x' is under any setting
SELECT backfill.create_job('es_bs', 'es_up', columns => ARRAY['b', $$b || '\\x' AS c$$],
                           chunk_size => 30) AS bs_job \gset
SELECT octet_length('\\x') AS two_characters;
RESET standard_conforming_strings;
RESET escape_string_warning;
-- stored as read under standard_conforming_strings on: one backslash
SELECT expressions FROM backfill.job WHERE job_id = :bs_job;
SELECT octet_length(expressions[3]) - octet_length(replace(expressions[3], E'\\', '')) AS backslashes
  FROM backfill.job WHERE job_id = :bs_job;
CALL backfill.run_job(:bs_job, 1);
-- written under the default setting while it backfills (captured)
INSERT INTO es_up VALUES (101, 'r101', '2020-08-01');
UPDATE es_up SET b = 'changed' WHERE id IN (2, 90);
SET standard_conforming_strings = off;
UPDATE es_up SET b = 'changed off' WHERE id IN (3, 91);
SELECT * FROM backfill.verify_job(:bs_job);
-- recreated from a session with the setting off: the same text
SELECT backfill.recreate_job(:bs_job) AS bs_job2 \gset
RESET standard_conforming_strings;
SELECT j2.expressions = j1.expressions AS same_text
  FROM backfill.job j1, backfill.job j2 WHERE j1.job_id = :bs_job AND j2.job_id = :bs_job2;
SELECT backfill.drop_job(:bs_job);
CALL backfill.run_job(:bs_job2, 1);
SELECT * FROM backfill.verify_job(:bs_job2);
CALL backfill.run_job(:bs_job2);
SELECT status FROM backfill.jobs WHERE job_id = :bs_job2;
-- and after the finish (applied)
INSERT INTO es_up VALUES (102, 'r102', '2020-08-02');
UPDATE es_up SET b = 'after' WHERE id = 4;
SET standard_conforming_strings = off;
UPDATE es_up SET b = 'after off' WHERE id = 5;
RESET standard_conforming_strings;
-- every row computed as its creator meant: b and then a backslash and an x
SELECT count(*) AS rows, count(*) FILTER (WHERE c = b || E'\\x') AS right
  FROM es_bs;
SELECT * FROM es_bs WHERE id IN (2, 3, 4, 5, 101, 102) ORDER BY id;
SELECT * FROM backfill.verify_job(:bs_job2);
SET standard_conforming_strings = off;
SELECT * FROM backfill.verify_job(:bs_job2);
RESET standard_conforming_strings;
SELECT backfill.drop_job(:bs_job2);

-- ---- a filter with a date, created under DateStyle SQL, DMY ----
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = sql_standard;
-- 04/05/2020 is the fourth of May here; '-1 2:00:00' is minus a day and
-- two hours in the SQL standard's style
SELECT backfill.create_job('es_date', 'es_up',
                           columns => ARRAY['d', $$d + interval '-1 2:00:00' AS t$$],
                           filter => $$d >= '04/05/2020'$$, chunk_size => 30) AS date_job \gset
SELECT date '04/05/2020' AS fourth_of_may;
SET DateStyle = 'ISO, MDY';
RESET IntervalStyle;
-- stored in ISO style: the same date read under any DateStyle
SELECT expressions, filter FROM backfill.job WHERE job_id = :date_job;
SELECT total_rows, (SELECT count(*) FROM es_up WHERE d >= date '2020-05-04') AS expected
  FROM backfill.job WHERE job_id = :date_job;
CALL backfill.run_job(:date_job, 1);
-- rows moved across the date, written under ISO, MDY
UPDATE es_up SET d = '2020-05-03' WHERE id = 80;          -- out
UPDATE es_up SET d = '2020-05-04' WHERE id = 10;          -- in
SET DateStyle = 'SQL, DMY';
UPDATE es_up SET d = '03/05/2020' WHERE id = 81;          -- out: the third of May
UPDATE es_up SET d = '05/05/2020' WHERE id = 11;          -- in: the fifth of May
SET DateStyle = 'ISO, MDY';
SELECT * FROM backfill.verify_job(:date_job);
CALL backfill.run_job(:date_job);
UPDATE es_up SET d = '2020-05-03' WHERE id = 70;          -- out, after the finish
UPDATE es_up SET d = '2020-05-04' WHERE id = 12;          -- in, after the finish
SELECT status FROM backfill.jobs WHERE job_id = :date_job;
SELECT (SELECT count(*) FROM es_date) AS copied,
       (SELECT count(*) FROM es_up WHERE d >= date '2020-05-04') AS expected,
       (SELECT count(*) FROM es_date e JOIN es_up u USING (id)
         WHERE e.t = u.d - interval '1 day 2 hours') AS computed_right;
SELECT * FROM es_date WHERE id IN (10, 11, 12) ORDER BY id;
SELECT id FROM es_date WHERE id IN (70, 80, 81);
SELECT * FROM backfill.verify_job(:date_job);
SET DateStyle = 'SQL, DMY';
SELECT * FROM backfill.verify_job(:date_job);
SET DateStyle = 'ISO, MDY';
SELECT backfill.drop_job(:date_job);

-- ---- a float constant, created with extra_float_digits 0 ----
-- which shows the float with 15 digits, not the constant's 17
SET extra_float_digits = 0;
SELECT backfill.create_job('es_float', 'es_up',
                           columns => ARRAY[$$id * '1.2345678901234567'::float8 AS f$$]) AS float_job \gset
SELECT '1.2345678901234567'::float8 AS fifteen_digits;
RESET extra_float_digits;
SELECT expressions FROM backfill.job WHERE job_id = :float_job;
CALL backfill.run_job(:float_job);
SELECT count(*) FILTER (WHERE e.f = u.id * '1.2345678901234567'::float8) AS right, count(*) AS rows
  FROM es_float e JOIN es_up u USING (id);
SELECT * FROM backfill.verify_job(:float_job);
SELECT backfill.drop_job(:float_job);

-- ---- a filter calling a function found on the creator's search_path ----
CREATE SCHEMA es_fns;
CREATE FUNCTION es_fns.big(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT $1 > 50';
-- the same name in the schema the later sessions see first
CREATE FUNCTION public.big(int) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true';
SET search_path = es_fns, public;
SELECT backfill.create_job('public.es_fn', 'public.es_up', filter => 'big(id)',
                           chunk_size => 30) AS fn_job \gset
RESET search_path;
-- stored qualified
SELECT filter FROM backfill.job WHERE job_id = :fn_job;
CALL backfill.run_job(:fn_job, 1);
UPDATE es_up SET b = 'small' WHERE id = 20;               -- never in
UPDATE es_up SET b = 'big' WHERE id = 95;                 -- in
CALL backfill.run_job(:fn_job);
DELETE FROM es_up WHERE id = 96;
INSERT INTO es_up VALUES (30000, 'r30000', NULL), (0, 'r0', NULL);
SELECT count(*) AS copied, min(id), max(id) FROM es_fn;
SELECT * FROM backfill.verify_job(:fn_job);
SET search_path = es_fns, public;
SELECT * FROM backfill.verify_job(:fn_job);
RESET search_path;
SELECT backfill.drop_job(:fn_job);

DROP TABLE es_up;
DROP FUNCTION es_fns.big(int), public.big(int);
DROP SCHEMA es_fns;
