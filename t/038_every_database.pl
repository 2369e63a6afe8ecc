
# Copyright (c) backfill authors
#
# t/038_every_database.pl: background jobs in every database, and waits.
#
# 1. Jobs run in the background in two databases, db1 and db2, neither of
#    them backfill.database ('postgres'); db3 has no extension.  After an
#    immediate stop and a start, the launcher restarts the jobs of both
#    databases, with one line in the server log for each, and both finish
#    with every row of their upstream; db3 costs no error.
# 2. wait_job in the transaction that called start_job is refused at once
#    with SQLSTATE 55000 (its workers wait for that transaction's end), and
#    so is wait_for_job inside a transaction block.
# 3. While CALL backfill.wait_for_job() waits, its backend shows no
#    backend_xmin and VACUUM removes the rows deleted after the wait began;
#    while SELECT backfill.wait_job() waits, VACUUM cannot remove them.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use BackfillTestLib;

my $node = worker_node('everydb', conf => "max_worker_processes = 24\n");
$node->safe_psql('postgres', q{
CREATE DATABASE db1;
CREATE DATABASE db2;
CREATE DATABASE db3;
});

my $rows = 20_000;
my %job;
for my $db ('db1', 'db2')
{
	$node->safe_psql($db, qq{
CREATE EXTENSION backfill;
CREATE TABLE up (id bigint PRIMARY KEY, a int, b text);
INSERT INTO up SELECT g, g % 100, md5(g::text) FROM generate_series(1, $rows) g;
});
	# slow enough to be halfway when the server stops
	$job{$db} = $node->safe_psql($db,
		"SELECT backfill.create_job('down', 'up', parallelism => 2, chunk_size => 100, rate_limit => 500)");
	$node->safe_psql($db, "SELECT backfill.start_job($job{$db})");
}

sub copied
{
	my ($db) = @_;
	return $node->safe_psql($db,
		"SELECT coalesce(sum(row_count), 0) FROM backfill.actor WHERE job_id = $job{$db}");
}

######################################################################
# 1. restart the jobs of every database
######################################################################
for my $db ('db1', 'db2')
{
	ok(wait_until(60, sub { copied($db) > 0 }), "$db: the job has copied rows before the stop");
}
$node->stop('immediate');
my $offset = -s $node->logfile;
$node->start;

for my $db ('db1', 'db2')
{
	ok( wait_until(60, sub {
			$node->safe_psql($db, "SELECT count(*) FROM backfill.workers WHERE job_id = $job{$db}") eq '2' }),
		"$db: the launcher started the job's two workers again");
	ok($node->wait_for_log(qr/LOG:  backfill launcher restarted 1 background job in database "$db"/, $offset),
		"$db: the server log has one line for the database");
	# now as fast as it goes
	$node->safe_psql($db, "SELECT backfill.alter_rate_limit($job{$db}, NULL)");
}
for my $db ('db1', 'db2')
{
	ok( wait_until(120, sub {
			$node->safe_psql($db, "SELECT status FROM backfill.job WHERE job_id = $job{$db}") eq 'finished' }),
		"$db: the job finished after the restart");
	is($node->safe_psql($db, 'SELECT count(*), sum(id), sum(a) FROM down'),
		$node->safe_psql($db, 'SELECT count(*), sum(id), sum(a) FROM up'),
		"$db: the downstream has the upstream's rows");
	is($node->safe_psql($db, 'SELECT count(*) FROM down'), $rows, "$db: all $rows of them");
}
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/database "db3"|ERROR/, 'db3, without the extension, costs no error');
is((() = $log =~ /background jobs? in database/g), 2, 'one line for each of the two databases only');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'backfill database worker'"),
	'0', 'the database workers have exited');

######################################################################
# 2. no wait in the transaction that started the job
######################################################################
$node->safe_psql('db1', qq{
CREATE TABLE w (id bigint PRIMARY KEY, a int);
INSERT INTO w SELECT g, g FROM generate_series(1, 1000) g;
});
my $w = $node->safe_psql('db1', "SELECT backfill.create_job('w_down', 'w', rate_limit => 0)");
my ($state, $msg, $err) = psql_error($node, qq{
SET statement_timeout = '20s';
BEGIN;
SELECT backfill.start_job($w);
SELECT backfill.wait_job($w);
}, 'db1');
is($state, '55000', 'wait_job in the transaction of start_job is refused with 55000');
like($msg, qr/cannot wait for backfill job $w in the transaction that holds its lock/, '... and says why');
like($err, qr/HINT:  Commit first, then call backfill\.wait_job\($w\)\./, '... the hint says what to do');
($state, $msg, $err) = psql_error($node, "BEGIN;\nCALL backfill.wait_for_job($w);", 'db1');
is($state, '25001', 'wait_for_job inside a transaction block is refused with 25001');

######################################################################
# 3. waits and the xmin horizon
######################################################################
# whatever the rolled-back start left running
$node->psql('db1', "SELECT backfill.stop_job($w)");
$node->safe_psql('db1', "SELECT backfill.start_job($w)");
ok(wait_until(60, sub {
		$node->safe_psql('db1', "SELECT count(*) FROM backfill.workers WHERE job_id = $w") eq '1' }),
	'the paused job runs in a worker');

# a wait in a psql of its own; its backend's pid
sub start_wait
{
	my ($sql) = @_;
	my $r = BackfillTestLib::start_bg(
		[ 'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('db1'), '-c', $sql ]);
	my $pid;
	wait_until(30, sub {
		$pid = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE query = '$sql' AND state = 'active'");
		return $pid ne '';
	});
	$r->{pid} = $pid;
	return $r;
}

# rows deleted while the wait runs, then VACUUM VERBOSE's line on them
sub vacuum_after_delete
{
	$node->safe_psql('db1', q{
DROP TABLE IF EXISTS v;
CREATE TABLE v (id int) WITH (autovacuum_enabled = off);
INSERT INTO v SELECT generate_series(1, 5000);
DELETE FROM v;
});
	my ($out, $err) = ('', '');
	$node->psql('db1', 'VACUUM (VERBOSE) v', stdout => \$out, stderr => \$err);
	my ($line) = $err =~ /(tuples: .*)$/m;
	return $line // $err;
}

my $proc = start_wait("CALL backfill.wait_for_job($w)");
ok($proc->{pid}, "CALL backfill.wait_for_job($w) waits");
my $nulls = 0;
for (1 .. 20)
{
	$nulls++ if $node->safe_psql('postgres',
		"SELECT backend_xmin IS NULL FROM pg_stat_activity WHERE pid = $proc->{pid}") eq 't';
	usleep(20_000);
}
cmp_ok($nulls, '>=', 10, "its backend shows no backend_xmin while it waits ($nulls of 20 looks)");
my $line;
ok(wait_until(30, sub { ($line = vacuum_after_delete()) =~ /5000 removed/ }),
	'VACUUM removes the rows deleted while wait_for_job waits')
  or diag($line);

my $func = start_wait("SELECT backfill.wait_job($w)");
ok($func->{pid}, "SELECT backfill.wait_job($w) waits");
$line = vacuum_after_delete();
like($line, qr/5000 are dead but not yet removable/,
	'VACUUM cannot remove the rows deleted while wait_job waits: its snapshot holds them');

$node->safe_psql('db1', "SELECT backfill.alter_rate_limit($w, NULL)");
is(finish_bg($proc), 0, 'wait_for_job returns once the job has finished');
is(finish_bg($func), 0, 'so does wait_job');
is($node->safe_psql('db1', 'SELECT count(*) FROM w_down'), '1000', 'the job copied its rows');

$node->stop;
done_testing();
