
# Copyright (c) backfill authors
#
# t/036_lost_worker.pl: a background worker that exits while its job still
# needs it, without being asked to stop, is replaced.
#
# 1. pg_terminate_backend() of the one worker of a job mid-backfill: the
#    launcher counts the exit as a failure of the job (failures 1, status
#    still backfilling), logs it naming the actor and the pause, and
#    starts the job again after a pause of a second; the job finishes by
#    itself, equal to its upstream.
# 2. Terminated again at once after the restart: the pause doubles (the log
#    says 2000 ms, exit 2 in a row), failures 2.
# 3. Two workers, one terminated: once the other has finished its vnodes and
#    exited, the job is started again and finishes.
# 4. Terminated, then stopped with stop_job at once: not started again.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = worker_node('lost');
make_upstream($node, 'lu', 1, 20000);

sub job_row
{
	my ($job) = @_;
	return $node->safe_psql('postgres',
		"SELECT status, failures, coalesce(last_error, '') FROM backfill.job WHERE job_id = $job");
}

sub terminate
{
	my ($pid) = @_;
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
}

# 1. one worker, terminated mid-backfill
my $job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('ld', 'lu', rate_limit => 500, chunk_size => 50)");
$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
my $actor = $node->safe_psql('postgres', "SELECT actor_id FROM backfill.actor WHERE job_id = $job");
my $pids = wait_workers($node, $job, $actor);
ok($pids, "job $job: its worker runs");
my $log_offset = -s $node->logfile;
terminate($pids->{$actor});

my $new;
ok( wait_until(
		60,
		sub {
			my $p = wait_workers($node, $job, $actor);
			$new = $p && $p->{$actor} != $pids->{$actor} ? $p : undef;
			return defined $new;
		}),
	'1. the terminated worker is replaced by a new one');
# the new run clears last_error, as every run does: the count stays
is(job_row($job), 'backfilling|1|', '... the exit is counted as a failure, the job still backfilling');
ok( $node->log_contains(
		qr/background worker of actor $actor of backfill job $job exited unexpectedly with exit code 1.*\n.*DETAIL:  The launcher starts the job again in 1000 ms \(exit 1 in a row\)/,
		$log_offset),
	'... the server log says so, with the pause');
ok($node->log_contains(qr/backfill launcher restarted backfill job $job/, $log_offset),
	'... and that it restarted the job');

# 2. terminated again at once: the pause doubles
$log_offset = -s $node->logfile;
terminate($new->{$actor});
ok( wait_until(
		60,
		sub {
			$node->log_contains(qr/backfill launcher restarted backfill job $job/, $log_offset);
		}),
	'2. terminated again, the job is restarted again');
ok($node->log_contains(qr/starts the job again in 2000 ms \(exit 2 in a row\)/, $log_offset),
	'... after a pause twice as long');
is((split /\|/, job_row($job))[1], '2', '... failures 2');

$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
is(wait_status($node, $job, ['finished', 'failed']), 'finished', '... the job finishes by itself');
is(verify_rows($node, $job), '', '... equal to its upstream');

# 3. two workers, one terminated
my $job2 = $node->safe_psql('postgres',
	"SELECT backfill.create_job('ld2', 'lu', parallelism => 2, rate_limit => 500, chunk_size => 50)");
$node->safe_psql('postgres', "SELECT backfill.start_job($job2)");
my @actors = split /\n/,
  $node->safe_psql('postgres', "SELECT actor_id FROM backfill.actor WHERE job_id = $job2 ORDER BY 1");
my $pids2 = wait_workers($node, $job2, @actors);
ok($pids2, "job $job2: its two workers run");
$log_offset = -s $node->logfile;
terminate($pids2->{ $actors[0] });
# the other one reads on: let it finish its vnodes quickly
$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job2, NULL)");
ok( wait_until(
		60,
		sub {
			$node->log_contains(qr/backfill launcher restarted backfill job $job2/, $log_offset);
		}),
	'3. one of two workers terminated: the job is restarted once the other has exited');
is(wait_status($node, $job2, ['finished', 'failed']), 'finished', '... and finishes');
is(verify_rows($node, $job2), '', '... equal to its upstream');
is((split /\|/, job_row($job2))[1], '1', '... one failure counted');

# 4. terminated, then stopped: not started again
my $job3 = $node->safe_psql('postgres',
	"SELECT backfill.create_job('ld3', 'lu', rate_limit => 500, chunk_size => 50)");
$node->safe_psql('postgres', "SELECT backfill.start_job($job3)");
my ($a3) = $node->safe_psql('postgres', "SELECT actor_id FROM backfill.actor WHERE job_id = $job3");
my $pids3 = wait_workers($node, $job3, $a3);
ok($pids3, "job $job3: its worker runs");
terminate($pids3->{$a3});
$node->safe_psql('postgres', "SELECT backfill.stop_job($job3)");
sleep 4;
ok(wait_no_workers($node, $job3, 5), '4. terminated then stopped: no worker runs');
is($node->safe_psql('postgres', "SELECT run_mode FROM backfill.job WHERE job_id = $job3"),
	'foreground', '... the job is no longer the launcher\'s');

no_crash_in_log($node);
done_testing();
