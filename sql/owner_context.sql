-- A job's filter and computed columns are its owner's SQL, and run as its
-- owner in a security-restricted operation whoever makes them run: a
-- superuser's barrier, a superuser's writes (capture and apply triggers),
-- verify_job, recreate_job.  An IMMUTABLE PL/pgSQL wrapper passes the
-- volatility check while it does what it likes; here it notes who runs it
-- tries to make its owner a superuser, which succeeds only when it runs as a
-- superuser, and sets a setting of the session, which must not outlive the
-- call that ran it.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE ROLE regress_oc_alice;
CREATE SCHEMA regress_oc AUTHORIZATION regress_oc_alice;
SET ROLE regress_oc_alice;
CREATE TABLE regress_oc.seen (who name);
GRANT INSERT ON regress_oc.seen TO PUBLIC;
CREATE FUNCTION regress_oc.escalate() RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO regress_oc.seen VALUES (current_user);
    -- a plain SET outlives the function: it must not outlive the job's run
    PERFORM pg_catalog.set_config('regress_oc.leaked', current_user, false);
    BEGIN
        ALTER ROLE regress_oc_alice SUPERUSER;
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
END $$;
CREATE FUNCTION regress_oc.ok(v int) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM regress_oc.escalate();
    RETURN v > 0;
END $$;
CREATE FUNCTION regress_oc.twice(v int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM regress_oc.escalate();
    RETURN v * 2;
END $$;
CREATE TABLE regress_oc.up (id int PRIMARY KEY, v int);
INSERT INTO regress_oc.up SELECT g, g % 7 FROM generate_series(1, 40) g;
-- estimate_job runs the expressions as the caller, restricted
SELECT rows FROM backfill.estimate_job('regress_oc.up',
                                       columns => ARRAY['id', 'regress_oc.twice(v) AS w']);
SELECT backfill.create_job('regress_oc.down', 'regress_oc.up', filter => 'regress_oc.ok(v)',
                           columns => ARRAY['id', 'regress_oc.twice(v) AS w'],
                           chunk_size => 10) AS job \gset
SELECT backfill.create_job('regress_oc.down2', 'regress_oc.up', filter => 'regress_oc.ok(v)',
                           chunk_size => 10) AS job2 \gset
RESET ROLE;

CREATE VIEW regress_oc_check AS
SELECT (SELECT pg_catalog.string_agg(DISTINCT who, ', ') FROM regress_oc.seen) AS ran_as,
       (SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_oc_alice') AS alice_superuser,
       current_setting('regress_oc.leaked', true) AS leaked;
SELECT * FROM regress_oc_check;
TRUNCATE regress_oc.seen;
-- alice's own calls ran her function in her own session, as her: reset
SET regress_oc.leaked = '';

-- a superuser's barriers
CALL backfill.run_job(:job, 1);
SELECT * FROM regress_oc_check;
TRUNCATE regress_oc.seen;

-- a superuser's writes while the job backfills (capture), after its finish (apply)
INSERT INTO regress_oc.up VALUES (41, 3);
UPDATE regress_oc.up SET v = 5 WHERE id = 2;
CALL backfill.run_job(:job);
SELECT * FROM regress_oc_check;
TRUNCATE regress_oc.seen;
INSERT INTO regress_oc.up VALUES (42, 4);
UPDATE regress_oc.up SET v = 6 WHERE id = 3;
DELETE FROM regress_oc.up WHERE id = 4;
SELECT * FROM regress_oc_check;
TRUNCATE regress_oc.seen;

-- a superuser's verify_job
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM regress_oc_check;
TRUNCATE regress_oc.seen;

-- a superuser's recreate_job: the new job stays alice's and runs as alice
CALL backfill.run_job(:job2, 1);
TRUNCATE regress_oc.seen;
SELECT backfill.recreate_job(:job2) AS job3 \gset
SELECT job_id, owner, status FROM backfill.jobs WHERE job_id IN (:job2, :job3) ORDER BY job_id;
SELECT * FROM regress_oc_check;
TRUNCATE regress_oc.seen;
CALL backfill.run_job(:job3);
SELECT * FROM backfill.verify_job(:job3);
SELECT * FROM regress_oc_check;
TRUNCATE regress_oc.seen;
-- alice may drop it: it is hers
SET ROLE regress_oc_alice;
SELECT backfill.drop_job(:job3);
RESET ROLE;

-- recreate_job needs the privileges of the job's owner, and the owner the
-- right to create jobs
CREATE ROLE regress_oc_bob;
SET ROLE regress_oc_alice;
SELECT backfill.create_job('regress_oc.down4', 'regress_oc.up', chunk_size => 10) AS job4 \gset
RESET ROLE;
SET ROLE regress_oc_bob;
SELECT backfill.recreate_job(:job4);
RESET ROLE;
SELECT backfill._create_job_as(:job4, 'regress_oc.down5', 'regress_oc.up', 'arrangement',
                               NULL, 1, 10, NULL, NULL, false) AS direct \gset
SELECT job_id, owner FROM backfill.jobs WHERE job_id = :direct;
SELECT 'regress_oc.up'::regclass::oid AS up_oid \gset
-- PUBLIC may not execute _create_job_as: bob may for this call, so that
-- what is tested is its own check that the caller owns the job
GRANT EXECUTE ON FUNCTION backfill._create_job_as(bigint, text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) TO regress_oc_bob;
SET ROLE regress_oc_bob;
SELECT backfill._create_job_as(:job4, 'public.down6', :up_oid::oid::regclass, 'arrangement',
                               NULL, 1, 10, NULL, NULL, false);
SELECT * FROM backfill.verify_job(:job4);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION backfill._create_job_as(bigint, text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) FROM regress_oc_bob;
SELECT * FROM backfill.verify_job(NULL::bigint);
SELECT backfill._create_job_as(NULL, 'regress_oc.down8', 'regress_oc.up', 'arrangement',
                               NULL, 1, 10, NULL, NULL, false);
REVOKE EXECUTE ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) FROM PUBLIC;
SELECT backfill.recreate_job(:job4);
GRANT EXECUTE ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) TO PUBLIC;
SELECT * FROM regress_oc_check;

-- internal functions: no one calls the event triggers' own, and PUBLIC
-- may not call _create_job_as either (which checks that the caller owns
-- the job, above)
SELECT p.proname, has_function_privilege('regress_oc_bob', p.oid, 'EXECUTE') AS bob_may
  FROM pg_proc p
 WHERE p.pronamespace = 'backfill'::regnamespace
   AND p.proname IN ('_on_ddl', '_on_drop_extension', '_create_job_as')
 ORDER BY 1;
-- a downstream name cut short is refused, one of NAMEDATALEN - 1 bytes is not
SELECT backfill.create_job('regress_oc.' || repeat('n', 64), 'regress_oc.up');
SELECT backfill.create_job('"' || repeat('Q', 30) || '""' || repeat('Q', 33) || '"', 'regress_oc.up');
SELECT backfill.create_job(repeat('x', 64) || '.down7', 'regress_oc.up');
SELECT backfill.create_job('regress_oc.' || repeat('e', 64), 'regress_oc.up', into_existing => true);
SELECT backfill.create_job('regress_oc.' || repeat('n', 63), 'regress_oc.up') > 0 AS created;
SELECT relname FROM pg_class WHERE relname LIKE 'nnn%';
-- a vnode of no key is none
SELECT backfill.vnode(NULL::int) AS null_key, backfill.vnode(1, NULL::text) AS null_part,
       backfill.vnode(1) IS NOT NULL AS key;

SET client_min_messages = warning;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
DROP VIEW regress_oc_check;
DROP SCHEMA regress_oc CASCADE;
DROP ROLE regress_oc_alice;
DROP ROLE regress_oc_bob;
RESET client_min_messages;
