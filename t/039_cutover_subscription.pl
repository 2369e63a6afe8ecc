# Copyright (c) backfill authors
#
# t/039_cutover_subscription.pl: the cutover of a table that a logical
# replication subscription writes to.
#
# The subscription maps each of its tables by OID (pg_subscription_rel); the
# apply worker finds the local table by name and skips the changes of one
# that has no ready row there.  So the cutover moves the row to the new
# table: after it, the publisher's changes reach the new table (and the old
# one, which follows it), through a rollback, a second cutover, the finish
# and a restart of the subscriber.  A table the subscription is still
# copying is refused before anything changes.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $publisher = PostgreSQL::Test::Cluster->new('publisher');
$publisher->init(allows_streaming => 'logical');
$publisher->start;
my $subscriber = backfill_node('subscriber');

my $ddl = q{CREATE TABLE customer (id int PRIMARY KEY, name text, points int);
CREATE TABLE later (id int PRIMARY KEY, v int);};
$publisher->safe_psql('postgres', $ddl . q{
INSERT INTO customer SELECT g, 'c' || g, g FROM generate_series(1, 100) g;
INSERT INTO later SELECT g, g FROM generate_series(1, 10) g;
CREATE PUBLICATION pub FOR TABLE customer;
CREATE PUBLICATION pub_later FOR TABLE later;
});
$subscriber->safe_psql('postgres', $ddl);
my $connstr = $publisher->connstr . ' dbname=postgres';
$subscriber->safe_psql('postgres', "CREATE SUBSCRIPTION sub CONNECTION '$connstr' PUBLICATION pub");
$subscriber->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate <> 'r'")
  or die 'the subscription did not synchronise its table';
$publisher->wait_for_catchup('sub');
is($subscriber->safe_psql('postgres', 'SELECT count(*) FROM customer'), '100', 'the subscriber has the rows');

# the copy, finished
$subscriber->safe_psql('postgres', q{
SELECT backfill.create_job('customer_new', 'customer');
CALL backfill.run_job(1);
});

# what the subscription writes to, by name
sub mapped
{
	return $subscriber->safe_psql('postgres',
		"SELECT string_agg(s.subname || ':' || r.srrelid::regclass || ':' || r.srsubstate::text, ',' ORDER BY s.subname)
		   FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid");
}

# publisher writes, then both tables of the subscriber compared with it
my $next = 100;
sub write_and_compare
{
	my ($old, $what) = @_;
	$publisher->safe_psql('postgres', sprintf(q{
INSERT INTO customer SELECT g, 'c' || g, g FROM generate_series(%d, %d) g;
UPDATE customer SET points = points + 1 WHERE id %% 7 = 0;
DELETE FROM customer WHERE id = %d;
}, $next + 1, $next + 20, $next + 3));
	$next += 20;
	$publisher->wait_for_catchup('sub');
	my $want = $publisher->safe_psql('postgres', 'SELECT count(*), sum(points) FROM customer');
	is($subscriber->safe_psql('postgres', 'SELECT count(*), sum(points) FROM customer'),
		$want, "$what: the table that has the name has every change of the publisher");
	is($subscriber->safe_psql('postgres', "SELECT count(*), sum(points) FROM $old"),
		$want, "$what: $old follows it");
}

# 1. the cutover moves the mapping to the new table
$subscriber->safe_psql('postgres', "SELECT * FROM backfill.cutover(1, old_name => 'customer_old')");
is(mapped(), 'sub:customer:r', 'after the cutover the subscription writes to the new table');
write_and_compare('customer_old', 'after the cutover');

# 2. the rollback moves it back
$subscriber->safe_psql('postgres', 'SELECT * FROM backfill.rollback_cutover(1)');
is(mapped(), 'sub:customer:r', 'after the rollback the subscription writes to the old table again');
write_and_compare('customer_new', 'after the rollback');

# 3. again, finished, and the subscriber restarted: the apply worker reads
# the mapping from the catalog
$subscriber->safe_psql('postgres', "SELECT * FROM backfill.cutover(1, old_name => 'customer_old')");
write_and_compare('customer_old', 'after the second cutover');
$subscriber->safe_psql('postgres', 'SELECT backfill.finish_cutover(1)');
$subscriber->restart;
$publisher->safe_psql('postgres', "INSERT INTO customer VALUES (100000, 'last', 1)");
$publisher->wait_for_catchup('sub');
is($subscriber->safe_psql('postgres', 'SELECT count(*), sum(points) FROM customer'),
	$publisher->safe_psql('postgres', 'SELECT count(*), sum(points) FROM customer'),
	'after the finish and a restart the new table has every change of the publisher');
is(mapped(), 'sub:customer:r', 'the subscription writes to the new table');

# 4. a table the subscription has not finished copying: refused, nothing changed
$subscriber->safe_psql('postgres', qq{
SELECT backfill.create_job('later_new', 'later');
CALL backfill.run_job(2);
CREATE SUBSCRIPTION sub_later CONNECTION '$connstr' PUBLICATION pub_later WITH (enabled = false);
});
my ($rc, $out, $err) = $subscriber->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM backfill.cutover(2)");
like($err, qr/ERROR:  55000: cannot cut over backfill job 2 because subscription sub_later has not finished copying table public\.later/,
	'a table still being copied is refused');
like($err, qr/HINT:  Wait until the subscription has synchronised the table/, 'the hint says to wait');
is($subscriber->safe_psql('postgres',
		"SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relname LIKE 'later%' AND relkind = 'r'"),
	'later,later_new', 'nothing was renamed');

no_crash_in_log($subscriber);
$subscriber->stop;
$publisher->stop;
done_testing();
