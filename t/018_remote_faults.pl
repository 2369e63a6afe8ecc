
# Copyright (c) backfill authors
#
# Faults during a copy from another server by four background workers while
# pgbench writes on the source: kill -9 of the local server, the source's
# backends of the job terminated, kill -9 of one of them (the source restarts
# all of its backends), the source restarted after being down for a while.
# After each the job resumes, re-reading at most one split per actor.  Then,
# while the job's worker follows the source after the finish, a restart of
# the source under writes and kill -9 of the source's backend serving the
# worker.  In the end the downstream equals the source both ways, verify_job
# is empty, and nothing is left on the source after drop_job.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $source = remote_source('source', 120000, q{
restart_after_crash = on
});

my $local = worker_node('local');
import_remote($local, $source);

sub differences { return remote_differences($local, $_[0]); }

# the splits started and not finished, as committed: those a restart reads again
sub splits_to_reread
{
	my ($job) = @_;
	return $local->safe_psql('postgres', qq{
SELECT count(*) || ' ' || coalesce(sum(row_count), 0) FROM backfill.state_$job
 WHERE NOT backfill_finished AND row_count > 0});
}

my $script = writer_script($source, 't');
my $w = start_writers($source, $script, 60, rate => 200);

# rate limited, so that the faults come in the middle of the copy
my $job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy', 'remote.t', kind => 'cdc', parallelism => 4, "
	  . "chunk_size => 500, rate_limit => 1500)");
$local->safe_psql('postgres', "SELECT backfill.start_job($job)");
ok(wait_workers($local, $job, map { $_->{actor_id} } @{ actor_rows($local, $job) }),
	'four workers run');

# ---- kill -9 of the local server in the middle of the copy ----
like($local->safe_psql('postgres', "SELECT wait_rows($job, 40000, 120)"),
	qr/^backfilling/, 'a third of the copy done');
kill_postmaster_and_restart($local, 'local crash');
my ($reread, $rows) = split / /, splits_to_reread($job);
ok($reread <= 4, "at most one split per actor to read again ($reread splits, $rows rows)");
note("rows read again after the crash: $rows");
ok(wait_workers($local, $job, map { $_->{actor_id} } @{ actor_rows($local, $job) }),
	'the launcher starts the workers again');

# ---- the source's backends of the job terminated ----
like($local->safe_psql('postgres', "SELECT wait_rows($job, 80000, 120)"),
	qr/^backfilling/, 'two thirds of the copy done');
my $terminated = $source->safe_psql('postgres', q{
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE application_name LIKE 'backfill job %'});
ok($terminated >= 1, "terminated $terminated backends of the job on the source");

# the pid of a backend of the source that serves the job, once there is one
sub job_backend
{
	return wait_until(60, sub {
		$source->safe_psql('postgres', q{
SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'backfill job %' LIMIT 1}) });
}

# kill -9 of a backend of the source: the source restarts all of them
sub kill_job_backend
{
	my ($what) = @_;
	my $pid = job_backend();
	ok($pid, "a backend of the source serves the job $what");
	kill_backend_and_wait($source, $pid);
}

# ---- kill -9 of the source's backend serving the job ----
kill_job_backend('during the copy');

# ---- the source down for a while, then back ----
$source->stop('fast');
sleep 3;
like($local->safe_psql('postgres', "SELECT coalesce(string_agg(waiting_for, ','), '') FROM backfill.jobs WHERE job_id = $job"),
	qr/waiting for the source/, 'backfill.jobs says the job waits for the source');
$source->start;
$w = start_writers($source, $script, 20, rate => 200);

is(wait_status($local, $job, [ 'finished', 'failed' ], 180), 'finished', 'the job finished');
finish_bg($w);
is($local->safe_psql('postgres', "SELECT last_error FROM backfill.jobs WHERE job_id = $job"),
	'', 'no error recorded');
ok(wait_until(30, sub {
		$local->safe_psql('postgres', "SELECT count(*) FROM backfill.workers WHERE job_id = $job") eq '1' }),
	'a worker follows the source after the finish');
is(wait_until(90, sub { differences('copy') eq '0 0' }), 1,
	'the downstream equals the source both ways after the faults');

# ---- a restart of the source while the worker follows it, under writes ----
$w = start_writers($source, $script, 6, rate => 200);
sleep 2;
$source->restart;
finish_bg($w);
$w = start_writers($source, $script, 4, rate => 200);
finish_bg($w);
ok(writer_transactions($w) > 100, 'the source was written after its restart');
is(wait_until(90, sub { differences('copy') eq '0 0' }), 1,
	'the worker follows the source again after its restart');

# ---- kill -9 of the source's backend serving the worker ----
$w = start_writers($source, $script, 8, rate => 200);
kill_job_backend('after the finish');
finish_bg($w);
is(wait_until(90, sub { differences('copy') eq '0 0' }), 1,
	'the worker follows the source again after kill -9 of its backend there');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"),
	'0', 'verify_job is empty');
is($local->safe_psql('postgres', "SELECT status || ' ' || coalesce(last_error, '') FROM backfill.jobs WHERE job_id = $job"),
	'finished ', 'finished, no error recorded');

$local->safe_psql('postgres', "SELECT backfill.drop_job($job)");
is($source->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots) || ' ' || (SELECT count(*) FROM pg_publication)}),
	'0 0', 'no slot and no publication left on the source');

# ---- drop_job while the source is down, then a sweep ----
sub source_objects
{
	return $source->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots) || ' ' || (SELECT count(*) FROM pg_publication)});
}
$source->safe_psql('postgres', q{
CREATE TABLE small (id int PRIMARY KEY, v text);
INSERT INTO small SELECT g, 'v' || g FROM generate_series(1, 100) g;
});
$local->safe_psql('postgres', 'IMPORT FOREIGN SCHEMA public LIMIT TO (small) FROM SERVER src INTO remote');
my $gone = $local->safe_psql('postgres', "SELECT backfill.create_job('small1', 'remote.small', kind => 'cdc')");
$local->safe_psql('postgres', "CALL backfill.run_job($gone)");
is(source_objects(), '1 1', 'a job with its slot and publication on the source');
$source->stop('fast');
my ($ret, $out, $err) = $local->psql('postgres', "SELECT backfill.drop_job($gone)");
is($ret, 0, 'drop_job succeeds with the source down');
like($err, qr/WARNING:  could not drop replication slot and publication "backfill_\d+_\d+_$gone" on server "src"/,
	'and warns that it could not drop its objects there');
unlike($err, qr/password/, 'the warning shows no password');
$source->start;
is(source_objects(), '1 1', 'the slot and the publication are left on the source');
my $next = $local->safe_psql('postgres', "SELECT backfill.create_job('small2', 'remote.small', kind => 'cdc')");
$local->safe_psql('postgres', "CALL backfill.run_job($next)");
is($source->safe_psql('postgres', "SELECT string_agg(slot_name, ',') FROM pg_replication_slots"),
	$local->safe_psql('postgres', "SELECT slot_name FROM backfill.jobs WHERE job_id = $next"),
	'the next job on that server swept them: only its own slot is left');
is(source_objects(), '1 1', 'and its publication');
$local->safe_psql('postgres', "SELECT backfill.drop_job($next)");
is(source_objects(), '0 0', 'nothing left on the source');

done_testing();
