
# Copyright (c) backfill authors
#
# t/024_extension_ddl_workers.pl: DROP EXTENSION and ALTER EXTENSION UPDATE
# while background workers run jobs.
#
# Both would lock the extension's catalogs and functions in an order the
# workers' barriers lock them the other way round, and deadlock with them.
# So, while a job's workers run (kept mid-backfill by a rate limit):
#
# 1. DROP EXTENSION backfill CASCADE by a role that does not own the
#    extension is refused as before (42501), and stops nothing;
# 2. DROP EXTENSION backfill without CASCADE is refused with 55006, naming
#    the job, and stops nothing;
# 3. DROP EXTENSION backfill CASCADE stops the workers first, as drop_job
#    does, then drops the extension: no deadlock, no worker left, the
#    upstream writable, the other database's job untouched;
# 4. ALTER EXTENSION backfill UPDATE from 1.1 (whose way to 1.3 replaces
#    the functions the workers call, and deadlocked with them) is refused
#    with 55006, naming the job, with a hint to stop it; the extension stays
#    at 1.1 and the workers run on; after stop_job the update works, and
#    start_job then runs the job to its end under 1.3.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = worker_node('ext_ddl');
$node->safe_psql('postgres', q{
CREATE ROLE regress_mallory LOGIN;
CREATE DATABASE upd;
CREATE DATABASE other;
});

# the worker processes of a job of a database: "pid,pid" in order
sub db_worker_pids
{
	my ($db, $job) = @_;
	return $node->safe_psql('postgres', qq{
SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM pg_stat_activity
 WHERE backend_type = 'backfill actor' AND datname = '$db'
   AND application_name LIKE 'backfill job $job actor %'});
}

sub wait_db_workers
{
	my ($db, $job, $n) = @_;
	my $pids;
	my $ok = wait_until($PostgreSQL::Test::Utils::timeout_default, sub {
		$pids = db_worker_pids($db, $job);
		return scalar(grep { $_ ne '' } split /,/, $pids) == $n;
	});
	return $ok ? $pids : undef;
}

sub start_job_in
{
	my ($db, $table) = @_;
	$node->safe_psql($db, qq{
CREATE TABLE $table (id bigint PRIMARY KEY, a int, b text);
INSERT INTO $table SELECT g, g % 100, md5(g::text) FROM generate_series(1, 100000) g;
});
	my $job = $node->safe_psql($db,
		"SELECT backfill.create_job('${table}_down', '$table', parallelism => 2, chunk_size => 100, rate_limit => 200)");
	$node->safe_psql($db, "SELECT backfill.start_job($job)");
	return $job;
}

sub deadlocks
{
	my $n = () = slurp_file($node->logfile) =~ /deadlock detected/g;
	return $n;
}

######################################################################
# DROP EXTENSION
######################################################################
$node->safe_psql('other', 'CREATE EXTENSION backfill');
my $other = start_job_in('other', 'o_up');
my $other_pids = wait_db_workers('other', $other, 2);
ok($other_pids, 'other: a job runs in another database');

my $job = start_job_in('postgres', 'up');
my $pids = wait_db_workers('postgres', $job, 2);
ok($pids, "postgres: the job's two workers run ($pids)");

# 1. not the owner
my ($out, $err) = ('', '');
$node->psql('postgres', "\\set VERBOSITY verbose\nDROP EXTENSION backfill CASCADE",
	stdout => \$out, stderr => \$err, extra_params => [ '-U', 'regress_mallory' ]);
like($err, qr/ERROR:  42501: must be owner of extension backfill/,
	'a role that does not own the extension is refused as before');
is(db_worker_pids('postgres', $job), $pids, '... and the workers run on');

# 2. without CASCADE
my ($state, $msg);
($state, $msg, $err) = psql_error($node, 'DROP EXTENSION backfill');
is($state, '55006', 'DROP EXTENSION without CASCADE is refused with 55006');
like($msg, qr/cannot drop extension "backfill" while background workers run its jobs/, '... says why');
like($err, qr/DETAIL:  Backfill job $job runs in background workers in this database\./, '... names the job');
like($err, qr/HINT:  .*backfill\.stop_job\(\).*CASCADE/, '... hints at stop_job or CASCADE');
is(db_worker_pids('postgres', $job), $pids, '... and the workers run on');

# 3. CASCADE
my $before = deadlocks();
my $w = start_writers($node, writer_script($node, 'up'), 2);
($state, $msg, $err) = psql_error($node, "SET statement_timeout = '60s'; DROP EXTENSION backfill CASCADE");
is($state, '', 'DROP EXTENSION backfill CASCADE succeeds while the job runs') or diag($err);
finish_bg($w);
is(deadlocks(), $before, '... no deadlock in the server log');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_extension WHERE extname = 'backfill'"), '0',
	'... the extension is gone');
ok(wait_until(10, sub { db_worker_pids('postgres', $job) eq '' }), '... and so are its workers');
is($node->safe_psql('postgres', "INSERT INTO up VALUES (-1, 0, 'after') RETURNING id"), '-1',
	'... the upstream takes writes');
is(db_worker_pids('other', $other), $other_pids, 'other: the job of the other database runs on');

######################################################################
# 4. ALTER EXTENSION UPDATE
######################################################################
$node->safe_psql('upd', "CREATE EXTENSION backfill VERSION '1.1'");
my $ujob = start_job_in('upd', 'u_up');
my $upids = wait_db_workers('upd', $ujob, 2);
ok($upids, "upd: under 1.1, the job's two workers run ($upids)");
($state, $msg, $err) = psql_error($node, "SET statement_timeout = '60s'; ALTER EXTENSION backfill UPDATE", 'upd');
is($state, '55006', 'upd: ALTER EXTENSION UPDATE is refused with 55006 while workers run');
like($msg, qr/cannot update extension "backfill" while background workers run its jobs/, '... says why');
like($err, qr/DETAIL:  Backfill job $ujob runs in background workers in this database\./, '... names the job');
like($err, qr/HINT:  Stop them with backfill\.stop_job\(\), update the extension, then start them again/,
	'... hints at stop_job and start_job');
is($node->safe_psql('upd', "SELECT extversion FROM pg_extension WHERE extname = 'backfill'"), '1.1',
	'... the extension stays at 1.1');
is(db_worker_pids('upd', $ujob), $upids, '... the workers run on');
$node->safe_psql('upd', "SELECT backfill.stop_job($ujob)");
($state, $msg, $err) = psql_error($node, "SET statement_timeout = '60s'; ALTER EXTENSION backfill UPDATE", 'upd');
is($state, '', 'upd: after stop_job, ALTER EXTENSION UPDATE works') or diag($err);
is($node->safe_psql('upd', "SELECT extversion FROM pg_extension WHERE extname = 'backfill'"), '1.4',
	'... to 1.4');
$node->safe_psql('upd', "SELECT backfill.alter_rate_limit($ujob, NULL); SELECT backfill.start_job($ujob)");
$node->safe_psql('upd', "SET statement_timeout = '120s'; SELECT backfill.wait_job($ujob)");
is($node->safe_psql('upd', "SELECT status FROM backfill.job WHERE job_id = $ujob"), 'finished',
	'upd: started again under 1.4, the job finishes');
is($node->safe_psql('upd', "SELECT count(*) FROM backfill.verify_job($ujob)"), '0', '... and verifies');
is(deadlocks(), $before, 'no deadlock in the server log');

$node->stop;
done_testing();
