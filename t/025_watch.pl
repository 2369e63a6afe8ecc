
# Copyright (c) backfill authors
#
# t/025_watch.pl: watching a job as a person at psql does.
#
# 1. A rate-limited CALL backfill.run_job with backfill.client_progress_interval
#    = 300ms sends INFO lines to the client (psql's stderr), at least two,
#    each on one line with the job, RisingWave's progress text, rows per
#    second, the ETA and what holds it back, the progress growing from one to
#    the next, and a last line that sums the run up (how long it ran, the
#    job's status, progress and failures, the rows it copied, the changes it
#    applied, its barriers and rows per second), which a run of a finished job,
#    shorter than the interval, sends too; with the setting at 0 a run sends
#    none, and with client_min_messages = error the lines still come (INFO,
#    not NOTICE).
# 2. While that run goes on in another session, backfill.progress has its
#    actors (run_mode foreground, the session's pid), their rows and barriers
#    growing between two reads, a position, "rate limit" as throttled_by.
# 3. A job in background workers: backfill.progress has one row per worker,
#    with the worker's pid, phase copying, a position, its rows and barriers
#    growing; another role sees none of them (with pg_read_all_stats, the
#    view's rows and the live entries, without their positions, which are
#    keys of the upstream); wait_job
#    sends its INFO lines with growing progress too; once
#    the job has finished the view has no row of it.
# 4. A finished job copying from another server (a foreign table of
#    postgres_fdw on another database of the same cluster) whose worker
#    follows its source shows in backfill.progress as finished, with the
#    worker's pid, until stop_job; so does the worker start_job starts for it.
# 5. Without the library preloaded, a run in the foreground still shows in
#    backfill.progress, from the catalog and the job lock: its pid and rows,
#    no position or barriers.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use BackfillTestLib;

my $node = worker_node('watch', init => { allows_streaming => 'logical' });
make_upstream($node, 'up', 1, 3000);

# the messages in a psql's stderr, without the "psql:<stdin>:1: " prefix
sub messages
{
	my ($stderr) = @_;
	return map { s/^psql:[^ ]*: //r } split /\n/, $stderr;
}

# the progress percentages of the INFO lines in a psql's stderr
sub progress_lines
{
	my ($stderr, $job) = @_;
	return map { /^INFO:  backfill job $job: ([0-9.]+)% \(/ ? $1 : () } messages($stderr);
}

# strictly growing, at least two of them
sub grows
{
	my @p = @_;
	return 0 if @p < 2;
	for my $i (1 .. $#p)
	{
		return 0 unless $p[$i] > $p[ $i - 1 ];
	}
	return 1;
}

# ---- 1. run_job's lines ----
# 3000 rows at 1000 rows/s: about three seconds, with the catalog's
# count of 3000 as the total
my $job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down1', 'up', chunk_size => 50, rate_limit => 1000)");
my ($rc, $out, $err) = $node->psql('postgres',
	"SET client_min_messages = error; SET backfill.client_progress_interval = '300ms'; "
	  . "CALL backfill.run_job($job)");
is($rc, 0, 'run_job with progress lines succeeds');
my @lines = grep { /^INFO:/ } messages($err);
my @p = progress_lines($err, $job);
note("run_job sent:\n" . join("\n", @lines));
cmp_ok(scalar(@p), '>=', 2, 'run_job sends at least two lines of progress');
is(scalar(@p), scalar(@lines) - 1, 'every INFO line but the last is a line of progress');
ok(grows(@p), 'the progress grows from one line to the next');
like($lines[-1], qr{^INFO:  backfill job $job: run ended after [0-9]+\.[0-9] s: finished, 100%, 0 failures; 3000 rows copied, 0 changes applied, \d+ barriers, \d+ rows/s$},
	'the last line sums the run up: how long, the status, the progress, the failures, what it did');
like(
	$lines[-2],
	qr{^INFO:  backfill job $job: [0-9.]+% \(\d+/3000\), \d+ rows/s, ETA \d\d:\d\d:\d\d(, throttled by rate limit)?$},
	'a line says the progress, the rows per second, the ETA and what holds the job back');
unlike($err, qr/NOTICE|WARNING|ERROR/, 'nothing else is sent');
is(verify_rows($node, $job), '', 'the job copied every row');

$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down2', 'up', chunk_size => 50, rate_limit => 2000)");
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = 0; CALL backfill.run_job($job)");
is($rc, 0, 'run_job without progress lines succeeds');
is($err, '', 'backfill.client_progress_interval = 0 silences run_job');
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '1min'; CALL backfill.run_job($job)");
like((messages($err))[0] // "", qr{^INFO:  backfill job $job: run ended after [0-9]+\.[0-9] s: finished, 100%, 0 failures; 0 rows copied, 0 changes applied, 0 barriers, 0 rows/s$},
	'a run of a finished job, shorter than the interval, still ends with its line');

# ---- 2. a run in the foreground in backfill.progress ----
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down3', 'up', parallelism => 2, chunk_size => 20, rate_limit => 300)");
my $run = start_run_job($node, $job);
my $pid = runner_pid($node, $run);
ok($pid, 'the run in the foreground has a backend');

# the actors of the job in backfill.progress: "pid|actor|mode|phase|rows|barriers|pos|throttled|total"
sub progress_rows
{
	my ($n, $j) = @_;
	return $n->safe_psql('postgres',
		"SELECT pid, actor_id, run_mode, phase, rows_done, barriers, position IS NOT NULL, "
		  . "coalesce(throttled_by, ''), job_rows_total FROM backfill.progress "
		  . "WHERE job_id = $j ORDER BY actor_id");
}

my $first = wait_until(10, sub {
	my $r = progress_rows($node, $job);
	my @r = split /\n/, $r;
	return (@r == 2 && !grep { !/\|t\|[^|]*\|3000$/ || /\|0\|/ } @r) ? $r : undef;
});
ok($first, 'backfill.progress has both actors of the run, with rows and a position');
$first //= '';
note("backfill.progress:\n$first");
my @first = map { [ split /\|/ ] } split /\n/, $first;
is_deeply([ map { "$_->[0] $_->[2] $_->[3]" } @first ],
	[ "$pid foreground copying", "$pid foreground copying" ],
	"the actors are the session's, in the foreground, copying the snapshot");
# the columns of pg_stat_progress_copy: the database, the upstream, and the
# job's totals and what is done of them, in blocks and in rows
is( $node->safe_psql(
		'postgres',
		"SELECT DISTINCT datid = (SELECT oid FROM pg_database WHERE datname = current_database()), "
		  . "datname = current_database(), relid = 'up'::regclass, actor_phase, "
		  . "blocks_total = pg_relation_size('up') / current_setting('block_size')::int, "
		  . "tuples_done = job_rows_done, tuples_done <= tuples_total, "
		  . "blocks_done <= blocks_total, tuples_total > 0 "
		  . "FROM backfill.progress WHERE job_id = $job"),
	't|t|t|snapshot|t|t|t|t|t',
	'backfill.progress has the database, the upstream and the totals in blocks and rows');
ok(wait_until(5, sub { progress_rows($node, $job) =~ /\|rate limit\|/ }),
	'throttled_by says what holds an actor back');
usleep(1_500_000);
my @second = map { [ split /\|/ ] } split /\n/, progress_rows($node, $job);
ok(@second == 2 && $second[0][4] > $first[0][4] && $second[0][5] > $first[0][5],
	'its rows and barriers grow between two reads');
is(finish_bg($run), 0, 'the run in the foreground finishes');
is(progress_rows($node, $job), '', 'a finished run leaves backfill.progress');

# ---- 3. workers, and wait_job ----
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down4', 'up', parallelism => 2, chunk_size => 20, rate_limit => 300)");
$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
my @actors = split /\n/, $node->safe_psql('postgres',
	"SELECT actor_id FROM backfill.actor WHERE job_id = $job ORDER BY actor_id");
ok(wait_workers($node, $job, @actors), 'the job runs in two workers');
$first = wait_until(10, sub {
	my $r = progress_rows($node, $job);
	my @r = split /\n/, $r;
	return (@r == 2 && !grep { !/\|t\|[^|]*\|3000$/ || /\|0\|/ } @r) ? $r : undef;
});
ok($first, 'backfill.progress has a row per worker, with rows and a position');
$first //= '';
note("backfill.progress:\n$first");
@first = map { [ split /\|/ ] } split /\n/, $first;
my @workers = map { $_->[1] } @{ job_workers($node, $job) };
is_deeply([ map { "$_->[0] $_->[2] $_->[3]" } @first ],
	[ map { "$_ background copying" } @workers ],
	"each row is a worker's, with its pid, in the background, reading the snapshot");
# another role sees none of them; a member of pg_read_all_stats (as
# pg_monitor is) sees the job's actors, through the view too, without their
# positions, which are keys of the upstream
$node->safe_psql('postgres', 'CREATE ROLE regress_watcher');
is($node->safe_psql('postgres',
		"SET ROLE regress_watcher; SELECT count(*) FROM backfill.progress WHERE job_id = $job; "
	  . "SELECT count(*) FROM backfill._live_actors() WHERE job_id = $job; "
	  . "SELECT count(*) FROM backfill.job_workers() WHERE job_id = $job"),
	"0\n0\n0", "another role sees nothing of the job's actors, nor of its workers");
$node->safe_psql('postgres', 'GRANT pg_read_all_stats TO regress_watcher');
is($node->safe_psql('postgres',
		"SET ROLE regress_watcher; SELECT count(*), count(position) FROM backfill.progress WHERE job_id = $job; "
	  . "SELECT count(*) > 0, count(position) FROM backfill._live_actors() WHERE job_id = $job; "
	  . "SELECT count(*) FROM backfill.job_workers() WHERE job_id = $job"),
	"2|0\nt|0\n2", "pg_read_all_stats sees the job's actors in the view and the live entries, without their positions (keys of the upstream), and its workers");
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '300ms'; SELECT backfill.wait_job($job)");
is($rc, 0, 'wait_job returns once the job has finished');
@p = progress_lines($err, $job);
note("wait_job sent:\n$err");
cmp_ok(scalar(@p), '>=', 2, 'wait_job sends at least two lines of progress');
ok(grows(@p), 'and the progress grows');
like((messages($err))[0] // '', qr{^INFO:  backfill job $job: [0-9.]+% \(\d+/3000\), \d+ rows/s, ETA \d\d:\d\d:\d\d},
	"wait_job's lines read as run_job's");
ok(wait_until(10, sub { progress_rows($node, $job) eq '' }),
	'a finished job leaves backfill.progress');

# ---- 4. following a source on another server ----
$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql('source', q{
CREATE TABLE t (id int PRIMARY KEY, a int);
INSERT INTO t SELECT g, g FROM generate_series(1, 500) g;
});
$node->safe_psql('postgres', sprintf(q{
CREATE EXTENSION postgres_fdw;
CREATE SERVER src FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '%s', port '%s', dbname 'source');
CREATE USER MAPPING FOR CURRENT_USER SERVER src;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src INTO remote;
}, $node->host, $node->port));
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('copy', 'remote.t', kind => 'cdc', chunk_size => 100)");
$node->safe_psql('postgres', "SELECT backfill.start_job($job); ");
$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
my $following = wait_until(10, sub {
	my $r = $node->safe_psql('postgres',
		"SELECT pid, run_mode, phase FROM backfill.progress WHERE job_id = $job");
	return $r =~ /\|finished$/ ? $r : undef;
});
my @wpid = map { $_->[1] } @{ job_workers($node, $job) };
is($following // '', "$wpid[0]|background|finished",
	'the worker that follows the source shows its job as finished');
# a finished job's totals are what it copied; the upstream is on another
# server, so no relid and no blocks
is( $node->safe_psql(
		'postgres',
		"SELECT relid IS NULL, blocks_total IS NULL, blocks_done IS NULL, "
		  . "tuples_done = tuples_total, tuples_done = (SELECT count(*) FROM copy), actor_phase "
		  . "FROM backfill.progress WHERE job_id = $job"),
	't|t|t|t|t|following',
	'the finished job\'s totals are its rows copied, without relid or blocks');
$node->safe_psql('postgres', "SELECT backfill.stop_job($job)");
is(progress_rows($node, $job), '', 'stop_job takes it out of backfill.progress');
# start_job of the finished job: a new worker follows
$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
$following = wait_until(10, sub {
	my $r = $node->safe_psql('postgres',
		"SELECT pid, run_mode, phase FROM backfill.progress WHERE job_id = $job");
	return $r =~ /\|finished$/ ? $r : undef;
});
@wpid = map { $_->[1] } @{ job_workers($node, $job) };
is($following // '', "$wpid[0]|background|finished",
	'so does a worker started for the finished job');
$node->safe_psql('postgres', "SELECT backfill.stop_job($job)");
$node->safe_psql('postgres', "SELECT backfill.drop_job($job)");

# ---- 5. without the library preloaded ----
my $plain = backfill_node('plain');
make_upstream($plain, 'up', 1, 3000);
$job = $plain->safe_psql('postgres',
	"SELECT backfill.create_job('down', 'up', chunk_size => 20, rate_limit => 500)");
$run = start_run_job($plain, $job);
$pid = runner_pid($plain, $run);
my $row = wait_until(10, sub {
	my $r = progress_rows($plain, $job);
	return $r =~ /^\d+\|\d+\|foreground\|copying\|[1-9]\d*\|\|f\|[^|]*\|3000$/ ? $r : undef;
});
ok($row, 'without preloading, backfill.progress shows the run from the catalog');
like($row // '', qr/^$pid\|/, 'with the pid of the session that holds the job lock');
is(finish_bg($run), 0, 'that run finishes');
is(progress_rows($plain, $job), '', 'and leaves backfill.progress');

no_crash_in_log($node);
done_testing();
