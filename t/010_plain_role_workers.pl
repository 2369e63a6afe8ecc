
# Copyright (c) backfill authors
#
# t/010_plain_role_workers.pl: a role that is not a superuser runs its jobs
# in background workers, and another role cannot touch them.
#
# regress_alice owns her upstream and has no other right.  She creates a
# job, starts it in workers, rate-limits it, stops it, starts it again and
# waits for it.  Its workers run as her (pg_stat_activity), with the library
# preloaded; she sees its pace in backfill.jobs, and its workers log their
# progress.  regress_bob sees none of it: not the job, not its workers, and
# stop_job, alter_rate_limit, reschedule, cancel_job and drop_job all say the
# job does not exist, while the job runs on.
#
# Then alice loses LOGIN while a second job of hers runs in workers, and the
# server restarts.  Workers connecting as her would fail before they could
# record anything, so the launcher does not launch them: it fails the job,
# with PostgreSQL's message for a role that may not log in, and does not
# try again at the next start; start_job says the same.  Once she may log
# in again, she starts the job and it finishes.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

# wait until the launcher has done its work after a (re)start
sub wait_launcher_idle
{
	my ($node) = @_;
	return $node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'backfill launcher' AND state = 'idle')"
	);
}

my $node = worker_node('plain_role', conf => "backfill.log_progress_interval = '1s'\n");
$node->safe_psql(
	'postgres', q{
CREATE ROLE regress_alice LOGIN;
CREATE ROLE regress_bob LOGIN;
CREATE SCHEMA alice AUTHORIZATION regress_alice;
});

# run SQL as a role, in a session of its own; returns (ok, stdout, stderr)
sub as_role
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ '-U', $role ], on_error_stop => 1);
	return ($ret == 0, $out, $err);
}

my ($ok, $out, $err) = as_role(
	'regress_alice', q{
CREATE TABLE alice.up (id bigint PRIMARY KEY, a int, b text);
INSERT INTO alice.up SELECT g, g % 100, md5(g::text) FROM generate_series(1, 30000) g;
SELECT backfill.create_job('alice.down', 'alice.up', parallelism => 2, chunk_size => 500,
                           rate_limit => 2000);
});
ok($ok, 'a role without superuser creates a job') or diag($err);
my $job = $out;

($ok, $out, $err) = as_role('regress_alice', "SELECT backfill.start_job($job)");
ok($ok, 'and starts it in background workers') or diag($err);
my %pids = %{ wait_workers($node, $job, map { $_->{actor_id} } @{ actor_rows($node, $job) }) // {} };
is(scalar(keys %pids), 2, 'two workers run the job');
is( $node->safe_psql(
		'postgres',
		"SELECT string_agg(DISTINCT usename, ',') FROM pg_stat_activity WHERE pid IN ("
		  . join(',', values %pids) . ")"),
	'regress_alice',
	'the workers run as the job\'s owner');
like(wait_rows($node, $job, 1000), qr/^backfilling/, 'the job is under way');

# its pace, as she sees it, and its workers' progress in the server log
($ok, $out, $err) = as_role('regress_alice',
	"SELECT throttled_by, rows_per_second > 0, eta IS NOT NULL FROM backfill.jobs WHERE job_id = $job");
is($out, 'rate limit|t|t', 'the owner sees what holds her job back, its rate and its ETA');
ok( wait_until(
		10,
		sub {
			slurp_file($node->logfile) =~
			  /LOG:  backfill job $job actor \d+: \d+\.\d\d% \(\d+\/30000\), \d+ rows\/s, ETA \d\d:\d\d:\d\d, throttled by rate limit\n/;
		}),
	'her workers log their progress');

# bob sees nothing, and can do nothing to it
($ok, $out, $err) = as_role('regress_bob',
	"SELECT count(*) FROM backfill.jobs; SELECT count(*) FROM backfill.workers;");
is($out, "0\n0", 'another role sees neither the job nor its workers');
for my $call ("backfill.stop_job($job)", "backfill.alter_rate_limit($job, 0)",
	"backfill.reschedule($job, 1)", "backfill.cancel_job($job)",
	"backfill.drop_job($job)", "backfill.start_job($job)", "backfill.alter_job($job, rate_limit => 0)")
{
	($ok, $out, $err) = as_role('regress_bob', "SELECT $call");
	like($err, qr/backfill job $job does not exist/, "another role: $call is refused");
}
is(scalar(@{ job_workers($node, $job) }), 2, 'the workers run on');

# alice stops, limits, restarts and waits for her job
($ok, $out, $err) = as_role('regress_alice', "SELECT backfill.stop_job($job)");
ok($ok, 'the owner stops her job') or diag($err);
ok(wait_no_workers($node, $job), 'its workers are gone');
($ok, $out, $err) = as_role(
	'regress_alice', qq{
SELECT backfill.alter_rate_limit($job, NULL);
SELECT backfill.start_job($job);
SELECT backfill.wait_job($job);
SELECT status FROM backfill.jobs WHERE job_id = $job;
});
ok($ok, 'and starts it again, unlimited, and waits for it') or diag($err);
like($out, qr/finished$/, 'the job finished');
($ok, $out, $err) = as_role('regress_alice',
	"SELECT count(*) FROM backfill.verify_job($job)");
is($out, '0', 'verify_job, as the owner, is empty');
is(table_diff($node, 'alice.up', 'alice.down'), '0', 'the downstream equals the upstream');
($ok, $out, $err) = as_role('regress_alice', "SELECT backfill.drop_job($job)");
ok($ok, 'the owner drops her job') or diag($err);

# alice loses LOGIN while a job of hers runs in workers
($ok, $out, $err) = as_role(
	'regress_alice', q{
SELECT backfill.create_job('alice.down2', 'alice.up', parallelism => 2, chunk_size => 500,
                           rate_limit => 1000);
});
ok($ok, 'the owner creates a second job') or diag($err);
my $job2 = $out;
($ok, $out, $err) = as_role('regress_alice', "SELECT backfill.start_job($job2)");
ok($ok, 'and starts it in background workers') or diag($err);
ok(wait_workers($node, $job2, map { $_->{actor_id} } @{ actor_rows($node, $job2) }),
	'its workers run');
$node->safe_psql('postgres', 'ALTER ROLE regress_alice NOLOGIN');

my $offset = -s $node->logfile;
$node->restart;
ok(wait_launcher_idle($node), 'the launcher has done its work after a restart');
is( $node->safe_psql(
		'postgres',
		"SELECT status, last_error, last_error_detail, last_sqlstate FROM backfill.job WHERE job_id = $job2"
	),
	qq{failed|role "regress_alice" is not permitted to log in|}
	  . qq{The background workers of backfill job $job2 connect as its owner.|28000},
	'the job failed, and says why');
is(scalar(@{ job_workers($node, $job2) }), 0, 'no worker of the job runs');
my $log = substr(slurp_file($node->logfile), $offset);
unlike($log, qr/FATAL:  role "regress_alice" is not permitted to log in/,
	'no worker was launched to fail as it connected');
like($log, qr/ERROR:  role "regress_alice" is not permitted to log in/,
	'the launcher logged the error');

# not again at the next start
$offset = -s $node->logfile;
$node->restart;
ok(wait_launcher_idle($node), 'the launcher has done its work after a second restart');
$log = substr(slurp_file($node->logfile), $offset);
unlike($log, qr/not permitted to log in/, 'the launcher leaves the failed job alone');
is(job_info($node, $job2)->{status}, 'failed', 'the job is still failed');

my ($sqlstate, $msg) = psql_error($node, "SELECT backfill.start_job($job2)");
is("$sqlstate $msg", '28000 role "regress_alice" is not permitted to log in',
	'start_job gives the same reason');

# LOGIN again: the job runs to the end
$node->safe_psql('postgres', 'ALTER ROLE regress_alice LOGIN');
($ok, $out, $err) = as_role(
	'regress_alice', qq{
SELECT backfill.alter_rate_limit($job2, NULL);
SELECT backfill.start_job($job2);
});
ok($ok, 'once she may log in, the owner starts the failed job again') or diag($err);
# (wait_job would see the failed status until a worker has started the run)
is(wait_status($node, $job2, ['finished']), 'finished', 'and it finishes');
is(table_diff($node, 'alice.up', 'alice.down2'), '0', 'the downstream equals the upstream');

no_crash_in_log($node);
done_testing();
