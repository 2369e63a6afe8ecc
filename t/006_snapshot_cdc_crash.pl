# Copyright (c) backfill authors
#
# t/006_snapshot_cdc_crash.pl: snapshot and cdc jobs survive crashes.
#
# A snapshot job (2 actors) and a cdc job (1 actor) backfill their tables
# while pgbench writes to them (inserts, updates, deletes, key changes).
# Each is crashed several times with a barrier in flight, by kill -9 of the
# backend running run_job (the postmaster then kills every backend and
# reinitializes) and by an immediate stop of the server; after each crash
# the committed state is there exactly and the downstream is consistent,
# and run_job takes the job to the end, after which the downstream equals
# the upstream.
#
# Where a crash hits.  As in t/001_kill_and_resume.pl, a third session
# holds a lock that the runner's barrier needs before it commits
# (freeze_job() in BackfillTestLib.pm, SHARE on the state table, once the
# committed row_count reached a target; or hold_actor_rows() below, the
# job's rows of backfill.actor FOR UPDATE, which the barrier updates after
# it has persisted its state); the runner blocks there with a whole
# barrier's work in flight, and the crash loses exactly that barrier.  (A
# cdc job's first fetch blocks earlier on the latter: creating a logical
# slot waits for the transactions running at its start, the holder's too.)
#
# Snapshot kind:
# - killed in phase 1, stopped (immediate) in phase 1, killed in the log
#   store phase (the first log store barrier committed, the next one in
#   flight);
# - in phase 1 the downstream never shows a change made after create_job,
#   across the crashes: every downstream row is a row of a copy of the
#   upstream taken in create_job's transaction, and once every vnode has
#   finished phase 1 the downstream is that copy exactly.
#
# Cdc kind:
# - killed while its first fetch creates the replication slot (no slot is
#   left, no offset committed, the next run creates it), killed
#   mid-snapshot, stopped (immediate) mid-snapshot;
# - after each crash the slot is still there, never ahead of the committed
#   cdc_offset, and the next barrier advances it to exactly that offset;
#   once finished, the slot is gone;
# - cancel_job and drop_job of unfinished cdc jobs after a crash leave no
#   slot.
#
# A second node checks create_job's refusals of the cdc kind without
# wal_level = logical, and without backfill in output_plugin_libraries.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);

use BackfillTestLib;

my $t0 = time;
my $bg_timeout = $PostgreSQL::Test::Utils::timeout_default;

my $node = backfill_node(
	'main', conf => q{
wal_level = logical
max_replication_slots = 4
output_plugin_libraries = 'pgoutput, test_decoding, backfill'
});

sub sql { return $node->safe_psql('postgres', $_[0]); }

# The decoded state of a job as text, one line per row of job_state(), to
# compare exactly before and after a crash (cdc_offset included).
sub state_text
{
	my ($job) = @_;
	return sql(
		qq{SELECT string_agg(concat_ws('|', actor_id, vnode, coalesce(current_pos, 'NULL'),
                           backfill_finished, row_count, epoch, cdc_offset), E'\\n'
                 ORDER BY vnode)
             FROM backfill.job_state($job)});
}

sub progress
{
	my ($job) = @_;
	return sql("SELECT progress FROM backfill.jobs WHERE job_id = $job");
}

# The rows of $down that are not rows of $copy, counted.
sub not_in
{
	my ($down, $copy) = @_;
	return sql("SELECT count(*) FROM (TABLE $down EXCEPT ALL TABLE $copy) x");
}

# The replication slots: "name|active|confirmed_flush_lsn" lines.
sub slots
{
	return sql(
		'SELECT slot_name || \'|\' || active || \'|\' || coalesce(confirmed_flush_lsn::text, \'\') '
		  . 'FROM pg_replication_slots ORDER BY slot_name');
}

# A session of its own that locks the rows of backfill.actor of a job FOR
# UPDATE and keeps them: the runner's barrier in flight then does all its
# work, persists its state and blocks where it records its actors, before
# its commit.  (The session has a transaction id, so a logical slot being
# created meanwhile waits for it to end.)  Waits until the rows are locked;
# returns the session (a hash like start_run_job's, with its backend's
# pid).
sub hold_actor_rows
{
	my ($job) = @_;
	my $appname = "backfill_holder_$job";
	my $file = $node->basedir . "/hold_$job.sql";
	unlink $file;
	append_to_file($file,
		    "BEGIN;\nSELECT count(*) FROM (SELECT FROM backfill.actor WHERE job_id = $job FOR UPDATE) x;\n"
		  . "SELECT pg_sleep($bg_timeout);\n");
	my $h = BackfillTestLib::start_bg(
		[
			'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres') . " application_name=$appname",
			'-f', $file
		],
		name => $appname);
	wait_until(
		$bg_timeout,
		sub {
			$h->{pid} = sql("SELECT pid FROM pg_stat_activity WHERE application_name = '$appname' "
				  . "AND query LIKE '%pg_sleep%' AND wait_event = 'PgSleep'");
			return $h->{pid} ne '';
		});
	return $h;
}

# Wait until backend $pid waits for a lock the backend $holder holds.
sub wait_blocked_by
{
	my ($pid, $holder) = @_;
	return wait_until(
		$bg_timeout,
		sub {
			sql("SELECT coalesce($holder = ANY (pg_blocking_pids($pid)), false)") eq 't';
		});
}

# Crash the server: 'kill' (SIGKILL of the run_job backend $pid) or
# 'immediate' (immediate stop, then start).
sub crash
{
	my ($how, $pid) = @_;
	if ($how eq 'kill')
	{
		kill_backend_and_wait($node, $pid);
	}
	else
	{
		$node->stop('immediate');
		$node->start;
	}
}

# Start writers and run_job, freeze the job once its committed row_count
# reached $target (or with hold, block its first barrier where it records
# its actors, or wherever that session's transaction holds it up), crash
# ($how: 'kill' or 'immediate'), check that what was committed is there,
# and return it: state, info, progress, slots.  before_crash is called
# with that, before the crash.
sub run_and_crash
{
	my (%a) = @_;
	my ($job, $label) = @a{qw(job label)};

	my $w = start_writers($node, $a{script}, 60);
	my ($f, $r, $pid, $blocked);
	if ($a{hold})
	{
		$f = hold_actor_rows($job);
		$r = start_run_job($node, $job);
		$pid = runner_pid($node, $r);
		$blocked = wait_blocked_by($pid, $f->{pid});
	}
	else
	{
		$r = start_run_job($node, $job);
		$pid = runner_pid($node, $r);
		$f = freeze_job($node, $job, $a{target});
		$blocked = wait_blocked_on_state($node, $job, $pid);
	}
	like($pid, qr/^\d+$/, "$label: found the run_job backend");
	ok($blocked, "$label: run_job is blocked before committing a barrier")
	  or BAIL_OUT("$label: run_job did not block: $r->{err} $f->{err}");

	my %before = (
		state => state_text($job),
		info => job_info($node, $job),
		progress => progress($job),
		slots => slots());
	is($before{info}->{status}, 'backfilling', "$label: job is backfilling when crashed");
	$a{before_crash}->(\%before) if $a{before_crash};

	crash($a{how}, $pid);
	isnt(finish_bg($r), 0, "$label: the interrupted run_job failed");
	like($r->{err}, qr/server closed the connection unexpectedly|terminating connection/,
		"$label: run_job lost its connection");
	finish_bg($f);
	finish_bg($w);    # the writers lost their connections too
	note "$label: writers committed " . writer_transactions($w) . ' transactions before the crash';

	# exactly what was committed before the crash
	my $info = job_info($node, $job);
	is($info->{status}, 'backfilling', "$label: status after the crash");
	is($info->{row_count}, $before{info}->{row_count},
		"$label: row_count is the one committed before the crash ($info->{row_count})");
	is($info->{epoch}, $before{info}->{epoch}, "$label: epoch is the one committed before the crash");
	is(state_text($job), $before{state}, "$label: state is the one committed before the crash");
	is(progress($job), $before{progress}, "$label: the progress is the one before the crash");
	is(verify_rows($node, $job), '',
		"$label: downstream holds exactly what the committed barriers wrote");
	return \%before;
}

# Run to the end while the writers go on, check, write more, check again.
sub finish_and_check
{
	my ($up, $job, $script, $label) = @_;
	my $down = "${up}_down";

	my $w = start_writers($node, $script, 3);
	sql("CALL backfill.run_job($job)");
	is(finish_bg($w), 0, "$label: writers ran without errors during the resume")
	  or diag($w->{err});
	cmp_ok(writer_transactions($w), '>', 0, "$label: writers did write");

	is(job_info($node, $job)->{status}, 'finished', "$label: job finished");
	is(progress($job), '100%', "$label: backfill.jobs says 100%");
	is(verify_rows($node, $job), '', "$label: verify_job is empty");
	is(sql("SELECT count(*) FROM $down"), sql("SELECT count(*) FROM $up"),
		"$label: downstream has as many rows as the upstream");
	is(table_diff($node, $up, $down), 0, "$label: downstream equals the upstream (EXCEPT ALL)");

	$w = start_writers($node, $script, 1);
	is(finish_bg($w), 0, "$label: writers after the finish ran without errors")
	  or diag($w->{err});
	is(verify_rows($node, $job), '', "$label: verify_job stays empty under writes once finished");
	is(table_diff($node, $up, $down), 0, "$label: downstream still equals the upstream");
}

# ---------------------------------------------------------------------------
# Snapshot kind, parallelism 2
# ---------------------------------------------------------------------------

my $ns = 60_000;
my $script_s = make_upstream($node, 'up_s', 1, $ns);

# Created while writers run: create_job locks them out until it commits,
# and the copy, taken in its transaction after it, is the upstream as of the
# snapshot epoch.  The rate limit keeps barriers to some 4000 rows, so the
# crash points are reached mid-phase however fast the machine.
my $w = start_writers($node, $script_s, 3);
ok($node->poll_query_until('postgres', "SELECT EXISTS (SELECT FROM up_s WHERE b = 'ins')"),
	'snapshot: the writers are writing before create_job');
my $js = sql(
	q{BEGIN;
SELECT backfill.create_job('up_s_down', 'up_s', 'snapshot', NULL, 2, 256, 20000);
CREATE TABLE up_s_copy AS TABLE up_s;
COMMIT;});
like($js, qr/^\d+$/, 'snapshot job created with a copy of its snapshot');
my $copy_rows = sql('SELECT count(*) FROM up_s_copy');
is(sql("SELECT total_rows FROM backfill.job WHERE job_id = $js"),
	$copy_rows, 'the snapshot total is the copy\'s row count');
isnt(sql("SELECT snapshot_epoch FROM backfill.jobs WHERE job_id = $js"), '',
	'backfill.jobs shows the snapshot epoch');

# What must hold of a job in phase 1, after a crash too: the downstream is
# made of rows of the snapshot, as many as the committed row_count says.
sub check_phase1
{
	my ($label) = @_;
	my $rc = job_info($node, $js)->{row_count};
	if (sql("SELECT bool_and(backfill_finished) FROM backfill.job_state($js)") eq 't')
	{
		is(progress($js), 'Snapshot finished', "$label: the progress says the snapshot has been read");
	}
	else
	{
		like(progress($js), qr/^Snapshot \[\d+\.\d\d% \($rc\/$copy_rows\)\]$/,
			"$label: the progress shows phase 1 ($rc of $copy_rows)");
	}
	is(sql('SELECT count(*) FROM up_s_down'), $rc,
		"$label: downstream has as many rows as the committed row_count");
	is(not_in('up_s_down', 'up_s_copy'), 0,
		"$label: every downstream row is a row of the snapshot (no change after create_job)");
	is(sql("SELECT count(*) FROM backfill.actor WHERE job_id = $js AND log_store_lag_ms IS NOT NULL"),
		0, "$label: no actor is in the log store");
}

is(finish_bg($w), 0, 'snapshot: writers ran without errors across create_job') or diag($w->{err});

# 1. kill -9 in phase 1, at 30% of the snapshot
run_and_crash(
	job => $js,
	script => $script_s,
	target => int($ns * 0.3),
	how => 'kill',
	label => 'snapshot kill in phase 1');
check_phase1('snapshot kill in phase 1');
cmp_ok(sql("SELECT count(*) FROM backfill.changes_$js"), '>', 0,
	'snapshot: the writers\' changes are in the log, none consumed');

# more phase 1 barriers after the crash, writers going on
$w = start_writers($node, $script_s, 1);
sql("CALL backfill.run_job($js, 3)");
finish_bg($w);
check_phase1('snapshot: 3 barriers after the kill');
is(verify_rows($node, $js), '', 'snapshot: consistent 3 barriers after the kill');

# 2. immediate stop in phase 1, at 60%
my $target = int($ns * 0.6);
my $committed = job_info($node, $js)->{row_count};
$target = $committed + 1 if $target <= $committed;
run_and_crash(
	job => $js,
	script => $script_s,
	target => $target,
	how => 'immediate',
	label => 'snapshot immediate stop in phase 1');
check_phase1('snapshot immediate stop in phase 1');

# The rest of phase 1, a barrier at a time, writers going on, until every
# vnode has finished: then the downstream is exactly the snapshot.
$w = start_writers($node, $script_s, 2);
my $barriers = 0;
while (sql("SELECT bool_and(backfill_finished) FROM backfill.job_state($js)") ne 't'
	&& $barriers < 100)
{
	check_phase1("snapshot barrier $barriers after the immediate stop") if $barriers == 2;
	sql("CALL backfill.run_job($js, 1)");
	$barriers++;
}
is(finish_bg($w), 0, 'snapshot: writers ran without errors during phase 1') or diag($w->{err});
note "snapshot: phase 1 ended after $barriers more barriers";
check_phase1('snapshot end of phase 1');
is(sql('SELECT count(*) FROM up_s_down'), $copy_rows,
	'snapshot end of phase 1: the job read every row of the snapshot');
is(table_diff($node, 'up_s_copy', 'up_s_down'), 0,
	'snapshot end of phase 1: downstream equals the copy taken at create_job (EXCEPT ALL)');
cmp_ok(table_diff($node, 'up_s', 'up_s_down'), '>', 0,
	'snapshot end of phase 1: the upstream has changed since (the check above can fail)');
my $logged = sql("SELECT count(*) FROM backfill.changes_$js");
cmp_ok($logged, '>', 2 * 256, "snapshot: $logged log entries wait for the log store");

# 3. the log store: one barrier committed (the whole log so far, more than
# a chunk per actor, so no actor has caught up), then a kill -9 with the
# next log store barrier in flight
sql("CALL backfill.run_job($js, 1)");
is( sql("SELECT count(log_store_lag_ms) || ' ' || bool_or(log_store_caught_up) "
		  . "FROM backfill.actor WHERE job_id = $js"),
	'2 false',
	'snapshot: after one log store barrier both actors are in the log store, not caught up');
like(progress($js), qr/^LogStore \[actor: 0\/2, avg lag (0ns|\d+ms|\d+(\.\d+)?s)\]$/,
	'snapshot: ddl_progress shows the log store');
is(sql("SELECT count(*) FROM backfill.changes_$js"), 0, 'snapshot: the log store barrier consumed the log');
is(table_diff($node, 'up_s', 'up_s_down'), 0,
	'snapshot: with no writer, the log store barrier made the downstream equal the upstream');
run_and_crash(
	job => $js,
	script => $script_s,
	hold => 1,
	how => 'kill',
	label => 'snapshot kill in the log store',
	before_crash => sub {
		like($_[0]->{progress}, qr/^LogStore \[/,
			'snapshot kill in the log store: committed progress is in the log store');
	});
is(sql("SELECT count(*) FROM backfill.actor WHERE job_id = $js AND log_store_lag_ms IS NOT NULL"),
	2, 'snapshot kill in the log store: both actors are still in the log store');
cmp_ok(sql("SELECT count(*) FROM backfill.changes_$js"), '>', 0,
	'snapshot kill in the log store: the log entries of the lost barrier are back');
finish_and_check('up_s', $js, $script_s, 'snapshot after the crashes');

# ---------------------------------------------------------------------------
# Cdc kind, parallelism 1
# ---------------------------------------------------------------------------

my $nc = 40_000;
my $script_c = make_upstream($node, 'up_c', 1, $nc);
my $jc = sql("SELECT backfill.create_job('up_c_down', 'up_c', 'cdc', NULL, 1, 256, 20000)");
like($jc, qr/^\d+$/, 'cdc job created');
my $slot = sql("SELECT slot_name FROM backfill.jobs WHERE job_id = $jc");
my $dboid = sql("SELECT oid FROM pg_database WHERE datname = 'postgres'");
is($slot, "backfill_${dboid}_$jc", 'backfill.jobs names the slot of the cdc job');
is(slots(), '', 'cdc: no slot before the first run');

# the committed offset of the cdc job, as an LSN ('' when none)
sub cdc_offset
{
	return sql("SELECT coalesce(cdc_offset->>'lsn', '') FROM backfill.job_state($jc)");
}

# after a crash: the slot survived, inactive, and not ahead of the offset
sub check_slot
{
	my ($label) = @_;
	my $offset = cdc_offset();
	is(sql("SELECT count(*) || ' ' || bool_and(NOT active) FROM pg_replication_slots WHERE slot_name = '$slot'"),
		'1 true', "$label: the slot still exists, unused");
	is(sql("SELECT count(*) FROM pg_replication_slots"), 1, "$label: it is the only slot");
	if ($offset ne '')
	{
		is(sql("SELECT confirmed_flush_lsn <= '$offset' FROM pg_replication_slots WHERE slot_name = '$slot'"),
			't', "$label: the slot is not ahead of the committed offset $offset");
	}
}

# One barrier after a crash: its fetch advances the slot to exactly the
# committed offset, and it commits a later one.
sub check_resume
{
	my ($label) = @_;
	my $offset = cdc_offset();
	my $rc = job_info($node, $jc)->{row_count};
	sql("CALL backfill.run_job($jc, 1)");
	is(sql("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$slot'"),
		$offset, "$label: the next barrier advanced the slot to the committed offset $offset");
	is(sql("SELECT '" . cdc_offset() . "'::pg_lsn >= '$offset'"),
		't', "$label: the next barrier committed an offset at or after it");
	cmp_ok(job_info($node, $jc)->{row_count}, '>', $rc, "$label: the next barrier read more rows");
	is(verify_rows($node, $jc), '', "$label: consistent after the next barrier");
}

# 1. kill -9 while the first fetch creates the slot.  The holder of the
# actor rows has a transaction id, and creating a logical slot waits for
# every transaction running at its start to end: the runner waits for the
# holder there, its slot half made.
run_and_crash(
	job => $jc,
	script => $script_c,
	hold => 1,
	how => 'kill',
	label => 'cdc kill while creating its slot',
	before_crash => sub {
		like($_[0]->{slots}, qr/^\Q$slot\E\|true\|$/,
			'cdc kill while creating its slot: the first fetch is creating the slot');
	});
is(slots(), '', 'cdc kill while creating its slot: no slot is left');
is(cdc_offset(), '', 'cdc kill while creating its slot: no offset committed');
is(sql("SELECT count(*) FROM backfill.state_$jc"), 0, 'cdc kill while creating its slot: no state row');
is(sql('SELECT count(*) FROM up_c_down'), 0, 'cdc kill while creating its slot: downstream is empty');
sql("CALL backfill.run_job($jc, 1)");
like(cdc_offset(), qr/^[0-9A-F]+\/[0-9A-F]+$/, 'cdc: the next barrier created the slot and committed an offset');
like(slots(), qr/^\Q$slot\E\|false\|[0-9A-F]+\/[0-9A-F]+$/, 'cdc: the slot exists, unused, after the barrier');
cmp_ok(job_info($node, $jc)->{row_count}, '>', 0, 'cdc: the next barrier read rows');
is(verify_rows($node, $jc), '', 'cdc: consistent after the barrier that followed the first crash');

# 2. kill -9 mid-snapshot, at 30%
run_and_crash(
	job => $jc,
	script => $script_c,
	target => int($nc * 0.3),
	how => 'kill',
	label => 'cdc kill mid-snapshot');
check_slot('cdc kill mid-snapshot');
check_resume('cdc kill mid-snapshot');

# 3. immediate stop mid-snapshot, at 65%
$target = int($nc * 0.65);
$committed = job_info($node, $jc)->{row_count};
$target = $committed + 1 if $target <= $committed;
run_and_crash(
	job => $jc,
	script => $script_c,
	target => $target,
	how => 'immediate',
	label => 'cdc immediate stop mid-snapshot');
check_slot('cdc immediate stop mid-snapshot');
check_resume('cdc immediate stop mid-snapshot');

finish_and_check('up_c', $jc, $script_c, 'cdc after the crashes');
is(slots(), '', 'cdc: once finished, the job has dropped its slot');
is(sql("SELECT slot_name IS NULL FROM backfill.jobs WHERE job_id = $jc"), 't',
	'cdc: backfill.jobs shows no slot for the finished job');

# 4. cancel_job and drop_job of unfinished cdc jobs after a crash
my $script_c2 = make_upstream($node, 'up_c2', 1, 5000);
my $jc2 = sql("SELECT backfill.create_job('up_c2_down', 'up_c2', 'cdc', NULL, 1, 256, 1000)");
my $jc3 = sql("SELECT backfill.create_job('up_c3_down', 'up_c2', 'cdc', NULL, 1, 256, 1000)");
sql("CALL backfill.run_job($jc2, 2)");
sql("CALL backfill.run_job($jc3, 2)");
my @two = map { sql("SELECT slot_name FROM backfill.jobs WHERE job_id = $_") } ($jc2, $jc3);
is(sql('SELECT string_agg(slot_name, \' \' ORDER BY slot_name) FROM pg_replication_slots'),
	join(' ', sort @two), 'cdc: two unfinished jobs, two slots');
run_and_crash(
	job => $jc2,
	script => $script_c2,
	target => job_info($node, $jc2)->{row_count} + 1,
	how => 'kill',
	label => 'cdc kill before cancel and drop');
is(sql('SELECT count(*) FROM pg_replication_slots'), 2, 'cdc: both slots survived the crash');
sql("SELECT backfill.cancel_job($jc2)");
is(job_info($node, $jc2)->{status}, 'cancelled', 'cdc: the crashed job is cancelled');
is(sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '$two[0]'"), 0,
	'cdc: cancel_job dropped the slot of the job');
is(sql('SELECT count(*) FROM pg_replication_slots'), 1, 'cdc: the other job keeps its slot');
sql("SELECT backfill.drop_job($jc3)");
is(sql('SELECT count(*) FROM pg_replication_slots'), 0, 'cdc: drop_job dropped the slot of the job');
is(join(', ', leftovers($node, $jc3, 'up_c2', 'up_c3_down')), '', 'cdc: drop_job left nothing behind');
is(join(', ', leftovers($node, $jc2, 'up_c2', 'up_c2_down')), '', 'cdc: cancel_job left nothing behind');

no_crash_in_log($node, 1);
$node->stop;

# ---------------------------------------------------------------------------
# create_job refuses the cdc kind where logical decoding is unavailable
# ---------------------------------------------------------------------------

my $node2 = PostgreSQL::Test::Cluster->new('no_logical');
$node2->init;
$node2->append_conf('postgresql.conf', "wal_level = replica\nmax_replication_slots = 4\n");
$node2->start;
$node2->safe_psql(
	'postgres', q{
CREATE EXTENSION backfill;
CREATE TABLE t (id bigint PRIMARY KEY, a int, b text);
INSERT INTO t SELECT g, g, md5(g::text) FROM generate_series(1, 1000) g;
});

# nothing of a job in the database, as a description of what is there
sub nothing_left
{
	return $node2->safe_psql(
		'postgres', q{
SELECT concat_ws(' ',
    (SELECT 'jobs ' || count(*) FROM backfill.job HAVING count(*) > 0),
    (SELECT 'actors ' || count(*) FROM backfill.actor HAVING count(*) > 0),
    (SELECT 'table ' || string_agg(oid::regclass::text, ',') FROM pg_class
      WHERE relname IN ('t_down') OR (relnamespace = 'backfill'::regnamespace AND relname ~ '^(state|changes)_')),
    (SELECT 'triggers ' || count(*) FROM pg_trigger WHERE tgrelid = 't'::regclass HAVING count(*) > 0),
    (SELECT 'slots ' || count(*) FROM pg_replication_slots HAVING count(*) > 0))});
}

my $create = "SELECT backfill.create_job('t_down', 't', 'cdc', NULL, 1, 256, NULL)";
is($node2->safe_psql('postgres', 'SHOW wal_level'), 'replica', 'second node: wal_level is replica');
my ($state, $msg, $err) = psql_error($node2, $create);
is($msg, 'backfill kind "cdc" requires "wal_level" to be "logical"',
	'cdc without wal_level = logical: the error') or diag($err);
is($state, '55000', 'cdc without wal_level = logical: SQLSTATE 55000');
is(nothing_left(), '', 'cdc without wal_level = logical: nothing left behind');

$node2->append_conf('postgresql.conf',
	"wal_level = logical\noutput_plugin_libraries = 'pgoutput, test_decoding'\n");
$node2->restart;
is($node2->safe_psql('postgres', 'SHOW wal_level'), 'logical', 'second node: wal_level is logical now');
($state, $msg, $err) = psql_error($node2, $create);
is($msg, 'backfill kind "cdc" requires "backfill" in "output_plugin_libraries"',
	'cdc without backfill in output_plugin_libraries: the error') or diag($err);
is($state, '55000', 'cdc without backfill in output_plugin_libraries: SQLSTATE 55000');
is(nothing_left(), '', 'cdc without backfill in output_plugin_libraries: nothing left behind');

# with the library allowed, the same call works
$node2->append_conf('postgresql.conf',
	"output_plugin_libraries = 'pgoutput, test_decoding, backfill'\n");
$node2->reload;
ok( $node2->poll_query_until(
		'postgres',
		"SELECT current_setting('output_plugin_libraries') = 'pgoutput, test_decoding, backfill'"),
	'second node: backfill is in output_plugin_libraries after a reload');
my $j2 = $node2->safe_psql('postgres', $create);
like($j2, qr/^\d+$/, 'cdc job created once the library is allowed');
$node2->safe_psql('postgres', "CALL backfill.run_job($j2)");
is($node2->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $j2"),
	'finished', 'the cdc job of the second node finished');
is($node2->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'), 0,
	'the finished cdc job of the second node left no slot');
is(table_diff($node2, 't', 't_down'), 0, 'the downstream of the second node equals its upstream');

no_crash_in_log($node2, 0);
$node2->stop;

note sprintf('total %.1fs', time - $t0);
done_testing();
