-- backfill.create_job(): what it creates, and every input it refuses.
CREATE TABLE orders (
    id bigint PRIMARY KEY,
    a int,
    b text,
    c timestamptz
);
INSERT INTO orders
SELECT g, g % 10, 'row ' || g, '2026-01-01'::timestamptz + g * interval '1 minute'
  FROM generate_series(1, 1000) g;

-- an arrangement job over four actors
SELECT backfill.create_job('orders_mv', 'orders', parallelism => 4);
\d orders_mv
\d backfill.state_1
SELECT job_id, job_name, kind, status, upstream, upstream_table_id = 'orders'::regclass AS upstream_oid_ok,
       downstream, fragment_id, parallelism, chunk_size, epoch, row_count, finished_at, last_error, state_table
  FROM backfill.jobs;
-- the 256 vnodes in contiguous, even ranges; actor ids from their own sequence
SELECT actor_id, job_id, fragment_id, vnode_start, vnode_end FROM backfill.actor ORDER BY actor_id;
-- capture enabled, apply disabled until the job finishes
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'orders'::regclass ORDER BY tgname;
SELECT count(*) AS state_rows FROM backfill.state_1;
SELECT ddl_id, ddl_statement, create_type, progress FROM backfill.ddl_progress;

-- chosen columns: the key is always included, first when not asked for
SELECT backfill.create_job('orders_ba', 'orders', columns => '{b,a}', chunk_size => 50);
\d orders_ba
SELECT backfill.create_job('orders_idb', 'orders', columns => '{b,id}');
\d orders_idb

-- a schema-qualified name, a composite key with a collation
CREATE SCHEMA mv;
CREATE TABLE events (
    tenant text COLLATE "C",
    seq int,
    payload jsonb,
    PRIMARY KEY (tenant, seq)
);
SELECT backfill.create_job('mv.events_copy', 'public.events', parallelism => 3);
\d mv.events_copy
\d backfill.state_4
SELECT actor_id, vnode_start, vnode_end FROM backfill.actor WHERE job_id = 4 ORDER BY actor_id;

-- the legacy kind is created with a warning
SELECT backfill.create_job('orders_legacy', 'orders', kind => 'no_shuffle', parallelism => 2);
SELECT job_id, kind, status, fragment_id FROM backfill.jobs WHERE job_id = 5;

-- bad input: each is refused and leaves nothing behind
\set VERBOSITY default
SELECT backfill.create_job(NULL, 'orders');
SELECT backfill.create_job('x', NULL);
SELECT backfill.create_job('x', 'orders', kind => NULL);
SELECT backfill.create_job('x', 'orders', kind => 'chain');
SELECT backfill.create_job('x', 'orders', kind => 'cdc', parallelism => 2);
SELECT backfill.create_job('x', 'orders', parallelism => 0);
SELECT backfill.create_job('x', 'orders', parallelism => 257);
SELECT backfill.create_job('x', 'orders', parallelism => NULL);
SELECT backfill.create_job('x', 'orders', chunk_size => 0);
SELECT backfill.create_job('x', 'orders', columns => '{a,nope}');
SELECT backfill.create_job('x', 'orders', columns => '{a,b,a}');
SELECT backfill.create_job('x', 'orders', columns => '{a,NULL}');
SELECT backfill.create_job('x', 'orders', columns => '{ctid}');
SELECT backfill.create_job('x', 'orders', columns => '{{a},{b}}');
SELECT backfill.create_job('orders_mv', 'orders');
SELECT backfill.create_job('orders', 'orders');
SELECT backfill.create_job('nosuchschema.x', 'orders');
SELECT backfill.create_job('backfill.x', 'orders');
SELECT backfill.create_job('pg_temp.x', 'orders');
SELECT backfill.create_job('x', 'backfill.job');
SELECT backfill.create_job('x', 'pg_class');
CREATE TABLE nopk (a int);
SELECT backfill.create_job('x', 'nopk');
CREATE VIEW orders_view AS SELECT * FROM orders;
SELECT backfill.create_job('x', 'orders_view');
SELECT backfill.create_job('x', 'orders_pkey');
CREATE SEQUENCE some_seq;
SELECT backfill.create_job('x', 'some_seq');
CREATE TEMP TABLE tmp (id int PRIMARY KEY);
SELECT backfill.create_job('x', 'tmp');
CREATE TABLE parted (id int) PARTITION BY RANGE (id);
SELECT backfill.create_job('x', 'parted');
CREATE TABLE clash (vnode int PRIMARY KEY, v text);
SELECT backfill.create_job('x', 'clash');
SELECT backfill.create_job('x', 12345::oid::regclass);
SELECT backfill.create_job('"unterminated', 'orders');

-- nothing was left behind by the refusals
SELECT count(*) AS jobs FROM backfill.job;
SELECT count(*) AS actors FROM backfill.actor;
SELECT to_regclass('x') IS NULL AS no_x;
SELECT relname FROM pg_class WHERE relnamespace = 'backfill'::regnamespace AND relkind = 'r' ORDER BY relname;
SELECT tgrelid::regclass, count(*) FROM pg_trigger WHERE tgname LIKE 'backfill%' GROUP BY 1 ORDER BY 1;
DROP TABLE nopk, clash, parted;
DROP VIEW orders_view;
DROP SEQUENCE some_seq;
