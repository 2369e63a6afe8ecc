-- No statement of the extension runs under a search_path its caller chose:
-- a plain role puts operators of its own first on its search_path (for the
-- session, then as its role's default), and neither its own calls nor a
-- superuser's with the same search_path run them.  Each operator says when
-- it runs (a NOTICE) and tries to make its role a superuser, which succeeds
-- only when it runs as a superuser or the extension's owner.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

-- the functions of the extension that set no search_path: C functions that
-- pin it themselves once they have read the caller's names (create_job,
-- estimate_job, _on_ddl) or cannot have a SET clause (run_job,
-- wait_for_job and repair_job commit), the
-- trigger functions, which pin it where they run SQL, and job_vnode,
-- vnode and explain_view_job (which analyzes the caller's query under the
-- caller's search_path, as create_job reads its filter), which run none
SELECT p.oid::regprocedure AS without_search_path
  FROM pg_proc p
 WHERE p.pronamespace = 'backfill'::regnamespace
   AND NOT EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
 ORDER BY p.oid::regprocedure::text COLLATE "C";

CREATE ROLE regress_mal LOGIN;
-- a server that asks for passwords (pg_virtualenv's) gets the one psql has
\getenv regress_password PGPASSWORD
\if :{?regress_password}
ALTER ROLE regress_mal PASSWORD :'regress_password';
\endif
CREATE SCHEMA regress_mal AUTHORIZATION regress_mal;
GRANT USAGE ON SCHEMA regress_mal TO PUBLIC;

-- its operators: each comparison of the types the extension's SQL compares
SET ROLE regress_mal;
DO $$
DECLARE
    t text;
    o record;
BEGIN
    FOREACH t IN ARRAY ARRAY['int8', 'int4', 'int2', 'text', 'oid', 'name', 'bool',
                             'regclass', 'regrole', 'pg_lsn', 'timestamptz', 'numeric'] LOOP
        FOR o IN SELECT * FROM (VALUES ('=', 'eq'), ('<>', 'ne'), ('<', 'lt'), ('<=', 'le'),
                                       ('>', 'gt'), ('>=', 'ge')) v(op, fn) LOOP
            EXECUTE format($f$
                CREATE FUNCTION regress_mal.%1$s_%2$s(a %2$s, b %2$s) RETURNS bool
                LANGUAGE plpgsql AS $b$
                BEGIN
                    RAISE NOTICE 'operator %3$s(%2$s, %2$s) of regress_mal ran as %%', current_user;
                    BEGIN
                        ALTER ROLE regress_mal SUPERUSER;
                    EXCEPTION WHEN insufficient_privilege THEN NULL;
                    END;
                    RETURN a OPERATOR(pg_catalog.%3$s) b;
                END $b$;
                CREATE OPERATOR regress_mal.%3$s (FUNCTION = regress_mal.%1$s_%2$s,
                                                  LEFTARG = %2$s, RIGHTARG = %2$s)$f$,
                o.fn, t, o.op);
        END LOOP;
    END LOOP;
END
$$;
CREATE TABLE regress_mal.up (id int8 PRIMARY KEY, v text);
INSERT INTO regress_mal.up SELECT g, 'v' || g FROM generate_series(1, 40) g;
CREATE TABLE regress_mal.up4 (id int4 PRIMARY KEY, name text);
INSERT INTO regress_mal.up4 SELECT g, 'n' || g FROM generate_series(1, 40) g;
RESET ROLE;

-- the attack as the plain role itself, its schema first for the session
SET ROLE regress_mal;
SET search_path = regress_mal, pg_catalog;
SELECT rows FROM backfill.estimate_job('regress_mal.up');
SELECT backfill.create_job('regress_mal.down', 'regress_mal.up', chunk_size => 10) AS j1 \gset
SELECT backfill.create_job('regress_mal.down_f', 'regress_mal.up4', kind => 'snapshot',
                           filter => 'name OPERATOR(pg_catalog.<>) ''n3''', chunk_size => 10) AS j2 \gset
CALL backfill.run_job(:j1, 1);
INSERT INTO regress_mal.up VALUES (100, 'new');
UPDATE regress_mal.up SET v = 'upd' WHERE id OPERATOR(pg_catalog.=) 2;
DELETE FROM regress_mal.up WHERE id OPERATOR(pg_catalog.=) 40;
SELECT * FROM backfill.verify_job(:j1);
SELECT count(*) AS states FROM backfill.job_state(:j1);
SELECT backfill.job_vnode(:j1, 5::int8) IS NOT NULL AS has_vnode;
SELECT backfill.alter_rate_limit(:j1, 1000);
SELECT backfill.reschedule(:j1, 2);
SELECT backfill.stop_job(:j1);
CALL backfill.run_job(:j1);
UPDATE regress_mal.up SET v = 'after' WHERE id OPERATOR(pg_catalog.=) 3;
SELECT * FROM backfill.verify_job(:j1);
SELECT job_id, status, progress FROM backfill.jobs ORDER BY job_id;
SELECT count(*) AS creating FROM backfill.ddl_progress;
-- DDL on the upstream: the event triggers
ALTER TABLE regress_mal.up ADD COLUMN extra int;
CALL backfill.run_job(:j2, 1);
SELECT backfill.cancel_job(:j2);
SELECT backfill.recreate_job(:j2) AS j3 \gset
CALL backfill.run_job(:j3);
SELECT * FROM backfill.verify_job(:j3);
SELECT backfill.drop_job(:j3);
RESET search_path;
RESET ROLE;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_mal';

-- the same with the attacker's schema first as its role's default
ALTER ROLE regress_mal SET search_path = regress_mal, pg_catalog;
\c - regress_mal
SET backfill.barrier_interval_ms = 0;
SHOW search_path;
SELECT backfill.create_job('regress_mal.down2', 'regress_mal.up4', chunk_size => 10) AS j4 \gset
CALL backfill.run_job(:j4, 1);
UPDATE regress_mal.up4 SET name = 'x' WHERE id OPERATOR(pg_catalog.=) 1;
CALL backfill.run_job(:j4);
UPDATE regress_mal.up4 SET name = 'y' WHERE id OPERATOR(pg_catalog.=) 2;
SELECT * FROM backfill.verify_job(:j4);
SELECT backfill.drop_job(:j4);
\c - postgres
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_mal';

-- a superuser whose session puts the attacker's schema first runs none of
-- its operators: not on its own job, not on the plain role's
SET backfill.barrier_interval_ms = 0;
CREATE TABLE public.sp_su (id int8 PRIMARY KEY, v text);
INSERT INTO public.sp_su SELECT g, 'v' || g FROM generate_series(1, 30) g;
SET search_path = regress_mal, public, pg_catalog;
SELECT rows FROM backfill.estimate_job('public.sp_su');
SELECT backfill.create_job('public.sp_su_down', 'public.sp_su', chunk_size => 10) AS s1 \gset
SELECT backfill.create_job('public.sp_su_cdc', 'public.sp_su', kind => 'cdc', chunk_size => 10) AS s2 \gset
CALL backfill.run_job(:s1, 1);
CALL backfill.run_job(:s2, 1);
-- the session's own search_path is its own again
SHOW search_path;
UPDATE public.sp_su SET v = 'su' WHERE id OPERATOR(pg_catalog.=) 4;
SELECT * FROM backfill.verify_job(:s1);
SELECT * FROM backfill.verify_job(:s2);
CALL backfill.run_job(:s1);
CALL backfill.run_job(:s2);
UPDATE public.sp_su SET v = 'su2' WHERE id OPERATOR(pg_catalog.=) 5;
SELECT * FROM backfill.verify_job(:s1);
SELECT * FROM backfill.verify_job(:s2);
-- the plain role's job, run, verified, written, recreated by the superuser
CALL backfill.run_job(:j1);
SELECT backfill.job_vnode(:j1, 5::int8) IS NOT NULL AS has_vnode;
UPDATE regress_mal.up SET v = 'by su' WHERE id OPERATOR(pg_catalog.=) 5;
SELECT * FROM backfill.verify_job(:j1);
SELECT backfill.create_job('regress_mal.down3', 'regress_mal.up4', chunk_size => 10) AS s3 \gset
CALL backfill.run_job(:s3, 1);
SELECT backfill.recreate_job(:s3) AS s4 \gset
SELECT backfill.reschedule(:s4, 3);
SELECT backfill.alter_rate_limit(:s4, NULL);
CALL backfill.run_job(:s4);
SELECT * FROM backfill.verify_job(:s4);
SELECT job_id, status FROM backfill.jobs ORDER BY job_id;
ALTER TABLE public.sp_su ADD COLUMN extra int;
DROP TABLE regress_mal.down3;
SELECT backfill.drop_job(:s1);
SELECT backfill.drop_job(:s2);
SELECT backfill.drop_job(:s4);
SELECT backfill.drop_job(:j1);
SELECT backfill.drop_job(:j2);
RESET search_path;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_mal';

SET client_min_messages = warning;
DROP TABLE public.sp_su CASCADE;
DROP SCHEMA regress_mal CASCADE;
RESET client_min_messages;
DROP ROLE regress_mal;
