/*
 * src/sql/catalog/tables.sql
 *	  The catalogs: jobs, their actors, the indexes still to build, cutovers,
 *	  the servers of a job over several, and the sequences of their ids; who
 *	  may read which rows.
 *
 * Part of the install script (install.sql) only: a catalog upgraded from
 * 1.3 has these already.
 */

CREATE SEQUENCE backfill.job_id_seq AS bigint;
CREATE SEQUENCE backfill.fragment_id_seq AS integer;
CREATE SEQUENCE backfill.actor_id_seq AS integer;
-- snapshot kind: orders the log entries of a key as their writes
CREATE SEQUENCE backfill.change_seq AS bigint;

-- The columns in the order an upgraded catalog has them: those of 1.0, then
-- those each version added
CREATE TABLE backfill.job (
    job_id bigint PRIMARY KEY,
    job_name text NOT NULL,
    kind text NOT NULL
        CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['no_shuffle', 'arrangement', 'snapshot', 'cdc'])),
    status text NOT NULL DEFAULT 'pending'
        CHECK (status OPERATOR(pg_catalog.=) ANY (ARRAY['pending', 'backfilling', 'finished', 'failed', 'cancelled'])),
    owner regrole NOT NULL DEFAULT CURRENT_USER::regrole,
    upstream regclass NOT NULL,
    downstream_name text NOT NULL,
    downstream regclass,
    state_table regclass,
    change_table regclass,
    columns text[] NOT NULL,
    pk_columns text[] NOT NULL,
    fragment_id integer NOT NULL UNIQUE,
    parallelism integer NOT NULL CHECK (parallelism BETWEEN 1 AND 256),
    chunk_size integer NOT NULL CHECK (chunk_size OPERATOR(pg_catalog.>=) 1),
    rate_limit integer CHECK (rate_limit OPERATOR(pg_catalog.>=) 0),
    run_mode text NOT NULL DEFAULT 'foreground'
        CHECK (run_mode OPERATOR(pg_catalog.=) ANY (ARRAY['foreground', 'background'])),
    ddl_statement text NOT NULL,
    total_rows bigint NOT NULL DEFAULT 0,
    runs integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at timestamptz,
    last_error text,
    last_error_detail text,
    last_sqlstate text,
    -- snapshot kind: the epoch its snapshot is read as of
    snapshot_epoch bigint,
    -- what a job copies: its row filter, the expression of each computed
    -- column (NULL for a column copied as it is), the upstream's columns it
    -- reads, and whether the downstream is a table the user made
    filter text,
    expressions text[],
    source_columns text[],
    into_existing boolean NOT NULL DEFAULT false,
    -- How a job maps keys to vnodes (src/copy/ranges.c, src/lib/vnode.c):
    -- NULL or 'hash' for a hash of the key, as every job made before 1.2;
    -- 'range' for 255 bounds cut from a sample of the upstream at
    -- create_job, the lowest key of vnodes 1 to 255 (one row of key columns
    -- each, written as text under fixed settings), so that consecutive
    -- vnodes are one range of keys
    vnode_mapping text
        CHECK (vnode_mapping OPERATOR(pg_catalog.=) ANY (ARRAY['hash', 'range'])),
    vnode_bounds text[],
    -- A cdc job whose upstream is a foreign table of postgres_fdw reads the
    -- table of another PostgreSQL server in splits and follows it through a
    -- logical replication slot there (src/kinds/remote/kind_remote.c)
    remote boolean NOT NULL DEFAULT false,
    remote_splits text[],
    remote_lsn pg_lsn,
    remote_source_lsn pg_lsn,
    remote_caught_up_at timestamptz,
    remote_last_commit timestamptz,
    -- the failures of each job, counted: a failed job may run again, and its
    -- last_error tells only the last one (src/catalog/job.c counts them)
    failures integer NOT NULL DEFAULT 0,
    -- whether create_job gave the downstream the upstream's other indexes
    -- (src/copy/index_build.c)
    indexes boolean DEFAULT false,
    -- a cdc job over a partitioned table of foreign tables: its partitions,
    -- in the order of its splits (src/kinds/remote/kind_remote.c)
    remote_partitions regclass[],
    CHECK ((vnode_mapping IS NOT DISTINCT FROM 'range') OPERATOR(pg_catalog.=)
           (vnode_bounds IS NOT NULL))
);

CREATE TABLE backfill.actor (
    actor_id integer PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    fragment_id integer NOT NULL,
    vnode_start smallint NOT NULL,
    vnode_end smallint NOT NULL,
    epoch bigint NOT NULL DEFAULT 0,
    row_count bigint NOT NULL DEFAULT 0,
    -- snapshot kind: each actor's log store phase
    log_store_lag_ms bigint,
    log_store_caught_up boolean NOT NULL DEFAULT false,
    -- each actor's pace, recorded with its barriers (src/runtime/pacing.c)
    throttled_by text,
    rows_per_second double precision,
    CHECK (vnode_start OPERATOR(pg_catalog.<=) vnode_end)
);
CREATE INDEX ON backfill.actor (job_id);

-- pg_dump keeps the jobs
SELECT pg_catalog.pg_extension_config_dump('backfill.job', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.actor', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.fragment_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.actor_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.change_seq', '');

-- Any role may create jobs (with SELECT and TRIGGER on the upstream and
-- CREATE on the downstream's schema) and sees its own; only the extension's
-- owner writes the catalogs, which the C code and the internal catalog
-- functions below do on the job owner's behalf.
GRANT USAGE ON SCHEMA backfill TO PUBLIC;
GRANT SELECT ON backfill.job, backfill.actor TO PUBLIC;
ALTER TABLE backfill.job ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.actor ENABLE ROW LEVEL SECURITY;

CREATE POLICY job_owner ON backfill.job FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, owner, 'USAGE'));

CREATE POLICY actor_owner ON backfill.actor FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) actor.job_id));

-- A snapshot job writes nothing into its downstream during its snapshot but
-- the snapshot's own rows, which are all different keys: it copies into a
-- downstream without indexes and builds them once, after the snapshot and
-- before it applies the changes it logged meanwhile.  Until then, each index
-- it is to build is a row here: the statement that builds it, split around
-- the downstream's name, which is read afresh when it runs (a rename of the
-- downstream disturbs nothing).
CREATE TABLE backfill.job_index (
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    position integer NOT NULL,
    index_name name NOT NULL,
    head text NOT NULL,
    tail text NOT NULL,
    PRIMARY KEY (job_id, position)
);
SELECT pg_catalog.pg_extension_config_dump('backfill.job_index', '');
GRANT SELECT ON backfill.job_index TO PUBLIC;
ALTER TABLE backfill.job_index ENABLE ROW LEVEL SECURITY;

CREATE POLICY job_index_owner ON backfill.job_index FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) job_index.job_id));

CREATE TABLE backfill.job_cutover (
    job_id bigint PRIMARY KEY REFERENCES backfill.job ON DELETE CASCADE,
    state text NOT NULL
        CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['cut_over', 'rolled_back', 'finished'])),
    attempts integer NOT NULL,
    old_table oid NOT NULL,
    new_table oid NOT NULL,
    old_name text NOT NULL,
    new_schema oid NOT NULL,
    new_name text NOT NULL,
    reversible boolean NOT NULL,
    into_existing boolean NOT NULL,
    lock_held_ms double precision,
    to_validate oid[],
    swapped_at timestamptz NOT NULL,
    finished_at timestamptz
);
SELECT pg_catalog.pg_extension_config_dump('backfill.job_cutover', '');
GRANT SELECT ON backfill.job_cutover TO PUBLIC;
ALTER TABLE backfill.job_cutover ENABLE ROW LEVEL SECURITY;

CREATE POLICY job_cutover_owner ON backfill.job_cutover FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) job_cutover.job_id));

-- a cdc job over a partitioned table of foreign tables of several servers
-- (src/kinds/remote/kind_remote.c): the offset of the change stream on each
-- server, as the job's own columns keep it for a job of one server
CREATE TABLE backfill.job_source (
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    source integer NOT NULL,
    server name NOT NULL,
    remote_lsn pg_lsn,
    remote_source_lsn pg_lsn,
    remote_caught_up_at timestamptz,
    remote_last_commit timestamptz,
    PRIMARY KEY (job_id, source)
);
SELECT pg_catalog.pg_extension_config_dump('backfill.job_source', '');
GRANT SELECT ON backfill.job_source TO PUBLIC;
ALTER TABLE backfill.job_source ENABLE ROW LEVEL SECURITY;

CREATE POLICY job_source_owner ON backfill.job_source FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) job_source.job_id));
