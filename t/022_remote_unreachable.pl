
# Copyright (c) backfill authors
#
# stop_job returns within moments while a remote job's worker waits for a
# source that does not answer, whatever it waits for, and the worker ends
# without failing the job:
#
#  - a source that accepts the connection and never answers (a listener on
#    127.0.0.1 that accepts and holds the socket): the worker waits in the
#    connection's start;
#  - a source that refuses connections (a port nobody listens on): the
#    worker tries again and again, waiting longer each time;
#  - a source whose backend serving the worker stops answering in the middle
#    of the copy (SIGSTOP): the worker waits for a query's result.
#
# Each stop_job runs under a statement_timeout, so that a wait that does not
# end fails the test instead of hanging it.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use IO::Socket::INET;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $source = remote_source('source', 20000);
my $local = worker_node('local');
import_remote($local, $source);

# a listener that accepts connections and never answers, in a process of
# its own holding every socket it accepted
my $hung_port = PostgreSQL::Test::Cluster::get_free_port();
my $listener = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => $hung_port,
	Listen => 16,
	ReuseAddr => 1) or die "could not listen on 127.0.0.1:$hung_port: $!";
my $test_pid = $$;
my $listener_pid = fork();
die "could not fork: $!" unless defined $listener_pid;
if ($listener_pid == 0)
{
	my @held;

	# not the test's output: prove waits for whoever holds it
	open(STDOUT, '>', '/dev/null');
	open(STDERR, '>', '/dev/null');
	while (my $c = $listener->accept) { push @held, $c; }
	exit 0;
}
close($listener);

# the listener ends with the test, however the test ends
END
{
	local $?;    # the test's exit status, which waitpid() would change

	if ($$ == $test_pid && $listener_pid)
	{
		kill 'KILL', $listener_pid;
		waitpid($listener_pid, 0);
	}
}

# a port nobody listens on
my $closed_port = PostgreSQL::Test::Cluster::get_free_port();

sub point_source_to
{
	my ($host, $port) = @_;
	$local->safe_psql('postgres', "ALTER SERVER src OPTIONS (SET host '$host', SET port '$port')");
	return;
}

# stop_job, timed; returns (seconds, error)
sub timed_stop
{
	my ($job) = @_;
	my $t0 = time();
	my ($ret, $out, $err) = $local->psql('postgres',
		"SET statement_timeout = '30s'; SELECT backfill.stop_job($job)");
	return (time() - $t0, $ret == 0 ? '' : $err);
}

# the job after the stop: no worker, not failed, no error recorded
sub after_stop
{
	my ($job) = @_;
	ok(wait_no_workers($local, $job, 10), 'the worker has exited');
	is($local->safe_psql('postgres',
			"SELECT status <> 'failed' AND last_error IS NULL FROM backfill.jobs WHERE job_id = $job"),
		't', 'the job is not failed and has no error');
	return;
}

my $job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy1', 'remote.t', kind => 'cdc', chunk_size => 100, rate_limit => 2000)");

# ---- a source that accepts and never answers ----
point_source_to('127.0.0.1', $hung_port);
$local->safe_psql('postgres', "SELECT backfill.start_job($job)");
ok(wait_workers($local, $job, map { $_->{actor_id} } @{ actor_rows($local, $job) }),
	'the job\'s worker runs');
ok( $local->poll_query_until('postgres', qq{
SELECT EXISTS (SELECT FROM pg_stat_activity
                WHERE application_name LIKE 'backfill job $job actor %' AND wait_event = 'Extension')}),
	'it waits for the source that does not answer');
sleep(1);
is(scalar(@{ job_workers($local, $job) }), 1, 'and is still waiting a second later');
my ($secs, $err) = timed_stop($job);
is($err, '', 'stop_job returns') or diag($err);
cmp_ok($secs, '<', 10, 'within moments, not once the source answers');
after_stop($job);

# ---- a source that refuses connections ----
point_source_to('127.0.0.1', $closed_port);
$local->safe_psql('postgres', "SELECT backfill.start_job($job)");
ok( $local->poll_query_until('postgres', qq{
SELECT EXISTS (SELECT FROM pg_stat_activity
                WHERE application_name LIKE 'backfill job $job actor %'
                  AND query LIKE 'waiting for the source: %')}),
	'the worker waits to try the source that refuses connections again');
# until it waits the longest between two tries
sleep(3);
($secs, $err) = timed_stop($job);
is($err, '', 'stop_job returns') or diag($err);
cmp_ok($secs, '<', 10, 'within moments, not once the source accepts connections');
after_stop($job);

# ---- the source's backend stops answering in the middle of the copy ----
point_source_to($source->host, $source->port);
$local->safe_psql('postgres', "SELECT backfill.start_job($job)");
ok( $source->poll_query_until('postgres', qq{
SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'backfill job $job')}),
	'the worker copies from the source');
my $backend = $source->safe_psql('postgres', qq{
SELECT pid FROM pg_stat_activity WHERE application_name = 'backfill job $job' LIMIT 1});
kill 'STOP', $backend;
ok( $local->poll_query_until('postgres', qq{
SELECT EXISTS (SELECT FROM pg_stat_activity
                WHERE application_name LIKE 'backfill job $job actor %' AND wait_event = 'Extension')}),
	'the worker waits for its backend on the source, which does not answer');
sleep(1);
($secs, $err) = timed_stop($job);
is($err, '', 'stop_job returns') or diag($err);
cmp_ok($secs, '<', 10, 'within moments, not once the source\'s backend answers');
after_stop($job);
kill 'CONT', $backend;

# the job goes on where it was once the source answers again
$local->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'finished', 'the job finishes in the foreground');
is(remote_differences($local, 'copy1'), '0 0', 'and its copy equals the source');

$local->stop;
$source->stop;
done_testing();
