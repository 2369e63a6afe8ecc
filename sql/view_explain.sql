-- backfill.explain_view_job(): the shape of a query as a view job's
-- definition, its tables in the order they would be scanned, with their
-- keys, and the downstream's key; the constructs it refuses, each by name;
-- a plain role's analysis runs as that role.
CREATE TABLE ve_customer (id int PRIMARY KEY, region text NOT NULL, name text);
CREATE TABLE ve_product (sku text PRIMARY KEY, price numeric NOT NULL);
CREATE TABLE ve_orders (id bigint PRIMARY KEY, customer_id int NOT NULL, sku text, qty int NOT NULL);
CREATE TABLE ve_nokey (a int, b int);
CREATE VIEW ve_view AS SELECT * FROM ve_orders;

-- one table, filtered and projected: its key, selected
SELECT * FROM backfill.explain_view_job('SELECT id, qty * 2 AS double_qty FROM ve_orders WHERE qty > 0');
-- its key not selected: added, hidden
SELECT * FROM backfill.explain_view_job('SELECT qty FROM ve_orders');
-- a join: the dimension tables (joined on their whole key) scanned first
SELECT * FROM backfill.explain_view_job($$
  SELECT o.id, c.name, p.price * o.qty AS amount
    FROM ve_orders o JOIN ve_customer c ON c.id = o.customer_id
    JOIN ve_product p ON p.sku = o.sku$$);
-- a left join: the other side's key may be NULL
SELECT * FROM backfill.explain_view_job($$
  SELECT c.id AS customer, o.id AS order_id FROM ve_customer c LEFT JOIN ve_orders o ON o.customer_id = c.id$$);
-- the order given: every table, once, by the name the query gives it
SELECT * FROM backfill.explain_view_job($$
  SELECT o.id, c.name FROM ve_orders o JOIN ve_customer c ON c.id = o.customer_id$$,
  backfill_order => 'fixed(o -> c)');
-- groups: the group key; no GROUP BY: one row
SELECT * FROM backfill.explain_view_job($$
  SELECT c.region, count(*) AS orders, sum(o.qty) AS qty, avg(o.qty), min(o.sku), max(o.sku)
    FROM ve_orders o JOIN ve_customer c ON c.id = o.customer_id GROUP BY c.region HAVING count(*) > 1$$);
SELECT * FROM backfill.explain_view_job('SELECT count(*) AS n FROM ve_orders');
-- distinct: every output column
SELECT * FROM backfill.explain_view_job('SELECT DISTINCT customer_id, sku FROM ve_orders');

-- refused, each by name
\set VERBOSITY default
SELECT backfill.explain_view_job('SELECT * FROM ve_orders WHERE customer_id IN (SELECT id FROM ve_customer)');
SELECT backfill.explain_view_job('WITH c AS (SELECT * FROM ve_customer) SELECT * FROM c');
SELECT backfill.explain_view_job('SELECT id FROM ve_orders UNION SELECT id FROM ve_customer');
SELECT backfill.explain_view_job('SELECT id, rank() OVER (ORDER BY qty) FROM ve_orders');
SELECT backfill.explain_view_job('SELECT id, generate_series(1, qty) FROM ve_orders');
SELECT backfill.explain_view_job('SELECT id FROM ve_orders LIMIT 3');
SELECT backfill.explain_view_job('SELECT id FROM ve_orders ORDER BY id');
SELECT backfill.explain_view_job('SELECT id FROM ve_orders FOR UPDATE');
SELECT backfill.explain_view_job('SELECT DISTINCT ON (customer_id) id FROM ve_orders');
SELECT backfill.explain_view_job('SELECT sku, count(*) FROM ve_orders GROUP BY ROLLUP (sku)');
SELECT backfill.explain_view_job('SELECT id, random() AS r FROM ve_orders');
SELECT backfill.explain_view_job('SELECT id FROM ve_orders WHERE id < extract(epoch FROM now())');
SELECT backfill.explain_view_job('SELECT o.id AS o, c.id AS c FROM ve_orders o RIGHT JOIN ve_customer c ON c.id = o.customer_id');
SELECT backfill.explain_view_job('SELECT o.id AS o, c.id AS c FROM ve_orders o FULL JOIN ve_customer c ON c.id = o.customer_id');
SELECT backfill.explain_view_job('SELECT * FROM ve_view');
SELECT backfill.explain_view_job('SELECT * FROM ve_nokey');
SELECT backfill.explain_view_job('SELECT * FROM generate_series(1, 3) g');
SELECT backfill.explain_view_job('SELECT 1 AS one');
SELECT backfill.explain_view_job('SELECT o.id, c.id FROM ve_orders o JOIN ve_customer c ON c.id = o.customer_id');
SELECT backfill.explain_view_job('SELECT qty FROM ve_orders GROUP BY sku, qty');
SELECT backfill.explain_view_job('SELECT DISTINCT sku, count(*) FROM ve_orders GROUP BY sku');
SELECT backfill.explain_view_job('SELECT 1; SELECT 2');
SELECT backfill.explain_view_job('INSERT INTO ve_nokey VALUES (1, 2)');
SELECT backfill.explain_view_job('SELECT id INTO ve_copy FROM ve_orders');
SELECT backfill.explain_view_job(NULL);
SELECT backfill.explain_view_job('SELECT o.id, c.name FROM ve_orders o JOIN ve_customer c ON c.id = o.customer_id',
                                 backfill_order => 'fixed(o -> x)');
SELECT backfill.explain_view_job('SELECT o.id, c.name FROM ve_orders o JOIN ve_customer c ON c.id = o.customer_id',
                                 backfill_order => 'fixed(o)');
SELECT backfill.explain_view_job('SELECT o.id, c.name FROM ve_orders o JOIN ve_customer c ON c.id = o.customer_id',
                                 backfill_order => 'fixed(o -> o)');
SELECT backfill.explain_view_job('SELECT id FROM ve_orders', backfill_order => 'sideways');
-- inheritance: the children's changes would not be captured, unless ONLY
CREATE TABLE ve_parent (id int PRIMARY KEY);
CREATE TABLE ve_child () INHERITS (ve_parent);
SELECT backfill.explain_view_job('SELECT id FROM ve_parent');
SELECT * FROM backfill.explain_view_job('SELECT id FROM ONLY ve_parent');

-- a plain role: the query is analyzed as it, under its search_path
CREATE ROLE regress_ve_plain;
CREATE SCHEMA ve_plain AUTHORIZATION regress_ve_plain;
SET ROLE regress_ve_plain;
SET search_path = ve_plain, public;
CREATE TABLE ve_plain.t (k int PRIMARY KEY, v int);
SELECT * FROM backfill.explain_view_job('SELECT k, v FROM t');
-- a superuser's table it may not read
SELECT backfill.explain_view_job('SELECT id FROM public.ve_orders');
RESET search_path;
RESET ROLE;
-- a superuser over the plain role's table
SELECT * FROM backfill.explain_view_job('SELECT v FROM ve_plain.t');

DROP TABLE ve_child, ve_parent, ve_orders CASCADE;
DROP TABLE ve_customer, ve_product, ve_nokey;
DROP SCHEMA ve_plain CASCADE;
DROP ROLE regress_ve_plain;
