-- indexes: create_job(..., indexes => true) gives the downstream the
-- upstream's other indexes; a snapshot job builds the downstream's indexes
-- (its key's included) once, after its snapshot, before its log store.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;   -- one chunk per actor per barrier
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE SCHEMA ix;
CREATE FUNCTION ix.norm(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$SELECT lower(t)$$;
CREATE TABLE ix.up (id int PRIMARY KEY, email text, tenant int, v text, w int,
                    CONSTRAINT up_email_key UNIQUE (email));
CREATE INDEX up_tenant ON ix.up (tenant, id DESC NULLS LAST) INCLUDE (v);
CREATE INDEX up_norm ON ix.up USING hash (ix.norm(v));
CREATE INDEX up_w_big ON ix.up (tenant) WHERE w > 10;
CREATE INDEX up_w ON ix.up (w);
INSERT INTO ix.up SELECT g, 'e' || g || '@x', g % 7, 'V' || g, g FROM generate_series(1, 200) g;

-- an arrangement job maintains its indexes from the start: they are made at
-- once, named from the downstream's name; those that read "w", which it does
-- not copy, are not
SELECT backfill.create_job('ix.arr', 'ix.up', columns => '{email,tenant,v}', indexes => true) AS arr \gset
SELECT indexrelid::regclass::text AS index, pg_get_indexdef(indexrelid) AS definition
  FROM pg_index WHERE indrelid = 'ix.arr'::regclass ORDER BY 1;
SELECT indexes FROM backfill.job WHERE job_id = :arr;
SELECT count(*) AS to_build FROM backfill.job_index WHERE job_id = :arr;
CALL backfill.run_job(:arr);
SELECT status FROM backfill.jobs WHERE job_id = :arr;
SELECT * FROM backfill.verify_job(:arr);

-- a snapshot job: the downstream has no index while it copies; each is
-- written down, to be built after the snapshot, the key's first
SELECT backfill.create_job('ix.snap', 'ix.up', kind => 'snapshot', indexes => true,
                           parallelism => 2, chunk_size => 40) AS snap \gset
SELECT count(*) AS indexes_while_copying FROM pg_index WHERE indrelid = 'ix.snap'::regclass;
SELECT position, index_name, head, tail FROM backfill.job_index WHERE job_id = :snap ORDER BY position;
-- the key's columns stay NOT NULL
SELECT attname, attnotnull FROM pg_attribute WHERE attrelid = 'ix.snap'::regclass AND attnum > 0 ORDER BY attnum;
-- writes during the snapshot go to the log
UPDATE ix.up SET v = 'changed', email = 'moved' || id WHERE id IN (3, 150);
DELETE FROM ix.up WHERE id = 4;
INSERT INTO ix.up VALUES (1000, 'new@x', 1, 'new', 11);
-- the snapshot (two actors, 100 rows each, 40 a chunk): three barriers
CALL backfill.run_job(:snap, 3);
SELECT DISTINCT backfill_finished FROM backfill.job_state(:snap);
SELECT count(*) AS indexes_after_snapshot FROM pg_index WHERE indrelid = 'ix.snap'::regclass;
SELECT count(*) AS rows_copied FROM ix.snap;
-- the next barrier builds them, then applies the log
CALL backfill.run_job(:snap, 1);
SELECT count(*) AS to_build FROM backfill.job_index WHERE job_id = :snap;
SELECT indexrelid::regclass::text AS index, indisvalid, pg_get_indexdef(indexrelid) AS definition
  FROM pg_index WHERE indrelid = 'ix.snap'::regclass ORDER BY 1;
SELECT conname, contype FROM pg_constraint WHERE conrelid = 'ix.snap'::regclass ORDER BY 1;
SELECT * FROM ix.snap WHERE id IN (3, 4, 150, 1000) ORDER BY id;
CALL backfill.run_job(:snap);
SELECT status FROM backfill.jobs WHERE job_id = :snap;
SELECT * FROM backfill.verify_job(:snap);
-- the key's index serves the apply trigger from now on
UPDATE ix.up SET v = 'after' WHERE id = 2;
SELECT * FROM ix.snap WHERE id = 2;

-- without indexes, a snapshot job builds its key's index alone, once
SELECT backfill.create_job('ix.snap_key', 'ix.up', kind => 'snapshot', indexes => false) AS snap_key \gset
SELECT position, index_name, head, tail FROM backfill.job_index WHERE job_id = :snap_key;
SELECT indexes FROM backfill.job WHERE job_id = :snap_key;
CALL backfill.run_job(:snap_key);
SELECT status FROM backfill.jobs WHERE job_id = :snap_key;
SELECT indexrelid::regclass AS index, indisprimary FROM pg_index WHERE indrelid = 'ix.snap_key'::regclass;
SELECT * FROM backfill.verify_job(:snap_key);

-- a table of the user's keeps its indexes, under their names; those that can
-- wait are built once: not the one a foreign key references, nor the
-- replica identity's
CREATE TABLE ix.mine (id int, email text NOT NULL, tenant int,
                      CONSTRAINT mine_pk PRIMARY KEY (id),
                      CONSTRAINT mine_email UNIQUE (email),
                      CONSTRAINT mine_tenant_uq UNIQUE (tenant, id));
CREATE INDEX mine_tenant ON ix.mine (tenant) WHERE tenant > 2;
CREATE UNIQUE INDEX mine_ident ON ix.mine (id, email);
ALTER TABLE ix.mine REPLICA IDENTITY USING INDEX mine_ident;
CREATE TABLE ix.refs (tenant int, id int, FOREIGN KEY (tenant, id) REFERENCES ix.mine (tenant, id));
SELECT backfill.create_job('ix.mine', 'ix.up', kind => 'snapshot', columns => '{email,tenant}',
                           into_existing => true) AS mine \gset
SELECT position, index_name, head, tail FROM backfill.job_index WHERE job_id = :mine ORDER BY position;
SELECT indexrelid::regclass::text AS kept FROM pg_index WHERE indrelid = 'ix.mine'::regclass ORDER BY 1;
CALL backfill.run_job(:mine);
SELECT status FROM backfill.jobs WHERE job_id = :mine;
SELECT indexrelid::regclass::text AS index, pg_get_indexdef(indexrelid) AS definition
  FROM pg_index WHERE indrelid = 'ix.mine'::regclass ORDER BY 1;
SELECT conname, contype FROM pg_constraint WHERE conrelid = 'ix.mine'::regclass ORDER BY 1;
SELECT * FROM backfill.verify_job(:mine);

-- cancelled before its build, a job gives a table of the user's its indexes
-- back
CREATE TABLE ix.mine3 (id int CONSTRAINT mine3_pk PRIMARY KEY, tenant int);
CREATE INDEX mine3_tenant ON ix.mine3 (tenant);
SELECT backfill.create_job('ix.mine3', 'ix.up', kind => 'snapshot', columns => '{tenant}',
                           into_existing => true, chunk_size => 10) AS mine_c \gset
SELECT count(*) AS to_build FROM backfill.job_index WHERE job_id = :mine_c;
CALL backfill.run_job(:mine_c, 1);
SELECT backfill.cancel_job(:mine_c);
SELECT indexrelid::regclass::text AS index, indisprimary FROM pg_index WHERE indrelid = 'ix.mine3'::regclass ORDER BY 1;
-- its rows stay until it is dropped, which builds nothing twice
SELECT backfill.drop_job(:mine_c);
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'ix.mine3'::regclass;

-- refused: the upstream's indexes for a table of the user's
CREATE TABLE ix.mine2 (id int PRIMARY KEY, v text);
SELECT backfill.create_job('ix.mine2', 'ix.up', columns => '{v}', into_existing => true, indexes => true);
-- NULL, the default: a copy of the whole table gets its indexes and its
-- constraints, the unique one as a constraint; a filtered copy neither
SELECT backfill.create_job('ix.nul', 'ix.up', indexes => NULL) AS nul \gset
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'ix.nul'::regclass ORDER BY 1;
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'ix.nul'::regclass;
SELECT backfill.drop_job(:nul);
SELECT backfill.create_job('ix.nul', 'ix.up', filter => 'w > 0') AS nul \gset
SELECT count(*) AS indexes FROM pg_index WHERE indrelid = 'ix.nul'::regclass;
SELECT backfill.drop_job(:nul);

-- recreate_job keeps indexes
SELECT backfill.create_job('ix.again', 'ix.up', kind => 'snapshot', indexes => true) AS again \gset
SELECT backfill.recreate_job(:again) AS again2 \gset
SELECT indexes, kind FROM backfill.job WHERE job_id = :again2;
SELECT count(*) AS to_build FROM backfill.job_index WHERE job_id = :again2;
-- a cancelled job keeps its rows until it is dropped
SELECT count(*) AS of_cancelled FROM backfill.job_index WHERE job_id = :again;
SELECT backfill.drop_job(:again);
SELECT count(*) AS of_dropped FROM backfill.job_index WHERE job_id = :again;

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
SELECT count(*) AS left_over FROM backfill.job_index;
DROP SCHEMA ix CASCADE;
