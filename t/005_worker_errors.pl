
# Copyright (c) backfill authors
#
# t/005_worker_errors.pl: what start_job refuses, and stopping, cancelling
# and dropping jobs whose workers run.
#
# 1. Without shared_preload_libraries, start_job fails with SQLSTATE 55000
#    and a hint naming shared_preload_libraries; nothing runs.
# 2. With max_worker_processes = 4 (two of which the logical replication
#    launcher and the backfill launcher take): a job of parallelism 8 (more
#    than the registry holds), one of parallelism 3 (more than the free
#    worker slots), and a job while another one's workers take the free
#    slots, all fail with SQLSTATE 53000 and a hint naming
#    max_worker_processes, and leave no worker of theirs running, and the
#    slots free: the job that runs is unharmed, and the refused ones run
#    once there is room.
# 3. stop_job stops the workers and takes the job out of the launcher's
#    hands (not relaunched at a restart); start_job puts it back.
# 4. cancel_job and drop_job of a job whose workers run, under writes: the
#    workers stop and nothing of the job is left (downstream, state and
#    change tables, triggers, workers); the writers go on without errors;
#    the launcher does not relaunch them after a restart.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use BackfillTestLib;

my $t0 = time;

# parallel query would take worker slots too
my $node = backfill_node('limits', conf => "max_parallel_workers_per_gather = 0\n");


sub create_job
{
	my ($down, $up, $p, $rate) = @_;
	$rate //= 'NULL';
	return $node->safe_psql('postgres',
		"SELECT backfill.create_job('$down', '$up', 'arrangement', NULL, $p, 256, $rate)");
}


sub actor_ids
{
	my ($job) = @_;
	return map { $_->{actor_id} } @{ actor_rows($node, $job) };
}

sub run_mode
{
	my ($job) = @_;
	return $node->safe_psql('postgres', "SELECT run_mode FROM backfill.jobs WHERE job_id = $job");
}

# wait until the launcher has done its work after a (re)start
sub wait_launcher_idle
{
	return $node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'backfill launcher' AND state = 'idle')"
	);
}

######################################################################
# 1. not preloaded
######################################################################
my $script = make_upstream($node, 'e1', 1, 20_000);
my $job1 = create_job('e1_down', 'e1', 2);
my ($state, $msg, $err) = psql_error($node, "SELECT backfill.start_job($job1)");
is($state, '55000', 'no preload: start_job fails with SQLSTATE 55000');
like($msg, qr/requires the backfill library to be preloaded/, 'no preload: the message says why');
like($err, qr/HINT:  .*shared_preload_libraries/, 'no preload: the hint names shared_preload_libraries');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'backfill actor'"),
	0, 'no preload: no worker runs');
is(job_info($node, $job1)->{status}, 'pending', 'no preload: the job is still pending');
isnt(run_mode($job1), 'background', 'no preload: the job is not marked background');

######################################################################
# 2. out of worker slots
######################################################################
$node->append_conf(
	'postgresql.conf', q{
shared_preload_libraries = 'backfill'
max_worker_processes = 4
backfill.barrier_interval_ms = 200
});
$node->restart;
ok(wait_launcher_idle(), 'preloaded: the launcher runs');
is($node->safe_psql('postgres', "SHOW max_worker_processes"), '4', 'max_worker_processes is 4');

my $job8 = create_job('e1_down8', 'e1', 8);
my $job3 = create_job('e1_down3', 'e1', 3);
for my $case ([ $job8, 8 ], [ $job3, 3 ])
{
	my ($job, $p) = @$case;
	($state, $msg, $err) = psql_error($node, "SELECT backfill.start_job($job)");
	is($state, '53000', "parallelism $p: start_job fails with SQLSTATE 53000");
	like($msg, qr/could not start the $p background workers of backfill job $job/,
		"parallelism $p: the message names the job");
	like($err, qr/HINT:  .*max_worker_processes/, "parallelism $p: the hint names max_worker_processes");
	ok(wait_until(15, sub { $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'backfill job $job actor %'") eq '0' }),
		"parallelism $p: no worker process of the job is left running");
	if (!ok(wait_no_workers($node, $job, 15),
		"parallelism $p: backfill.workers lists no worker of the job"))
	{
		# a slot left reserved in the registry makes the job look running
		# for good: start_job says it runs, stop_job and cancel_job wait
		# for a worker that does not exist.  Show it, then restart the
		# server (which empties the registry) so the rest can go on.
		diag("backfill.workers: " . $node->safe_psql('postgres',
			"SELECT string_agg(format('job %s actor %s pid %s', job_id, actor_id, coalesce(pid::text, 'NULL')), '; ') FROM backfill.workers"));
		my ($st, $m) = psql_error($node, "SELECT backfill.start_job($job)");
		diag("start_job($job) now: $st $m");
		($st, $m) = psql_error($node, "SET statement_timeout = '3s'; SELECT backfill.stop_job($job)");
		diag("stop_job($job) now: $st $m");
		$node->restart;
	}
	is(job_info($node, $job)->{status}, 'pending', "parallelism $p: the job is still pending");
	isnt(run_mode($job), 'background', "parallelism $p: the job is not marked background");
}

# one job's workers take the free slots; another job is refused and the
# first one goes on
my $w = start_writers($node, $script, 8);
$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job1, 2000)");
# the refused jobs' workers may take a moment to give their slots back to
# the postmaster once they have exited: retry for a few seconds
my $started = wait_until(10, sub { $node->psql('postgres', "SELECT backfill.start_job($job1)") == 0 });
ok($started, 'two jobs: the first job starts once the refused workers have gone');
my $pids1 = wait_workers($node, $job1, actor_ids($job1));
ok($pids1, 'two jobs: the first job\'s two workers run');
my $job1b = create_job('e1_down1', 'e1', 1);
($state, $msg, $err) = psql_error($node, "SELECT backfill.start_job($job1b)");
is($state, '53000', 'two jobs: the second job is refused with SQLSTATE 53000');
like($err, qr/HINT:  .*max_worker_processes/, 'two jobs: the hint names max_worker_processes');
ok(wait_no_workers($node, $job1b), 'two jobs: no worker of the refused job runs');
is_deeply(wait_workers($node, $job1, actor_ids($job1)), $pids1,
	'two jobs: the first job\'s workers are the same ones');
$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job1, NULL)");
$node->safe_psql('postgres', "SELECT backfill.wait_job($job1)");
is(job_info($node, $job1)->{status}, 'finished', 'two jobs: the first job finished');
is(verify_rows($node, $job1), '', 'two jobs: its verify_job is empty');
ok(wait_no_workers($node, $job1), 'two jobs: its workers have gone');

# the slots are free again: the refused jobs run, the one of parallelism 3
# once rescheduled to 2
$node->safe_psql('postgres', "SELECT backfill.start_job($job1b)");
$node->safe_psql('postgres', "SELECT backfill.wait_job($job1b)");
is(job_info($node, $job1b)->{status}, 'finished', 'freed slots: the refused job of 1 actor finished');
$node->safe_psql('postgres', "SELECT backfill.reschedule($job3, 2)");
$node->safe_psql('postgres', "SELECT backfill.start_job($job3)");
$node->safe_psql('postgres', "SELECT backfill.wait_job($job3)");
is(job_info($node, $job3)->{status}, 'finished', 'freed slots: the job of 3 actors, rescheduled to 2, finished');
is(finish_bg($w), 0, 'slots: writers ran without errors') or diag($w->{err});
is(verify_rows($node, $_), '', "freed slots: verify_job $_ is empty") for ($job1b, $job3);
$node->safe_psql('postgres', "SELECT backfill.drop_job($_)") for ($job8, $job3, $job1b, $job1);

######################################################################
# 3. stop_job
######################################################################
$script = make_upstream($node, 's1', 1, 40_000);
my $jobs = create_job('s1_down', 's1', 2, 1000);
$node->safe_psql('postgres', "SELECT backfill.start_job($jobs)");
ok(wait_workers($node, $jobs, actor_ids($jobs)), 'stop: workers run');
like(wait_rows($node, $jobs, 1000), qr/^backfilling/, 'stop: the job reads');
$node->safe_psql('postgres', "SELECT backfill.stop_job($jobs)");
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'backfill job $jobs actor %'"),
	0, 'stop: stop_job returns once the workers have exited');
is(run_mode($jobs), 'foreground', 'stop: run_mode is foreground');
is(job_info($node, $jobs)->{status}, 'backfilling', 'stop: the job is still backfilling');
is(verify_rows($node, $jobs), '', 'stop: verify_job is empty');
my $stopped_state = job_state($node, $jobs);

######################################################################
# 4. cancel_job and drop_job of running jobs
######################################################################
$script = make_upstream($node, 'c1', 1, 40_000);
my $jobc = create_job('c1_down', 'c1', 2, 1000);
my $jobd = create_job('c1_down2', 'c1', 2, 1000);
$w = start_writers($node, $script, 6);
for my $case ([ 'cancel', $jobc, 'c1_down' ], [ 'drop', $jobd, 'c1_down2' ])
{
	my ($what, $job, $down) = @$case;
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	my $pids = wait_workers($node, $job, actor_ids($job));
	ok($pids, "$what: workers run");
	like(wait_rows($node, $job, 500), qr/^backfilling/, "$what: the job reads");
	$node->safe_psql('postgres', "SELECT backfill.${what}_job($job)");
	# the workers give back their slots (which is what the call waits for)
	# on their way out; the processes are gone a few milliseconds later
	ok(wait_until(5, sub { !grep { kill(0, $_) } values %{ $pids // {} } }),
		"$what: the worker processes have exited");
	my @left = leftovers($node, $job, 'c1', $down);
	is(join(', ', @left), '', "$what: nothing of the job is left");
	if ($what eq 'cancel')
	{
		is(job_info($node, $job)->{status}, 'cancelled', 'cancel: status is cancelled');
	}
	else
	{
		is($node->safe_psql('postgres',
				"SELECT count(*) FROM backfill.job WHERE job_id = $job")
			  + $node->safe_psql('postgres',
				"SELECT count(*) FROM backfill.actor WHERE job_id = $job"),
			0, 'drop: the job and its actors are gone');
	}
}
is(finish_bg($w), 0, 'cancel/drop: writers went on without errors') or diag($w->{err});
is($node->safe_psql('postgres',
		"SELECT string_agg(tgname, ',') FROM pg_trigger WHERE tgrelid = 'c1'::regclass"),
	'', 'cancel/drop: no trigger is left on the upstream');

# after a restart, the launcher relaunches none of them
my $offset = -s $node->logfile;
$node->restart;
ok(wait_launcher_idle(), 'restart: the launcher has done its work');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'backfill actor'"),
	0, 'restart: no job was relaunched (stopped, cancelled, dropped)');
unlike(slurp_file($node->logfile, $offset), qr/backfill launcher restarted/,
	'restart: the log shows no relaunch');
is_deeply(job_state($node, $jobs), $stopped_state, 'restart: the stopped job kept its state');

# start_job puts the stopped job back in the launcher's hands
$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($jobs, NULL)");
$node->safe_psql('postgres', "SELECT backfill.start_job($jobs)");
# the first worker records the mode when it starts the run
ok($node->poll_query_until('postgres',
		"SELECT run_mode = 'background' FROM backfill.jobs WHERE job_id = $jobs"),
	'stop: start_job makes it background again');
$node->safe_psql('postgres', "SELECT backfill.wait_job($jobs)");
is(job_info($node, $jobs)->{status}, 'finished', 'stop: the restarted job finished');
is(verify_rows($node, $jobs), '', 'stop: verify_job is empty');

no_crash_in_log($node);

$node->stop;
note sprintf('total %.1fs', time - $t0);
done_testing();
