
# Copyright (c) backfill authors
#
# t/004_reschedule_rate_limit.pl: reschedule and rate limits of jobs that
# run in background workers, under writes.
#
# 1. An arrangement job is rescheduled 4 -> 2 -> 3 actors mid-backfill: each
#    time the actors get new ids (none of the previous set), the vnodes are
#    split again in contiguous even ranges covering 0..255 exactly, the
#    workers run on the new actors (and only those), no vnode's progress
#    goes back, verify_job is empty; the job then finishes and its
#    downstream equals the upstream.
# 2. A legacy no_shuffle job cannot be rescheduled mid-backfill: refused
#    with RisingWave's message and SQLSTATE 55000, its actors and workers
#    unchanged; it goes on, finishes, and may be rescheduled then.
# 3. Rate limits: the snapshot rate measured from the committed row_count is
#    within 20% of the limit times the actors, for two limits; with 0 the
#    positions and row counts stay still for several seconds while the
#    actors keep committing barriers, and changes to keys below the
#    positions still reach the downstream; with NULL the job finishes.

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
my $node = worker_node('resched');




sub bad_list
{
	my @bad = @_;
	return join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]);
}

# Check the actors of a job after a reschedule to $n: new ids, even
# contiguous ranges over 0..255; returns the new actor ids.
sub check_actors
{
	my ($job, $n, $old, $label) = @_;
	my $actors = actor_rows($node, $job);
	my @ids = map { $_->{actor_id} } @$actors;
	is(scalar @ids, $n, "$label: $n actors");
	my %old = map { $_ => 1 } @$old;
	is(join(',', grep { $old{$_} } @ids), '', "$label: every actor id is new");
	is( join(' ', map { "$_->{vnode_start}-$_->{vnode_end}" } @$actors),
		join(' ', map { int(256 * $_ / $n) . '-' . (int(256 * ($_ + 1) / $n) - 1) } 0 .. $n - 1),
		"$label: vnodes in even contiguous ranges over 0..255");
	my $state = job_state($node, $job);
	is(scalar(keys %$state), 256, "$label: job_state has the 256 vnodes");
	my @wrong;
	for my $a (@$actors)
	{
		push @wrong, grep { ($state->{$_}{actor} // '') ne $a->{actor_id} }
		  $a->{vnode_start} .. $a->{vnode_end};
	}
	is(scalar @wrong, 0, "$label: job_state gives each vnode to its new actor");
	is($node->safe_psql('postgres', "SELECT parallelism FROM backfill.jobs WHERE job_id = $job"),
		$n, "$label: parallelism is $n");
	return @ids;
}

######################################################################
# 1. arrangement: 4 -> 2 -> 3 actors mid-backfill
######################################################################
{
	my $n = 100_000;
	my $script = make_upstream($node, 'r1', 1, $n);
	my $job = $node->safe_psql('postgres',
		"SELECT backfill.create_job('r1_down', 'r1', 'arrangement', NULL, 4, 256, 2500)");
	my @actors = map { $_->{actor_id} } @{ actor_rows($node, $job) };
	my $w = start_writers($node, $script, 10);
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	ok(wait_workers($node, $job, @actors), 'reschedule: 4 workers run');

	my $prev_state = job_state($node, $job);
	for my $step ([ 2, 0.2 ], [ 3, 0.45 ])
	{
		my ($p, $fraction) = @$step;
		my $label = "reschedule to $p";
		my $r = wait_rows($node, $job, int($n * $fraction));
		like($r, qr/^backfilling \d+$/, "$label: job is mid-backfill ($r)");
		my $before = job_state($node, $job);
		my @bad = compare_states($prev_state, $before);
		ok(!@bad, "$label: no vnode went back since the last step") or diag(bad_list(@bad));
		$node->safe_psql('postgres', "SELECT backfill.reschedule($job, $p)");
		my $after = job_state($node, $job);
		@bad = compare_states($before, $after);
		ok(!@bad, "$label: no vnode's progress went back") or diag(bad_list(@bad));
		my @new = check_actors($job, $p, \@actors, $label);
		ok(wait_workers($node, $job, @new), "$label: workers run on the new actors, and only on them");
		is(job_info($node, $job)->{status}, 'backfilling', "$label: still backfilling");
		is(verify_rows($node, $job), '', "$label: verify_job is empty");
		@actors = @new;
		$prev_state = $after;
	}

	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
	pass('reschedule: wait_job returned');
	my @bad = compare_states($prev_state, job_state($node, $job));
	ok(!@bad, 'reschedule: no vnode went back until the end') or diag(bad_list(@bad));
	is(job_info($node, $job)->{status}, 'finished', 'reschedule: job finished');
	ok(wait_no_workers($node, $job), 'reschedule: no worker is left');
	is(verify_rows($node, $job), '', 'reschedule: verify_job is empty');
	is(finish_bg($w), 0, 'reschedule: writers ran without errors') or diag($w->{err});
	is(table_diff($node, 'r1', 'r1_down'), 0, 'reschedule: downstream equals the upstream (EXCEPT ALL)');
	note sprintf('reschedule: done at %.1fs', time - $t0);
}

######################################################################
# 2. legacy: a reschedule mid-backfill is refused, as in RisingWave
######################################################################
{
	my $n = 60_000;
	my $script = make_upstream($node, 'r2', 1, $n);
	my $job = $node->safe_psql('postgres',
		"SET client_min_messages = error; "
		  . "SELECT backfill.create_job('r2_down', 'r2', 'no_shuffle', NULL, 2, 256, 2000)");
	my @old = map { $_->{actor_id} } @{ actor_rows($node, $job) };
	my $w = start_writers($node, $script, 4);
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	ok(wait_workers($node, $job, @old), 'legacy reschedule: workers run');
	like(wait_rows($node, $job, int($n * 0.15)), qr/^backfilling \d+$/,
		'legacy reschedule: job is mid-backfill');
	my $workers_before = job_workers($node, $job);
	my ($state, $msg, $err) = psql_error($node, "SELECT backfill.reschedule($job, 3)");
	is($state, '55000', 'legacy reschedule: refused with SQLSTATE 55000');
	is($msg, "Cannot alter the job $job because it is blocked by creating unreschedulable backfill jobs",
		"legacy reschedule: refused with RisingWave's message");
	is_deeply([ map { $_->{actor_id} } @{ actor_rows($node, $job) } ],
		\@old, 'legacy reschedule: the actors are the same');
	is_deeply(job_workers($node, $job), $workers_before,
		'legacy reschedule: the same workers still run');
	is(job_info($node, $job)->{status}, 'backfilling', 'legacy reschedule: the job goes on');

	# it finishes, and then it may be rescheduled
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
	is(job_info($node, $job)->{status}, 'finished', 'legacy reschedule: the job finished');
	$node->safe_psql('postgres', "SELECT backfill.reschedule($job, 3)");
	is(scalar @{ actor_rows($node, $job) }, 3, 'legacy reschedule: a finished job is rescheduled');
	finish_bg($w);
	is(verify_rows($node, $job), '', 'legacy reschedule: verify_job is empty');
	note sprintf('legacy reschedule: done at %.1fs', time - $t0);
}

######################################################################
# 3. rate limits
######################################################################
{
	# keys -500..-1 as well: the writers never touch them, and the snapshot
	# reads them first, so they are soon below every position
	my $script = make_upstream($node, 'r3', -500, 150_000);
	$node->safe_psql('postgres', 'DELETE FROM r3 WHERE id = 0');
	my $job = $node->safe_psql('postgres',
		"SELECT backfill.create_job('r3_down', 'r3', 'arrangement', NULL, 2, 64, 300)");
	my $w = start_writers($node, $script, 16);
	$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
	ok($node->poll_query_until('postgres',
			"SELECT row_count > 0 FROM backfill.jobs WHERE job_id = $job"),
		'rate: the job reads');

	my $rate = $node->safe_psql('postgres', "SELECT round(measure_rate($job, 6))");
	note "rate: 300 rows/s per actor, 2 actors: measured $rate rows/s";
	ok($rate >= 480 && $rate <= 720, "rate: 300 per actor gives 600 rows/s +-20% ($rate)");

	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, 150)");
	ok(wait_epoch_past($node, $job, 2), 'rate: barriers after the change');
	$rate = $node->safe_psql('postgres', "SELECT round(measure_rate($job, 6))");
	note "rate: 150 rows/s per actor, 2 actors: measured $rate rows/s";
	ok($rate >= 240 && $rate <= 360, "rate: 150 per actor gives 300 rows/s +-20% ($rate)");
	is(finish_bg($w), 0, 'rate: writers ran without errors') or diag($w->{err});
	is(job_info($node, $job)->{status}, 'backfilling', 'rate: still backfilling');

	# paused
	$w = start_writers($node, $script, 5);
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, 0)");
	ok(wait_epoch_past($node, $job, 2), 'pause: barriers after the change');
	my $state0 = job_state($node, $job);
	my $rows0 = job_info($node, $job)->{row_count};
	my $actors0 = actor_rows($node, $job);

	# changes below the positions: an update, a delete, a key change, an insert
	is( $node->safe_psql(
			'postgres', qq{
SELECT count(*) FROM (VALUES (-7), (-8), (-9), (-100009), (-200000)) k(id)
  JOIN backfill.job_state($job) s ON s.vnode = backfill.vnode(k.id::bigint)
 WHERE s.current_pos IS NOT NULL AND k.id < trim(both '()' from s.current_pos)::bigint}),
		5, 'pause: the keys changed are below their vnodes\' positions');
	$node->safe_psql(
		'postgres', q{
UPDATE r3 SET b = 'changed while paused' WHERE id = -7;
DELETE FROM r3 WHERE id = -8;
UPDATE r3 SET id = -100009, b = 'moved while paused' WHERE id = -9;
INSERT INTO r3 VALUES (-200000, 1, 'inserted while paused');
});
	# count the rounds in which every actor committed a barrier, for 3 s
	my $tp = time;
	my $barriers = 0;
	while (time - $tp < 3 || $barriers < 5)
	{
		last unless wait_epoch_past($node, $job, 1, 30);
		$barriers++;
	}
	my $elapsed = time - $tp;
	cmp_ok($barriers, '>=', 5, sprintf('pause: the actors committed barriers (%d rounds in %.1fs)', $barriers, $elapsed));
	# a paused barrier still lasts barrier_interval_ms (200 ms): it must
	# not spin, committing barrier after barrier
	cmp_ok($barriers, '<=', int($elapsed / 0.2) + 3,
		sprintf('pause: paused barriers last the barrier interval (at most %d rounds in %.1fs)',
			int($elapsed / 0.2) + 3, $elapsed));
	my $actors1 = actor_rows($node, $job);
	ok((grep { $actors1->[$_]{epoch} > $actors0->[$_]{epoch} } 0 .. $#$actors1) == @$actors1,
		'pause: every actor\'s epoch went on');
	is_deeply(job_state($node, $job), $state0, 'pause: no position moved');
	is(job_info($node, $job)->{row_count}, $rows0, 'pause: row_count stayed still');
	is( $node->safe_psql(
			'postgres', q{
SELECT count(*) FROM (
  (SELECT * FROM r3 WHERE id IN (-7, -8, -9, -100009, -200000)
   EXCEPT ALL SELECT * FROM r3_down WHERE id IN (-7, -8, -9, -100009, -200000))
  UNION ALL
  (SELECT * FROM r3_down WHERE id IN (-7, -8, -9, -100009, -200000)
   EXCEPT ALL SELECT * FROM r3 WHERE id IN (-7, -8, -9, -100009, -200000))) x}),
		0, 'pause: the changes below the positions reached the downstream');
	is($node->safe_psql('postgres',
			"SELECT string_agg(id || ':' || b, ',' ORDER BY id) FROM r3_down WHERE id IN (-7, -8, -9, -100009, -200000)"),
		'-200000:inserted while paused,-100009:moved while paused,-7:changed while paused',
		'pause: downstream has the update, the key change and the insert, not the deleted rows');
	is(verify_rows($node, $job), '', 'pause: verify_job is empty');
	is(finish_bg($w), 0, 'pause: writers ran without errors') or diag($w->{err});

	# unlimited: it finishes
	$w = start_writers($node, $script, 3);
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
	pass('unlimited: wait_job returned');
	is(finish_bg($w), 0, 'unlimited: writers ran without errors') or diag($w->{err});
	is(job_info($node, $job)->{status}, 'finished', 'unlimited: job finished');
	is(verify_rows($node, $job), '', 'unlimited: verify_job is empty');
	is(table_diff($node, 'r3', 'r3_down'), 0, 'unlimited: downstream equals the upstream (EXCEPT ALL)');
	note sprintf('rate: done at %.1fs', time - $t0);
}

no_crash_in_log($node);

$node->stop;
note sprintf('total %.1fs', time - $t0);
done_testing();
