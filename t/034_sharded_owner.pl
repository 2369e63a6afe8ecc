
# Copyright (c) backfill authors
#
# A job over a table sharded on two servers (a partitioned table of foreign
# tables of postgres_fdw), as a plain role and as a superuser:
#
# - regress_alice, without superuser, reads the superuser's partitioned
#   table and its partitions (SELECT on each) and has user mappings of her
#   own to both servers (her source role, with a password), nobody else
#   any: she creates the job, runs it, and it copies both servers' tables;
#   job_splits and job_source show her the splits and servers of her job;
# - a second job of hers copies and follows both servers in workers while
#   the configuration is read again 40 times, and goes on following one
#   while the other is down, without spinning or growing;
# - regress_bob sees nothing of her job; regress_carol, with SELECT on the
#   partitioned table but not on a partition, cannot create one over it
#   (the job reads each partition on its own);
# - a superuser with no user mapping of its own runs her job after new
#   writes on both sources (every connection is hers), verifies it, and
#   switches it over from both: each server fenced (a writer's grant taken
#   back), every write committed before the fences copied, no slot or
#   publication left on either server.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

# two sources, each with the role alice_src, who owns its shard's table and
# must give her password
my @sources;
for my $i (1, 2)
{
	my $source = PostgreSQL::Test::Cluster->new("shard$i");
	$source->init(allows_streaming => 'logical');
	$source->append_conf('postgresql.conf', "max_replication_slots = 10\n");
	$source->start;
	$source->safe_psql('postgres', qq{
CREATE ROLE alice_src LOGIN REPLICATION PASSWORD 'secret';
GRANT CREATE ON DATABASE postgres TO alice_src;  -- for the job's publication
CREATE TABLE t$i (id bigint PRIMARY KEY, v text);
INSERT INTO t$i SELECT g, md5(g::text) FROM generate_series($i * 100000 + 1, $i * 100000 + 3000) g;
ANALYZE t$i;
ALTER TABLE t$i OWNER TO alice_src;
});
	require_password($source, 'alice_src');
	push @sources, $source;
}

my $local = worker_node('local');
$local->safe_psql('postgres', 'CREATE EXTENSION postgres_fdw');
for my $i (1, 2)
{
	$local->safe_psql('postgres', sprintf(q{
CREATE SERVER shard%d FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '%s', port '%s', dbname 'postgres');
}, $i, $sources[ $i - 1 ]->host, $sources[ $i - 1 ]->port));
}
$local->safe_psql('postgres', q{
CREATE TABLE sh (id bigint NOT NULL, v text) PARTITION BY RANGE (id);
CREATE FOREIGN TABLE sh1 PARTITION OF sh FOR VALUES FROM (100000) TO (200000)
    SERVER shard1 OPTIONS (schema_name 'public', table_name 't1');
CREATE FOREIGN TABLE sh2 PARTITION OF sh FOR VALUES FROM (200000) TO (300000)
    SERVER shard2 OPTIONS (schema_name 'public', table_name 't2');
CREATE ROLE regress_alice LOGIN;
CREATE ROLE regress_bob LOGIN;
CREATE ROLE regress_carol LOGIN;
CREATE SCHEMA alice AUTHORIZATION regress_alice;
GRANT SELECT ON sh, sh1, sh2 TO regress_alice;
GRANT SELECT ON sh, sh2 TO regress_carol;
GRANT USAGE ON FOREIGN SERVER shard1, shard2 TO regress_alice, regress_carol;
CREATE USER MAPPING FOR regress_alice SERVER shard1 OPTIONS (user 'alice_src', password 'secret');
CREATE USER MAPPING FOR regress_alice SERVER shard2 OPTIONS (user 'alice_src', password 'secret');
CREATE USER MAPPING FOR regress_carol SERVER shard1 OPTIONS (user 'alice_src', password 'secret');
CREATE USER MAPPING FOR regress_carol SERVER shard2 OPTIONS (user 'alice_src', password 'secret');
});
is($local->safe_psql('postgres', q{
SELECT count(*) FROM pg_user_mappings WHERE usename NOT IN ('regress_alice', 'regress_carol')}),
	'0', 'the superuser has no user mapping to either server');

# run SQL as a role; returns (ok, stdout, stderr)
sub as_role
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $local->psql('postgres', $sql,
		extra_params => [ '-U', $role ], on_error_stop => 1);
	return ($ret == 0, $out, $err);
}

# the union of the sources' tables, read here through the foreign partitions
# (as regress_alice: only she has user mappings), against her copy
sub differences
{
	my ($ok, $out, $err) = as_role('regress_alice', q{
SELECT (SELECT count(*) FROM (SELECT * FROM sh EXCEPT SELECT * FROM alice.sh_copy) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM alice.sh_copy EXCEPT SELECT * FROM sh) y)});
	diag($err) unless $ok;
	return $out;
}

# ---- a plain role over the superuser's sharded table ----
my ($ok, $job, $err) = as_role('regress_alice',
	"SELECT backfill.create_job('alice.sh_copy', 'sh', kind => 'cdc', parallelism => 2, chunk_size => 500)");
ok($ok, 'a plain role with SELECT on the partitioned table and her own user mappings creates a job over it')
  or diag($err);
my $out;
($ok, $out, $err) = as_role('regress_alice', qq{
SELECT string_agg(DISTINCT server, ',' ORDER BY server) || ' ' || count(*)
  FROM backfill.job_splits($job);
SELECT string_agg(server, ',' ORDER BY source) FROM backfill.job_source WHERE job_id = $job});
like($out, qr/^shard1,shard2 \d+\nshard1,shard2$/,
	'job_splits and job_source show her the splits of both servers') or diag($err);
($ok, $out, $err) = as_role('regress_alice', "CALL backfill.run_job($job)");
ok($ok, 'she runs it') or diag($err);
is(differences(), '0 0', 'her copy equals the union of both servers\' tables');
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'finished', 'the job finished');

# ---- other plain roles ----
($ok, $out, $err) = as_role('regress_bob', qq{
SELECT count(*) FROM backfill.job_splits($job);
SELECT count(*) FROM backfill.job_source});
is($out, "0\n0", 'another role sees neither the splits nor the servers of her job') or diag($err);
($ok, $out, $err) = as_role('regress_carol',
	"SELECT backfill.create_job('carol_copy', 'sh', kind => 'cdc')");
ok(!$ok, 'a role with SELECT on the partitioned table but not on one of its partitions cannot create a job over it');
like($err, qr/permission denied for foreign table sh1/, 'with the partition\'s permission error');
is($local->safe_psql('postgres', q{SELECT count(*) FROM pg_class WHERE relname = 'carol_copy'}), '0',
	'and nothing is left of it');

# ---- a superuser runs, verifies and drops her job ----
for my $i (1, 2)
{
	$sources[ $i - 1 ]->safe_psql('postgres', qq{
INSERT INTO t$i SELECT g, 'new' FROM generate_series($i * 100000 + 5001, $i * 100000 + 5100) g;
UPDATE t$i SET v = 'changed' WHERE id % 7 = 0;
DELETE FROM t$i WHERE id % 11 = 0;
});
}
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
is(differences(), '0 0',
	'a superuser without mappings runs her finished job: it catches up with both servers as her');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"), '0',
	'verify_job as a superuser finds no difference');

# ---- workers copy and then follow both servers while the configuration is
# read again and again ----
# (each round of a following worker starts in a context of its own: reading
# the configuration file under the context a commit gave back crashed the
# worker that had run the final barrier)
my $job2;
($ok, $job2, $err) = as_role('regress_alice',
	"SELECT backfill.create_job('alice.sh_copy2', 'sh', kind => 'cdc', parallelism => 2, chunk_size => 100)");
ok($ok, 'she creates a second job') or diag($err);
$local->safe_psql('postgres', "SELECT backfill.start_job($job2)");
for my $round (1 .. 40)
{
	$local->safe_psql('postgres', 'SELECT pg_reload_conf()');
	$sources[ $round % 2 ]->safe_psql('postgres', sprintf(
		"INSERT INTO t%d VALUES (%d, 'followed')", $round % 2 + 1, ($round % 2 + 1) * 100000 + 6000 + $round));
	usleep(100_000);
}
ok(wait_until(60, sub {
	$local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job2") eq 'finished' }),
	'the second job finished in its workers');
ok(wait_until(60, sub {
	my ($ok2, $out2) = as_role('regress_alice', q{
SELECT count(*) FROM (SELECT * FROM sh EXCEPT SELECT * FROM alice.sh_copy2) x});
	$ok2 && $out2 eq '0' }), 'its worker took every write of both servers');

# ---- the following worker while one server is down ----
# it asks that server again at its next round, not at once: before, it
# fetched again and again without a pause, each time rolling back the failed
# server's subtransaction, and the result tables of its statements piled up
# in the SPI connection it keeps for as long as it follows (a quarter of a
# core and 2 MB a second here)
my $follower = $local->safe_psql('postgres', qq{
SELECT pid FROM pg_stat_activity WHERE query = 'backfill job $job2: following the upstream'});
like($follower, qr/^\d+$/, 'one worker follows both servers');
$sources[1]->stop('immediate');
ok(wait_until(30, sub { slurp_file($local->logfile) =~
	/backfill job $job2: could not fetch the changes of server "shard2"; the other servers' go on/ }),
	'the worker leaves the stopped server out');
my ($cpu0, $rss0) = process_usage($follower);
for my $n (1 .. 5)
{
	$sources[0]->safe_psql('postgres', "INSERT INTO t1 VALUES (100000 + 6100 + $n, 'while shard2 is down')");
	sleep 2;
}
my ($cpu1, $rss1) = process_usage($follower);
cmp_ok($cpu1 - $cpu0, '<', 1.0, 'the worker does not spin while a server is down (CPU seconds in 10 s)');
cmp_ok($rss1 - $rss0, '<', 4096, 'nor does its private memory grow (kB in 10 s)');
ok(wait_until(30, sub {
	my ($ok2, $out2) = as_role('regress_alice', q{SELECT count(*) FROM alice.sh_copy2 WHERE v = 'while shard2 is down'});
	$ok2 && $out2 eq '5' }), 'the other server\'s writes go on being followed');
$sources[1]->start;
$sources[1]->safe_psql('postgres', "INSERT INTO t2 VALUES (200000 + 6100, 'after the restart')");
ok(wait_until(60, sub {
	my ($ok2, $out2) = as_role('regress_alice', q{
SELECT count(*) FROM (SELECT * FROM sh EXCEPT SELECT * FROM alice.sh_copy2) x});
	$ok2 && $out2 eq '0' }), 'and the restarted server\'s are followed again');
no_crash_in_log($local);
$local->safe_psql('postgres', "SELECT backfill.drop_job($job2)");
$local->safe_psql('postgres', "CALL backfill.run_job($job)");

# ---- a superuser switches her job over from both servers ----
# writer_src may write to both tables by alice_src's grant; the fence takes
# it back on each server
for my $i (1, 2)
{
	$sources[ $i - 1 ]->safe_psql('postgres', qq{
CREATE ROLE writer_src LOGIN;
SET ROLE alice_src;
GRANT INSERT, UPDATE ON t$i TO writer_src;
RESET ROLE;
SET ROLE writer_src;
INSERT INTO t$i VALUES ($i * 100000 + 7001, 'before the switchover');
});
}
is($local->safe_psql('postgres',
		"SELECT state || ' ' || (source_lsn IS NULL) FROM backfill.cutover($job, fence => true)"),
	'finished true', 'the switchover of a job of two servers finishes, with no single source LSN');
is(differences(), '0 0', 'her copy has every write the servers committed before their fences');
for my $i (1, 2)
{
	my ($ret, $out2, $err2) = $sources[ $i - 1 ]->psql('postgres',
		"SET ROLE writer_src; INSERT INTO t$i VALUES ($i * 100000 + 7002, 'after')");
	like($err2, qr/permission denied for table t$i/, "shard$i is fenced: writer_src may no longer write");
	is($sources[ $i - 1 ]->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots) || ' ' || (SELECT count(*) FROM pg_publication)}),
		'0 0', "no slot or publication is left on shard$i after the switchover");
}

$_->stop for @sources;
$local->stop;
done_testing();
