
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

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

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
	"backfill.drop_job($job)", "backfill.start_job($job)", "backfill._stop_workers($job, true)")
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

no_crash_in_log($node);
done_testing();
