
# Copyright (c) backfill authors
#
# t/003_workers.pl: jobs in background workers, under writes and crashes.
#
# The library is preloaded, barriers last 200 ms, and pgbench writes to the
# upstream (inserts, updates, deletes, key changes) throughout.
#
# 1. start_job with parallelism 2 runs two 'backfill actor' backends at
#    once, named after the job and their actors in pg_stat_activity and
#    listed by backfill.workers and backfill.jobs.worker_pids; both read;
#    the job cannot be run a second time meanwhile; wait_job returns once it
#    has finished; the workers are gone; the downstream equals the upstream.
# 2. An arrangement job is crashed four times mid-backfill: kill -9 of one
#    of its workers (with a barrier in flight, see freeze_job()), an
#    immediate stop of the postmaster, kill -9 of the other worker, kill -9
#    of the postmaster.  Each time
#    the launcher relaunches the job on the same actors, the committed
#    progress is there (positions never go back, row_count at least the one
#    committed before), verify_job is empty, and in the end the job finishes
#    by itself.
# 3. A legacy no_shuffle job started with start_job and crashed mid-backfill
#    fails at the launcher's relaunch with RisingWave's message, built here
#    from the catalogs; the log has the ERROR; wait_job raises it; the
#    downstream holds what the last committed barrier wrote; recreate_job,
#    start_job and wait_job then finish it.
# 4. A serialization failure in a worker (raised once by the job's filter)
#    is retried from the last committed barrier: the job finishes equal to
#    its upstream, and the server log has the failure as a LOG line of the
#    worker, not as an ERROR.
#
# Speed: unlimited, an actor reads some 40k rows per barrier here, so a
# whole table would be read between two polls of the test.  The jobs are
# given a rate limit (rows per second per actor) so that they stay
# mid-backfill for several seconds, which is what lets the test crash them
# at chosen points; the limit is lifted where the test wants them to end.

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
my $node = worker_node('workers');



sub actor_ids
{
	my ($job) = @_;
	return map { $_->{actor_id} } @{ actor_rows($node, $job) };
}

# The end of a job's story: finished, no worker left, consistent.
sub check_finished
{
	my ($job, $up, $down, $label) = @_;
	is(job_info($node, $job)->{status}, 'finished', "$label: job finished");
	ok(wait_no_workers($node, $job), "$label: no worker is left");
	is(verify_rows($node, $job), '', "$label: verify_job is empty");
	is($node->safe_psql('postgres', "SELECT progress FROM backfill.jobs WHERE job_id = $job"),
		'100%', "$label: backfill.jobs says 100%");
	is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.ddl_progress WHERE ddl_id = $job"),
		0, "$label: ddl_progress no longer lists it");
	is(table_diff($node, $up, $down), 0, "$label: downstream equals the upstream (EXCEPT ALL)");
}

######################################################################
# 1. two actors, two backends at once
######################################################################
{
	my $script = make_upstream($node, 'up1', 1, 60_000);
	my $job = $node->safe_psql('postgres',
		"SELECT backfill.create_job('up1_down', 'up1', 'arrangement', NULL, 2, 256, 2000)");
	my @actors = actor_ids($job);
	is(scalar @actors, 2, 'job 1 has two actors');

	my $w = start_writers($node, $script, 10);
	my $ts = time;
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	cmp_ok(time - $ts, '<', 5, 'start_job returns at once');
	# the first worker records the mode when it starts the run
	ok($node->poll_query_until('postgres',
			"SELECT run_mode = 'background' FROM backfill.jobs WHERE job_id = $job"),
		'run_mode is background');
	is($node->safe_psql('postgres', "SELECT create_type FROM backfill.ddl_progress WHERE ddl_id = $job"),
		'BACKGROUND', 'ddl_progress shows a background job');

	# both workers in one snapshot of pg_stat_activity
	my $pids = wait_workers($node, $job, @actors);
	ok($pids, 'two backfill actor backends run at once, named after job and actor')
	  or diag($node->safe_psql('postgres',
		"SELECT pid, backend_type, application_name, query FROM pg_stat_activity"));
	$pids //= {};
	isnt($pids->{ $actors[0] }, $pids->{ $actors[1] }, 'the two actors are two processes');
	is($node->safe_psql('postgres', "SELECT worker_pids FROM backfill.jobs WHERE job_id = $job"),
		'{' . join(',', map { $pids->{$_} // '' } @actors) . '}',
		'backfill.jobs.worker_pids lists both, by actor');
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'backfill actor' "
		  . "AND application_name LIKE 'backfill job $job actor %'"),
		2, 'pg_stat_activity has exactly two backfill actors for the job');

	# both read, concurrently: each actor commits rows while the job is
	# still backfilling
	ok( $node->poll_query_until(
			'postgres',
			"SELECT count(*) = 2 FROM backfill.actor WHERE job_id = $job AND row_count > 0"),
		'both actors have committed snapshot rows');
	is(job_info($node, $job)->{status}, 'backfilling', '... while the job is still backfilling');
	is(wait_workers($node, $job, @actors) ? 'same' : 'changed', 'same',
		'both workers still run');

	# a second run of the same job is refused while the workers run
	my ($state, $msg) = psql_error($node, "SELECT backfill.start_job($job)");
	is($state, '55006', 'a second start_job is refused (55006)');
	like($msg, qr/backfill job $job is already running/, '... saying the job runs');
	($state, $msg) = psql_error($node, "CALL backfill.run_job($job)");
	is($state, '55006', 'run_job is refused while the workers run (55006)');

	# unlimited, then wait for the end
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
	pass('wait_job returned');
	is(finish_bg($w), 0, 'writers ran without errors') or diag($w->{err});
	cmp_ok(writer_transactions($w), '>', 0, 'writers did write');
	check_finished($job, 'up1', 'up1_down', 'two actors');
	note sprintf('two actors: done at %.1fs', time - $t0);
}

######################################################################
# 2. crashes of an arrangement job; the launcher resumes it each time
######################################################################
{
	my $n = 120_000;
	my $script = make_upstream($node, 'up2', 1, $n);
	my $job = $node->safe_psql('postgres',
		"SELECT backfill.create_job('up2_down', 'up2', 'arrangement', NULL, 2, 256, 5000)");
	my @actors = actor_ids($job);
	my $w = start_writers($node, $script, 60);
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	ok(wait_workers($node, $job, @actors), 'crash job: workers run');

	# after a crash: the launcher has relaunched the job on the same actors,
	# and the committed progress is there
	my $after_crash = sub {
		my ($label, $before, $info_before, $secs) = @_;
		finish_bg($w);    # the writers lost their connections
		my $pids = wait_workers($node, $job, @actors);
		ok($pids, "$label: the launcher relaunched both workers");
		my $info = job_info($node, $job);
		my $after = job_state($node, $job);
		is($info->{status}, 'backfilling', "$label: job is backfilling");
		cmp_ok($info->{row_count}, '>=', $info_before->{row_count},
			"$label: row_count $info->{row_count} is at least the committed $info_before->{row_count}");
		my @bad = compare_states($before, $after);
		ok(!@bad, "$label: no vnode's progress went back")
		  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));
		is(verify_rows($node, $job), '', "$label: verify_job is empty");
		$w = start_writers($node, $script, $secs // 60);
		return $after;
	};

	# 2a. kill -9 of one worker with a barrier in flight: both workers
	# block before committing (the state table is locked), the test pauses
	# the job (rate limit 0, read at the next barrier), and kills.  The
	# relaunched workers run barriers that read nothing, so the committed
	# state can be compared exactly: the barrier in flight was lost with its
	# reads, nothing else was.
	my $target = int($n * 0.2);
	my $f = freeze_job($node, $job, $target);
	my $blocked = wait_all_blocked_on_state($node, $job, 2);
	ok($blocked, 'kill worker: both workers are blocked before committing a barrier')
	  or diag("freeze: $f->{err}");
	my $info_before = job_info($node, $job);
	my $before = job_state($node, $job);
	my $actors_before = actor_rows($node, $job);
	is($info_before->{status}, 'backfilling', 'kill worker: job is mid-backfill');
	cmp_ok($info_before->{row_count}, '>=', $target, "kill worker: committed $info_before->{row_count} rows");
	cmp_ok($info_before->{row_count}, '<', $n * 0.8, 'kill worker: far from the end');
	$node->safe_psql('postgres',
		"SET statement_timeout = '30s'; SELECT backfill.alter_rate_limit($job, 0)");
	kill_and_wait_restart($node, $blocked->{ $actors[0] } // 0, 'kill worker');
	finish_bg($f);
	$after_crash->('kill worker', $before, $info_before);
	ok(wait_epoch_past($node, $job, 2), 'kill worker: the relaunched actors commit barriers');
	is_deeply(job_state($node, $job), $before,
		'kill worker: paused after the relaunch, the state is exactly the committed one');
	is(job_info($node, $job)->{row_count}, $info_before->{row_count},
		'kill worker: row_count is exactly the committed one');
	my $actors_after = actor_rows($node, $job);
	is_deeply([ map { $_->{row_count} } @$actors_after ],
		[ map { $_->{row_count} } @$actors_before ],
		'kill worker: each actor kept its committed row_count');
	ok((grep { $actors_after->[$_]{epoch} > $actors_before->[$_]{epoch} } 0 .. $#$actors_after) == 2,
		'kill worker: each actor is at a later epoch');
	is(verify_rows($node, $job), '', 'kill worker: verify_job is empty while paused');
	like(slurp_file($node->logfile),
		qr/backfill launcher restarted backfill job $job\b/,
		'kill worker: the log says the launcher restarted the job');
	# slower from here: each step between two crashes must outlast the
	# checks of the one before (verify_job takes seconds on a busy machine),
	# and each actor reads only its own range, so it keeps up with its limit
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, 1500)");

	# 2b. immediate stop of the postmaster at a moment the test does not
	# choose (the job runs freely)
	wait_rows($node, $job, int($n * 0.45));
	$info_before = job_info($node, $job);
	$before = job_state($node, $job);
	is($info_before->{status}, 'backfilling', 'immediate stop: job is mid-backfill');
	$node->stop('immediate');
	$node->start;
	$after_crash->('immediate stop', $before, $info_before);

	# 2c. kill -9 of the other worker, at a moment the test does not choose
	wait_rows($node, $job, int($n * 0.55));
	$info_before = job_info($node, $job);
	$before = job_state($node, $job);
	is($info_before->{status}, 'backfilling', 'kill worker 2: job is mid-backfill');
	my $pids = job_workers($node, $job);
	kill_and_wait_restart($node, $pids->[1][1] // 0, 'kill worker 2');
	$after_crash->('kill worker 2', $before, $info_before);

	# 2d. kill -9 of the postmaster; then the job finishes by itself
	wait_rows($node, $job, int($n * 0.7));
	$info_before = job_info($node, $job);
	$before = job_state($node, $job);
	is($info_before->{status}, 'backfilling', 'kill postmaster: job is mid-backfill');
	kill_postmaster_and_restart($node, 'kill postmaster');
	my $after = $after_crash->('kill postmaster', $before, $info_before, 4);

	# nothing but the launcher makes it go on now
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	is(wait_status($node, $job, [ 'finished', 'failed' ]), 'finished',
		'crash job: finished by itself after the crashes');
	$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
	pass('crash job: wait_job returns');
	my @bad = compare_states($after, job_state($node, $job));
	ok(!@bad, 'crash job: no vnode went back until the end')
	  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));
	finish_bg($w);
	check_finished($job, 'up2', 'up2_down', 'crash job');
	note sprintf('crash job: done at %.1fs', time - $t0);
}

######################################################################
# 3. a legacy job in background workers, crashed
######################################################################
{
	my $n = 80_000;
	my $script = make_upstream($node, 'up3', 1, $n);
	my ($job, $err);
	$node->psql('postgres',
		"SELECT backfill.create_job('up3_down', 'up3', 'no_shuffle', NULL, 2, 256, 5000)",
		stdout => \$job, stderr => \$err, on_error_die => 1);
	like($err, qr/WARNING: .*cannot resume/, 'legacy: creating the job warns');
	my @actors = actor_ids($job);
	my $w = start_writers($node, $script, 60);
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	ok(wait_workers($node, $job, @actors), 'legacy: workers run');

	my $f = freeze_job($node, $job, int($n * 0.25));
	my $blocked = wait_all_blocked_on_state($node, $job, 2);
	ok($blocked, 'legacy: both workers are blocked before committing a barrier')
	  or diag("freeze: $f->{err}");
	my $before = job_state($node, $job);
	my $down_before = $node->safe_psql('postgres', 'SELECT count(*) FROM up3_down');
	is(job_info($node, $job)->{status}, 'backfilling', 'legacy: job is mid-backfill');
	my $offset = -s $node->logfile;
	kill_and_wait_restart($node, $blocked->{ $actors[1] } // 0, 'legacy');
	finish_bg($f);
	finish_bg($w);

	# the launcher relaunches it, and the recovery check fails it
	is(wait_status($node, $job, [ 'finished', 'failed' ]), 'failed',
		'legacy: the relaunched job failed');
	ok(wait_no_workers($node, $job), 'legacy: no worker is left');
	is_deeply(job_state($node, $job), $before, 'legacy: state is the one committed before the crash');
	my ($expected, $actor) = legacy_message($node, $job);
	ok(defined $expected, "legacy: actor $actor is the first unfinished one");
	like($expected, qr/current_pos=Some\(OwnedRow\(\[Some\(Int64\(\d+\)\)\]\)\), row_count=[1-9]\d*$/,
		'legacy: it has a position and has read rows');
	my $info = job_info($node, $job);
	is($info->{last_error}, $expected, 'legacy: last_error is exactly the message');
	is($info->{upstream_table_id}, $node->safe_psql('postgres', "SELECT 'up3'::regclass::oid"),
		'legacy: the message names the upstream oid');
	ok(wait_until(10, sub { slurp_file($node->logfile, $offset) =~ /ERROR:  \Q$expected\E\n/ }),
		'legacy: the server log has the ERROR')
	  or diag(join('', grep { /ERROR/ } split /^/, slurp_file($node->logfile, $offset)));
	my ($state, $msg) = psql_error($node, "SELECT backfill.wait_job($job)");
	is($state, '55000', 'legacy: wait_job raises SQLSTATE 55000');
	is($msg, $expected, 'legacy: wait_job raises the message');
	is(verify_rows($node, $job), '', 'legacy: verify_job is empty');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM up3_down'), $down_before,
		'legacy: downstream holds what the committed barriers wrote');

	# recreate it and run it to the end in the background
	my $new = $node->safe_psql('postgres', "SELECT backfill.recreate_job($job)");
	isnt($new, $job, 'legacy: recreate_job made a new job');
	is(job_info($node, $job)->{status}, 'cancelled', 'legacy: the old job is cancelled');
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($new, NULL)");
	$w = start_writers($node, $script, 5);
	$node->safe_psql('postgres', "SELECT backfill.start_job($new)");
	$node->safe_psql('postgres', "SELECT backfill.wait_job($new)");
	pass('legacy: wait_job of the recreated job returned');
	is(finish_bg($w), 0, 'legacy: writers ran without errors') or diag($w->{err});
	check_finished($new, 'up3', 'up3_down', 'legacy recreated');
	note sprintf('legacy: done at %.1fs', time - $t0);
}

######################################################################
# 4. a retried error is logged, not raised
######################################################################
{
	# immutable by declaration, as a filter must be; it fails the first
	# time a worker sees row 500 only (a sequence is not rolled back;
	# create_job counts the rows that pass it too)
	$node->safe_psql(
		'postgres', q{
CREATE SEQUENCE flaky_seen;
CREATE FUNCTION flaky_filter(id bigint) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF id = 500 AND current_setting('application_name') LIKE 'backfill job %'
	   AND nextval('public.flaky_seen') = 1 THEN
		RAISE EXCEPTION 'injected serialization failure'
			USING ERRCODE = 'serialization_failure';
	END IF;
	RETURN true;
END $$;
});
	make_upstream($node, 'up4', 1, 2_000);
	my $offset = -s $node->logfile;
	my $job = $node->safe_psql('postgres',
		"SELECT backfill.create_job('up4_down', 'up4', 'arrangement', filter => 'public.flaky_filter(id)')");
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
	pass('retry: wait_job returned');
	cmp_ok($node->safe_psql('postgres', 'SELECT last_value FROM flaky_seen'), '>=', 2,
		'retry: the filter failed once and saw row 500 again');
	check_finished($job, 'up4', 'up4_down', 'retry');
	my $log = slurp_file($node->logfile, $offset);
	like($log, qr/LOG:  injected serialization failure\n/, 'retry: the server log has the failure as LOG');
	unlike($log, qr/ERROR:  injected serialization failure/, '... and not as an ERROR');
	note sprintf('retry: done at %.1fs', time - $t0);
}

no_crash_in_log($node, 1);

$node->stop;
note sprintf('total %.1fs', time - $t0);
done_testing();
