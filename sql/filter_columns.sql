-- Row filters and computed columns: what create_job makes of them, rows
-- moving into and out of the filter during the backfill and after the
-- finish, for every kind, and every input refused.
\set VERBOSITY default
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE fc_orders (
    id bigint PRIMARY KEY,
    customer int,
    amount numeric,
    note text,
    archived boolean NOT NULL DEFAULT false
);
INSERT INTO fc_orders
SELECT g, g % 10, g - 20, 'Note ' || g, g % 7 = 0 FROM generate_series(1, 100) g;

-- the filtered projection a job's downstream must equal
CREATE FUNCTION fc_expected() RETURNS TABLE (id bigint, customer int, note text, cents numeric)
LANGUAGE sql AS $$
SELECT id, customer, lower(note), amount * 100 FROM fc_orders WHERE amount > 0 AND NOT archived
$$;
CREATE FUNCTION fc_diff(down regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((SELECT * FROM fc_expected() EXCEPT ALL SELECT id, customer, note, cents FROM %s) '
                   'UNION ALL (SELECT id, customer, note, cents FROM %s EXCEPT ALL SELECT * FROM fc_expected())) x', down, down)
        INTO n;
    RETURN n;
END
$$;

-- computed columns and a filter: the key is copied first, as it is
SELECT backfill.create_job('fc_down', 'fc_orders',
                           columns => ARRAY['customer', 'lower(note) AS note', 'amount * 100 AS cents'],
                           filter => 'amount > 0 AND NOT archived', chunk_size => 20) AS job \gset
\d fc_down
-- stored deparsed, with the upstream columns they read
SELECT columns, expressions, filter, source_columns, into_existing FROM backfill.job WHERE job_id = :job;
-- the statement is the real SELECT; the total counts the rows that pass
SELECT ddl_statement, progress FROM backfill.ddl_progress WHERE ddl_id = :job;
SELECT total_rows, (SELECT count(*) FROM fc_expected()) AS expected FROM backfill.job WHERE job_id = :job;

-- a barrier reads the first 20 rows that pass the filter, ids 22 to 44;
-- rows move into and out of the filter below and above the position
CALL backfill.run_job(:job, 1);
SELECT current_pos, count(*) FROM backfill.job_state(:job) GROUP BY 1;
SELECT * FROM backfill.verify_job(:job);
UPDATE fc_orders SET amount = -1 WHERE id = 30;           -- out, below: deleted
UPDATE fc_orders SET archived = false WHERE id = 35;      -- in, below: inserted
UPDATE fc_orders SET note = 'CHANGED' WHERE id = 31;      -- stays in, below: updated
UPDATE fc_orders SET amount = 100 WHERE id = 5;           -- in, below: inserted
UPDATE fc_orders SET amount = -1 WHERE id = 60;           -- out, above: never read
UPDATE fc_orders SET archived = false WHERE id = 70;      -- in, above: read later
INSERT INTO fc_orders VALUES (101, 1, -3, 'Out'), (102, 2, 3, 'In');
SELECT * FROM backfill.verify_job(:job);
CALL backfill.run_job(:job, 1);
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM fc_down WHERE id IN (5, 30, 31, 35) ORDER BY id;
CALL backfill.run_job(:job);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :job;
SELECT fc_diff('fc_down') AS differences, (SELECT count(*) FROM fc_down) AS rows;
SELECT * FROM fc_down WHERE id IN (60, 70, 101, 102) ORDER BY id;

-- after the finish, the apply trigger moves rows in and out too
UPDATE fc_orders SET amount = -1 WHERE id = 40;            -- out
UPDATE fc_orders SET archived = false WHERE id = 42;      -- in
UPDATE fc_orders SET id = 200, amount = -5 WHERE id = 41; -- a key that moves out
UPDATE fc_orders SET id = 201 WHERE id = 60;               -- a key that moves, still out
UPDATE fc_orders SET id = 202, amount = 7 WHERE id = 201;  -- and in
INSERT INTO fc_orders VALUES (103, 3, -1, 'Out'), (104, 4, 1, 'In');
DELETE FROM fc_orders WHERE id IN (43, 44);
SELECT * FROM backfill.verify_job(:job);
SELECT fc_diff('fc_down') AS differences;
SELECT * FROM fc_down WHERE id IN (40, 41, 42, 200, 201, 202, 103, 104) ORDER BY id;

-- the snapshot kind reads the filtered projection as of its epoch: a row
-- that enters the filter afterwards shows only in the log store phase
SELECT backfill.create_job('fc_snap', 'fc_orders', kind => 'snapshot',
                           columns => ARRAY['customer', 'lower(note) AS note', 'amount * 100 AS cents'],
                           filter => 'amount > 0 AND NOT archived', chunk_size => 20) AS snap \gset
-- its log keeps the images of the upstream columns it reads
\d backfill.image_:snap
CALL backfill.run_job(:snap, 1);
UPDATE fc_orders SET amount = 50 WHERE id = 3;             -- in, below the position
UPDATE fc_orders SET amount = -2 WHERE id = 90;            -- out, above the position
CALL backfill.run_job(:snap, 4);
SELECT (SELECT count(*) FROM fc_snap WHERE id = 3) AS new_row_in_phase_1,
       (SELECT count(*) FROM fc_snap WHERE id = 90) AS old_row_in_phase_1;
CALL backfill.run_job(:snap);
SELECT status FROM backfill.jobs WHERE job_id = :snap;
SELECT * FROM backfill.verify_job(:snap);
SELECT fc_diff('fc_snap') AS differences;

-- the cdc kind
SELECT backfill.create_job('fc_cdc', 'fc_orders', kind => 'cdc',
                           columns => ARRAY['customer', 'lower(note) AS note', 'amount * 100 AS cents'],
                           filter => 'amount > 0 AND NOT archived', chunk_size => 20) AS cdc \gset
CALL backfill.run_job(:cdc, 2);
UPDATE fc_orders SET amount = -3 WHERE id = 8;             -- out, below
UPDATE fc_orders SET archived = false WHERE id = 14;      -- in, below
UPDATE fc_orders SET amount = 9 WHERE id = 80;             -- in, above
CALL backfill.run_job(:cdc, 1);
SELECT * FROM backfill.verify_job(:cdc);
CALL backfill.run_job(:cdc);
SELECT * FROM backfill.verify_job(:cdc);
SELECT fc_diff('fc_cdc') AS differences;

-- recreate_job makes the same job again
SELECT backfill.create_job('fc_again', 'fc_orders', columns => ARRAY['lower(note) AS note'],
                           filter => 'customer = 3', parallelism => 2) AS again \gset
SELECT backfill.recreate_job(:again, 'no_shuffle') AS again2 \gset
SELECT j1.columns = j2.columns AS same_columns, j1.expressions = j2.expressions AS same_expressions,
       j1.filter = j2.filter AS same_filter, j2.kind, j1.ddl_statement = j2.ddl_statement AS same_statement
  FROM backfill.job j1, backfill.job j2 WHERE j1.job_id = :again AND j2.job_id = :again2;
CALL backfill.run_job(:again2);
SELECT * FROM backfill.verify_job(:again2);
SELECT count(*) AS rows, bool_and(note = lower(note)) AS lower FROM fc_again;

-- a function outside pg_catalog is stored qualified, and the job runs
-- under its own search_path
CREATE SCHEMA fc_fn;
CREATE FUNCTION fc_fn.half(numeric) RETURNS numeric IMMUTABLE LANGUAGE sql AS 'SELECT $1 / 2';
SET search_path = fc_fn, public;
SELECT backfill.create_job('public.fc_half', 'fc_orders', columns => ARRAY['half(amount) AS half'],
                           filter => 'half(amount) > 10') AS half \gset
RESET search_path;
SELECT expressions, filter FROM backfill.job WHERE job_id = :half;
CALL backfill.run_job(:half);
SELECT * FROM backfill.verify_job(:half);
SELECT count(*) FROM fc_half;
SELECT backfill.drop_job(:half);

-- what may not change under a job: the columns its filter and computed
-- columns read, and their types where the computed ones would change
ALTER TABLE fc_orders RENAME COLUMN archived TO arch;
ALTER TABLE fc_orders RENAME COLUMN amount TO amt;
ALTER TABLE fc_orders DROP COLUMN archived;
ALTER TABLE fc_orders ALTER COLUMN amount TYPE float8;
ALTER TABLE fc_down ALTER COLUMN cents TYPE float8;
-- what may: a type under which the expressions mean the same, other columns
ALTER TABLE fc_orders ALTER COLUMN note TYPE varchar(100);
ALTER TABLE fc_orders ADD COLUMN extra int;
ALTER TABLE fc_orders DROP COLUMN extra;
UPDATE fc_orders SET note = 'After ALTER' WHERE id = 50;
SELECT * FROM backfill.verify_job(:job);
SELECT note FROM fc_down WHERE id = 50;

-- refused: not immutable, or not about the row alone
SELECT backfill.create_job('x', 'fc_orders', filter => 'amount > random()');
SELECT backfill.create_job('x', 'fc_orders', filter => 'now() > ''2020-01-01''');
SELECT backfill.create_job('x', 'fc_orders', filter => 'current_date > ''2020-01-01''');
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['random() AS r']);
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['note || now() AS r']);
SELECT backfill.create_job('x', 'fc_orders', filter => 'id IN (SELECT 1)');
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['(SELECT 1) AS n']);
SELECT backfill.create_job('x', 'fc_orders', filter => 'count(*) > 1');
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['count(*) AS n']);
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['generate_series(1, 2) AS n']);
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['fc_orders AS n']);
SELECT backfill.create_job('x', 'fc_orders', filter => 'fc_orders IS NOT NULL');
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['xmin AS n']);
SELECT backfill.create_job('x', 'fc_orders', filter => 'ctid > ''(0,1)''');
-- refused: the key is copied as it is
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['id * 2 AS id']);
-- refused: not an expression with a name, not a boolean expression
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['lower(note)']);
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['lower(nope) AS n']);
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['lower(note AS n']);
SELECT backfill.create_job('x', 'fc_orders', columns => ARRAY['note AS customer', 'customer']);
SELECT backfill.create_job('x', 'fc_orders', filter => 'amount');
SELECT backfill.create_job('x', 'fc_orders', filter => 'amount >');
SELECT backfill.create_job('x', 'fc_orders', filter => 'amount > 0 FROM pg_class');
SELECT backfill.create_job('x', 'fc_orders', filter => 'true; DROP TABLE fc_orders');
SELECT backfill.create_job('x', 'fc_orders', filter => 'id > 0 AS x');
SELECT backfill.create_job('x', 'fc_orders', filter => '');
-- a literal is a text column; a column renamed is a computed column
SELECT backfill.create_job('fc_lit', 'fc_orders', columns => ARRAY['''x'' AS lit', 'note AS memo', 'customer AS customer']) AS lit \gset
\d fc_lit
SELECT columns, expressions FROM backfill.job WHERE job_id = :lit;
SELECT backfill.drop_job(:lit);

-- nothing was left behind by the refusals
SELECT count(*) AS jobs FROM backfill.job WHERE job_name = 'x';
SELECT to_regclass('x') IS NULL AS no_x;

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
-- no image type is left either
SELECT count(*) AS types FROM pg_type WHERE typnamespace = 'backfill'::regnamespace AND typname LIKE 'image%';
DROP TABLE fc_orders;
DROP SCHEMA fc_fn CASCADE;
DROP FUNCTION fc_expected(), fc_diff(regclass);
