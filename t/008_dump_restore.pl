
# Copyright (c) backfill authors
#
# t/008_dump_restore.pl: jobs survive pg_dump and a restore elsewhere.
#
# On node A, four jobs, each of parallelism 2 on a table of its own: an
# arrangement job, a legacy no_shuffle job and a snapshot job have run 3
# barriers, and writes to their upstreams leave keys pending in their change
# tables; a fourth (arrangement) job has finished and follows its upstream.
# Nothing runs on A while its database is dumped.
#
# 1. pg_dump -Fc restored with pg_restore on a fresh node B, and plain
#    pg_dump piped into psql on a fresh node C.  On each of them:
#
#    - the restore ran without an error and the restored database has what A
#      had at the dump: the rows of backfill.job and backfill.actor
#      (relations by name), the sequences, every state table and job_state(),
#      the pending keys of every change table (the snapshot job's log with
#      its before-images), the downstream and upstream tables, ddl_progress,
#      and the triggers on the upstreams with their enabled state
#      (pg_trigger.tgenabled: capture ALWAYS and apply disabled while
#      backfilling, the other way round once finished);
#    - the restore's own data load fired no trigger: each change table has
#      exactly the rows it had at the dump, the finished job's downstream too;
#    - backfill.jobs shows the upstreams' new oids;
#    - writes after the restore are captured, one key per row written, and
#      the snapshot job logs them with sequence numbers past the dumped ones;
#    - the sequences continue: a new job gets the next id, new fragment and
#      actor ids, its own state table, and runs to the end;
#    - the restore is a restart (the run counter goes on from A's): the
#      arrangement job passes the recovery check and its first barrier
#      resumes from the restored positions, at most one chunk per actor;
#      run_job then finishes it while pgbench writes; verify_job is empty,
#      the downstream equals the upstream, the triggers have switched, and
#      writes after the finish are applied;
#    - the snapshot job's first barrier on the restored node still shows
#      nothing newer than its snapshot epoch, and it then finishes, equal to
#      the upstream;
#    - the finished job applies writes made after the restore at once;
#    - the legacy job, restored unfinished, fails its first run with
#      RisingWave's legacy error (SQLSTATE 55000): the upstream's new oid
#      and A's fragment, actor, position and row count.
#
# 2. pg_restore --schema-only, then pg_restore --data-only
#    --disable-triggers, on a fresh node E.  The data load fires nothing, but
#    the ALTER TABLE ... ENABLE TRIGGER ALL that follows each table's data
#    leaves every trigger plainly enabled, a job's capture and apply
#    triggers alike.  The jobs must still act as their status says: the
#    backfilling ones capture writes and do not apply them (the snapshot job
#    shows nothing newer than its snapshot), then finish, equal to their
#    upstreams; the finished one applies writes, captures nothing, and lets
#    its upstream be truncated.  Then pg_restore --clean over that database
#    brings back exactly what A had at the dump.
#
# 3. A dump taken while a job runs on A under pgbench writes (pg_dump -Fc,
#    restored on a fresh node D) holds one committed barrier's state: on D
#    the job is mid-backfill, verify_job is empty, and run_job finishes it
#    under writes, equal to the upstream.
#
# Each restored node's checks run in an eval, so that a failure on one
# (a restore that failed, say) leaves the others to run.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use BackfillTestLib;

my $t0 = time;
my $n = 4000;
my $chunk_size = 100;

# --- node A: four jobs, three of them mid-backfill with pending keys ---

my $node_a = backfill_node('A');
make_upstream($node_a, $_, 1, $n) for ('up', 'up_legacy', 'up_snap');
make_upstream($node_a, 'up_fin', 1, 500);

sub create_job
{
	my ($node, $down, $up, $kind, $rate) = @_;
	$rate //= 'NULL';
	return $node->safe_psql('postgres',
		"SELECT backfill.create_job('$down', '$up', '$kind', NULL, 2, $chunk_size, $rate)");
}

my $job = create_job($node_a, 'up_down', 'up', 'arrangement');
my ($legacy, $err);
$node_a->psql(
	'postgres',
	"SELECT backfill.create_job('legacy_down', 'up_legacy', 'no_shuffle', NULL, 2, $chunk_size)",
	stdout => \$legacy,
	stderr => \$err,
	on_error_die => 1);
like($err, qr/WARNING:  backfill job $legacy uses the legacy no-shuffle backfill/,
	'A: legacy job created');
my $snap = create_job($node_a, 'snap_down', 'up_snap', 'snapshot');
# what the snapshot job must show until it has read its snapshot
$node_a->safe_psql('postgres', 'CREATE TABLE snap_at_create AS TABLE up_snap');
my $fin = create_job($node_a, 'fin_down', 'up_fin', 'arrangement');

# one chunk per actor per barrier: 3 barriers read at most 600 rows of 4000
$node_a->safe_psql(
	'postgres', qq{
SET backfill.barrier_interval_ms = 0;
CALL backfill.run_job($job, 3);
CALL backfill.run_job($legacy, 3);
CALL backfill.run_job($snap, 3);
CALL backfill.run_job($fin);
});

# writes behind and ahead of the positions, key changes, deletes, inserts
for my $t ('up', 'up_legacy', 'up_snap', 'up_fin')
{
	$node_a->safe_psql(
		'postgres', qq{
UPDATE $t SET a = a + 1, b = 'A' WHERE id % 97 = 0;
DELETE FROM $t WHERE id % 89 = 0;
UPDATE $t SET id = id + 100000 WHERE id % 83 = 0;
INSERT INTO $t SELECT g, 0, 'new on A' FROM generate_series($n + 1, $n + 20) g;
});
}

for my $j ($job, $legacy, $snap)
{
	my $info = job_info($node_a, $j);
	is($info->{status}, 'backfilling', "A: job $j ($info->{kind}) is backfilling");
	cmp_ok($info->{row_count}, '>', 0, "A: job $j has read rows");
	cmp_ok($info->{row_count}, '<', $n, "A: job $j has not read them all");
	cmp_ok($node_a->safe_psql('postgres', "SELECT count(*) FROM backfill.changes_$j"),
		'>', 0, "A: job $j has captured keys pending");
	is(verify_rows($node_a, $j), '', "A: job $j is consistent");
}
is( $node_a->safe_psql('postgres',
		'SELECT count(*) FROM (TABLE snap_down EXCEPT ALL TABLE snap_at_create) x'),
	0, 'A: the snapshot job shows nothing newer than its snapshot');
is(job_info($node_a, $fin)->{status}, 'finished', 'A: the fourth job has finished');
is(table_diff($node_a, 'up_fin', 'fin_down'), 0, 'A: the finished job follows its upstream');

# the tables of each job: upstream, downstream
my %tables = (
	$job => [ 'up', 'up_down' ],
	$legacy => [ 'up_legacy', 'legacy_down' ],
	$snap => [ 'up_snap', 'snap_down' ],
	$fin => [ 'up_fin', 'fin_down' ]);

# Everything the jobs are made of, as text: catalog rows (relations by
# name), sequences, progress, triggers, and per job its state and change
# tables, decoded state, upstream and downstream.
sub contents
{
	my ($node) = @_;
	my %c;
	my $q = sub { $node->safe_psql('postgres', $_[0]) };
	$c{job} = $q->('SELECT j::text FROM backfill.job j ORDER BY job_id');
	$c{actor} = $q->('SELECT a::text FROM backfill.actor a ORDER BY actor_id');
	$c{sequences} = $q->(
		q{SELECT format('%s %s %s', s, last_value, is_called) FROM
(SELECT 'job_id_seq' s, last_value, is_called FROM backfill.job_id_seq
 UNION ALL SELECT 'fragment_id_seq', last_value, is_called FROM backfill.fragment_id_seq
 UNION ALL SELECT 'actor_id_seq', last_value, is_called FROM backfill.actor_id_seq
 UNION ALL SELECT 'change_seq', last_value, is_called FROM backfill.change_seq) x});
	$c{ddl_progress} = $q->(
		'SELECT ddl_id, ddl_statement, create_type, progress FROM backfill.ddl_progress ORDER BY 1');
	$c{triggers} = $q->(
		q{SELECT tgrelid::regclass, tgname, tgenabled, pg_get_triggerdef(oid)
  FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1::text, 2});
	for my $j (sort keys %tables)
	{
		my ($up, $down) = @{ $tables{$j} };
		$c{"state_$j"} = $q->("SELECT s::text FROM backfill.state_$j s ORDER BY 1");
		$c{"changes_$j"} = $q->("SELECT c::text FROM backfill.changes_$j c ORDER BY 1");
		$c{"job_state_$j"} = $q->("SELECT s::text FROM backfill.job_state($j) s ORDER BY vnode");
		$c{$up} = $q->("SELECT t::text FROM $up t ORDER BY id");
		$c{$down} = $q->("SELECT t::text FROM $down t ORDER BY id");
	}
	return \%c;
}

my $at_dump = contents($node_a);
my %changes_at_dump =
  map { $_ => $node_a->safe_psql('postgres', "SELECT count(*) FROM backfill.changes_$_") }
  keys %tables;
my $change_seq_at_dump = $node_a->safe_psql('postgres', 'SELECT last_value FROM backfill.change_seq');
my $snap_rows_at_dump = job_info($node_a, $snap)->{row_count};
my $runs_at_dump = $node_a->safe_psql('postgres', "SELECT runs FROM backfill.job WHERE job_id = $job");
is($changes_at_dump{$fin}, 0, 'A: the finished job has no pending keys');
like($at_dump->{triggers},
	qr/^up\|backfill_apply_$job\|D\|.*^up\|backfill_capture_$job\|A\|/ms,
	'A: capture ALWAYS and apply disabled on the upstream of a backfilling job');
like($at_dump->{triggers},
	qr/^up_fin\|backfill_apply_$fin\|A\|.*^up_fin\|backfill_capture_$fin\|D\|/ms,
	'A: apply ALWAYS and capture disabled on the upstream of a finished job');
my ($legacy_msg_a) = legacy_message($node_a, $legacy);
like($legacy_msg_a, qr/^legacy no-shuffle backfill recovered unfinished progress/,
	'A: the legacy job has an unfinished actor, so a restart would fail');
note "A: the legacy job's error, were it restarted: $legacy_msg_a";

# Run a command (or a pipeline, as IPC::Run takes it); returns whether it
# succeeded, and its stderr.
sub run_cmd
{
	my @cmd = @_;
	my ($out, $stderr) = ('', '');
	my $ok = IPC::Run::run(@cmd, '>', \$out, '2>', \$stderr);
	return ($ok, $stderr);
}

my $dump = $node_a->basedir . '/dump.custom';
my ($ok, $stderr) =
  run_cmd([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node_a->connstr('postgres') ]);
ok($ok, 'pg_dump -Fc of A') or diag($stderr);
is($stderr, '', 'pg_dump -Fc printed nothing on stderr');

# A fresh node, the library installed but nothing created: the restore
# creates the extension.
sub fresh_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf',
		"log_statement = none\nbackfill.barrier_interval_ms = 100\n");
	$node->start;
	return $node;
}

# Run $code; a die in it (an SQL error, say) is one failed test, and the
# rest of the file goes on.
sub guarded
{
	my ($label, $code) = @_;
	eval { $code->(); 1 } or fail("$label: stopped by an error: $@");
}

# --- 1. pg_restore, and pg_dump | psql ---

my $node_b = fresh_node('B');
($ok, $stderr) = run_cmd([ 'pg_restore', '-d', $node_b->connstr('postgres'), $dump ]);
ok($ok, 'B: pg_restore of the custom dump') or diag($stderr);
is($stderr, '', 'B: pg_restore printed nothing on stderr');

my $node_c = fresh_node('C');
($ok, $stderr) = run_cmd(
	[ 'pg_dump', '-d', $node_a->connstr('postgres') ], '|',
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node_c->connstr('postgres') ]);
ok($ok, 'C: pg_dump | psql') or diag($stderr);
is($stderr, '', 'C: pg_dump | psql printed nothing on stderr');

# The checks, the same on each restored node.
sub check_restored
{
	my ($node, $label) = @_;
	my $q = sub { $node->safe_psql('postgres', $_[0]) };

	# what A had, and nothing more
	my $restored = contents($node);
	for my $k (sort keys %$at_dump)
	{
		is($restored->{$k}, $at_dump->{$k}, "$label: $k as on A at the dump");
	}
	for my $j (sort keys %tables)
	{
		is($q->("SELECT count(*) FROM backfill.changes_$j"), $changes_at_dump{$j},
			"$label: change table of job $j has exactly the keys pending at the dump");
		my ($up) = @{ $tables{$j} };
		is($q->("SELECT upstream_table_id = '$up'::regclass::oid FROM backfill.jobs WHERE job_id = $j"),
			't', "$label: backfill.jobs shows the new oid of $up");
		is(verify_rows($node, $j), '', "$label: job $j is consistent");
	}

	# writes after the restore are captured, one key per row written
	for my $j ($job, $snap)
	{
		my $up = $tables{$j}[0];
		$q->("CREATE TABLE changes_before AS TABLE backfill.changes_$j");
		$q->(
			qq{
UPDATE $up SET b = 'after the restore' WHERE id IN (1, 2, $n);
DELETE FROM $up WHERE id = 3;
INSERT INTO $up VALUES (-1, 1, 'after the restore'), (-2, 2, 'after the restore');
});
		is( $q->(
				"SELECT string_agg(id::text, ',' ORDER BY id) FROM (TABLE backfill.changes_$j EXCEPT ALL TABLE changes_before) x"
			),
			"-2,-1,1,2,3,$n",
			"$label: job $j captured one key per row written after the restore");
		is( $q->(
				"SELECT min(backfill_seq) > $change_seq_at_dump FROM (TABLE backfill.changes_$j EXCEPT ALL TABLE changes_before) x"
			),
			't',
			"$label: the snapshot job's log numbers the new entries past the dumped change_seq"
		) if $j == $snap;
		$q->('DROP TABLE changes_before');
	}

	# the finished job applies writes made after the restore
	$q->(
		qq{
UPDATE up_fin SET b = 'after the restore' WHERE id <= 10;
DELETE FROM up_fin WHERE id BETWEEN 11 AND 20;
INSERT INTO up_fin VALUES (-1, 1, 'after the restore');
});
	is(table_diff($node, 'up_fin', 'fin_down'), 0,
		"$label: the finished job applies writes made after the restore");
	is(verify_rows($node, $fin), '', "$label: verify_job of the finished job is empty");

	# the sequences continue: a new job, with new ids and tables
	make_upstream($node, 'up_new', 1, 1000);
	my $new = create_job($node, 'new_down', 'up_new', 'arrangement');
	is($new, $fin + 1, "$label: a new job gets the next id ($new)");
	is( $q->(
			qq{
SELECT (SELECT fragment_id FROM backfill.job WHERE job_id = $new)
         > (SELECT max(fragment_id) FROM backfill.job WHERE job_id <> $new)
   AND (SELECT min(actor_id) FROM backfill.actor WHERE job_id = $new)
         > (SELECT max(actor_id) FROM backfill.actor WHERE job_id <> $new)
   AND (SELECT count(*) FROM backfill.actor WHERE job_id = $new) = 2
   AND (SELECT state_table::text FROM backfill.job WHERE job_id = $new) = 'backfill.state_$new'}),
		't', "$label: the new job's fragment and actors have new ids, its own state table");
	$q->("CALL backfill.run_job($new)");
	is(job_info($node, $new)->{status}, 'finished', "$label: the new job finished");
	is(table_diff($node, 'up_new', 'new_down'), 0,
		"$label: the new job's downstream equals its upstream");
	is($q->("SELECT s::text FROM backfill.state_$job s ORDER BY 1"), $at_dump->{"state_$job"},
		"$label: the restored job's state is untouched by the new job");

	# the restore is a restart: the arrangement job resumes
	my $state0 = job_state($node, $job);
	my $rows0 = job_info($node, $job)->{row_count};
	$q->("SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($job, 1)");
	is($q->("SELECT runs FROM backfill.job WHERE job_id = $job"), $runs_at_dump + 1,
		"$label: the first run on the restored node counts as run " . ($runs_at_dump + 1));
	my $state1 = job_state($node, $job);
	my @bad = compare_states($state0, $state1);
	ok(!@bad, "$label: the first barrier resumes from the restored positions")
	  or diag(join("\n", @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ]));
	my $delta = job_info($node, $job)->{row_count} - $rows0;
	cmp_ok($delta, '>', 0, "$label: the first barrier read rows");
	cmp_ok($delta, '<=', state_groups($state0) * $chunk_size,
		"$label: the first barrier read at most one chunk per actor");
	is($q->("SELECT count(*) FROM backfill.changes_$job"), 0,
		"$label: the first barrier consumed the pending keys");
	is(verify_rows($node, $job), '', "$label: consistent after the first barrier");

	# ... and finishes while writers go on
	my $w = start_writers($node, writer_script($node, 'up'), 2);
	$q->("CALL backfill.run_job($job)");
	is(finish_bg($w), 0, "$label: writers ran without errors") or diag($w->{err});
	cmp_ok(writer_transactions($w), '>', 0, "$label: writers did write");
	is(job_info($node, $job)->{status}, 'finished', "$label: the restored job finished");
	is($q->("SELECT progress FROM backfill.jobs WHERE job_id = $job"),
		'100%', "$label: backfill.jobs says 100%");
	is(verify_rows($node, $job), '', "$label: verify_job is empty");
	is(table_diff($node, 'up', 'up_down'), 0, "$label: the downstream equals the upstream");
	is( $q->(
			qq{
SELECT string_agg(tgname || ' ' || tgenabled::text, ', ' ORDER BY tgname) FROM pg_trigger
 WHERE tgrelid = 'up'::regclass AND tgname IN ('backfill_capture_$job', 'backfill_apply_$job')}),
		"backfill_apply_$job A, backfill_capture_$job D",
		"$label: the finished job switched to its apply trigger");
	$q->(
		qq{
UPDATE up SET a = a * 2 WHERE id % 7 = 0;
DELETE FROM up WHERE id % 11 = 0;
INSERT INTO up VALUES (-3, 3, 'after the finish');
});
	is(table_diff($node, 'up', 'up_down'), 0, "$label: writes after the finish are applied");
	is(verify_rows($node, $job), '', "$label: verify_job stays empty");

	# the snapshot job: still as of its snapshot epoch, then to the end
	$q->("SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($snap, 1)");
	my $info = job_info($node, $snap);
	is($info->{status}, 'backfilling', "$label: the snapshot job resumed");
	cmp_ok($info->{row_count}, '>', $snap_rows_at_dump,
		"$label: the snapshot job's first barrier read rows");
	is($q->('SELECT count(*) FROM (TABLE snap_down EXCEPT ALL TABLE snap_at_create) x'),
		0, "$label: the snapshot job still shows nothing newer than its snapshot");
	is(verify_rows($node, $snap), '', "$label: the snapshot job is consistent");
	$q->("CALL backfill.run_job($snap)");
	is(job_info($node, $snap)->{status}, 'finished', "$label: the snapshot job finished");
	is(verify_rows($node, $snap), '', "$label: verify_job of the snapshot job is empty");
	is(table_diff($node, 'up_snap', 'snap_down'), 0,
		"$label: the snapshot job's downstream equals its upstream");

	# the legacy job, restored unfinished, cannot resume
	my ($expected) = legacy_message($node, $legacy);
	my $oid = $q->("SELECT 'up_legacy'::regclass::oid");
	(my $expected_from_a = $legacy_msg_a) =~ s/upstream_table_id=\d+/upstream_table_id=$oid/;
	is($expected, $expected_from_a,
		"$label: the legacy job's state names A's fragment, actor, position and rows");
	my $down_before = $q->('SELECT count(*) FROM legacy_down');
	my ($sqlstate, $msg, $perr) = psql_error($node, "CALL backfill.run_job($legacy)");
	is($sqlstate, '55000', "$label: the legacy job's first run fails with SQLSTATE 55000")
	  or diag($perr);
	is($msg, $expected, "$label: with RisingWave's legacy message");
	$info = job_info($node, $legacy);
	is($info->{status}, 'failed', "$label: the legacy job is failed");
	is($info->{last_error}, $expected, "$label: last_error is the message");
	is($q->('SELECT count(*) FROM legacy_down'), $down_before,
		"$label: the failed run left the legacy downstream alone");
	is(verify_rows($node, $legacy), '',
		"$label: the legacy downstream is consistent up to its positions");

	no_crash_in_log($node);
	note sprintf('%s: checked (%.1fs)', $label, time - $t0);
}

guarded('B', sub { check_restored($node_b, 'B (pg_restore)') });
guarded('C', sub { check_restored($node_c, 'C (pg_dump | psql)') });

is_deeply(contents($node_a), $at_dump, 'A: unchanged since the dump');

# --- 2. a data-only restore with --disable-triggers, then --clean ---

# pg_restore --data-only --disable-triggers wraps each table's data in
# ALTER TABLE ... DISABLE TRIGGER ALL / ENABLE TRIGGER ALL, so the load fires
# nothing; but ENABLE TRIGGER ALL enables every trigger as plain ENABLE
# (tgenabled 'O'), the capture and the apply trigger of a job alike.  The
# jobs must still behave as their status says.
my $node_e = fresh_node('E');
guarded('E', sub { data_only_restore($node_e) });

sub data_only_restore
{
	my ($node) = @_;
	my $q = sub { $node->safe_psql('postgres', $_[0]) };

	my ($ok, $stderr) =
	  run_cmd([ 'pg_restore', '--schema-only', '-d', $node->connstr('postgres'), $dump ]);
	ok($ok, 'E: pg_restore --schema-only') or diag($stderr);
	($ok, $stderr) = run_cmd(
		[
			'pg_restore', '--data-only', '--disable-triggers',
			'-d', $node->connstr('postgres'), $dump
		]);
	ok($ok, 'E: pg_restore --data-only --disable-triggers') or diag($stderr);
	is($stderr, '', 'E: the data-only restore printed nothing on stderr');
	my $restored = contents($node);
	for my $k (grep { $_ ne 'triggers' } sort keys %$at_dump)
	{
		is($restored->{$k}, $at_dump->{$k}, "E: $k as on A at the dump");
	}
	note "E: the triggers after the data-only restore:\n$restored->{triggers}";

	# the backfilling jobs capture writes, and do not apply them
	for my $j ($job, $snap)
	{
		my ($up, $down) = @{ $tables{$j} };
		$q->(
			qq{
UPDATE $up SET b = 'after the restore' WHERE id IN (1, 2, $n);
DELETE FROM $up WHERE id = 3;
INSERT INTO $up VALUES (-1, 1, 'after the restore'), (-2, 2, 'after the restore');
});
		is($q->("SELECT count(*) FROM backfill.changes_$j"), $changes_at_dump{$j} + 6,
			"E: job $j captured the 6 rows written after the restore");
		is($q->("SELECT t::text FROM $down t ORDER BY id"), $at_dump->{$down},
			"E: job $j did not apply them to its downstream while it backfills");
	}
	is($q->('SELECT count(*) FROM (TABLE snap_down EXCEPT ALL TABLE snap_at_create) x'),
		0, 'E: the snapshot job still shows nothing newer than its snapshot');

	# the finished job applies writes, captures nothing, allows TRUNCATE
	$q->(
		qq{
UPDATE up_fin SET b = 'after the restore' WHERE id <= 10;
DELETE FROM up_fin WHERE id BETWEEN 11 AND 20;
INSERT INTO up_fin VALUES (-1, 1, 'after the restore');
});
	is(table_diff($node, 'up_fin', 'fin_down'), 0,
		'E: the finished job applies writes made after the restore');
	is($q->("SELECT count(*) FROM backfill.changes_$fin"), 0,
		'E: the finished job captures nothing');
	my $err = '';
	is($node->psql('postgres', 'TRUNCATE up_fin', stderr => \$err),
		0, 'E: the upstream of the finished job can be truncated')
	  or diag($err);
	is($q->('SELECT count(*) FROM fin_down'), 0, 'E: the truncate reached the downstream');

	# the backfilling jobs finish, equal to their upstreams
	for my $j ($job, $snap)
	{
		my ($up, $down) = @{ $tables{$j} };
		$err = '';
		is($node->psql('postgres', "CALL backfill.run_job($j)", stderr => \$err),
			0, "E: run_job of job $j ran without an error")
		  or diag($err);
		is(job_info($node, $j)->{status}, 'finished', "E: job $j finished");
		is(verify_rows($node, $j), '', "E: verify_job of job $j is empty");
		is(table_diff($node, $up, $down), 0, "E: job $j: the downstream equals the upstream");
	}

	# pg_restore --clean over it: back to what A had at the dump
	($ok, $stderr) = run_cmd(
		[
			'pg_restore', '--clean', '--if-exists',
			'-d', $node->connstr('postgres'), $dump
		]);
	ok($ok, 'E: pg_restore --clean over the database') or diag($stderr);
	is($stderr, '', 'E: pg_restore --clean printed nothing on stderr');
	is_deeply(contents($node), $at_dump,
		'E: after pg_restore --clean, all is as on A at the dump');
	no_crash_in_log($node);
}

# --- 3. a dump taken with a barrier in flight, under writes ---

my $nlive = 20_000;
my $script = make_upstream($node_a, 'up_live', 1, $nlive);
# a rate limit keeps the job mid-backfill at the freeze however fast the machine
my $live = create_job($node_a, 'live_down', 'up_live', 'arrangement', 4000);
my $w = start_writers($node_a, $script, 3);
my $r = start_run_job($node_a, $live);
my $pid = runner_pid($node_a, $r);
like($pid, qr/^\d+$/, 'A: the live job runs');

# once it has committed 2000 rows, its next barrier blocks before its commit,
# its reads in flight (see freeze_job() in BackfillTestLib.pm)
my $f = freeze_job($node_a, $live, 2000);
ok(wait_blocked_on_state($node_a, $live, $pid),
	'A: the live job is blocked before committing a barrier')
  or diag("run_job stderr: $r->{err}\nfreeze stderr: $f->{err}");
my $live_info = job_info($node_a, $live);
my $live_state = job_state($node_a, $live);

my $dump_live = $node_a->basedir . '/dump_live.custom';
($ok, $stderr) =
  run_cmd([ 'pg_dump', '-Fc', '-f', $dump_live, '-d', $node_a->connstr('postgres') ]);
ok($ok, 'pg_dump -Fc of A with a barrier in flight') or diag($stderr);
is($stderr, '', 'pg_dump -Fc with a barrier in flight printed nothing on stderr');

# let it go on: end the session that holds the state table
is( $node_a->safe_psql(
		'postgres', qq{
SELECT count(pg_terminate_backend(l.pid))
  FROM pg_locks l JOIN backfill.jobs j ON l.relation = j.state_table
 WHERE j.job_id = $live AND l.mode = 'ShareLock' AND l.granted}),
	1, 'A: the session freezing the live job ended');
finish_bg($f);
is(finish_bg($r), 0, 'A: the live job ran on to the end') or diag($r->{err});
is(finish_bg($w), 0, 'A: writers ran without errors') or diag($w->{err});
is(job_info($node_a, $live)->{status}, 'finished', 'A: the live job finished');

my $node_d = fresh_node('D');
guarded(
	'D',
	sub {
		my ($ok, $stderr) =
		  run_cmd([ 'pg_restore', '-d', $node_d->connstr('postgres'), $dump_live ]);
		ok($ok, 'D: pg_restore of the dump taken while the job ran') or diag($stderr);
		is($stderr, '', 'D: pg_restore printed nothing on stderr');
		my $info = job_info($node_d, $live);
		is($info->{status}, 'backfilling', 'D: the live job is restored mid-backfill');
		cmp_ok($info->{row_count}, '<', $nlive, "D: at $info->{row_count} rows of $nlive");
		is($info->{row_count}, $live_info->{row_count},
			'D: the row_count committed before the barrier in flight');
		is($info->{epoch}, $live_info->{epoch}, 'D: and its epoch');
		is_deeply(job_state($node_d, $live), $live_state, 'D: and its state');
		note 'D: '
		  . $node_d->safe_psql('postgres', "SELECT count(*) FROM backfill.changes_$live")
		  . ' keys were pending at the dump';
		is(verify_rows($node_d, $live), '',
			'D: the downstream holds what the committed barriers wrote, no more');
		$node_d->safe_psql('postgres', "SELECT backfill.alter_rate_limit($live, NULL)");
		my $w = start_writers($node_d, writer_script($node_d, 'up_live'), 2);
		$node_d->safe_psql('postgres', "CALL backfill.run_job($live)");
		is(finish_bg($w), 0, 'D: writers ran without errors') or diag($w->{err});
		is(job_info($node_d, $live)->{status}, 'finished', 'D: the live job finished');
		is(verify_rows($node_d, $live), '', 'D: verify_job is empty');
		is(table_diff($node_d, 'up_live', 'live_down'), 0,
			'D: the downstream equals the upstream');
		no_crash_in_log($node_d);
	});
no_crash_in_log($node_a);

$_->stop for ($node_a, $node_b, $node_c, $node_d, $node_e);
note sprintf('total %.1fs', time - $t0);
done_testing();
