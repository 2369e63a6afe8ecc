
# Copyright (c) backfill authors
#
# t/042_progress_lines.pl: the lines of progress never go blind.  A run in
# the foreground (CALL backfill.run_job, INFO lines to psql's stderr) and a
# worker (LOG lines in the server log) say what they do where they used to
# be silent, and end with a line that sums the run up.
#
# 1. Index builds: a snapshot job with two indexes to build after its
#    snapshot prints a line before each index (its name, "1 of 2", the
#    phase and blocks of pg_stat_progress_create_index, blocks 0/N) and one
#    after (how long, blocks N/N, its tuples, its size).
# 2. Lock waits: a run whose final barrier waits for its SHARE ROW
#    EXCLUSIVE lock on the upstream, held off by another session's open
#    write, prints at every interval what it waits for, for how long and
#    the pid of that session, then that it got the lock; so does a barrier
#    held off by a session that holds the downstream; the cutover's
#    lock step, retried against a session that holds the table, says the
#    same in its own words.
# 3. The catch-up: a snapshot job in its log store while writers keep
#    adding changes prints the changes left, the changes applied per second
#    and an ETA from them, never ETA 00:00:00 with changes left.
# 4. The last line of every run: rows copied, changes applied, barriers,
#    rows per second; after a run that ended (finished, or stopped at
#    max_barriers), one that failed (statement_timeout), and a worker's.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use BackfillTestLib;

my $node = worker_node('progress_lines',
	init => { allows_streaming => 'logical' },
	conf => "backfill.log_progress_interval = '1s'\n");

# the messages in a psql's stderr, without the "psql:<stdin>:1: " prefix
sub messages
{
	my ($stderr) = @_;
	return map { s/^psql:[^ ]*: //r } split /\n/, $stderr;
}

my $summary = qr{\d+ rows copied, \d+ changes applied, \d+ barriers?, \d+ rows/s};

# ---- 1. index builds ----
make_upstream($node, 'up_idx', 1, 200000);
$node->safe_psql('postgres', 'CREATE INDEX up_idx_a ON up_idx (a)');
my $job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down_idx', 'up_idx', kind => 'snapshot', indexes => true, "
	  . "chunk_size => 50000)");
my ($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '300ms'; CALL backfill.run_job($job)");
is($rc, 0, 'the snapshot job with indexes to build runs');
my @lines = grep { /^INFO:/ } messages($err);
note("run_job sent:\n" . join("\n", @lines));
my @before = grep { /building index/ } @lines;
my @after = grep { /built index/ } @lines;
is(scalar(@before), 2, 'a line before each of the two indexes');
is(scalar(@after), 2, 'a line after each of the two indexes');
like(
	$before[0] // '',
	qr{^INFO:  backfill job $job: building index "down_idx_pkey" \(1 of 2\) of public\.down_idx: building index: scanning table, blocks 0/(\d+), tuples (0/\d+|unknown)$},
	'the line before an index: its name, which of how many, the phase and the blocks to scan');
my ($blocks) = ($before[0] // '') =~ m{blocks 0/(\d+)};
cmp_ok($blocks // 0, '>', 100, 'the blocks to scan are the downstream table\'s');
like(
	$after[0] // '',
	qr{^INFO:  backfill job $job: built index "down_idx_pkey" \(1 of 2\) of public\.down_idx in \d+\.\d s: blocks (\d+)/\1, tuples 200000, index size \d+ [kM]B$},
	'the line after an index: how long, every block scanned, its tuples, its size');
like($before[1] // '', qr{building index "\w+" \(2 of 2\)}, 'the second index has its line too');
like($lines[-1], qr{^INFO:  backfill job $job: run ended after \d+\.\d s: finished, 100%, 0 failures; 200000 rows copied, 0 changes applied, \d+ barriers, \d+ rows/s$},
	'the run ends with its line: the job, what it did');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_indexes WHERE tablename = 'down_idx'"),
	'2', 'both indexes were built');

# ---- 2. lock waits ----
make_upstream($node, 'up_lock', 1, 500);
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down_lock', 'up_lock', chunk_size => 1000)");
# a writer that keeps its transaction open for three seconds
my $holder = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres') . ' application_name=lock_holder',
		'-c', "BEGIN; UPDATE up_lock SET a = a WHERE id = 1; SELECT pg_sleep(3); COMMIT"
	]);
my $holder_pid = wait_until(10, sub {
	$node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'lock_holder' "
		  . "AND wait_event = 'PgSleep'");
});
ok($holder_pid, 'another session holds a write open on the upstream');
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '500ms'; CALL backfill.run_job($job)");
is($rc, 0, 'the run that waits for the lock finishes');
finish_bg($holder);
@lines = grep { /^INFO:/ } messages($err);
note("run_job sent:\n" . join("\n", @lines));
my @waits = grep { /waiting for/ } @lines;
cmp_ok(scalar(@waits), '>=', 2, 'at least two lines while the lock is waited for');
like(
	$waits[0] // '',
	qr{^INFO:  backfill job $job: waiting for ShareRowExclusiveLock on table "up_lock" for \d+\.\d s, held by pid $holder_pid$},
	'a line says what it waits for, for how long, and who holds it');
my @secs = map { /for (\d+\.\d) s/ ? $1 : () } @waits;
ok(@secs >= 2 && $secs[-1] > $secs[0], 'the time waited grows from one line to the next');
ok((grep { /^INFO:  backfill job $job: granted ShareRowExclusiveLock on table "up_lock" after \d+\.\d s$/ } @lines),
	'a line says when the lock was granted');
like($lines[-1], qr{^INFO:  backfill job $job: run ended after \d+\.\d s: finished, 100%, 0 failures; 500 rows copied, \d+ changes applied, \d+ barriers, \d+ rows/s$},
	'the run ends with its line');

# a barrier held off by a session that holds the downstream
make_upstream($node, 'up_dl', 1, 500);
my $job_dl = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down_dl', 'up_dl', chunk_size => 100)");
$holder = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres') . ' application_name=down_holder',
		'-c', "BEGIN; LOCK TABLE down_dl IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(2); COMMIT"
	]);
$holder_pid = wait_until(10, sub {
	$node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'down_holder' "
		  . "AND wait_event = 'PgSleep'");
});
ok($holder_pid, 'another session holds the downstream');
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '500ms'; CALL backfill.run_job($job_dl)");
is($rc, 0, 'the run held off by the downstream\'s lock finishes');
finish_bg($holder);
@lines = grep { /^INFO:/ } messages($err);
note("run_job sent:\n" . join("\n", @lines));
like(
	(grep { /waiting for/ } @lines)[0] // '',
	qr{^INFO:  backfill job $job_dl: waiting for (AccessShare|RowExclusive)Lock on table "down_dl" for \d+\.\d s, held by pid $holder_pid$},
	'a barrier says it waits for the downstream, and who holds it');

# the cutover's lock step: each attempt bounded, retried, and a line at
# the interval with the pid that holds the table
$holder = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres') . ' application_name=cutover_holder',
		'-c', "BEGIN; SELECT count(*) FROM up_lock; SELECT pg_sleep(4); COMMIT"
	]);
$holder_pid = wait_until(10, sub {
	$node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE application_name = 'cutover_holder' "
		  . "AND wait_event = 'PgSleep'");
});
ok($holder_pid, 'another session reads the upstream in an open transaction');
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '1s'; "
	  . "SELECT state FROM backfill.cutover($job, lock_timeout => '200ms', attempts => 30)");
is($rc, 0, 'the cutover gets its lock once the reader has gone');
finish_bg($holder);
@lines = grep { /^INFO:/ } messages($err);
note("cutover sent:\n" . join("\n", @lines));
cmp_ok(scalar(@lines), '>=', 2, 'the cutover sends lines while it waits');
like(
	$lines[0] // '',
	qr{^INFO:  backfill job $job: cutover waiting for AccessExclusiveLock on table public\.up_lock for \d+\.\d s \(attempt \d+ of 30\), held by pid $holder_pid$},
	'a cutover line says what it waits for, for how long, the attempt and the holder');

# ---- 3. the catch-up ----
make_upstream($node, 'up_cu', 1, 20000);
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down_cu', 'up_cu', kind => 'snapshot', chunk_size => 50)");
# a backlog in the log: every row changed twice after the snapshot epoch
$node->safe_psql('postgres', 'UPDATE up_cu SET a = a + 1; UPDATE up_cu SET a = a + 1');
# and a writer that keeps adding changes until the job has been catching up
# for two seconds, however long its snapshot takes: a barrier that finds
# more than a chunk of changes keeps the job catching up
my $writer = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres'),
		'-c', q{DO $$DECLARE since timestamptz; BEGIN
		          FOR i IN 1 .. 6000 LOOP
		            UPDATE up_cu SET a = a + 1 WHERE id BETWEEN (i * 97) % 19000 + 1 AND (i * 97) % 19000 + 100;
		            COMMIT;
		            IF since IS NULL AND EXISTS (SELECT FROM backfill.actor
		                                         WHERE job_id = JOB_ID AND log_store_lag_ms IS NOT NULL) THEN
		              since := clock_timestamp();
		            END IF;
		            EXIT WHEN clock_timestamp() > since + interval '2 s';
		            PERFORM pg_sleep(0.02);
		          END LOOP; END$$} =~ s/JOB_ID/$job/r
	]);
# a line after every barrier: the barrier that applies the backlog is
# followed by a catch-up line with its rate, however fast the machine (the
# next barrier may find the job caught up)
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '1ms'; CALL backfill.run_job($job)");
is($rc, 0, 'the snapshot job catches up and finishes');
finish_bg($writer);
@lines = grep { /^INFO:/ } messages($err);
note("run_job sent:\n" . join("\n", @lines));
my @catchup = grep { /catching up/ } @lines;
cmp_ok(scalar(@catchup), '>=', 1, 'lines during the catch-up');
like(
	$catchup[-1] // '',
	qr{^INFO:  backfill job $job: .+, catching up: \d+ changes? left, (\d+ changes/s|changes/s unknown), ETA (\d\d:\d\d:\d\d|unknown)$},
	'a catch-up line: the backlog, its rate, an ETA');
ok(!(grep { /catching up: [1-9]\d* changes? left, .*ETA 00:00:00$/ } @catchup),
	'never ETA 00:00:00 while changes are left');
ok((grep { /catching up: \d+ changes? left, \d+ changes\/s, ETA/ } @catchup),
	'a rate of changes applied once the catch-up has begun');
my ($applied) = ($lines[-1] // '') =~ /(\d+) changes applied/;
cmp_ok($applied // 0, '>', 0, 'the last line counts the changes applied');
is(verify_rows($node, $job), '', 'the job copied every row and change');

# ---- 4. the last line: a run stopped at max_barriers, a failed one, a worker's ----
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down_end', 'up_lock', chunk_size => 100, rate_limit => 200)");
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '1min'; CALL backfill.run_job($job, 2)");
like((grep { /^INFO:/ } messages($err))[-1] // '',
	qr{^INFO:  backfill job $job: run ended after \d+\.\d s: backfilling, [0-9.]+% \(\d+/500\), 0 failures; \d+ rows copied, 0 changes applied, 2 barriers, \d+ rows/s$},
	'a run stopped at max_barriers ends with its line');
($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '1min'; SET statement_timeout = '1500ms'; "
	  . "CALL backfill.run_job($job)");
isnt($rc, 0, 'the run cancelled by statement_timeout fails');
@lines = messages($err);
note("run_job sent:\n" . join("\n", @lines));
like((grep { /^INFO:/ } @lines)[-1] // '',
	qr{^INFO:  backfill job $job: run failed after 1\.\d s: $summary$},
	'a failed run ends with its line, before the error');
like($err, qr/canceling statement due to statement timeout/, 'then the error');

$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down_bg', 'up_lock', chunk_size => 100)");
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
like(wait_status($node, $job, ['finished', 'failed']), qr/^finished/, 'the worker finishes the job');
ok(wait_until(10, sub {
	slurp_file($node->logfile, $log_offset) =~
	  m{LOG:  backfill job $job actor \d+: run ended after \d+\.\d s: 500 rows copied, 0 changes applied, \d+ barriers, \d+ rows/s}
}), 'a worker ends its run with its line in the server log');

no_crash_in_log($node);
$node->stop;
done_testing();
