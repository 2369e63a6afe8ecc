-- Every function of the extension, called by a plain role against a
-- superuser's job and tables, with what a caller could pass: another role's
-- job, NULL for each argument, arrays with a NULL element or of two
-- dimensions, a query of the wrong column types, a forged job row.  The
-- list comes from pg_depend, so a function added later is called too.  Each
-- call runs in its own subtransaction; the output is its SQLSTATE class per
-- call ("ok": it returned).  Nothing may crash, and the superuser's job,
-- cutover row, triggers and tables must be as they were.  Then each hole
-- found in 1.3, by name, and a superuser against a plain role's job.
\set VERBOSITY terse
SET backfill.barrier_interval_ms = 0;
CREATE ROLE regress_fz_plain LOGIN;
GRANT CREATE ON SCHEMA public TO regress_fz_plain;

-- PUBLIC may execute no internal function but those the views call, which
-- PostgreSQL checks against the role that queries the view
SELECT p.oid::regprocedure AS public_internal
  FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
 WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill')
   AND p.proname LIKE '\_%' AND has_function_privilege('public', p.oid, 'EXECUTE')
 ORDER BY p.oid::regprocedure::text;
-- The others are granted to the plain role here, so that what is tested
-- below is still each function's own check of its arguments, not the
-- missing privilege.  Not the event-trigger functions and _drop_slot, which
-- PUBLIC has never had.
CREATE FUNCTION pg_temp.fz_grant(action text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
              WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
                AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill')
                AND p.proname LIKE '\_%'
                AND p.proname NOT IN ('_on_ddl', '_on_drop_extension', '_on_job_table_ddl',
                                      '_before_partition_ddl', '_drop_slot')
                AND NOT has_function_privilege('public', p.oid, 'EXECUTE') LOOP
        EXECUTE format(CASE action WHEN 'grant' THEN 'GRANT EXECUTE ON FUNCTION %s TO regress_fz_plain'
                                   ELSE 'REVOKE EXECUTE ON FUNCTION %s FROM regress_fz_plain' END, f);
    END LOOP;
END
$$;
SELECT pg_temp.fz_grant('grant');

-- the superuser's job, finished, following its upstream
CREATE TABLE fz_up (id int PRIMARY KEY, v text);
INSERT INTO fz_up SELECT g, 'v' || g FROM generate_series(1, 50) g;
CREATE TABLE fz_keep (id int);
SELECT backfill.create_job('fz_up_mv', 'fz_up') AS su_job \gset
CALL backfill.run_job(:su_job);
CREATE TEMP TABLE fz_before AS
SELECT (SELECT row(j.*)::text FROM backfill.job j WHERE j.job_id = :su_job) AS job,
       (SELECT count(*) FROM backfill.job_cutover c WHERE c.job_id = :su_job) AS cutover,
       (SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname)
          FROM pg_trigger WHERE tgrelid = 'fz_up'::regclass) AS triggers,
       (SELECT string_agg(relname || ':' || relowner::regrole, ',' ORDER BY relname)
          FROM pg_class WHERE relname IN ('fz_up', 'fz_up_mv', 'fz_keep')) AS tables,
       (SELECT count(*) FROM fz_up_mv) AS mv_rows;

-- the calls: one per argument value, each in a subtransaction
CREATE FUNCTION pg_temp.fz_value(name text, type regtype, su_job bigint) RETURNS text
LANGUAGE sql AS $$
SELECT CASE
    WHEN type = 'bigint'::regtype THEN su_job::text
    WHEN type = 'integer'::regtype THEN '1'
    WHEN type = 'boolean'::regtype THEN 'true'
    WHEN type = 'double precision'::regtype THEN '1.0::float8'
    WHEN type = 'interval'::regtype THEN '''1s''::interval'
    WHEN type = 'pg_lsn'::regtype THEN '''0/0''::pg_lsn'
    WHEN type = 'timestamp with time zone'::regtype THEN 'now()'
    WHEN type = 'regclass'::regtype AND name = 'dst' THEN '''fz_up_mv''::regclass'
    WHEN type = 'regclass'::regtype THEN '''fz_up''::regclass'
    WHEN type = 'oid'::regtype AND name = 'new_schema' THEN '''public''::regnamespace::oid'
    WHEN type = 'oid'::regtype AND name = 'new_table' THEN '''fz_up_mv''::regclass::oid'
    WHEN type = 'oid'::regtype THEN '''fz_keep''::regclass::oid'
    WHEN type = 'text[]'::regtype THEN 'ARRAY[''id'']'
    WHEN type = 'oid[]'::regtype THEN '''{}''::oid[]'
    WHEN type = '"any"'::regtype THEN '1'
    WHEN type = 'backfill.job'::regtype THEN
        format('json_populate_record(NULL::backfill.job, json_build_object(''job_id'', %s, '
               '''upstream'', ''fz_up'', ''downstream'', ''fz_keep'', ''state_table'', ''fz_keep'', '
               '''change_table'', ''fz_keep'', ''status'', ''finished'', ''pk_columns'', ARRAY[''id'']))', su_job)
    WHEN name = 'query' THEN '''SELECT 1::int8, 2::int8'''
    WHEN name = 'op' THEN '''<'''
    WHEN name = 'state' THEN '''cut_over'''
    WHEN name = 'kind' THEN '''arrangement'''
    WHEN name IN ('name', 'old_name', 'new_name', 'src_new_name') THEN '''fz_renamed'''
    -- the superuser's job by its name, which the plain role must not reach
    WHEN name = 'job_name' THEN '''fz_up_mv'''
    WHEN type = 'text'::regtype THEN '''x'''
    ELSE 'NULL::' || type::text
END
$$;

CREATE FUNCTION pg_temp.fz_call(sig text, is_proc boolean, args text[]) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        IF is_proc THEN
            EXECUTE format('CALL %s(%s)', sig, array_to_string(args, ', '));
        ELSE
            EXECUTE format('SELECT %s(%s)', sig, array_to_string(args, ', '));
        END IF;
        RETURN 'ok';
    EXCEPTION WHEN OTHERS THEN
        RETURN left(SQLSTATE, 2);
    END;
END
$$;

CREATE FUNCTION pg_temp.fz_run(su_job bigint)
RETURNS TABLE (function text, outcomes text) LANGUAGE plpgsql AS $$
DECLARE
    p record;
    names text[];
    types regtype[];
    base text[];
    args text[];
    res text[];
    skip text;
BEGIN
    FOR p IN SELECT f.oid, f.proname, f.prokind = 'p' AS is_proc, f.provariadic <> 0 AS variadic,
                    f.proargnames, f.proargmodes, f.proargtypes,
                    f.oid::regprocedure::text AS sig
               FROM pg_depend d JOIN pg_proc f ON f.oid = d.objid
              WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
                AND d.refclassid = 'pg_extension'::regclass
                AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill')
              ORDER BY f.oid::regprocedure::text LOOP
        -- what would block, and why
        skip := CASE p.proname
            WHEN 'wait_job' THEN 'skipped: waits until the job has finished'
            WHEN 'run_job' THEN 'skipped: commits, so runs at top level (below)'
        END;
        IF skip IS NOT NULL THEN
            function := p.sig; outcomes := skip; RETURN NEXT; CONTINUE;
        END IF;
        -- proargtypes, an oidvector, counts from 0
        SELECT array_agg(t::regtype ORDER BY o) INTO types
          FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, o);
        -- the names of the input arguments ($n for one without a name)
        SELECT array_agg(coalesce(nullif(p.proargnames[o], ''), '$' || o) ORDER BY o) INTO names
          FROM generate_series(1, greatest(cardinality(p.proargmodes), cardinality(types))) AS o
         WHERE coalesce(p.proargmodes[o], 'i') IN ('i', 'b', 'v');
        base := ARRAY[]::text[];
        FOR i IN 1 .. coalesce(cardinality(types), 0) LOOP
            base := base || pg_temp.fz_value(names[i], types[i], su_job);
        END LOOP;
        -- the function's name without its argument types, for the call
        res := ARRAY['job:' || pg_temp.fz_call(p.oid::regproc::text, p.is_proc, base)];
        FOR i IN 1 .. coalesce(cardinality(types), 0) LOOP
            args := base;
            args[i] := CASE WHEN types[i] = '"any"'::regtype THEN 'NULL::int' ELSE 'NULL::' || types[i]::text END;
            res := res || (format('null(%s):', names[i]) || pg_temp.fz_call(p.oid::regproc::text, p.is_proc, args));
            IF types[i]::text LIKE '%[]' THEN
                args[i] := format('ARRAY[NULL]::%s', types[i]);
                res := res || (format('nulls(%s):', names[i]) || pg_temp.fz_call(p.oid::regproc::text, p.is_proc, args));
                args[i] := format('''{{1,1},{1,1}}''::%s', types[i]);
                res := res || (format('2d(%s):', names[i]) || pg_temp.fz_call(p.oid::regproc::text, p.is_proc, args));
            END IF;
        END LOOP;
        function := p.sig; outcomes := array_to_string(res, ' '); RETURN NEXT;
    END LOOP;
END
$$;

-- one statement in a subtransaction: its first column, or its error, with
-- job ids left out
CREATE FUNCTION pg_temp.fz_try(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
BEGIN
    EXECUTE sql INTO r;
    RETURN 'ok: ' || coalesce(r, 'NULL');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'job \d+', 'job N', 'g');
END
$$;

SET ROLE regress_fz_plain;
SELECT * FROM pg_temp.fz_run(:su_job);
\set VERBOSITY sqlstate
CALL backfill.run_job(:su_job);
CALL backfill.run_job(:su_job, 1);
CALL backfill.run_job(NULL);
\set VERBOSITY terse
RESET ROLE;

-- nothing of the superuser's changed
SELECT b.job = (SELECT row(j.*)::text FROM backfill.job j WHERE j.job_id = :su_job) AS same_job,
       b.cutover = (SELECT count(*) FROM backfill.job_cutover c WHERE c.job_id = :su_job) AS same_cutover,
       b.triggers = (SELECT string_agg(tgname || ':' || tgenabled::text, ',' ORDER BY tgname)
                       FROM pg_trigger WHERE tgrelid = 'fz_up'::regclass) AS same_triggers,
       b.tables = (SELECT string_agg(relname || ':' || relowner::regrole, ',' ORDER BY relname)
                     FROM pg_class WHERE relname IN ('fz_up', 'fz_up_mv', 'fz_keep')) AS same_tables,
       b.mv_rows = (SELECT count(*) FROM fz_up_mv) AS same_rows
  FROM fz_before b;

-- 3. _key_compare_sql: a list of the key columns of a table the caller may
-- read, one dimension, without NULL
SET ROLE regress_fz_plain;
CREATE TABLE fz_own (id int PRIMARY KEY, v text);
INSERT INTO fz_own SELECT g, 'o' || g FROM generate_series(1, 20) g;
SELECT backfill._key_compare_sql('fz_own', ARRAY['id'], 'a', '<', 'b');
SELECT backfill._key_compare_sql('fz_own', ARRAY[NULL]::text[], 'a', '<', 'b');
SELECT backfill._key_compare_sql('fz_own', ARRAY['id', NULL], 'a', '<', 'b');
SELECT backfill._key_compare_sql('fz_own', ARRAY[['id'], ['id']], 'a', '<', 'b');
SELECT backfill._key_compare_sql('fz_own', ARRAY['nosuch'], 'a', '<', 'b');
SELECT backfill._key_compare_sql('fz_own', ARRAY['ctid'], 'a', '<', 'b');
SELECT backfill._key_compare_sql('fz_up', ARRAY['nosuch'], 'a', '<', 'b');
SELECT backfill._key_compare_sql('fz_up', ARRAY['id'], 'a', '<', 'b');
SELECT backfill._key_compare_sql(0::oid::regclass, ARRAY['id'], 'a', '<', 'b');

-- 4. verify_job of a job of the caller's, which runs its comparison itself
SELECT backfill.create_job('fz_own_mv', 'fz_own') AS own_job \gset
CALL backfill.run_job(:own_job);
SELECT * FROM backfill.verify_job(:own_job);
RESET ROLE;

-- 20. _cutover_report: the caller's own jobs, one line
SET ROLE regress_fz_plain;
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_report(%s, 'x')$$, :su_job));
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_report(%s, E'two\nlines')$$, :own_job));
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_report(%s, repeat('x', 513))$$, :own_job));
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_report(%s, 'checking')$$, :own_job));

-- 6. _cutover_record: only the job's own tables, owned by roles whose
-- privileges the caller has
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_record(%s, 'cut_over', 1, 'fz_keep'::regclass::oid,
    'fz_own_mv'::regclass::oid, 'fz_x', 'public'::regnamespace::oid, 'fz_y', true, false, 1.0, NULL, false)$$, :own_job));
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_record(%s, 'cut_over', 1, 'fz_own'::regclass::oid,
    'fz_own'::regclass::oid, 'fz_x', 'public'::regnamespace::oid, 'fz_y', true, false, 1.0, NULL, false)$$, :own_job));
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_record(%s, 'cut_over', 1, 'fz_own'::regclass::oid,
    'fz_own_mv'::regclass::oid, 'fz_x', 'public'::regnamespace::oid, 'fz_y', true, false, 1.0, ARRAY[NULL]::oid[], false)$$, :own_job));
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_record(%s, NULL, 1, 'fz_own'::regclass::oid,
    'fz_own_mv'::regclass::oid, 'fz_x', 'public'::regnamespace::oid, 'fz_y', true, false, 1.0, NULL, false)$$, :own_job));
SELECT count(*) AS cutover_rows FROM backfill.job_cutover WHERE job_id = :own_job;
RESET ROLE;
-- and finish_cutover, even a superuser's, drops no table that is not the
-- job's old table owned by the owner of its new one, whatever the row says
INSERT INTO backfill.job_cutover (job_id, state, attempts, old_table, new_table, old_name,
                                  new_schema, new_name, reversible, into_existing, swapped_at)
VALUES (:own_job, 'cut_over', 1, 'fz_keep'::regclass, 'fz_own_mv'::regclass, 'fz_x',
        'public'::regnamespace, 'fz_y', true, false, now());
SELECT pg_temp.fz_try(format($$SELECT backfill.finish_cutover(%s)$$, :own_job));
SELECT to_regclass('fz_keep') IS NOT NULL AS fz_keep_kept;
DELETE FROM backfill.job_cutover WHERE job_id = :own_job;

-- 5 and 14. A role with SELECT and TRIGGER on the superuser's table has two
-- jobs on it, one cancelled: through that one's _drop_job_objects it holds
-- fz_vic locked, but it cannot turn the other around (fz_vic would become
-- its downstream); once TRIGGER is revoked it cannot lock fz_vic at all
CREATE TABLE fz_vic (id int PRIMARY KEY, v text);
INSERT INTO fz_vic SELECT g, 'w' || g FROM generate_series(1, 20) g;
GRANT SELECT, TRIGGER ON fz_vic TO regress_fz_plain;
SET ROLE regress_fz_plain;
SELECT backfill.create_job('fz_vic_mv', 'fz_vic') AS vic_job \gset
CALL backfill.run_job(:vic_job);
SELECT backfill.create_job('fz_vic_mv2', 'fz_vic') AS vic_job2 \gset
SELECT backfill.cancel_job(:vic_job2) = :vic_job2 AS cancelled;
BEGIN;
SELECT backfill._drop_job_objects(j, false) FROM backfill.job j WHERE j.job_id = :vic_job2;
LOCK fz_vic_mv IN ACCESS EXCLUSIVE MODE;
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_turn(%s, true)$$, :vic_job));
ROLLBACK;
-- its own job, not cut over, has nothing to turn back
BEGIN;
LOCK fz_own, fz_own_mv IN ACCESS EXCLUSIVE MODE;
SELECT pg_temp.fz_try(format($$SELECT backfill._cutover_turn(%s, false)$$, :own_job));
ROLLBACK;
RESET ROLE;
REVOKE TRIGGER ON fz_vic FROM regress_fz_plain;
SET ROLE regress_fz_plain;
-- a job that still has its triggers there: refused before any lock
SELECT pg_temp.fz_try(format($$SELECT backfill._drop_job_objects(j, false) FROM backfill.job j WHERE j.job_id = %s$$, :vic_job));
-- a job that has none left there: nothing to drop, nothing locked
BEGIN;
SELECT backfill._drop_job_objects(j, false) FROM backfill.job j WHERE j.job_id = :vic_job2;
SELECT count(*) AS exclusive_locks FROM pg_locks
 WHERE relation = 'fz_vic'::regclass AND pid = pg_backend_pid() AND mode = 'AccessExclusiveLock';
COMMIT;
RESET ROLE;
SELECT upstream = 'fz_vic'::regclass AS upstream_kept, downstream = 'fz_vic_mv'::regclass AS downstream_kept
  FROM backfill.job WHERE job_id = :vic_job;
-- a superuser still drops the jobs
SELECT backfill.drop_job(:vic_job);
SELECT backfill.drop_job(:vic_job2);
SELECT count(*) AS fz_vic_triggers FROM pg_trigger WHERE tgrelid = 'fz_vic'::regclass;

-- the superuser's job is still whole
SELECT status FROM backfill.job WHERE job_id = :su_job;
SELECT count(*) AS rows_differing FROM backfill.verify_job(:su_job);

-- clean up
SELECT backfill.drop_job(:own_job);
SELECT backfill.drop_job(:su_job);
DROP TABLE fz_up, fz_keep, fz_vic, fz_own;
REVOKE CREATE ON SCHEMA public FROM regress_fz_plain;
DROP TABLE fz_before;
SELECT pg_temp.fz_grant('revoke');
DROP ROLE regress_fz_plain;
