-- Kind "cdc" on a foreign table of postgres_fdw: what create_job refuses
-- before it needs a source that answers (tests with a second server are
-- t/017_remote.pl).
\set SHOW_CONTEXT never
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
RESET client_min_messages;
SELECT count(*) AS jobs_before FROM backfill.job \gset

-- a server nobody listens on, and a password that must never show
CREATE SERVER remote_nowhere FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '1', dbname 'postgres', connect_timeout '5');
CREATE USER MAPPING FOR CURRENT_USER SERVER remote_nowhere
    OPTIONS (user 'someone', password 'pw-never-shown-7f3a');
CREATE FOREIGN TABLE remote_ft (id int, v text) SERVER remote_nowhere
    OPTIONS (schema_name 'public', table_name 'src');

-- only kind cdc reads a foreign table
SELECT backfill.create_job('remote_arr', 'remote_ft', kind => 'arrangement');
SELECT backfill.create_job('remote_snap', 'remote_ft', kind => 'snapshot');
SELECT backfill.create_job('remote_ns', 'remote_ft', kind => 'no_shuffle');

-- an unreachable source: the connection failure (SQLSTATE 08006), without
-- the password
SELECT backfill.create_job('remote_cdc', 'remote_ft', kind => 'cdc');
DO $$
BEGIN
    PERFORM backfill.create_job('remote_cdc', 'remote_ft', kind => 'cdc');
EXCEPTION WHEN OTHERS THEN
    DECLARE
        m text; d text; h text;
    BEGIN
        GET STACKED DIAGNOSTICS m = MESSAGE_TEXT, d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
        RAISE NOTICE 'SQLSTATE %, password shown: %', SQLSTATE,
            strpos(m || d || h, 'pw-never-shown-7f3a') > 0;
    END;
END
$$;

-- a server without a user mapping for the caller
CREATE SERVER remote_nomap FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '1', dbname 'postgres');
CREATE FOREIGN TABLE remote_ft2 (id int) SERVER remote_nomap;
DO $$
BEGIN
    PERFORM backfill.create_job('remote_cdc2', 'remote_ft2', kind => 'cdc');
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '%: %', SQLSTATE, replace(SQLERRM, current_user, '<user>');
END
$$;

-- a server that does not exist cannot be named by a foreign table
CREATE FOREIGN TABLE remote_ft3 (id int) SERVER remote_unknown;

-- a partitioned table with a partition on another server (two levels down)
CREATE TABLE remote_parted (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE remote_parted_here PARTITION OF remote_parted FOR VALUES FROM (0) TO (100);
CREATE TABLE remote_parted_sub PARTITION OF remote_parted FOR VALUES FROM (100) TO (300)
    PARTITION BY RANGE (id);
CREATE FOREIGN TABLE remote_parted_there PARTITION OF remote_parted_sub
    FOR VALUES FROM (100) TO (200) SERVER remote_nowhere;
SELECT backfill.create_job('remote_parted_copy', 'remote_parted', kind => 'cdc');
SELECT backfill.create_job('remote_parted_copy', 'remote_parted');
DROP TABLE remote_parted;

-- a partitioned table whose partitions are all foreign tables (a sharded
-- upstream): only kind cdc reads it, from each partition's server, and
-- create_job connects to each (the first here does not answer)
CREATE TABLE remote_sharded (id int, v text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE remote_sharded_a PARTITION OF remote_sharded FOR VALUES FROM (0) TO (100)
    SERVER remote_nowhere OPTIONS (schema_name 'public', table_name 'a');
SELECT backfill.create_job('remote_sharded_copy', 'remote_sharded', kind => 'arrangement');
DO $$
BEGIN
    PERFORM backfill.create_job('remote_sharded_copy', 'remote_sharded', kind => 'cdc');
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'SQLSTATE %: %', SQLSTATE, SQLERRM;
END
$$;
-- a local partition beside them: refused (the mixed case above)
CREATE TABLE remote_sharded_b PARTITION OF remote_sharded FOR VALUES FROM (100) TO (200);
SELECT backfill.create_job('remote_sharded_copy', 'remote_sharded', kind => 'cdc');
DROP TABLE remote_sharded;

-- nothing was left behind
SELECT count(*) - :jobs_before AS new_jobs FROM backfill.job;
SELECT count(*) AS downstream_tables FROM pg_class
 WHERE relname IN ('remote_arr', 'remote_snap', 'remote_ns', 'remote_cdc', 'remote_cdc2', 'remote_parted_copy', 'remote_sharded_copy');

DROP FOREIGN TABLE remote_ft, remote_ft2;
DROP USER MAPPING FOR CURRENT_USER SERVER remote_nowhere;
DROP SERVER remote_nowhere, remote_nomap;
