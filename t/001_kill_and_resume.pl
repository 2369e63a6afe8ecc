
# Copyright (c) backfill authors
#
# t/001_kill_and_resume.pl: an arrangement job survives crashes.
#
# A job backfills a 200k-row table with 4 actors (chunk_size 256,
# barrier_interval_ms 100; range vnodes, so each actor reads its own range
# of keys) while pgbench writes to the upstream (inserts,
# updates, deletes and key changes on random keys).  Three times, partway
# through, the backend running run_job is killed with SIGKILL, which makes
# the postmaster kill every backend and reinitialize; then, on a second
# table, the postmaster itself is stopped in immediate mode.
#
# Where the crash hits: a backfill barrier here reads some 40k rows in its
# 100 ms, faster than any polling from the test.  So once the committed
# row_count has reached the target, a third session locks the job's state
# table (freeze_job() in BackfillTestLib.pm); the runner's next barrier reads
# its chunks into the downstream as usual and then blocks where it writes its
# state, before committing.  The crash then always loses a whole barrier's
# reads, and the committed state is known exactly.  After every crash:
#
# - the committed progress is there, exactly: status 'backfilling',
#   row_count > 0 and equal to the one committed before, same epoch, and a
#   job_state() equal, vnode by vnode, to the one read before the crash;
# - verify_job() is empty: the downstream holds exactly what the committed
#   barriers wrote (the barrier in flight was rolled back with its inserts);
# - the first resumed barrier, with barrier_interval_ms = 0, reads at most
#   one chunk per actor, from the committed positions on (see "What a
#   resumed barrier re-reads" below), and leaves the downstream consistent;
#
# and at the end run_job finishes the job while the writers go on, after
# which the downstream equals the upstream (by verify_job, by count and by a
# plain EXCEPT ALL of the two tables), and stays equal under more writes.

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
my $chunk_size = 256;
my $parallelism = 4;

my $node = backfill_node('main');

# A table of $n rows and an arrangement job on it; returns the job id.
sub setup_job
{
	my ($table, $n) = @_;
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $table (id bigint PRIMARY KEY, a int, b text);
INSERT INTO $table SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $n) g;
VACUUM ANALYZE $table;
});
	# a rate limit keeps each barrier to a few thousand rows, so that the
	# crash points below are reached mid-backfill however fast the machine
	return $node->safe_psql('postgres',
		"SELECT backfill.create_job('${table}_down', '$table', 'arrangement', NULL, $parallelism, $chunk_size, 20000)"
	);
}



# Run the job in the background with writers until its committed row_count
# reaches $target, crash ('kill': SIGKILL of the run_job backend;
# 'immediate': immediate stop of the postmaster, then start), and check what
# the restarted server has.
sub crash_and_check
{
	my ($table, $job, $script, $target, $how, $label) = @_;

	my $w = start_writers($node, $script, 60);
	my $r = start_run_job($node, $job);

	my $pid = runner_pid($node, $r);
	like($pid, qr/^\d+$/, "$label: found the run_job backend")
	  or diag("run_job stderr: $r->{err}");

	# let it reach $target, then freeze its committed progress; it blocks
	# at the end of its next barrier, a barrier's worth of reads in flight
	my $f = freeze_job($node, $job, $target);
	if (!ok(wait_blocked_on_state($node, $job, $pid),
		"$label: run_job is blocked before committing a barrier"))
	{
		diag("run_job stderr: $r->{err}\nfreeze stderr: $f->{err}");
		$_->{h}->kill_kill for ($r, $f, $w);
		return;
	}
	my $info_before = job_info($node, $job);
	is($info_before->{status}, 'backfilling',
		"$label: job is still backfilling when it is crashed");
	cmp_ok($info_before->{row_count}, '>=', $target,
		"$label: job has reached $info_before->{row_count} rows (target $target)");

	# the committed state, which cannot change until the crash
	my $before = job_state($node, $job);

	if ($how eq 'kill')
	{
		kill_backend_and_wait($node, $pid);
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}

	isnt(finish_bg($r), 0, "$label: the interrupted run_job failed");
	like(
		$r->{err},
		qr/server closed the connection unexpectedly|terminating connection/,
		"$label: run_job lost its connection");
	finish_bg($f);
	finish_bg($w);    # the writers lost their connections too; nothing writes now
	note "$label: writers committed " . writer_transactions($w)
	  . " transactions before the crash, leaving "
	  . $node->safe_psql('postgres', "SELECT count(*) FROM backfill.changes_$job")
	  . " captured keys pending";

	my $info = job_info($node, $job);
	is($info->{status}, 'backfilling', "$label: status after the crash");
	cmp_ok($info->{row_count}, '>', 0,
		"$label: committed row_count survived the crash");
	is($info->{row_count}, $info_before->{row_count},
		"$label: row_count is the one committed before the crash");
	is($info->{epoch}, $info_before->{epoch},
		"$label: epoch is the one committed before the crash");

	# exactly the committed state: nothing lost, and nothing of the barrier
	# in flight
	my $after = job_state($node, $job);
	is_deeply($after, $before, "$label: state is the one committed before the crash");
	my @bad = compare_states($before, $after);
	ok(!@bad, "$label: no vnode lost committed progress")
	  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));

	is(verify_rows($node, $job), '',
		"$label: downstream holds exactly what the committed barriers wrote");

	# What a resumed barrier re-reads.  The barrier in flight at the crash is
	# lost with everything it read; run_job can only re-read it if it starts
	# from the committed positions.  What is soundly measurable: with
	# barrier_interval_ms = 0 a barrier reads one chunk per set of an actor's
	# unfinished vnodes that share a position (one set per actor in
	# practice), so the first resumed barrier adds at most that many times
	# chunk_size to the committed row_count, its positions are at or after
	# the committed ones, and the downstream is still consistent.  Had the
	# job restarted from scratch or from stale positions, the count would
	# not continue from the committed one, or the downstream would hold
	# duplicates or rows above the positions.
	my $groups = state_groups($after);
	$node->safe_psql('postgres',
		"SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($job, 1)");
	my $info1 = job_info($node, $job);
	my $state1 = job_state($node, $job);
	my $delta = $info1->{row_count} - $info->{row_count};
	cmp_ok($delta, '>=', 0,
		"$label: first resumed barrier continues from the committed row_count");
	cmp_ok($delta, '<=', $groups * $chunk_size,
		"$label: first resumed barrier read at most one chunk per actor ($groups groups)"
	);
	@bad = compare_states($after, $state1);
	ok(!@bad, "$label: first resumed barrier starts from the committed positions")
	  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));
	is(verify_rows($node, $job), '', "$label: consistent after the first resumed barrier");
	note sprintf("%s: committed %d rows before, %d after the crash, %d after one barrier (%.1fs)",
		$label, $info_before->{row_count}, $info->{row_count},
		$info1->{row_count}, time - $t0);
}

# Resume to the end while the writers go on, then check the result, then
# write more and check that the finished job keeps up.
sub finish_and_check
{
	my ($table, $job, $script, $label) = @_;

	my $w = start_writers($node, $script, 4);
	$node->safe_psql('postgres', "CALL backfill.run_job($job)");
	is(finish_bg($w), 0, "$label: writers ran without errors during the resume")
	  or diag($w->{err});
	cmp_ok(writer_transactions($w), '>', 0, "$label: writers did write");

	my $info = job_info($node, $job);
	is($info->{status}, 'finished', "$label: job finished after the resume");
	is($node->safe_psql('postgres', "SELECT progress FROM backfill.jobs WHERE job_id = $job"),
		'100%', "$label: backfill.jobs says 100%");
	is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.ddl_progress WHERE ddl_id = $job"),
		0, "$label: ddl_progress no longer lists it");
	is(verify_rows($node, $job), '', "$label: verify_job is empty after the resume");
	is( $node->safe_psql('postgres', "SELECT count(*) FROM ${table}_down"),
		$node->safe_psql('postgres', "SELECT count(*) FROM $table"),
		"$label: downstream has as many rows as the upstream");
	is(table_diff($node, $table, "${table}_down"), 0, "$label: downstream equals the upstream (EXCEPT ALL)");

	$w = start_writers($node, $script, 2);
	is(finish_bg($w), 0, "$label: writers after the finish ran without errors")
	  or diag($w->{err});
	is(verify_rows($node, $job), '', "$label: verify_job stays empty under writes once finished");
	is(table_diff($node, $table, "${table}_down"), 0, "$label: downstream still equals the upstream");
}

# 1. kill -9 of the run_job backend, three times, then resume to the end
my $n1 = 200_000;
my $job1 = setup_job('up', $n1);
# a new job's vnodes are ranges of keys: each actor reads its own range only
is($node->safe_psql('postgres', "SELECT vnode_mapping FROM backfill.job WHERE job_id = $job1"),
	'range', 'the job has range vnodes');
my $script1 = writer_script($node, 'up');
# The kills happen once the committed row_count has reached 10%, 35% and
# 60% of the table.  A barrier of 100 ms reads some 40k rows here, so each
# kill comes one or two barriers after the previous resume.  Should a kill's
# target already be passed, the next barrier is the one frozen and killed.
my $kills = 0;
for my $fraction (0.1, 0.35, 0.6)
{
	my $committed = job_info($node, $job1)->{row_count};
	my $target = int($n1 * $fraction);
	$target = $committed + 1 if $target <= $committed;
	$kills++;
	crash_and_check('up', $job1, $script1, $target, 'kill', "kill $kills");
}
finish_and_check('up', $job1, $script1, 'after kills');

# 2. immediate stop of the postmaster mid-backfill, then resume to the end
my $n2 = 100_000;
my $job2 = setup_job('up2', $n2);
my $script2 = writer_script($node, 'up2');
crash_and_check('up2', $job2, $script2, int($n2 * 0.4), 'immediate',
	'immediate stop');
finish_and_check('up2', $job2, $script2, 'after immediate stop');

# verify_job() is what most checks above rely on: make sure it does see a
# damaged downstream (a changed row, a missing one, an extra one).
$node->safe_psql(
	'postgres', q{
UPDATE up_down SET a = a + 1 WHERE id = (SELECT min(id) FROM up_down);
DELETE FROM up_down WHERE id = (SELECT max(id) FROM up_down);
INSERT INTO up_down VALUES (-1, 0, 'not upstream');
});
my @problems = split /\n/, verify_rows($node, $job1);
is(scalar(@problems), 3, 'verify_job reports a damaged downstream');
like($problems[0], qr/^\(-1\) extra$/, 'verify_job reports an extra row');
like($problems[1], qr/^\(\d+\) different$/, 'verify_job reports a different row');
like($problems[2], qr/^\(\d+\) missing$/, 'verify_job reports a missing row');

no_crash_in_log($node, 1);

$node->stop;
note sprintf('total %.1fs', time - $t0);
done_testing();
