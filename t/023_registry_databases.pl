
# Copyright (c) backfill authors
#
# t/023_registry_databases.pl: the worker registry keyed by (database, job),
# and the caps on background workers.
#
# Job ids belong to one database's catalog: two databases with the extension
# each have a job 1.  Each is owned by another role (regress_alice's in
# postgres, regress_bob's in db2), both run in background workers.  In
# either database, start_job, wait_job, stop_job, reschedule and drop_job
# act on that database's job 1 only: the other one's workers keep their
# pids; backfill.workers and backfill.jobs.worker_pids show only this
# database's workers.
#
# Then the caps a superuser sets, backfill.max_workers and
# backfill.max_workers_per_role: start_job beyond them is refused with
# SQLSTATE 53000 and a hint naming the setting, leaving no worker behind; a
# role's workers count in every database; a superuser's jobs are not capped
# per role; reschedule to a parallelism beyond them is refused before it
# stops the job's workers, which keep running; -1 lifts a cap.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = worker_node('registry', conf => "max_worker_processes = 24\n");
$node->safe_psql('postgres', q{
CREATE ROLE regress_alice LOGIN;
CREATE ROLE regress_bob LOGIN;
CREATE DATABASE db2;
});
$node->safe_psql('db2', 'CREATE EXTENSION backfill');
for my $db ('postgres', 'db2')
{
	$node->safe_psql($db, q{
CREATE SCHEMA alice AUTHORIZATION regress_alice;
CREATE SCHEMA bob AUTHORIZATION regress_bob;
});
}

# SQL as a role in a database, in a session of its own
sub as_role
{
	my ($db, $role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql,
		extra_params => [ '-U', $role ], on_error_stop => 1);
	return ($ret == 0, $out, $err);
}

# SQL as a role; the error's SQLSTATE, message and whole stderr
sub role_error
{
	my ($db, $role, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql($db, "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err, extra_params => [ '-U', $role ]);
	return ('', '', "no error (rc $rc): $out") if $rc == 0;
	my ($state, $msg) = $err =~ /ERROR:  ([0-9A-Z]{5}): (.*)$/m;
	return ($state // '', $msg // '', $err);
}

sub make_job
{
	my ($db, $role, $schema, $table, $rows, $parallelism) = @_;
	my ($ok, $out, $err) = as_role($db, $role, qq{
CREATE TABLE $schema.$table (id bigint PRIMARY KEY, a int, b text);
INSERT INTO $schema.$table SELECT g, g % 100, md5(g::text) FROM generate_series(1, $rows) g;
SELECT backfill.create_job('$schema.${table}_down', '$schema.$table', parallelism => $parallelism,
                           chunk_size => 100, rate_limit => 200);
});
	ok($ok, "$db: $role creates a job on $schema.$table") or diag($err);
	return $out;
}

# the worker processes of a job of a database, as pg_stat_activity shows
# them: "pid,pid" in order
sub db_worker_pids
{
	my ($db, $job) = @_;
	return $node->safe_psql('postgres', qq{
SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM pg_stat_activity
 WHERE backend_type = 'backfill actor' AND datname = '$db'
   AND application_name LIKE 'backfill job $job actor %'});
}

# what backfill.workers shows in a database: "pid,pid" in order
sub listed_pids
{
	my ($db, $job) = @_;
	return $node->safe_psql($db,
		"SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM backfill.workers WHERE job_id = $job");
}

# wait until n workers of the job run in the database, listed there
sub wait_db_workers
{
	my ($db, $job, $n) = @_;
	my $pids;
	my $ok = wait_until($PostgreSQL::Test::Utils::timeout_default, sub {
		$pids = db_worker_pids($db, $job);
		my @p = grep { $_ ne '' } split /,/, $pids;
		return scalar(@p) == $n && listed_pids($db, $job) eq $pids;
	});
	return $ok ? $pids : undef;
}

######################################################################
# 1. job 1 in two databases
######################################################################
my $j1 = make_job('postgres', 'regress_alice', 'alice', 'up', 100_000, 2);
my $j2 = make_job('db2', 'regress_bob', 'bob', 'up', 100_000, 2);
is($j1, '1', 'postgres: the job is job 1');
is($j2, '1', 'db2: the job is job 1 too');

my ($ok, $out, $err) = as_role('db2', 'regress_bob', "SELECT backfill.start_job(1)");
ok($ok, 'db2: bob starts his job 1') or diag($err);
my $pids2 = wait_db_workers('db2', 1, 2);
ok($pids2, "db2: its two workers run ($pids2)");
is(listed_pids('postgres', 1), '', 'postgres: backfill.workers does not list db2\'s workers');
is($node->safe_psql('postgres', 'SELECT worker_pids FROM backfill.jobs WHERE job_id = 1'), '',
	'postgres: backfill.jobs shows no worker pid for job 1');

# wait_job and start_job here see this database's job 1, which is not running
my ($state, $msg) = psql_error($node, "SET statement_timeout = '10s'; SELECT backfill.wait_job(1)");
is($state, '55000', 'postgres: wait_job(1) says at once the job is not running');
like($msg, qr/backfill job 1 is not running/, 'postgres: ... with its message');
($ok, $out, $err) = as_role('postgres', 'regress_alice', "SELECT backfill.start_job(1)");
ok($ok, 'postgres: alice starts her job 1 while db2\'s job 1 runs') or diag($err);
my $pids1 = wait_db_workers('postgres', 1, 2);
ok($pids1, "postgres: its two workers run ($pids1)");
is(listed_pids('db2', 1), $pids2, 'db2: backfill.workers lists only db2\'s workers, the same');
is($node->safe_psql('db2', "SELECT (SELECT string_agg(p::text, ',' ORDER BY p) FROM unnest(worker_pids) p) FROM backfill.jobs WHERE job_id = 1"),
	$pids2, 'db2: backfill.jobs.worker_pids are db2\'s');

# stop_job in postgres stops postgres's job 1 only
($ok, $out, $err) = as_role('postgres', 'regress_alice', "SELECT backfill.stop_job(1)");
ok($ok, 'postgres: stop_job(1)') or diag($err);
is(db_worker_pids('postgres', 1), '', 'postgres: its workers are gone');
is(db_worker_pids('db2', 1), $pids2, 'db2: job 1\'s workers still run, the same pids');
is($node->safe_psql('db2', "SELECT run_mode FROM backfill.job WHERE job_id = 1"), 'background',
	'db2: job 1 is still a background job');

# wait_job in postgres does not wait for db2's workers
($state, $msg) = psql_error($node, "SET statement_timeout = '10s'; SELECT backfill.wait_job(1)");
is($state, '55000', 'postgres: wait_job(1) of the stopped job returns at once with 55000');

# reschedule in db2 replaces db2's workers only
($ok, $out, $err) = as_role('postgres', 'regress_alice', "SELECT backfill.start_job(1)");
ok($ok, 'postgres: alice starts her job 1 again') or diag($err);
$pids1 = wait_db_workers('postgres', 1, 2);
($ok, $out, $err) = as_role('db2', 'regress_bob', "SELECT backfill.reschedule(1, 1)");
ok($ok, 'db2: bob reschedules his job 1 to one actor') or diag($err);
my $new2 = wait_db_workers('db2', 1, 1);
ok($new2, "db2: one worker runs it ($new2)");
is(db_worker_pids('postgres', 1), $pids1, 'postgres: job 1\'s workers are untouched');

# drop_job in db2 drops db2's job 1 only
($ok, $out, $err) = as_role('db2', 'regress_bob', "SELECT backfill.drop_job(1)");
ok($ok, 'db2: bob drops his job 1') or diag($err);
is(db_worker_pids('db2', 1), '', 'db2: its worker is gone');
is(db_worker_pids('postgres', 1), $pids1, 'postgres: job 1\'s workers are untouched');
is($node->safe_psql('postgres', "SELECT status FROM backfill.job WHERE job_id = 1"), 'backfilling',
	'postgres: job 1 is still backfilling');
($ok, $out, $err) = as_role('postgres', 'regress_alice', "SELECT backfill.stop_job(1)");
ok($ok, 'postgres: alice stops her job 1') or diag($err);

######################################################################
# 2. caps on workers
######################################################################
is($node->safe_psql('postgres', 'SHOW backfill.max_workers'), '8', 'backfill.max_workers is 8 by default');
is($node->safe_psql('postgres', 'SHOW backfill.max_workers_per_role'), '4',
	'backfill.max_workers_per_role is 4 by default');

sub set_caps
{
	my ($total, $per_role) = @_;
	$node->safe_psql('postgres', qq{
ALTER SYSTEM SET backfill.max_workers = $total;
ALTER SYSTEM SET backfill.max_workers_per_role = $per_role;
SELECT pg_reload_conf();
});
	# a new session reads the reloaded file
	wait_until(10, sub {
		$node->safe_psql('postgres', 'SHOW backfill.max_workers') eq "$total"
		  && $node->safe_psql('postgres', 'SHOW backfill.max_workers_per_role') eq "$per_role" });
}

# per role, counted across databases: alice's 2 workers in db2 and a job of
# 2 in postgres make 4 > 3
set_caps(8, 3);
my $a2 = make_job('db2', 'regress_alice', 'alice', 'up2', 100_000, 2);
($ok, $out, $err) = as_role('db2', 'regress_alice', "SELECT backfill.start_job($a2)");
ok($ok, 'db2: alice starts a job of two workers under a cap of 3 per role') or diag($err);
ok(wait_db_workers('db2', $a2, 2), 'db2: its two workers run');
($state, $msg, $err) = role_error('postgres', 'regress_alice', "SELECT backfill.start_job(1)");
is($state, '53000', 'postgres: her job 1 of two more workers is refused with 53000');
like($msg, qr/could not start the 2 background workers of backfill job 1/, '... the message names the job');
like($err, qr/DETAIL:  The jobs of role "regress_alice" have 2 background workers already, and backfill.max_workers_per_role allows 3\./,
	'... the detail counts her workers in every database');
like($err, qr/HINT:  .*backfill\.max_workers_per_role/, '... the hint names backfill.max_workers_per_role');
is(db_worker_pids('postgres', 1), '', '... and no worker of the job is left');
isnt($node->safe_psql('postgres', "SELECT run_mode FROM backfill.job WHERE job_id = 1"), 'background',
	'... nor is it marked background');

# reschedule beyond the cap: refused before the workers stop
($state, $msg, $err) = role_error('db2', 'regress_alice', "SELECT backfill.reschedule($a2, 4)");
is($state, '53000', 'db2: reschedule to 4 workers is refused with 53000');
like($err, qr/HINT:  .*backfill\.max_workers_per_role/, '... the hint names backfill.max_workers_per_role');
my $a2pids = db_worker_pids('db2', $a2);
is((() = $a2pids =~ /\d+/g), 2, '... and the job\'s two workers still run');
is($node->safe_psql('db2', "SELECT count(*) FROM backfill.actor WHERE job_id = $a2"), '2',
	'... on its two actors');
($ok, $out, $err) = as_role('db2', 'regress_alice', "SELECT backfill.reschedule($a2, 3)");
ok($ok, 'db2: reschedule to 3, within the cap, works') or diag($err);
ok(wait_db_workers('db2', $a2, 3), '... three workers run it');

# a superuser's jobs are not capped per role
my $s1 = make_job('postgres', 'postgres', 'public', 'sup', 100_000, 4);
($ok, $out, $err) = as_role('postgres', 'postgres', "SELECT backfill.start_job($s1)");
ok($ok, 'postgres: a superuser\'s job of 4 workers starts under a cap of 3 per role') or diag($err);
ok(wait_db_workers('postgres', $s1, 4), '... its four workers run');

# the total: 3 + 4 = 7 run; one more of 2 is beyond 8
set_caps(8, -1);
($state, $msg, $err) = role_error('postgres', 'regress_alice', "SELECT backfill.start_job(1)");
is($state, '53000', 'postgres: two workers more than backfill.max_workers allows are refused with 53000');
like($err, qr/DETAIL:  Backfill jobs run 7 background workers already, and backfill.max_workers allows 8\./,
	'... the detail counts the workers of every database');
like($err, qr/HINT:  .*backfill\.max_workers\b/, '... the hint names backfill.max_workers');
is(db_worker_pids('postgres', 1), '', '... and no worker of the job is left');

# -1: no cap
set_caps(-1, -1);
($ok, $out, $err) = as_role('postgres', 'regress_alice', "SELECT backfill.start_job(1)");
ok($ok, 'postgres: with both caps at -1 the job starts') or diag($err);
ok(wait_db_workers('postgres', 1, 2), '... its two workers run');

# 0: no job of a plain role runs in the background
for my $j ([ 'postgres', 1 ], [ 'db2', $a2 ], [ 'postgres', $s1 ])
{
	$node->safe_psql($j->[0], "SELECT backfill.stop_job($j->[1])");
}
set_caps(8, 0);
($state, $msg, $err) = role_error('postgres', 'regress_alice', "SELECT backfill.start_job(1)");
is($state, '53000', 'postgres: with backfill.max_workers_per_role = 0 a plain role\'s job is refused');
set_caps(0, -1);
($state, $msg, $err) = role_error('postgres', 'postgres', "SELECT backfill.start_job($s1)");
is($state, '53000', 'postgres: with backfill.max_workers = 0 a superuser\'s job is refused too');

$node->stop;
done_testing();
