
# Copyright (c) backfill authors
#
# t/012_cdc_leftover_slot.pl: the slot of a cdc job killed between the
# commit of its final barrier and the drop of its slot does not outlive the
# next chance to drop it.
#
# A cdc job drops its replication slot right after its final barrier has
# committed, in a transaction of its own; a crash in between leaves a
# finished job with its slot, which nothing reads and which holds back the
# WAL and the vacuum of the catalogs.  The test makes that happen every
# time: with its upstream read to the end and one write since its last
# barrier, a run_job is started; its final barrier takes the slot lock (in
# its fetch) and then blocks on a downstream row that a second session holds
# FOR UPDATE, where it forwards that write.  A third session then queues for
# the slot lock (backfill._lock_slot), the second lets go, the final barrier
# commits, the third gets the slot lock, and the run waits for it before
# dropping the slot.  Then kill -9 of the run's backend, and the server
# restarts with the job finished and its slot there.
#
# 1. In database postgres (backfill.database): the launcher drops the slot
#    when it starts after the crash.
# 2. In database other, which the launcher visits too: it drops the slot
#    there as well.
# 3. In database other, kept from the launcher at the restart (it does not
#    accept connections until the launcher has done its pass): the slot is
#    still there after the restart, and a start_job of another job drops it.
# 4. Likewise: a run_job of another job drops it.
# 5. cancel_job killed while it waits for the slot lock, before its commit:
#    the job is not cancelled and keeps its slot, which a second cancel_job
#    drops.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $bg_timeout = $PostgreSQL::Test::Utils::timeout_default;

my $node = worker_node(
	'main', conf => q{
wal_level = logical
max_replication_slots = 8
output_plugin_libraries = 'pgoutput, test_decoding, backfill'
});
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION backfill');

sub sql
{
	my ($db, $q) = @_;
	return $node->safe_psql($db, $q);
}

# A session of its own in $db that runs $sql and then sleeps, in the
# background; returns it (a hash like start_run_job's) once it sleeps, or
# waits for a lock, with its backend's pid.
sub hold
{
	my ($db, $name, $sql) = @_;
	my $file = $node->basedir . "/$name.sql";
	unlink $file;
	append_to_file($file, "$sql\nSELECT pg_sleep($bg_timeout);\n");
	my $h = BackfillTestLib::start_bg(
		[
			'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr($db) . " application_name=$name", '-f', $file
		],
		name => $name);
	wait_until(
		$bg_timeout,
		sub {
			$h->{pid} = sql($db,
				"SELECT pid FROM pg_stat_activity WHERE application_name = '$name' "
				  . "AND (wait_event = 'PgSleep' OR wait_event_type = 'Lock')"
			);
			return $h->{pid} ne '';
		});
	return $h;
}

# Wait until backend $pid waits for a lock that backend $holder holds;
# false if it does not, or has exited, within the timeout.
sub wait_blocked_by
{
	my ($pid, $holder) = @_;
	return wait_until(
		$bg_timeout,
		sub {
			sql('postgres',
				    "SELECT CASE WHEN $holder = ANY (pg_blocking_pids($pid)) THEN 'blocked' "
				  . "WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid) THEN 'gone' END"
			);
		}) eq 'blocked';
}

# The replication slots of a job.
sub job_slots
{
	my ($db, $job) = @_;
	my $dboid = sql('postgres', "SELECT oid FROM pg_database WHERE datname = '$db'");
	return sql('postgres',
		"SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'backfill_${dboid}_$job'");
}

# Wait until the launcher, started again after a crash, has done its pass.
sub wait_launcher_idle
{
	return wait_until(
		$bg_timeout,
		sub {
			sql('postgres',
				"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'backfill launcher' AND state = 'idle'"
			) eq '1';
		});
}

# A cdc job in $db over a table of its own, run until its upstream has been
# read to the end; then the steps of the file header, up to the crash.
# Returns the job's id.
sub finished_with_slot_left
{
	my ($db, $t, $label, $unvisited) = @_;
	sql(
		$db, qq{
CREATE TABLE $t (id bigint PRIMARY KEY, a int, b text);
INSERT INTO $t SELECT g, g, md5(g::text) FROM generate_series(1, 300) g;
});
	my $job = sql($db, "SELECT backfill.create_job('${t}_down', '$t', 'cdc', chunk_size => 100)");
	wait_until(
		$bg_timeout,
		sub {
			sql($db, "SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($job, 1)");
			return sql($db, "SELECT backfill_finished FROM backfill.state_$job") eq 't';
		});
	is(sql($db, "SELECT status FROM backfill.job WHERE job_id = $job"),
		'backfilling', "$label: job $job has read its upstream, its final barrier to come");
	is(job_slots($db, $job), 1, "$label: job $job has its slot");

	sql($db, "UPDATE $t SET b = 'since the last barrier' WHERE id = 5");
	my $row = hold($db, "row_$job", "BEGIN;\nSELECT id FROM ${t}_down WHERE id = 5 FOR UPDATE;");
	my $r = BackfillTestLib::start_bg(
		[
			'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr($db), '-c', "CALL backfill.run_job($job)"
		]);
	my $pid;
	wait_until(
		$bg_timeout,
		sub {
			$pid = sql('postgres',
				"SELECT pid FROM pg_stat_activity WHERE query = 'CALL backfill.run_job($job)' AND datname = '$db'"
			);
			return $pid ne '';
		});
	ok(wait_blocked_by($pid, $row->{pid}),
		"$label: the final barrier waits for the downstream row");
	my $slot = hold($db, "slot_$job", "BEGIN;\nSELECT backfill._lock_slot($job);");
	ok(wait_blocked_by($slot->{pid}, $pid), "$label: a session queues for the slot lock");
	sql('postgres', "SELECT pg_terminate_backend($row->{pid})");
	finish_bg($row);
	ok(wait_blocked_by($pid, $slot->{pid}),
		"$label: the run waits for the slot lock after the final barrier");
	is(sql($db, "SELECT status FROM backfill.job WHERE job_id = $job"),
		'finished', "$label: job $job has finished");

	# the launcher visits the databases that accept connections
	sql('postgres', "ALTER DATABASE $db ALLOW_CONNECTIONS false") if $unvisited;
	kill_and_wait_restart($node, $pid, $label);
	finish_bg($r);
	finish_bg($slot);
	if ($unvisited)
	{
		ok(wait_launcher_idle(), "$label: the launcher has done its pass");
		sql('postgres', "ALTER DATABASE $db ALLOW_CONNECTIONS true");
	}
	is(sql($db, "SELECT status FROM backfill.job WHERE job_id = $job"),
		'finished', "$label: job $job is finished after the restart");
	return $job;
}

# 1. the launcher drops it
my $job = finished_with_slot_left('postgres', 'up1', 'launcher');
ok(wait_launcher_idle(), 'launcher: the launcher has done its pass');
is(job_slots('postgres', $job), 0, "launcher: job ${job}'s slot is gone after the launcher's pass");
is(sql('postgres', "SELECT count(*) FROM pg_replication_origin WHERE roname LIKE 'backfill_%_$job'"),
	0, "launcher: job ${job}'s replication origin is gone too");
like(
	slurp_file($node->logfile),
	qr/LOG:  dropped replication slot "backfill_\d+_$job" of backfill job $job, which is finished/,
	'launcher: the server log says so');

# 2. the launcher drops it in another database too
$job = finished_with_slot_left('other', 'up4', 'other database');
ok(wait_launcher_idle(), 'other database: the launcher has done its pass');
ok(wait_until($bg_timeout, sub { job_slots('other', $job) == 0 }),
	"other database: job ${job}'s slot is gone after the launcher's pass");

# 3. start_job of another job drops it
sql('other', q{
CREATE TABLE other_up (id bigint PRIMARY KEY, a int);
INSERT INTO other_up SELECT g, g FROM generate_series(1, 100) g;
});
my $other = sql('other', "SELECT backfill.create_job('other_down', 'other_up')");
$job = finished_with_slot_left('other', 'up2', 'start_job', 1);
is(job_slots('other', $job), 1,
	"start_job: job ${job}'s slot is still there, in a database the launcher did not visit");
sql('other', "SELECT backfill.start_job($other)");
is(job_slots('other', $job), 0, "start_job: job ${job}'s slot is gone after start_job($other)");
ok( wait_until(
		$bg_timeout,
		sub { sql('other', "SELECT status FROM backfill.job WHERE job_id = $other") eq 'finished' }
	),
	"start_job: job $other finished");

# 4. run_job of another job drops it
$job = finished_with_slot_left('other', 'up3', 'run_job', 1);
is(job_slots('other', $job), 1, "run_job: job ${job}'s slot is still there");
sql('other', "CALL backfill.run_job($other)");
is(job_slots('other', $job), 0, "run_job: job ${job}'s slot is gone after run_job($other)");

# 5. cancel_job killed before its commit
sql(
	'postgres', q{
CREATE TABLE up4 (id bigint PRIMARY KEY, a int);
INSERT INTO up4 SELECT g, g FROM generate_series(1, 300) g;
});
$job = sql('postgres', "SELECT backfill.create_job('up4_down', 'up4', 'cdc', chunk_size => 100)");
sql('postgres', "SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($job, 1)");
is(job_slots('postgres', $job), 1, "cancel_job: job $job has its slot");
my $slot = hold('postgres', "slot_$job", "BEGIN;\nSELECT backfill._lock_slot($job);");
my $c = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres'), '-c', "SELECT backfill.cancel_job($job)"
	]);
my $pid;
wait_until(
	$bg_timeout,
	sub {
		$pid = sql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE query = 'SELECT backfill.cancel_job($job)'");
		return $pid ne ''
		  || sql('postgres', "SELECT status FROM backfill.job WHERE job_id = $job") eq 'cancelled';
	});
ok($pid ne '' && wait_blocked_by($pid, $slot->{pid}), 'cancel_job: waits for the slot lock')
  or BAIL_OUT('cancel_job did not wait for the slot lock');
kill_and_wait_restart($node, $pid, 'cancel_job');
finish_bg($c);
finish_bg($slot);
is(sql('postgres', "SELECT status FROM backfill.job WHERE job_id = $job"),
	'backfilling', "cancel_job: job $job was not cancelled");
is(job_slots('postgres', $job), 1, "cancel_job: job $job keeps its slot");
is(sql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"), 0,
	"cancel_job: job $job is consistent");
sql('postgres', "SELECT backfill.cancel_job($job)");
is(sql('postgres', "SELECT status FROM backfill.job WHERE job_id = $job"),
	'cancelled', "cancel_job: a second cancel_job cancels job $job");
is(job_slots('postgres', $job), 0, "cancel_job: and drops its slot");

no_crash_in_log($node, 1);
done_testing();
