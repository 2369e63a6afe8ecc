-- What a cutover refuses before anything changes, and what it carries, as
-- plain roles would attack it: a downstream of a role the upstream's owner
-- does not trust, a copy filtered by row-level security, a partition, a
-- table in an inheritance tree, a rule that writes to the upstream, another
-- role's job over the same table; and what it carries: privileges with
-- their grantors (not the downstream's own), and an old table that shows
-- no more rows than its policies did.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
CREATE ROLE crf_plain;
CREATE ROLE crf_other;
CREATE ROLE crf_tenant_a;
CREATE ROLE crf_tenant_b;
CREATE ROLE crf_g1;
CREATE ROLE crf_g2;
-- PUBLIC may not execute the internal functions: these roles may here, so
-- that what is tested is _cutover_copy_acl's and _cutover_other_job's own checks
GRANT EXECUTE ON FUNCTION backfill._cutover_copy_acl(regclass, regclass) TO crf_plain, crf_other, crf_tenant_a;
GRANT EXECUTE ON FUNCTION backfill._cutover_other_job(bigint, regclass, regclass) TO crf_tenant_a;
GRANT CREATE ON SCHEMA public TO crf_plain, crf_other;

-- 7. A superuser cuts over a plain role's job over the superuser's table:
-- the role's downstream, with a default that makes the role a superuser
-- when a superuser writes, would go into production.  Refused.
CREATE TABLE crf_orders (id int PRIMARY KEY, amount int, note text);
INSERT INTO crf_orders SELECT g, g, 'n' || g FROM generate_series(1, 10) g;
GRANT SELECT, TRIGGER ON crf_orders TO crf_plain;
SET ROLE crf_plain;
CREATE FUNCTION crf_escalate() RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    BEGIN
        EXECUTE 'ALTER ROLE crf_plain SUPERUSER';
    EXCEPTION WHEN insufficient_privilege THEN NULL;
    END;
    RETURN 'x';
END $$;
SELECT backfill.create_job('crf_orders_new', 'crf_orders') AS job7 \gset
CALL backfill.run_job(:job7);
ALTER TABLE crf_orders_new ALTER COLUMN note SET DEFAULT crf_escalate();
-- and a column grant of its own on its table
GRANT UPDATE (note) ON crf_orders_new TO crf_other;
RESET ROLE;
SELECT * FROM backfill.cutover(:job7);
SELECT relname FROM pg_class WHERE relname LIKE 'crf_orders%' AND relkind = 'r' ORDER BY 1;
-- reviewed and taken over, as the hint says: carried, but its own column
-- grant does not reach the table that takes the name
ALTER TABLE crf_orders_new ALTER COLUMN note DROP DEFAULT;
ALTER TABLE crf_orders_new OWNER TO CURRENT_USER;
SELECT state FROM backfill.cutover(:job7);
SELECT attname, attacl FROM pg_attribute
 WHERE attrelid = 'crf_orders'::regclass AND attnum > 0 ORDER BY attnum;
INSERT INTO crf_orders VALUES (11, 11);
SELECT rolsuper FROM pg_roles WHERE rolname = 'crf_plain';
ALTER ROLE crf_plain NOSUPERUSER;   -- in case it was not refused
SELECT backfill.finish_cutover(:job7);
-- a downstream of a role whose privileges the upstream's owner has is trusted
CREATE TABLE crf_trusted (id int PRIMARY KEY, v int);
INSERT INTO crf_trusted SELECT g, g FROM generate_series(1, 5) g;
ALTER TABLE crf_trusted OWNER TO crf_other;
GRANT crf_plain TO crf_other;
SET ROLE crf_plain;
CREATE TABLE crf_trusted_new (id int PRIMARY KEY, v int);
SET ROLE crf_other;
SELECT backfill.create_job('crf_trusted_new', 'crf_trusted', into_existing => true) AS jobt \gset
CALL backfill.run_job(:jobt);
RESET ROLE;
SELECT state FROM backfill.cutover(:jobt);
SELECT relowner::regrole FROM pg_class WHERE oid = 'crf_trusted'::regclass;
SELECT backfill.finish_cutover(:jobt);
REVOKE crf_plain FROM crf_other;
-- the job of a plain role that may write the superuser's table, cut over
-- by the superuser once the role's downstream is the superuser's: the
-- turned-around job belongs to the owner of its tables
CREATE TABLE crf_handed (id int PRIMARY KEY, v int);
INSERT INTO crf_handed SELECT g, g FROM generate_series(1, 5) g;
GRANT SELECT, INSERT, UPDATE, DELETE, TRIGGER ON crf_handed TO crf_plain;
SET ROLE crf_plain;
SELECT backfill.create_job('crf_handed_new', 'crf_handed') AS jobh \gset
CALL backfill.run_job(:jobh);
RESET ROLE;
ALTER TABLE crf_handed_new OWNER TO CURRENT_USER;
SELECT state, rollback_possible FROM backfill.cutover(:jobh);
SELECT j.owner = c.relowner::regrole AS owner_is_tables_owner, s.relowner = c.relowner AS state_table_too,
       j.owner = 'crf_plain'::regrole AS still_plain
  FROM backfill.job j, pg_class c, pg_class s
 WHERE j.job_id = :jobh AND c.oid = j.upstream AND s.oid = j.state_table;
SET ROLE crf_plain;
SELECT count(*) FROM backfill.job WHERE job_id = :jobh;
RESET ROLE;
INSERT INTO crf_handed VALUES (6, 6);
SELECT * FROM backfill.verify_job(:jobh);
SELECT backfill.finish_cutover(:jobh);
SELECT count(*) FROM crf_handed;

-- 8. The job's owner is subject to row-level security on its upstream
-- (FORCE ROW LEVEL SECURITY on its own table): its copy holds what the
-- policies let it see.  Refused.
CREATE TABLE crf_secret (id int PRIMARY KEY, v int);
INSERT INTO crf_secret SELECT g, g FROM generate_series(1, 10) g;
ALTER TABLE crf_secret OWNER TO crf_plain;
SET ROLE crf_plain;
SELECT backfill.create_job('crf_secret_new', 'crf_secret') AS job8 \gset
CALL backfill.run_job(:job8);
ALTER TABLE crf_secret ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY crf_secret_few ON crf_secret USING (id <= 3);
SELECT count(*) FROM crf_secret;
SELECT * FROM backfill.cutover(:job8);
RESET ROLE;
SELECT * FROM backfill.cutover(:job8);
SELECT count(*) FROM crf_secret;
SELECT backfill.drop_job(:job8);

-- 9. A partition: the new table would be left detached, and writes
-- through the parent would reach the old partition.  Refused.
CREATE TABLE crf_parted (id int PRIMARY KEY, v int) PARTITION BY RANGE (id);
CREATE TABLE crf_parted_1 PARTITION OF crf_parted FOR VALUES FROM (1) TO (100);
INSERT INTO crf_parted SELECT g, g FROM generate_series(1, 10) g;
SELECT backfill.create_job('crf_parted_1_new', 'crf_parted_1') AS job9 \gset
CALL backfill.run_job(:job9);
SELECT * FROM backfill.cutover(:job9);
SELECT relname, relispartition FROM pg_class WHERE relname LIKE 'crf_parted%' AND relkind = 'r' ORDER BY 1;
SELECT backfill.drop_job(:job9);

-- 11. A view whose INSTEAD rule writes to the upstream would go on writing
-- to the old table; so would a rule on the upstream itself.  Refused.
CREATE TABLE crf_items (id int PRIMARY KEY, v int);
INSERT INTO crf_items SELECT g, g FROM generate_series(1, 10) g;
CREATE VIEW crf_items_v AS SELECT id, v FROM crf_items;
CREATE RULE crf_items_v_insert AS ON INSERT TO crf_items_v
    DO INSTEAD INSERT INTO crf_items VALUES (NEW.id, NEW.v);
SELECT backfill.create_job('crf_items_new', 'crf_items') AS job11 \gset
CALL backfill.run_job(:job11);
SELECT * FROM backfill.cutover(:job11);
DROP RULE crf_items_v_insert ON crf_items_v;
CREATE TABLE crf_items_log (id int);
CREATE RULE crf_items_log AS ON DELETE TO crf_items DO ALSO INSERT INTO crf_items_log VALUES (OLD.id);
SELECT * FROM backfill.cutover(:job11);
DROP RULE crf_items_log ON crf_items;
SELECT relname FROM pg_class WHERE relname LIKE 'crf_items%' AND relkind = 'r' ORDER BY 1;
SELECT backfill.drop_job(:job11);

-- 12. Rows of an inheritance child would vanish from the table; a table
-- that inherits would not inherit in its place.  Refused.
CREATE TABLE crf_base (id int PRIMARY KEY, v int);
CREATE TABLE crf_base_child (id int PRIMARY KEY, v int) INHERITS (crf_base);
INSERT INTO crf_base SELECT g, g FROM generate_series(1, 5) g;
INSERT INTO crf_base_child SELECT g, g FROM generate_series(6, 10) g;
SELECT backfill.create_job('crf_base_new', 'crf_base') AS job12 \gset
CALL backfill.run_job(:job12);
SELECT * FROM backfill.cutover(:job12);
SELECT backfill.drop_job(:job12);
SELECT backfill.create_job('crf_base_child_new', 'crf_base_child') AS job12 \gset
CALL backfill.run_job(:job12);
SELECT * FROM backfill.cutover(:job12);
SELECT count(*) FROM crf_base;
SELECT backfill.drop_job(:job12);

-- 19. Another role's job over the same table, which row-level security on
-- backfill.job hides from the cutover's caller.  Refused, before the swap
-- that would leave finish_cutover blocked for good.
CREATE TABLE crf_shared (id int PRIMARY KEY, v int);
INSERT INTO crf_shared SELECT g, g FROM generate_series(1, 10) g;
ALTER TABLE crf_shared OWNER TO crf_plain;
SET ROLE crf_plain;
GRANT SELECT, TRIGGER ON crf_shared TO crf_other;
SELECT backfill.create_job('crf_shared_new', 'crf_shared') AS job19 \gset
CALL backfill.run_job(:job19);
SET ROLE crf_other;
SELECT backfill.create_job('crf_shared_copy', 'crf_shared') AS job19other \gset
SET ROLE crf_plain;
SELECT count(*) FROM backfill.job WHERE job_id = :job19other;
SELECT * FROM backfill.cutover(:job19);
RESET ROLE;
SELECT relname FROM pg_class WHERE relname LIKE 'crf_shared%' AND relkind = 'r' ORDER BY 1;
SELECT backfill.drop_job(:job19other);
SELECT backfill.drop_job(:job19);

-- 10 and 17. Tenants read their own rows through policies; crf_g2 holds
-- privileges granted by crf_g1 through grant options.
CREATE TABLE crf_tenants (id int PRIMARY KEY, tenant name, note text);
INSERT INTO crf_tenants SELECT g, CASE WHEN g <= 3 THEN 'crf_tenant_a' ELSE 'crf_tenant_b' END, 'n' || g
  FROM generate_series(1, 10) g;
GRANT SELECT ON crf_tenants TO crf_tenant_a, crf_tenant_b;
ALTER TABLE crf_tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY crf_tenants_own ON crf_tenants USING (tenant = current_user);
GRANT SELECT ON crf_tenants TO crf_g1 WITH GRANT OPTION;
GRANT UPDATE (note) ON crf_tenants TO crf_g1 WITH GRANT OPTION;
SET ROLE crf_g1;
GRANT SELECT ON crf_tenants TO crf_g2;
GRANT UPDATE (note) ON crf_tenants TO crf_g2;
RESET ROLE;
SELECT backfill.create_job('crf_tenants_new', 'crf_tenants') AS job10 \gset
CALL backfill.run_job(:job10);
SELECT state FROM backfill.cutover(:job10, old_name => 'crf_tenants_old');
-- 17: the grantors came along, the table's and the column's
SELECT relacl FROM pg_class WHERE oid = 'crf_tenants'::regclass;
SELECT attacl FROM pg_attribute WHERE attrelid = 'crf_tenants'::regclass AND attname = 'note';
-- 10: a tenant reads its own rows in the new table, and none in the old
-- one, which keeps row-level security on with no policy left
SET ROLE crf_tenant_a;
SELECT count(*) FROM crf_tenants;
SELECT count(*) FROM crf_tenants_old;
RESET ROLE;
INSERT INTO crf_tenants VALUES (11, 'crf_tenant_b', 'new');
SET ROLE crf_tenant_a;
SELECT count(*) FROM crf_tenants_old;
RESET ROLE;
SELECT relname, relrowsecurity, relforcerowsecurity,
       (SELECT count(*) FROM pg_policy WHERE polrelid = c.oid) AS policies
  FROM pg_class c WHERE relname IN ('crf_tenants', 'crf_tenants_old') ORDER BY 1;
-- a privilege granted on the new table after the cutover goes back with
-- the rollback, from the table that has the name; the policy too
GRANT SELECT ON crf_tenants TO crf_other;
SELECT state FROM backfill.rollback_cutover(:job10);
SELECT relname, relacl FROM pg_class WHERE relname IN ('crf_tenants', 'crf_tenants_new') ORDER BY 1;
SET ROLE crf_tenant_a;
SELECT count(*) FROM crf_tenants;
SELECT count(*) FROM crf_tenants_new;
RESET ROLE;
SELECT state FROM backfill.cutover(:job10, old_name => 'crf_tenants_old');
-- 17: REVOKE ... CASCADE of the grant option reaches what was granted through it
REVOKE SELECT ON crf_tenants FROM crf_g1 CASCADE;
REVOKE UPDATE (note) ON crf_tenants FROM crf_g1 CASCADE;
SELECT relacl FROM pg_class WHERE oid = 'crf_tenants'::regclass;
SELECT attacl FROM pg_attribute WHERE attrelid = 'crf_tenants'::regclass AND attname = 'note';
SELECT backfill.finish_cutover(:job10);
SELECT count(*) FROM crf_tenants;
SET ROLE crf_tenant_a;
SELECT count(*) FROM crf_tenants;
RESET ROLE;

-- the privileges' copy, called by hand: only under the swap's lock, and
-- between two tables of one owner
SELECT backfill._cutover_copy_acl('crf_tenants', 'crf_items');
BEGIN;
LOCK TABLE crf_tenants, crf_trusted IN ACCESS EXCLUSIVE MODE;
SELECT backfill._cutover_copy_acl('crf_tenants', 'crf_trusted');
ROLLBACK;
GRANT UPDATE ON crf_tenants TO crf_other;
BEGIN;
SET ROLE crf_other;
LOCK TABLE crf_tenants IN ACCESS EXCLUSIVE MODE;
SELECT backfill._cutover_copy_acl('crf_tenants', 'crf_tenants');
ROLLBACK;
-- the hand-over, outside a cutover; the other jobs, asked about another
-- role's job
SELECT backfill._cutover_hand_over(:jobh);
SET ROLE crf_tenant_a;
SELECT backfill._cutover_other_job(:job10, 'crf_tenants', 'crf_tenants');
RESET ROLE;

-- the cutover's calls read the job once their turn has come: only at READ
-- COMMITTED, where that read sees what the call before committed
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM backfill.cutover(:jobh);
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM backfill.rollback_cutover(:jobh);
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT backfill.finish_cutover(:jobh);
ROLLBACK;

-- clean up
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
DROP VIEW crf_items_v;
DROP TABLE IF EXISTS crf_orders, crf_trusted, crf_handed, crf_secret, crf_parted,
           crf_items, crf_items_log, crf_base, crf_base_child, crf_shared,
           crf_tenants CASCADE;
DROP OWNED BY crf_plain, crf_other, crf_tenant_a, crf_tenant_b, crf_g1, crf_g2;
REVOKE CREATE ON SCHEMA public FROM crf_plain, crf_other;
DROP ROLE crf_plain, crf_other, crf_tenant_a, crf_tenant_b, crf_g1, crf_g2;
