-- Bad input to every function of the extension: each call is refused with a
-- clear error and a fitting SQLSTATE and leaves nothing behind, or, where the
-- input is odd but valid, does exactly what it says.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);

-- try(statement): "ok: <first column of the first row>" (or "ok" for a
-- command), or the error as "<SQLSTATE>: <message>"; each call in a
-- subtransaction of its own
CREATE FUNCTION bi_try(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
    msg text;
    res text;
BEGIN
    IF stmt !~* '^\s*SELECT' THEN
        EXECUTE stmt;
        RETURN 'ok';
    END IF;
    EXECUTE stmt INTO res;
    RETURN 'ok: ' || coalesce(res, 'NULL');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    RETURN st || ': ' || msg;
END
$$;

-- the functions of the extension: each is called below
SELECT p.oid::regprocedure AS function FROM pg_proc p
 WHERE p.pronamespace = 'backfill'::regnamespace ORDER BY p.oid::regprocedure::text COLLATE "C";

CREATE TABLE bi_up (id int PRIMARY KEY, a int, b text);
INSERT INTO bi_up SELECT g, g % 7, 'b' || g FROM generate_series(1, 30) g;

-- what exists now; bi_state() shows what a group of calls left behind: jobs,
-- actors, relations in schema backfill, tables elsewhere and triggers made
-- since, replication slots of jobs
CREATE TABLE bi_base_rel AS SELECT oid FROM pg_class;
CREATE TABLE bi_base_trg AS SELECT oid FROM pg_trigger;
CREATE FUNCTION bi_state(OUT jobs bigint, OUT actors bigint, OUT backfill_relations bigint,
                         OUT new_tables text, OUT new_triggers bigint, OUT slots bigint)
LANGUAGE sql AS $$
SELECT (SELECT count(*) FROM backfill.job),
       (SELECT count(*) FROM backfill.actor),
       (SELECT count(*) FROM pg_class WHERE relnamespace = 'backfill'::regnamespace),
       (SELECT string_agg(replace(oid::regclass::text, E'\n', '\n'), ', ' ORDER BY oid::regclass::text COLLATE "C")
          FROM pg_class
         WHERE relkind = 'r' AND relpersistence = 'p' AND relnamespace <> 'backfill'::regnamespace
           AND oid NOT IN (SELECT oid FROM bi_base_rel)
           AND relname NOT IN ('bi_base_rel', 'bi_base_trg')),
       (SELECT count(*) FROM pg_trigger WHERE oid NOT IN (SELECT oid FROM bi_base_trg)),
       (SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'backfill%')
$$;
SELECT * FROM bi_state();

-- create_job: NULL in each argument that must have a value
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.create_job(NULL, 'bi_up')$$),
    ($$SELECT backfill.create_job('x', NULL)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => NULL)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', parallelism => NULL)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', chunk_size => NULL)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', into_existing => NULL)$$),
    ($$SELECT backfill.create_job(NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$),
    ($$SELECT backfill.create_job(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$)
) v(s);
SELECT * FROM bi_state();

-- numbers out of range: negative, zero, the extremes of integer
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.create_job('x', 'bi_up', parallelism => -2147483648)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', parallelism => -1)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', parallelism => 0)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', parallelism => 257)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', parallelism => 2147483647)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', chunk_size => -2147483648)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', chunk_size => -1)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', chunk_size => 0)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', rate_limit => -2147483648)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', rate_limit => -1)$$),
    ($$SELECT backfill.create_job('x', 'bi_up', parallelism => 2147483648)$$)
) v(s);
SELECT * FROM bi_state();

-- kinds are matched exactly
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.create_job('x', 'bi_up', kind => 'ARRANGEMENT')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => ' arrangement')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => 'arrangement ')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => E'arrangement\n')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => 'Snapshot')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => 'CDC')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => 'no-shuffle')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => '')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => 'arrangement''; DROP TABLE bi_up; --')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', kind => 'ärrangement')$$)
) v(s);
SELECT * FROM bi_state();

-- column lists
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{NULL}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{a,NULL}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => ARRAY[NULL, NULL]::text[])$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{id,id}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{a,b,a}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{nope}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{""}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{" a"}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{A}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{"a; DROP TABLE bi_up"}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{xmin}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{tableoid}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{{a},{b}}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{{a,b},{b,a}}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{"a AS"}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{"1 AS b; DROP TABLE bi_up"}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', columns => '{"a AS \"\""}')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', filter => 'a > 0) OR (true')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', filter => '1')$$),
    ($$SELECT backfill.create_job('x', 'bi_up', filter => E'a > 0\n; DROP TABLE bi_up')$$)
) v(s);
SELECT * FROM bi_state();

-- downstream names that are not names, or name places that cannot take one
CREATE TYPE bi_type AS (i int);
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.create_job('', 'bi_up')$$),
    ($$SELECT backfill.create_job(' ', 'bi_up')$$),
    ($$SELECT backfill.create_job('a b', 'bi_up')$$),
    ($$SELECT backfill.create_job(E'a\nb', 'bi_up')$$),
    ($$SELECT backfill.create_job('x"; DROP TABLE bi_up; --', 'bi_up')$$),
    ($$SELECT backfill.create_job('x; DROP TABLE bi_up', 'bi_up')$$),
    ($$SELECT backfill.create_job('"unterminated', 'bi_up')$$),
    ($$SELECT backfill.create_job('""', 'bi_up')$$),
    ($$SELECT backfill.create_job('public.', 'bi_up')$$),
    ($$SELECT backfill.create_job('.x', 'bi_up')$$),
    ($$SELECT backfill.create_job('a..b', 'bi_up')$$),
    ($$SELECT backfill.create_job('a.b.c.d', 'bi_up')$$),
    ($$SELECT backfill.create_job('otherdb.public.x', 'bi_up')$$),
    ($$SELECT backfill.create_job('nosuchschema.x', 'bi_up')$$),
    ($$SELECT backfill.create_job('"Public".x', 'bi_up')$$),
    ($$SELECT backfill.create_job('"nö schema".x', 'bi_up')$$),
    ($$SELECT backfill.create_job('pg_catalog.x', 'bi_up')$$),
    ($$SELECT backfill.create_job('BACKFILL.x', 'bi_up')$$),
    ($$SELECT backfill.create_job('pg_temp.x', 'bi_up')$$),
    ($$SELECT backfill.create_job('BI_UP', 'bi_up')$$),
    ($$SELECT backfill.create_job('bi_up_pkey', 'bi_up')$$),
    ($$SELECT backfill.create_job('bi_type', 'bi_up')$$)
) v(s);
SELECT * FROM bi_state();

-- upstreams that are not tables one can backfill from
CREATE VIEW bi_view AS SELECT * FROM bi_up;
CREATE MATERIALIZED VIEW bi_matview AS SELECT * FROM bi_up;
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.create_job('x', 0::oid::regclass)$$),
    ($$SELECT backfill.create_job('x', '-'::regclass)$$),
    ($$SELECT backfill.create_job('x', 4294967295::oid::regclass)$$),
    ($$SELECT backfill.create_job('x', 'nosuch')$$),
    ($$SELECT backfill.create_job('x', 'nosuchschema.bi_up')$$),
    ($$SELECT backfill.create_job('x', '"BI_UP"')$$),
    ($$SELECT backfill.create_job('x', 'bi_up; DROP TABLE bi_up')$$),
    ($$SELECT backfill.create_job('x', 'bi_view')$$),
    ($$SELECT backfill.create_job('x', 'bi_matview')$$),
    ($$SELECT backfill.create_job('x', 'bi_type')$$),
    ($$SELECT backfill.create_job('x', 'backfill.job_id_seq')$$),
    ($$SELECT backfill.create_job('x', 'pg_catalog.pg_class')$$),
    ($$SELECT backfill.create_job('x', 'pg_toast.pg_toast_1255')$$)
) v(s);
-- nothing was created by any of them
SELECT * FROM bi_state();

-- estimate_job: create_job's arguments, refused as create_job refuses them
CREATE TABLE bi_nokey (i int);
CREATE TEMP TABLE bi_temp (id int PRIMARY KEY);
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT rows FROM backfill.estimate_job(NULL)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', NULL)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', parallelism => NULL)$$),
    ($$SELECT rows FROM backfill.estimate_job(NULL, NULL, NULL, NULL)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', 'ARRANGEMENT')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', '')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', parallelism => -2147483648)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', parallelism => 0)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', parallelism => 257)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', 'cdc', parallelism => 2)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', columns => '{NULL}')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', columns => '{a,a}')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', columns => '{nope}')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', columns => '{xmin}')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', columns => '{{a},{b}}')$$),
    ($$SELECT rows FROM backfill.estimate_job(0::oid::regclass)$$),
    ($$SELECT rows FROM backfill.estimate_job(4294967295::oid::regclass)$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_view')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_matview')$$),
    ($$SELECT rows FROM backfill.estimate_job('backfill.job_id_seq')$$),
    ($$SELECT rows FROM backfill.estimate_job('pg_catalog.pg_class')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_temp')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_nokey')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', columns => '{}')$$),
    ($$SELECT rows FROM backfill.estimate_job('bi_up', 'no_shuffle', '{b,a}', 256)$$)
) v(s);
DROP TABLE bi_nokey, bi_temp;
SELECT * FROM bi_state();

-- valid, odd names: each job's downstream has exactly the name asked for
CREATE SCHEMA "nö schema; x";
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.create_job('"x""; DROP TABLE bi_up; --"', 'bi_up')$$),
    ($$SELECT backfill.create_job('"Größe"', 'bi_up')$$),
    ($$SELECT backfill.create_job('ünïcødé', 'bi_up')$$),
    ($$SELECT backfill.create_job('MixedCase', 'bi_up')$$),
    ($$SELECT backfill.create_job('"a b"', 'bi_up')$$),
    ($$SELECT backfill.create_job(E'"new\nline"', 'bi_up')$$),
    ($$SELECT backfill.create_job(E'back\\slash', 'bi_up')$$),
    ($$SELECT backfill.create_job('"a.b"', 'bi_up')$$),
    ($$SELECT backfill.create_job('"nö schema; x"."it''s"', 'bi_up')$$),
    ($$SELECT backfill.create_job(format('%I.public.bi_in_this_db', current_database()), 'bi_up')$$),
    ($$SELECT backfill.create_job('  public . bi_spaced  ', 'bi_up')$$),
    ($$SELECT backfill.create_job(repeat('l', 63), 'bi_up')$$)
) v(s);
SELECT job_id, replace(replace(job_name, format('%I.public.', current_database()), '<db>.public.'), E'\n', '\n') AS job_name,
       replace(n.nspname, E'\n', '\n') AS schema, replace(c.relname, E'\n', '\n') AS relname
  FROM backfill.job j JOIN pg_class c ON c.oid = j.downstream JOIN pg_namespace n ON n.oid = c.relnamespace
 ORDER BY job_id;
-- what the jobs copy: every row, under these names too
DO $$
DECLARE
    j bigint;
BEGIN
    FOR j IN SELECT job_id FROM backfill.job ORDER BY job_id LOOP
        CALL backfill.run_job(j);
    END LOOP;
END
$$;
SELECT job_id, status, row_count FROM backfill.jobs ORDER BY job_id;
SELECT count(*) AS rows_in_x FROM "x""; DROP TABLE bi_up; --";
SELECT count(*) AS rows_in_its FROM "nö schema; x"."it's";
SELECT count(*) AS rows_in_newline FROM "new
line";
SELECT j.job_id, v.* FROM backfill.job j, backfill.verify_job(j.job_id) v;
SELECT job_id AS ddl_id, replace(replace(ddl_statement, format('%I.public.', current_database()), '<db>.public.'), E'\n', '\n') AS ddl_statement
  FROM backfill.job ORDER BY job_id;
SELECT * FROM bi_state();
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
SELECT * FROM bi_state();

-- valid extremes: an empty column list copies the key only; the largest chunk
-- and rate limit, 256 actors; a rate limit of 0 creates the job paused
SELECT backfill.create_job('bi_keyonly', 'bi_up', columns => '{}') AS keyonly \gset
SELECT backfill.create_job('bi_arr', 'bi_up', columns => '[0:1]={b,a}') AS arr \gset
SELECT backfill.create_job('bi_big', 'bi_up', parallelism => 256, chunk_size => 2147483647,
                           rate_limit => 2147483647) AS big \gset
SELECT backfill.create_job('bi_paused', 'bi_up', rate_limit => 0) AS paused \gset
SELECT backfill.create_job('bi_snap_big', 'bi_up', kind => 'snapshot', chunk_size => 2147483647) AS snapbig \gset
SELECT attrelid::regclass, string_agg(attname, ', ' ORDER BY attnum) AS columns
  FROM pg_attribute WHERE attrelid IN ('bi_keyonly'::regclass, 'bi_arr'::regclass) AND attnum > 0
 GROUP BY 1 ORDER BY 1;
SELECT job_id, parallelism, chunk_size, rate_limit FROM backfill.jobs ORDER BY job_id;
CALL backfill.run_job(:keyonly);
CALL backfill.run_job(:arr);
CALL backfill.run_job(:big, 2147483647);
CALL backfill.run_job(:snapbig);
CALL backfill.run_job(:paused, 2);
SELECT job_id, status, row_count FROM backfill.jobs ORDER BY job_id;
SELECT count(*) AS rows_in_bi_big, (SELECT count(*) FROM bi_keyonly) AS rows_in_bi_keyonly,
       (SELECT count(*) FROM bi_snap_big) AS rows_in_bi_snap_big
  FROM bi_big;
SELECT * FROM backfill.verify_job(:keyonly) UNION ALL SELECT * FROM backfill.verify_job(:arr)
UNION ALL SELECT * FROM backfill.verify_job(:big) UNION ALL SELECT * FROM backfill.verify_job(:snapbig)
UNION ALL SELECT * FROM backfill.verify_job(:paused);

-- every function that takes a job id, with NULL and with ids no job has
SELECT f AS function, id, bi_try(format(f, id)) AS result
  FROM (VALUES ('SELECT backfill.start_job(%s)'),
               ('SELECT backfill.stop_job(%s)'),
               ('SELECT backfill.wait_job(%s)'),
               ('SELECT backfill.alter_rate_limit(%s, 10)'),
               ('SELECT backfill.reschedule(%s, 2)'),
               ('SELECT backfill.cancel_job(%s)'),
               ('SELECT backfill.drop_job(%s)'),
               ('SELECT backfill.recreate_job(%s)'),
               ('SELECT count(*) FROM backfill.verify_job(%s)'),
               ('SELECT count(*) FROM backfill.job_state(%s)')) f(f)
 CROSS JOIN (VALUES ('NULL'), ('-1'), ('0'), ('2147483647'), ('-2147483648'),
                    ('9223372036854775807'), ('-9223372036854775808')) i(id)
 ORDER BY f, id;
SELECT * FROM bi_state();
-- ids that are not bigints
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.cancel_job('abc')$$),
    ($$SELECT backfill.cancel_job('1.5')$$),
    ($$SELECT backfill.cancel_job('9223372036854775808')$$),
    ($$SELECT backfill.cancel_job(1.5)$$),
    ($$SELECT backfill.cancel_job(9223372036854775808)$$)
) v(s);

-- the second arguments
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    (format('SELECT backfill.alter_rate_limit(%s, -1)', :paused)),
    (format('SELECT backfill.alter_rate_limit(%s, -2147483648)', :paused)),
    (format('SELECT backfill.alter_rate_limit(%s, 2147483648)', :paused)),
    (format('SELECT backfill.reschedule(%s, NULL)', :paused)),
    (format('SELECT backfill.reschedule(%s, -2147483648)', :paused)),
    (format('SELECT backfill.reschedule(%s, -1)', :paused)),
    (format('SELECT backfill.reschedule(%s, 0)', :paused)),
    (format('SELECT backfill.reschedule(%s, 257)', :paused)),
    (format('SELECT backfill.reschedule(%s, 2147483647)', :paused)),
    (format('SELECT backfill.recreate_job(%s, %L)', :paused, 'ARRANGEMENT')),
    (format('SELECT backfill.recreate_job(%s, %L)', :paused, ' arrangement')),
    (format('SELECT backfill.recreate_job(%s, %L)', :paused, '')),
    (format('SELECT backfill.recreate_job(%s, %L)', :paused, 'cdc'' OR true --'))
) v(s);
-- the jobs those were tried on are as they were
SELECT * FROM bi_state();
SELECT job_id, status, parallelism, rate_limit FROM backfill.jobs WHERE job_id = :paused;
SELECT count(*) AS actors FROM backfill.actor WHERE job_id = :paused;
-- and the valid extremes of them
SELECT backfill.alter_rate_limit(:paused, 2147483647);
SELECT backfill.alter_rate_limit(:paused, NULL);
SELECT backfill.reschedule(:paused, 256);
SELECT backfill.reschedule(:paused, 1);
SELECT backfill.reschedule(:snapbig, 2);
SELECT job_id, status, parallelism, rate_limit FROM backfill.jobs WHERE job_id = :paused;

-- run_job: arguments checked before anything runs; the job lock is not kept
\set VERBOSITY default
CALL backfill.run_job(NULL);
\echo :SQLSTATE
CALL backfill.run_job(NULL, NULL);
\echo :SQLSTATE
CALL backfill.run_job(-1);
\echo :SQLSTATE
CALL backfill.run_job(0);
\echo :SQLSTATE
CALL backfill.run_job(9223372036854775807);
\echo :SQLSTATE
CALL backfill.run_job(-9223372036854775808);
\echo :SQLSTATE
CALL backfill.run_job('abc');
\echo :SQLSTATE
CALL backfill.run_job(:paused, 0);
\echo :SQLSTATE
CALL backfill.run_job(:paused, -1);
\echo :SQLSTATE
CALL backfill.run_job(:paused, -2147483648);
\echo :SQLSTATE
CALL backfill.run_job(:paused, 2147483648);
\echo :SQLSTATE
CALL backfill.run_job(NULL, 0);
\echo :SQLSTATE
SELECT backfill._job_is_running(:paused) AS running,
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks_held;
-- repair_job: the same, before it verifies or locks anything
CALL backfill.repair_job(NULL);
\echo :SQLSTATE
CALL backfill.repair_job(NULL::bigint, NULL);
\echo :SQLSTATE
CALL backfill.repair_job(-1);
\echo :SQLSTATE
CALL backfill.repair_job('abc');
\echo :SQLSTATE
CALL backfill.repair_job(:paused, NULL);
\echo :SQLSTATE
CALL backfill.repair_job(:paused, 0);
\echo :SQLSTATE
CALL backfill.repair_job(:paused, -2147483648);
\echo :SQLSTATE
CALL backfill.repair_job(:paused, 2147483648);
\echo :SQLSTATE
SELECT backfill._job_is_running(:paused) AS running,
       (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks_held;
CALL backfill.run_job(:paused, 2147483647);
SELECT job_id, status FROM backfill.jobs WHERE job_id = :paused;
SELECT * FROM bi_state();

-- jobs in a status that refuses the call
SELECT backfill.create_job('bi_cancelled', 'bi_up') AS cancelled \gset
SELECT backfill.cancel_job(:cancelled);
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    (format('SELECT backfill.cancel_job(%s)', :cancelled)),
    (format('SELECT backfill.reschedule(%s, 2)', :cancelled)),
    (format('SELECT backfill.wait_job(%s)', :cancelled)),
    (format('SELECT count(*) FROM backfill.verify_job(%s)', :cancelled)),
    (format('CALL backfill.repair_job(%s)', :cancelled)),
    (format('SELECT count(*) FROM backfill.job_state(%s)', :cancelled)),
    (format('SELECT backfill.alter_rate_limit(%s, 5)', :cancelled)),
    (format('SELECT backfill.cancel_job(%s)', :keyonly)),
    (format('SELECT backfill.recreate_job(%s)', :keyonly)),
    (format('SELECT backfill.recreate_job(%s, %L)', :keyonly, 'snapshot'))
) v(s);
CALL backfill.run_job(:cancelled);
\echo :SQLSTATE
SELECT job_id, status FROM backfill.jobs WHERE job_id IN (:cancelled, :keyonly) ORDER BY job_id;
-- the downstream name of a cancelled job taken meanwhile: recreate_job refuses
CREATE TABLE bi_cancelled (i int);
SELECT bi_try(format('SELECT backfill.recreate_job(%s)', :cancelled)) AS result;
DROP TABLE bi_cancelled;
SELECT * FROM bi_state();
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
SELECT * FROM bi_state();

-- backfill.vnode()
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill.vnode()$$),
    ($$SELECT backfill.vnode(NULL)$$),
    ($$SELECT backfill.vnode(NULL::int)$$),
    ($$SELECT backfill.vnode(NULL::int, NULL::text)$$),
    ($$SELECT backfill.vnode(0)$$),
    ($$SELECT backfill.vnode(-2147483648)$$),
    ($$SELECT backfill.vnode(2147483647)$$),
    ($$SELECT backfill.vnode(9223372036854775807)$$),
    ($$SELECT backfill.vnode(-9223372036854775808)$$),
    ($$SELECT backfill.vnode('ünïcødé'::text)$$),
    ($$SELECT backfill.vnode(''::text)$$),
    ($$SELECT backfill.vnode('{}'::int[])$$),
    ($$SELECT backfill.vnode(VARIADIC ARRAY[1, 2])$$),
    ($$SELECT backfill.vnode(VARIADIC NULL::int[])$$),
    ($$SELECT backfill.vnode(point '(1,2)')$$),
    ($$SELECT backfill.vnode('{}'::json)$$),
    ($$SELECT backfill.vnode('x'::unknown)$$)
) v(s);

-- the internal functions, called directly
SELECT backfill.create_job('bi_internal', 'bi_up') AS internal \gset
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT backfill._get_job(NULL)$$),
    ($$SELECT backfill._get_job(-1)$$),
    ($$SELECT backfill._get_job(9223372036854775807)$$),
    ($$SELECT backfill._drop_job_objects(NULL, true)$$),
    ($$SELECT backfill._drop_job_objects(NULL, NULL)$$),
    ($$SELECT backfill._drop_job_objects(jsonb_populate_record(NULL::backfill.job, '{"job_id": -1}'), true)$$),
    ($$SELECT backfill._stop_and_lock_job(NULL)$$),
    ($$SELECT backfill._stop_and_lock_job(-1)$$),
    ($$SELECT backfill._job_is_running(NULL)$$),
    ($$SELECT backfill._job_is_running(-1)$$),
    ($$SELECT backfill._drop_slot(NULL)$$),
    ($$SELECT backfill._drop_slot(-1)$$),
    (format('SELECT backfill._drop_slot(%s)', :internal)),
    ($$SELECT backfill._lock_slot(NULL)$$),
    ($$SELECT backfill._lock_slot(-1)$$),
    (format('SELECT backfill._lock_slot(%s)', :internal)),
    ($$SELECT backfill._remote_switchover(NULL, true, '1s', 1)$$),
    ($$SELECT backfill._remote_switchover(-1, true, '1s', 1)$$),
    (format('SELECT backfill._remote_switchover(%s, true, %L, 1)', :internal, '1s')),
    (format('SELECT backfill._remote_switchover(%s, true, %L, 1)', :internal, '-1s')),
    (format('SELECT backfill._remote_switchover(%s, true, %L, 0)', :internal, '1s')),
    (format('SELECT backfill._remote_switchover(%s, NULL, %L, 1)', :internal, '1s')),
    ($$SELECT backfill.unfence(NULL::bigint)$$),
    ($$SELECT backfill.unfence(-1)$$),
    (format('SELECT backfill.unfence(%s)', :internal)),
    ($$SELECT backfill.unfence(NULL)$$),
    ($$SELECT backfill.unfence(-1)$$),
    (format('SELECT backfill.unfence(%s)', :internal)),
    ($$SELECT backfill._mark_cancelled(NULL)$$),
    ($$SELECT backfill._mark_cancelled(-1)$$),
    ($$SELECT backfill.drop_job(NULL::bigint)$$),
    ($$SELECT backfill.drop_job(-1)$$),
    ($$SELECT backfill._rw_progress(NULL, 1)$$),
    ($$SELECT backfill._rw_progress(1, NULL)$$),
    ($$SELECT backfill._rw_progress(-1, 0)$$),
    ($$SELECT backfill._rw_progress(9223372036854775807, 1)$$),
    ($$SELECT backfill._rw_duration(NULL)$$),
    ($$SELECT backfill._rw_duration(-9223372036854775808)$$),
    ($$SELECT backfill._rw_duration(9223372036854775807)$$),
    (format('SELECT backfill.alter_rate_limit(%s, -1)', :internal)),
    (format('SELECT backfill.alter_rate_limit(%s, NULL)', :internal)),
    ($$SELECT backfill.alter_rate_limit(NULL::bigint, 1)$$),
    ($$SELECT backfill.cancel_job(NULL::bigint)$$),
    ($$SELECT backfill.cancel_job(-1)$$),
    ($$SELECT count(*) FROM backfill._unfetched_keys(NULL, '0/0')$$),
    ($$SELECT count(*) FROM backfill._unfetched_keys(-1, '0/0')$$),
    (format('SELECT count(*) FROM backfill._unfetched_keys(%s, NULL)', :internal)),
    (format('SELECT count(*) FROM backfill._unfetched_keys(%s, ''0/0'')', :internal)),
    ($$SELECT count(*) FROM backfill.job_workers()$$),
    ($$SELECT backfill.wait_job(NULL::bigint)$$),
    ($$SELECT backfill.wait_job(-1)$$),
    ($$SELECT count(*) FROM backfill._monitored_jobs()$$),
    ($$CALL backfill.wait_for_job(-1)$$),
    ($$SELECT backfill._flush_wal() <= pg_current_wal_flush_lsn()$$),
    ($$SELECT backfill._on_ddl()$$),
    ($$SELECT backfill._on_drop_extension()$$),
    ($$SELECT backfill.capture_change()$$),
    ($$SELECT backfill.apply_change()$$),
    ($$SELECT backfill.truncate_change()$$)
) v(s);
SELECT job_id, status, parallelism, rate_limit FROM backfill.jobs;
SELECT * FROM bi_state();

-- the trigger functions, attached by hand with wrong arguments or at the wrong
-- time; every write fails cleanly and writes nothing
CREATE TABLE bi_trg (LIKE bi_up INCLUDING INDEXES);
INSERT INTO bi_trg VALUES (1, 1, 'one');
CREATE FUNCTION bi_trigger_try(fn text, args text, timing text, dml text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    EXECUTE format('CREATE TRIGGER bi_hand %s ON bi_trg FOR EACH %s EXECUTE FUNCTION backfill.%s(%s)',
                   split_part(timing, ' / ', 1), split_part(timing, ' / ', 2), fn, args);
    r := bi_try(dml);
    DROP TRIGGER bi_hand ON bi_trg;
    RETURN r;
END
$$;
SELECT fn, args, timing, bi_trigger_try(fn, args, timing, dml) AS result
  FROM (VALUES
    ('capture_change', '', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''abc''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''1.5''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''99999999999999999999''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''-1''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''999''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''1'', ''2''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''999''', 'BEFORE INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''999''', 'AFTER INSERT / STATEMENT', 'INSERT INTO bi_trg VALUES (2)'),
    ('capture_change', '''999''', 'AFTER TRUNCATE / STATEMENT', 'TRUNCATE bi_trg'),
    ('apply_change', '', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('apply_change', '''abc''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('apply_change', '''999''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('apply_change', '''999''', 'BEFORE UPDATE / ROW', 'UPDATE bi_trg SET b = b'),
    ('apply_change', '''999''', 'AFTER DELETE / STATEMENT', 'DELETE FROM bi_trg'),
    ('truncate_change', '', 'BEFORE TRUNCATE / STATEMENT', 'TRUNCATE bi_trg'),
    ('truncate_change', '''abc''', 'BEFORE TRUNCATE / STATEMENT', 'TRUNCATE bi_trg'),
    ('truncate_change', '''999''', 'BEFORE TRUNCATE / STATEMENT', 'TRUNCATE bi_trg'),
    ('truncate_change', '''999''', 'AFTER TRUNCATE / STATEMENT', 'TRUNCATE bi_trg'),
    ('truncate_change', '''999''', 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (2)'),
    ('truncate_change', '''999''', 'AFTER INSERT / STATEMENT', 'INSERT INTO bi_trg VALUES (2)')
  ) v(fn, args, timing, dml);
SELECT * FROM bi_trg;
SELECT * FROM bi_state();

-- a job id of a job on another table, by a superuser: the trigger acts on
-- that job, whatever table it is on
SELECT backfill.create_job('bi_snap', 'bi_up', kind => 'snapshot', chunk_size => 10) AS snap \gset
SELECT backfill.create_job('bi_pending', 'bi_up') AS pending \gset
CALL backfill.run_job(:internal);
INSERT INTO bi_trg VALUES (3, -3, 'forged');
SELECT fn, args, timing, bi_trigger_try(fn, args, timing, dml) AS result
  FROM (VALUES
    ('capture_change', quote_literal(:snap), 'AFTER DELETE / ROW', 'DELETE FROM bi_trg WHERE id = 3'),
    ('apply_change', quote_literal(:pending), 'AFTER INSERT / ROW', 'INSERT INTO bi_trg VALUES (5)'),
    ('truncate_change', quote_literal(:internal), 'AFTER TRUNCATE / STATEMENT', 'TRUNCATE bi_trg')
  ) v(fn, args, timing, dml);
-- what they did to the jobs of table bi_up
SELECT (SELECT count(*) FROM bi_internal) AS rows_in_bi_internal,
       (SELECT count(*) FROM backfill.verify_job(:internal)) AS differences_internal,
       (SELECT count(*) FROM bi_pending) AS rows_in_bi_pending;
CALL backfill.run_job(:pending);
\echo :SQLSTATE
SELECT job_id, status, last_error FROM backfill.jobs WHERE job_id = :pending;
CALL backfill.run_job(:snap, 1);
SELECT * FROM bi_snap WHERE id = 3;
SELECT * FROM backfill.verify_job(:snap);
CALL backfill.run_job(:snap);
SELECT * FROM bi_snap WHERE id = 3;
SELECT * FROM bi_state();

-- a role without the extension owner's rights cannot attach them at all
CREATE ROLE regress_bi_user;
CREATE SCHEMA regress_bi AUTHORIZATION regress_bi_user;
SET ROLE regress_bi_user;
CREATE TABLE regress_bi.t (id int PRIMARY KEY);
SELECT fn, bi_try(format('CREATE TRIGGER bi_hand AFTER TRUNCATE ON regress_bi.t EXECUTE FUNCTION backfill.%s(%L)',
                         fn, :internal)) AS result
  FROM (VALUES ('capture_change'), ('apply_change'), ('truncate_change')) v(fn);
RESET ROLE;
DROP SCHEMA regress_bi CASCADE;
DROP ROLE regress_bi_user;

-- the output plugin of the cdc kind, with bad options
SELECT 'init' FROM pg_create_logical_replication_slot('regress_bi_slot', 'backfill');
SELECT s AS statement, bi_try(s) AS result FROM (VALUES
    ($$SELECT count(*) FROM pg_logical_slot_peek_changes('regress_bi_slot', NULL, NULL)$$),
    ($$SELECT count(*) FROM pg_logical_slot_peek_changes('regress_bi_slot', NULL, NULL, 'nope', '1')$$),
    ($$SELECT count(*) FROM pg_logical_slot_peek_changes('regress_bi_slot', NULL, NULL, 'relid', NULL)$$),
    ($$SELECT count(*) FROM pg_logical_slot_peek_changes('regress_bi_slot', NULL, NULL, 'relid', 'abc')$$),
    ($$SELECT count(*) FROM pg_logical_slot_peek_changes('regress_bi_slot', NULL, NULL, 'relid', '-1')$$),
    ($$SELECT count(*) FROM pg_logical_slot_peek_changes('regress_bi_slot', NULL, NULL, 'relid', '0')$$)
) v(s);
SELECT pg_drop_replication_slot('regress_bi_slot');

-- odd but valid names and values through the whole life of a job of each
-- kind: a schema, table, key and columns that need quoting, keys with quotes,
-- commas, parentheses, backslashes, tabs, newlines and no characters at all
CREATE TABLE "nö schema; x"."Up'""; --" (
    "K""ey" int,
    "ö k" text,
    "x""; DROP TABLE bi_up; --" text,
    "A" int,
    PRIMARY KEY ("K""ey", "ö k")
);
INSERT INTO "nö schema; x"."Up'""; --"
SELECT g, (ARRAY['', 'a,b', 'q"u''o', 'back\slash', E'tab\there', E'new\nline', '(paren)', 'Größe'])[g % 8 + 1],
       'v' || g, g
  FROM generate_series(1, 40) g;
SELECT kind, backfill.create_job(format('%I.%I', 'nö schema; x', 'Down "' || kind || '"'),
                                 '"nö schema; x"."Up''""; --"', kind,
                                 CASE WHEN kind IN ('snapshot', 'no_shuffle') THEN '{A,"x\"; DROP TABLE bi_up; --"}'::text[] END,
                                 chunk_size => CASE kind WHEN 'cdc' THEN 1000 ELSE 7 END) AS job_id
  FROM unnest(ARRAY['arrangement', 'snapshot', 'cdc', 'no_shuffle']) kind;
SELECT job_id, kind, replace(downstream::text, E'\n', '\n') AS downstream, columns, pk_columns
  FROM backfill.job ORDER BY job_id;
SELECT job_id AS arr FROM backfill.job WHERE kind = 'arrangement' AND downstream_name LIKE '%Down%' \gset
SELECT job_id AS snp FROM backfill.job WHERE kind = 'snapshot' AND downstream_name LIKE '%Down%' \gset
SELECT job_id AS cdc FROM backfill.job WHERE kind = 'cdc' \gset
SELECT job_id AS nsh FROM backfill.job WHERE kind = 'no_shuffle' \gset
-- the cdc job reads its whole snapshot in its first barrier (a resumed cdc
-- job with a text key: see the end of this file); the output plugin decodes
-- these keys for it, as for any slot of its own
SELECT 'init' FROM pg_create_logical_replication_slot('regress_bi_slot', 'backfill');
CALL backfill.run_job(:arr, 1);
CALL backfill.run_job(:snp, 1);
CALL backfill.run_job(:cdc, 1);
UPDATE "nö schema; x"."Up'""; --" SET "x""; DROP TABLE bi_up; --" = E'changed\t"' WHERE "K""ey" % 5 = 0;
UPDATE "nö schema; x"."Up'""; --" SET "ö k" = "ö k" || E'\\)' WHERE "K""ey" IN (1, 39);
DELETE FROM "nö schema; x"."Up'""; --" WHERE "K""ey" IN (2, 3, 40);
INSERT INTO "nö schema; x"."Up'""; --" VALUES (0, E'"\\"', 'new', 0), (100, '', NULL, NULL);
CREATE TYPE bi_key AS ("K""ey" int, "ö k" text);
SELECT replace(replace(regexp_replace(data, '^[0-9A-F]+/[0-9A-F]+\t', '<lsn>\t'), E'\t', '\t'), E'\n', '\n') AS decoded,
       (substr(data, strpos(data, E'\t') + 1)::bi_key)."K""ey",
       replace(replace((substr(data, strpos(data, E'\t') + 1)::bi_key)."ö k", E'\t', '\t'), E'\n', '\n') AS "ö k"
  FROM pg_logical_slot_peek_changes('regress_bi_slot', NULL, NULL,
                                    'relid', '"nö schema; x"."Up''""; --"'::regclass::oid::text);
SELECT pg_drop_replication_slot('regress_bi_slot');
SELECT job_id, count(*) AS differences FROM backfill.job j, backfill.verify_job(j.job_id)
 WHERE j.kind <> 'no_shuffle' GROUP BY job_id ORDER BY job_id;
CALL backfill.run_job(:arr);
CALL backfill.run_job(:snp);
CALL backfill.run_job(:cdc);
CALL backfill.run_job(:nsh);
-- after the finish, writes still reach every downstream
UPDATE "nö schema; x"."Up'""; --" SET "A" = -1 WHERE "ö k" = 'Größe';
DELETE FROM "nö schema; x"."Up'""; --" WHERE "K""ey" = 100;
SELECT job_id, kind, status, row_count, slot_name FROM backfill.jobs ORDER BY job_id;
SELECT job_id, count(*) AS differences FROM backfill.job j, backfill.verify_job(j.job_id)
 GROUP BY job_id ORDER BY job_id;
-- and the downstreams equal the upstream, row for row
SELECT count(*) AS upstream_rows,
       (SELECT count(*) FROM (SELECT "K""ey", "ö k", "x""; DROP TABLE bi_up; --", "A" FROM "nö schema; x"."Up'""; --"
                              EXCEPT SELECT * FROM "nö schema; x"."Down ""arrangement""") d) AS missing_arrangement,
       (SELECT count(*) FROM (SELECT "K""ey", "ö k", "x""; DROP TABLE bi_up; --", "A" FROM "nö schema; x"."Up'""; --"
                              EXCEPT SELECT * FROM "nö schema; x"."Down ""cdc""") d) AS missing_cdc,
       (SELECT count(*) FROM (SELECT "K""ey", "ö k", "A", "x""; DROP TABLE bi_up; --" FROM "nö schema; x"."Up'""; --"
                              EXCEPT SELECT * FROM "nö schema; x"."Down ""snapshot""") d) AS missing_snapshot,
       (SELECT count(*) FROM (SELECT "K""ey", "ö k", "A", "x""; DROP TABLE bi_up; --" FROM "nö schema; x"."Up'""; --"
                              EXCEPT SELECT * FROM "nö schema; x"."Down ""no_shuffle""") d) AS missing_no_shuffle,
       (SELECT count(*) FROM "nö schema; x"."Down ""arrangement""") + (SELECT count(*) FROM "nö schema; x"."Down ""cdc""")
       + (SELECT count(*) FROM "nö schema; x"."Down ""snapshot""") + (SELECT count(*) FROM "nö schema; x"."Down ""no_shuffle""")
           AS downstream_rows
  FROM "nö schema; x"."Up'""; --";
SELECT count(*) AS state_rows FROM backfill.job_state(:arr);
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
SELECT * FROM bi_state();

DROP SCHEMA "nö schema; x" CASCADE;
DROP TABLE bi_up, bi_trg, bi_base_rel, bi_base_trg CASCADE;
DROP TYPE bi_type, bi_key;
DROP FUNCTION bi_try(text), bi_state(), bi_trigger_try(text, text, text, text);

-- a catalog without a column the library reads (a catalog of another
-- version, or damaged): a writer's trigger says so instead of misreading it
CREATE TABLE bi_cat (id int PRIMARY KEY);
SELECT backfill.create_job('bi_cat_mv', 'bi_cat') AS cat_job \gset
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
ALTER TABLE backfill.job RENAME COLUMN upstream TO upstream_renamed;
INSERT INTO bi_cat VALUES (1);
ROLLBACK;
INSERT INTO bi_cat VALUES (1);
SELECT backfill.drop_job(:cat_job);
DROP TABLE bi_cat;

-- a cdc job with a text key, run again after a barrier that left a position:
-- the server process running it crashes (SIGSEGV); this must be last
CREATE TABLE bi_text_key (k text PRIMARY KEY);
INSERT INTO bi_text_key SELECT repeat('x', g) FROM generate_series(1, 20) g;
SELECT backfill.create_job('bi_text_key_cdc', 'bi_text_key', kind => 'cdc', chunk_size => 5) AS crash \gset
CALL backfill.run_job(:crash, 1);
SELECT current_pos, backfill_finished, row_count FROM backfill.job_state(:crash);
CALL backfill.run_job(:crash);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :crash;
SELECT * FROM backfill.verify_job(:crash);
SELECT count(*) AS rows_in_bi_text_key_cdc FROM bi_text_key_cdc;
SELECT backfill.drop_job(:crash);
DROP TABLE bi_text_key;
