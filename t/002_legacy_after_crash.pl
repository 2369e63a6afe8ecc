
# Copyright (c) backfill authors
#
# t/002_legacy_after_crash.pl: a legacy no-shuffle job cannot resume.
#
# A no_shuffle job (2 actors) backfills a 100k-row table while pgbench
# writes to it; partway through, the backend running run_job is killed with
# SIGKILL (the postmaster reinitializes).  Then:
#
# - run_job fails with SQLSTATE 55000 and exactly RisingWave's message, built
#   here from the catalogs: the upstream's oid, the job's fragment_id, and
#   the actor_id, current_pos (RisingWave's {:?} of it,
#   Some(OwnedRow([Some(Int64(N))]))) and row_count of its first unfinished
#   actor; the DETAIL has the position as a row literal, (N);
# - the job is 'failed' with that message as last_error, and the server log
#   has the same ERROR;
# - the downstream is left as the last committed barrier wrote it:
#   verify_job() is empty, and the failed call changed neither the state nor
#   the downstream;
# - a second run_job fails the same way;
# - recreate_job() cancels it and creates a new job, whose job, fragment and
#   actor ids follow the crashed job's (the crash skipped none), and that
#   run_job finishes (writers still going), consistent with the upstream.

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
my $n = 100_000;
my $node = backfill_node('legacy');

$node->safe_psql(
	'postgres', qq{
CREATE TABLE up (id bigint PRIMARY KEY, a int, b text);
INSERT INTO up SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $n) g;
VACUUM ANALYZE up;
});
my $script = writer_script($node, 'up');

# creating a legacy job warns
my ($job, $err);
$node->psql(
	'postgres',
	# the rate limit keeps barriers small, so the job is still mid-backfill
	# when it is frozen, however fast the machine
	"SELECT backfill.create_job('legacy_down', 'up', 'no_shuffle', NULL, 2, 256, 20000)",
	stdout => \$job,
	stderr => \$err,
	on_error_die => 1);
like($job, qr/^\d+$/, 'legacy job created');
like(
	$err,
	qr/WARNING:  backfill job $job uses the legacy no-shuffle backfill, which cannot resume after an interruption/,
	'creating a no_shuffle job warns');

# run it with writers, freeze it at 20% and kill it with a barrier in flight
# (see freeze_job() in BackfillTestLib.pm)
my $w = start_writers($node, $script, 60);
my $r = start_run_job($node, $job);
my $pid = runner_pid($node, $r);
like($pid, qr/^\d+$/, 'found the run_job backend');
my $f = freeze_job($node, $job, int($n * 0.2));
ok(wait_blocked_on_state($node, $job, $pid),
	'run_job is blocked before committing a barrier')
  or BAIL_OUT("run_job did not block: $r->{err} $f->{err}");
my $before = job_state($node, $job);
kill_backend_and_wait($node, $pid);
isnt(finish_bg($r), 0, 'the interrupted run_job failed');
finish_bg($f);
finish_bg($w);
note 'writers committed ' . writer_transactions($w) . ' transactions before the crash';

my $info = job_info($node, $job);
is($info->{status}, 'backfilling', 'status after the crash, before any restart');
cmp_ok($info->{row_count}, '>', 0, 'committed progress survived the crash');
my $state = job_state($node, $job);
is_deeply($state, $before, 'state is the one committed before the crash');
is(verify_rows($node, $job), '', 'downstream holds what the committed barriers wrote');

# The message the restart must fail with, from the catalogs: the first
# actor, by actor_id, whose state (that of its first vnode) is unfinished.
my $oid = $node->safe_psql('postgres', "SELECT 'up'::regclass::oid");
is($info->{upstream_table_id}, $oid, 'backfill.jobs shows the upstream oid');
my @actors = map { [ split /\|/ ] } split /\n/,
  $node->safe_psql('postgres',
	"SELECT actor_id, vnode_start FROM backfill.actor WHERE job_id = $job ORDER BY actor_id"
  );
is(scalar @actors, 2, 'the job has 2 actors');
my ($actor, $vnode_start) = @{ (grep { !$state->{ $_->[1] }{finished} } @actors)[0] };
ok(defined $actor, "actor $actor is the first unfinished one");
my $first = $state->{$vnode_start};
my $expected =
    'legacy no-shuffle backfill recovered unfinished progress; '
  . 'cancel and recreate the streaming job. '
  . "upstream_table_id=$oid, fragment_id=$info->{fragment_id}, "
  . "actor_id=$actor, current_pos=Some(OwnedRow([Some(Int64($first->{pos}))])), "
  . "row_count=$first->{rows}";
like($first->{pos_text}, qr/^\(\d+\)$/, "the actor has a position ($first->{pos_text})");
is(rw_debug_pos($node, $job, $first->{pos_text}), "Some(OwnedRow([Some(Int64($first->{pos}))]))",
	'the position as RisingWave prints it');
cmp_ok($first->{rows}, '>', 0, "the actor has read rows ($first->{rows})");

my $down_count = $node->safe_psql('postgres', 'SELECT count(*) FROM legacy_down');

# A restart, twice: both fail the same way, and change nothing.
for my $attempt (1, 2)
{
	my $offset = -s $node->logfile;
	my ($out, $stderr);
	my $rc = $node->psql(
		'postgres',
		"\\set VERBOSITY verbose\nCALL backfill.run_job($job)",
		stdout => \$out,
		stderr => \$stderr);
	isnt($rc, 0, "run $attempt after the crash fails");
	like(
		$stderr,
		qr/ERROR:  55000: legacy no-shuffle backfill recovered unfinished progress; cancel and recreate the streaming job\. upstream_table_id=$oid, fragment_id=$info->{fragment_id}, actor_id=$actor, current_pos=Some\(OwnedRow\(\[Some\(Int64\(\d+\)\)\]\)\), row_count=\d+\n/,
		"run $attempt: SQLSTATE 55000 and the legacy message");
	like(
		$stderr,
		qr/DETAIL:  Backfill job $job copies table public\.up with the legacy no-shuffle backfill, which cannot resume an interrupted backfill\. Actor $actor stopped at position \Q$first->{pos_text}\E\.\n/,
		"run $attempt: the DETAIL has the position as a row literal");
	my ($message) = $stderr =~ /ERROR:  55000: (.*)$/m;
	is($message, $expected, "run $attempt: the message is exactly the expected one");

	my $after = job_info($node, $job);
	is($after->{status}, 'failed', "run $attempt: status is failed");
	is($after->{last_error}, $expected, "run $attempt: last_error is the message");

	my $log = slurp_file($node->logfile, $offset);
	like($log, qr/ERROR:  \Q$expected\E\n/, "run $attempt: the server log has the ERROR");

	is(verify_rows($node, $job), '', "run $attempt: verify_job is still empty");
	is_deeply(job_state($node, $job), $before, "run $attempt: state unchanged");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM legacy_down'),
		$down_count, "run $attempt: downstream unchanged");
}

# verify_job() of the failed job compares up to the positions: make sure it
# does see a damaged downstream there (recreate_job drops it anyway).  The
# row taken away is one no writer touched since the last barrier: the keys
# in the job's change table are pending, and verify_job leaves them out.
my $changes = $node->safe_psql('postgres', "SELECT change_table FROM backfill.job WHERE job_id = $job");
$node->safe_psql(
	'postgres', qq{
DELETE FROM legacy_down WHERE id = (SELECT min(d.id) FROM legacy_down d
                                     WHERE NOT EXISTS (SELECT FROM $changes c WHERE c.id = d.id));
INSERT INTO legacy_down VALUES (-1, 0, 'not upstream');
});
my @problems = split /\n/, verify_rows($node, $job);
is(scalar(@problems), 2, 'verify_job reports a damaged downstream of the failed job');
like($problems[0], qr/^\(-1\) extra$/, 'verify_job reports an extra row');
like($problems[1], qr/^\(\d+\) missing$/, 'verify_job reports a missing row');

# recreate_job: the old job is cancelled, a new one with the same definition
# runs to the end while the writers go on.
my $new;
$node->psql(
	'postgres', "SELECT backfill.recreate_job($job)",
	stdout => \$new,
	stderr => \$err,
	on_error_die => 1);
like($new, qr/^\d+$/, 'recreate_job returns a job id');
isnt($new, $job, 'recreate_job made a new job');
# ids taken before the crash are not skipped by 32 after it
is($new, $job + 1, 'the new job id follows the crashed one');
is( $node->safe_psql('postgres',
		"SELECT fragment_id - $info->{fragment_id} || ' ' || "
		  . "(SELECT string_agg((actor_id - (SELECT max(actor_id) FROM backfill.actor WHERE job_id = $job))::text, ',' ORDER BY actor_id) "
		  . "   FROM backfill.actor WHERE job_id = $new) FROM backfill.jobs WHERE job_id = $new"),
	'1 1,2',
	'the new fragment and actor ids follow the crashed ones');
is(job_info($node, $job)->{status}, 'cancelled', 'the old job is cancelled');
my $new_info = job_info($node, $new);
is($new_info->{kind}, 'no_shuffle', 'the new job is of the same kind');
is($new_info->{parallelism}, 2, 'the new job has the same parallelism');
is($node->safe_psql('postgres', "SELECT downstream::text FROM backfill.jobs WHERE job_id = $new"),
	'legacy_down', 'the new job has the same downstream name');

my $rc = $node->psql('postgres', "CALL backfill.run_job($job)", stderr => \$err);
isnt($rc, 0, 'the cancelled job cannot run');
like($err, qr/backfill job $job has been cancelled/, 'the cancelled job says so');

$w = start_writers($node, $script, 4);
$node->safe_psql('postgres', "CALL backfill.run_job($new)");
is(finish_bg($w), 0, 'writers ran without errors during the new job')
  or diag($w->{err});
cmp_ok(writer_transactions($w), '>', 0, 'writers did write');
is(job_info($node, $new)->{status}, 'finished', 'the new job finished');
is(verify_rows($node, $new), '', 'verify_job of the new job is empty');
is( $node->safe_psql('postgres', 'SELECT count(*) FROM legacy_down'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM up'),
	'downstream has as many rows as the upstream');
is( $node->safe_psql('postgres',
		'SELECT count(*) FROM ((TABLE up EXCEPT ALL TABLE legacy_down) '
		  . 'UNION ALL (TABLE legacy_down EXCEPT ALL TABLE up)) x'),
	0,
	'downstream equals the upstream (EXCEPT ALL)');

no_crash_in_log($node, 1);

$node->stop;
note sprintf('total %.1fs', time - $t0);
done_testing();

