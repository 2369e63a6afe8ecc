
# Copyright (c) backfill authors
#
# t/037_switchover_faults.pl: faults during the switchover of a remote job (src/kinds/remote/switchover.c),
# each while a writer on the source keeps a ledger of acknowledged writes:
# it inserts one key at a time as role app and appends the key to a file
# only after its commit returned.  After recovery, every acknowledged key
# must be in the local table, exactly once (its primary key), and the local
# table must equal the source.
#
# 1. The slot and publication on the source are dropped only after the
# local commit.  A cutover rolled back, or whose server is killed before its
# commit, leaves them, and the cutover called again fetches the changes
# again and succeeds.
#
# 2. A kill -9 right after the fence leaves the source's write grants
# revoked; the source records which (the comment of the job's publication),
# backfill.unfence() gives them back, and so does a rollback.
#
# 3. With the source stopped (SIGSTOP of its postmaster and every
# child), statement_timeout, pg_cancel_backend and pg_terminate_backend end
# a switchover within seconds; after SIGCONT the cutover succeeds.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $source = remote_source('source', 2000);
$source->safe_psql('postgres', q{
CREATE ROLE app LOGIN;
GRANT SELECT ON t TO app;
});

my $local = worker_node('local');
import_remote($local, $source);

# app's write grants on t, and PUBLIC's on its column b, as before each case
sub grant_writes
{
	$source->safe_psql('postgres', q{
GRANT INSERT, UPDATE, DELETE ON t TO app;
GRANT UPDATE (b) ON t TO PUBLIC;
});
	return;
}

# app's privileges on t: "INSERT UPDATE DELETE SELECT", then PUBLIC's UPDATE (b)
sub app_privileges
{
	return $source->safe_psql('postgres', q{
SELECT string_agg(CASE WHEN has_table_privilege('app', 't', p) THEN 't' ELSE 'f' END, ' ' ORDER BY o)
       || ' ' || CASE WHEN has_column_privilege('public', 't', 'b', 'UPDATE') THEN 't' ELSE 'f' END
  FROM unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'SELECT']) WITH ORDINALITY AS x(p, o)});
}

# "<slots> <publications>" of the extension on the source
sub source_objects
{
	return $source->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'backfill%')
    || ' ' || (SELECT count(*) FROM pg_publication WHERE pubname LIKE 'backfill%')});
}

# the grants the source's ledger records for a job's fence (its publication's comment)
sub ledger_entries
{
	my ($job) = @_;
	return $source->safe_psql('postgres', qq{
SELECT coalesce(sum(jsonb_array_length(obj_description(oid, 'pg_publication')::jsonb)), 0)
  FROM pg_publication WHERE pubname LIKE '%\\_$job'});
}

# "<rows of the source missing here> <rows here not on the source>"
sub diff_both_ways
{
	my ($table) = @_;
	return $local->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT * FROM remote.t EXCEPT SELECT * FROM $table) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM $table EXCEPT SELECT * FROM remote.t) y)});
}

# ---- the writer and its ledger of acknowledged writes ----

# Insert odd keys from $base on, one transaction each, as app; a key goes
# to the ledger only once psql returned success for its commit
sub start_writer
{
	my ($name, $base) = @_;
	my $ledger = $local->basedir . "/$name.ledger";
	append_to_file($ledger, '');
	my $cmd = sprintf(
		q{k=%d; while [ ! -e '%s.stop' ]; do }
		  . q{if PGCONNECT_TIMEOUT=2 timeout 5 psql -X -q -h '%s' -p %d -U app -d postgres }
		  . q{-c "INSERT INTO t VALUES ($k, 1, 'acknowledged')" >/dev/null 2>&1; }
		  . q{then echo $k >> '%s'; fi; k=$((k + 2)); sleep 0.02; done},
		$base, $ledger, $source->host, $source->port, $ledger);
	return BackfillTestLib::start_bg([ 'bash', '-c', $cmd ], ledger => $ledger);
}

sub acknowledged
{
	my ($writer) = @_;
	return grep { /^\d+$/ } split /\n/, slurp_file($writer->{ledger});
}

# wait until the writer has $more acknowledged writes more than now
sub wait_writes
{
	my ($writer, $more) = @_;
	my $target = scalar(acknowledged($writer)) + $more;
	return wait_until(60, sub { scalar(acknowledged($writer)) >= $target });
}

sub stop_writer
{
	my ($writer) = @_;
	append_to_file($writer->{ledger} . '.stop', '');
	finish_bg($writer);
	return;
}

# "<acknowledged writes> <of them in $table>"
sub acknowledged_in
{
	my ($writer, $table) = @_;
	my @keys = acknowledged($writer);
	my $found = $local->safe_psql('postgres',
		"SELECT count(*) FROM $table WHERE id = ANY ('{" . join(',', @keys) . "}'::int[])");
	return scalar(@keys) . " $found";
}

# a finished remote job copying t into $table, with the writes granted
sub finished_job
{
	my ($table) = @_;
	grant_writes();
	my $job = $local->safe_psql('postgres',
		"SELECT backfill.create_job('$table', 'remote.t', kind => 'cdc')");
	$local->safe_psql('postgres', "CALL backfill.run_job($job)");
	return $job;
}

# on $table, a trigger that sleeps while applying a row whose b is 'stall'
sub add_stall
{
	my ($table) = @_;
	$local->safe_psql('postgres', qq{
CREATE OR REPLACE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
    IF NEW.b = 'stall' THEN
        PERFORM pg_sleep(600);
    END IF;
    RETURN NEW;
END \$\$;
CREATE TRIGGER stall BEFORE INSERT OR UPDATE ON $table FOR EACH ROW EXECUTE FUNCTION stall();
});
	return;
}

# a cutover with fence in a psql of its own, tagged $appname; @before: statements before it
sub start_cutover
{
	my ($job, $appname, @before) = @_;
	return BackfillTestLib::start_bg(
		[
			'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
			'-d', $local->connstr('postgres') . " application_name=$appname",
			(map { ('-c', $_) } @before),
			'-c', "SELECT state FROM backfill.cutover($job, fence => true, lock_timeout => '1s', attempts => 20)"
		]);
}

# the pid of the backend tagged $appname once it waits on $event
sub wait_backend
{
	my ($appname, $event) = @_;
	my $pid;
	wait_until(60, sub {
		$pid = $local->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE application_name = '$appname' AND wait_event = '$event'");
		return $pid ne '';
	});
	return $pid;
}

# the source's postmaster and every process it forked
sub source_processes
{
	my $pm = $source->{_pid};
	return ($pm, grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`);
}

# ---- backfill.unfence refuses a job that fences nothing ----
$local->safe_psql('postgres', q{
CREATE TABLE here (id int PRIMARY KEY, v int);
INSERT INTO here SELECT g, g FROM generate_series(1, 10) g;
});
my $here = $local->safe_psql('postgres', "SELECT backfill.create_job('here_copy', 'here')");
is(join(': ', (psql_error($local, "SELECT backfill.unfence($here)"))[0, 1]),
	"42809: backfill job $here does not copy a table of another server",
	'backfill.unfence of a job on a local table is refused');
is(join(': ', (psql_error($local, 'SELECT backfill.unfence(NULL::bigint)'))[0, 1]),
	'22004: argument "job_id" must not be null', 'backfill.unfence of NULL is refused');

# ==== a rollback after the switchover ====
my $ja = finished_job('t_a');
my $wa = start_writer('a', 100001);
ok(wait_writes($wa, 30), 'the writer writes on the source');
my $s = $local->background_psql('postgres');
$s->query_safe('BEGIN');
is($s->query("SELECT state FROM backfill.cutover($ja, fence => true, lock_timeout => '1s', attempts => 20)"),
	'finished', 'the cutover (a switchover) returns in an open transaction');
is(source_objects(), '1 1', 'before the commit, the slot and the publication are on the source');
is(app_privileges(), 'f f f t f', 'the source is fenced');
is(ledger_entries($ja), '4', 'the source records the 4 grants the fence revoked');
$s->query_safe('ROLLBACK');
$s->quit;
is(app_privileges(), 't t t t t', 'the rollback gives the fence back');
is(ledger_entries($ja), '0', 'and its record');
ok(wait_writes($wa, 20), 'the writer writes again');
my ($ret, $out, $err) = $local->psql('postgres',
	"SELECT state FROM backfill.cutover($ja, fence => true, lock_timeout => '1s', attempts => 20)");
is($out, 'finished', 'the cutover called again succeeds') or diag($err);
stop_writer($wa);
my ($n, $found) = split / /, acknowledged_in($wa, 't_a');
ok($n > 50, "the writer had $n acknowledged writes");
is($found, $n, 'every acknowledged write is in the new table, once');
is(diff_both_ways('t_a'), '0 0', 'the new table equals the source');
is(source_objects(), '0 0', 'the slot and the publication are dropped after the commit');
is(app_privileges(), 'f f f t f', 'the fence stays after the switchover');

# ==== the server killed after the switchover, before the commit ====
my $jb = finished_job('t_b');
my $wb = start_writer('b', 300001);
ok(wait_writes($wb, 30), 'the writer writes on the source');
$s = $local->background_psql('postgres');
$s->query_safe('BEGIN');
is($s->query("SELECT state FROM backfill.cutover($jb, fence => true, lock_timeout => '1s', attempts => 20)"),
	'finished', 'the cutover returns in an open transaction');
kill_postmaster_and_restart($local, 'crash before the commit');
eval { $s->quit; };
is(source_objects(), '1 1', 'the slot and the publication are still on the source');
is(app_privileges(), 'f f f t f', 'the fence of the killed switchover stays');
is(ledger_entries($jb), '4', 'the source records what it revoked');
($ret, $out, $err) = $local->psql('postgres',
	"SELECT state FROM backfill.cutover($jb, fence => true, lock_timeout => '1s', attempts => 20)");
is($out, 'finished', 'the cutover called again succeeds') or diag($err);
stop_writer($wb);
($n, $found) = split / /, acknowledged_in($wb, 't_b');
ok($n > 20, "the writer had $n acknowledged writes");
is($found, $n, 'every acknowledged write is in the new table, once');
is(diff_both_ways('t_b'), '0 0', 'the new table equals the source');
is(source_objects(), '0 0', 'the slot and the publication are dropped');

# ==== kill -9 of the backend right after the fence ====
my $jc = finished_job('t_c');
add_stall('t_c');
$source->safe_psql('postgres', "UPDATE t SET b = 'stall' WHERE id = 2");
my $wc = start_writer('c', 500001);
ok(wait_writes($wc, 30), 'the writer writes on the source');
my $cut = start_cutover($jc, 'cutover_c');
my $pid = wait_backend('cutover_c', 'PgSleep');
isnt($pid, '', 'the switchover applies the last changes, after its fence');
is(app_privileges(), 'f f f t f', 'the source is fenced');
kill_and_wait_restart($local, $pid, 'after the fence');
finish_bg($cut);
is(app_privileges(), 'f f f t f', 'after the kill the fence stays');
is(ledger_entries($jc), '4', 'the source records the 4 grants it revoked');
is($local->safe_psql('postgres', "SELECT backfill.unfence($jc)"), '4',
	'backfill.unfence gives the 4 grants back');
is(app_privileges(), 't t t t t', 'app and PUBLIC may write again');
is(ledger_entries($jc), '0', 'the record is empty');
is($local->safe_psql('postgres', "SELECT backfill.unfence($jc)"), '0',
	'backfill.unfence again gives nothing back');
ok(wait_writes($wc, 20), 'the writer writes again');
$local->safe_psql('postgres', 'DROP TRIGGER stall ON t_c');
($ret, $out, $err) = $local->psql('postgres',
	"SELECT state FROM backfill.cutover($jc, fence => true, lock_timeout => '1s', attempts => 20)");
is($out, 'finished', 'the cutover called again succeeds') or diag($err);
stop_writer($wc);
($n, $found) = split / /, acknowledged_in($wc, 't_c');
ok($n > 50, "the writer had $n acknowledged writes");
is($found, $n, 'every acknowledged write is in the new table, once');
is(diff_both_ways('t_c'), '0 0', 'the new table equals the source');

# ==== the source stopped ====
my $jd = finished_job('t_d');
add_stall('t_d');
$source->safe_psql('postgres', "UPDATE t SET b = 'stall' WHERE id = 4");
my $wd = start_writer('d', 700001);
ok(wait_writes($wd, 30), 'the writer writes on the source');

# statement_timeout, the source stopped after the fence (20 s: long enough
# for the cutover to reach its fence on a loaded machine)
my $start = time;
$cut = start_cutover($jd, 'cutover_d', "SET statement_timeout = '20s'");
$pid = wait_backend('cutover_d', 'PgSleep');
is(app_privileges(), 'f f f t f', 'the switchover has fenced the source');
my @stopped = source_processes();
kill('STOP', @stopped);
isnt(finish_bg($cut), 0, 'with the source stopped, the cutover fails');
my $elapsed = time - $start;
like($cut->{err}, qr/canceling statement due to statement timeout/, 'on its statement timeout');
like($cut->{err}, qr/could not give back the write privileges on table "public.t".*backfill.unfence\($jd\)/s,
	'the fence it could not give back is reported, with the call that gives it back');
ok($elapsed < 20 + 5 + 7, sprintf('it ends within the statement timeout and a few seconds (%.1f s)', $elapsed));
kill('CONT', @stopped);
is(app_privileges(), 'f f f t f', 'the fence stays on the source that did not answer');
$local->safe_psql('postgres', 'DROP TRIGGER stall ON t_d');

# pg_cancel_backend, then pg_terminate_backend, the source stopped while
# the switchover waits for it on a connection it holds open
for my $how ('pg_cancel_backend', 'pg_terminate_backend')
{
	$cut = start_cutover($jd, "cutover_$how", "SELECT backfill.unfence($jd)", 'SELECT pg_sleep(2)');
	$pid = wait_backend("cutover_$how", 'PgSleep');
	@stopped = source_processes();
	kill('STOP', @stopped);
	wait_backend("cutover_$how", 'Extension');
	$start = time;
	$local->safe_psql('postgres', "SELECT $how($pid)");
	isnt(finish_bg($cut), 0, "$how ends the switchover waiting for the stopped source");
	$elapsed = time - $start;
	ok($elapsed < 5, sprintf("within seconds (%.1f s)", $elapsed));
	like($cut->{err}, $how eq 'pg_cancel_backend' ? qr/canceling statement due to user request/
		: qr/terminating connection due to administrator command/, "$how: its error");
	kill('CONT', @stopped);
}
is(app_privileges(), 't t t t t', 'backfill.unfence gave the fence back once the source answered');

($ret, $out, $err) = $local->psql('postgres',
	"SELECT state FROM backfill.cutover($jd, fence => true, lock_timeout => '1s', attempts => 20)");
is($out, 'finished', 'after SIGCONT the cutover succeeds') or diag($err);
stop_writer($wd);
($n, $found) = split / /, acknowledged_in($wd, 't_d');
ok($n > 30, "the writer had $n acknowledged writes");
is($found, $n, 'every acknowledged write is in the new table, once');
is(diff_both_ways('t_d'), '0 0', 'the new table equals the source');
is(source_objects(), '0 0', 'the slot and the publication are dropped');

$source->stop;
$local->stop;
done_testing();
