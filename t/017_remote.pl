
# Copyright (c) backfill authors
#
# A cdc job whose upstream is a foreign table of postgres_fdw: a table of
# another server (a second node, wal_level = logical) copied in splits while
# pgbench writes on it (inserts, updates, deletes, key changes), with one
# actor in the foreground and four background workers; verify_job compares
# the downstream with the source throughout, with its pending rules; then the
# downstream equals the source both ways, the job follows the source after its
# finish (at each run_job, or in a worker until stop_job), and drop_job leaves
# neither slot nor publication on the source.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $source = remote_source('source', 100000);

my $local = worker_node('local');
import_remote($local, $source);

sub differences { return remote_differences($local, $_[0]); }

# the slots and publications of this extension on the source
sub source_objects
{
	return $source->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'backfill%')
    || ' ' || (SELECT count(*) FROM pg_publication WHERE pubname LIKE 'backfill%')});
}

my $script = writer_script($source, 't');

# ---- one actor, in the foreground, while pgbench writes ----
my $job1 = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy1', 'remote.t', kind => 'cdc', chunk_size => 2000)");
is($local->safe_psql('postgres', "SELECT kind, remote FROM backfill.jobs WHERE job_id = $job1"),
	'cdc|t', 'a cdc job on a foreign table is a remote job');
ok($local->safe_psql('postgres', "SELECT cardinality(remote_splits) FROM backfill.job WHERE job_id = $job1") >= 3,
	'the key range is cut into splits from the source statistics');
is(source_objects(), '0 0', 'create_job makes nothing on the source');
is($local->safe_psql('postgres', "SELECT vnode_mapping IS NULL AND vnode_bounds IS NULL FROM backfill.job WHERE job_id = $job1"),
	't', 'a remote job has splits, not range vnodes');
is($local->safe_psql('postgres', qq{
SELECT count(*) = cardinality(j.remote_splits) + 1
       AND bool_and(s.current_pos = format('[%s,%s)', j.remote_splits[s.vnode], j.remote_splits[s.vnode + 1]))
       AND NOT bool_or(s.backfill_finished)
  FROM backfill.job_state($job1) s, backfill.job j WHERE j.job_id = $job1 GROUP BY j.remote_splits}),
	't', 'job_state has one row per split, with its range, none finished');
like($local->safe_psql('postgres', "SELECT progress FROM backfill.ddl_progress WHERE ddl_id = $job1"),
	qr{^0\.00% \(0/100000\) \[splits: 0/\d+\]$}, 'ddl_progress counts the finished splits');

# part of the copy, then verify_job while the source is written: the splits
# not finished are not compared, the changes not applied yet are pending
$local->safe_psql('postgres', "CALL backfill.run_job($job1, 4)");
ok($local->safe_psql('postgres', "SELECT count(*) FROM backfill.job_state($job1) WHERE backfill_finished") >= 1,
	'some splits finished');

# the state rows are decoded as RisingWave's state_v2.rs decodes them, field
# by field in its order: a broken field fails the job with its name, the
# first one when two are broken; the row put back, the job runs on
my $split = $local->safe_psql('postgres',
	"SELECT min(split_id) FROM backfill.state_$job1 WHERE backfill_finished");
my $saved = $local->safe_psql('postgres',
	"SELECT row_to_json(s) FROM backfill.state_$job1 s WHERE split_id = $split");
for my $case (
	[ 'backfill_finished = NULL', 'backfill_finished' ],
	[ 'row_count = NULL', 'row_count' ],
	[ 'row_count = -1', 'row_count' ],
	[ q{cdc_offset_low = '"x"'}, 'cdc_offset_low' ],
	[ q{cdc_offset_high = '{"lsn": 7}'}, 'cdc_offset_high' ],
	[ q{row_count = NULL, cdc_offset_low = '[]'}, 'row_count' ])
{
	$local->safe_psql('postgres', "UPDATE backfill.state_$job1 SET $case->[0] WHERE split_id = $split");
	my ($ret, $out, $err) = $local->psql('postgres', "CALL backfill.run_job($job1, 1)");
	like($err, qr/ERROR:  invalid backfill state: $case->[1]\n.*invalid row for split $split\./,
		"a state row with $case->[0] fails the job: invalid backfill state: $case->[1]");
	$local->safe_psql('postgres', qq{
UPDATE backfill.state_$job1 s
   SET (backfill_finished, row_count, cdc_offset_low, cdc_offset_high)
     = (r.backfill_finished, r.row_count, r.cdc_offset_low, r.cdc_offset_high)
  FROM json_populate_record(NULL::backfill.state_$job1, '$saved') r
 WHERE s.split_id = $split});
}
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job1"),
	'failed', 'the job failed with its state');
$local->safe_psql('postgres', "CALL backfill.run_job($job1, 1)");
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job1"),
	'backfilling', 'and runs on once its state is whole again');
my $w = start_writers($source, $script, 6, rate => 300);
my $bad = 0;
for my $i (1 .. 5)
{
	$bad += $local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job1)");
	$local->safe_psql('postgres', "CALL backfill.run_job($job1, 1)");
}
finish_bg($w);
is($bad, 0, 'verify_job finds nothing while the source is written and the copy is half done');
# one more barrier after the writes: every change is fetched
$local->safe_psql('postgres', "CALL backfill.run_job($job1, 1)");
is($local->safe_psql('postgres', qq{
SELECT count(*) FROM (SELECT * FROM remote.t EXCEPT SELECT * FROM copy1) x
 WHERE EXISTS (SELECT FROM backfill.job_state($job1) s, backfill.job j
                WHERE j.job_id = $job1 AND s.backfill_finished
                  AND (j.remote_splits[s.vnode] IS NULL OR x.id >= j.remote_splits[s.vnode]::int)
                  AND (j.remote_splits[s.vnode + 1] IS NULL OR x.id < j.remote_splits[s.vnode + 1]::int))
   AND NOT EXISTS (SELECT FROM backfill.changes_$job1 c WHERE c.id = x.id)}),
	'0', 'the finished splits hold the source rows, but for changes fetched and not applied');
# a difference in a finished split is found: a row changed here only
my $victim = $local->safe_psql('postgres', qq{
SELECT min(d.id) FROM copy1 d, backfill.job_state($job1) s, backfill.job j
 WHERE j.job_id = $job1 AND s.vnode = 0 AND s.backfill_finished
   AND (j.remote_splits[1] IS NULL OR d.id < j.remote_splits[1]::int)});
$local->safe_psql('postgres', "UPDATE copy1 SET b = 'tampered' WHERE id = $victim");
is($local->safe_psql('postgres', "SELECT pk || ' ' || problem FROM backfill.verify_job($job1)"),
	"($victim) different", 'verify_job reports a row changed downstream in a finished split');
$local->safe_psql('postgres', "DELETE FROM copy1 WHERE id = $victim");
is($local->safe_psql('postgres', "SELECT pk || ' ' || problem FROM backfill.verify_job($job1)"),
	"($victim) missing", 'and a row missing there');
$local->safe_psql('postgres', "INSERT INTO copy1 SELECT * FROM remote.t WHERE id = $victim");

$w = start_writers($source, $script, 8, rate => 300);
$local->safe_psql('postgres', "CALL backfill.run_job($job1)");
finish_bg($w);
ok(writer_transactions($w) > 100, 'the writers ran during the copy');
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job1"),
	'finished', 'the job finished');
is(source_objects(), '1 1', 'the job owns one slot and one publication on the source');

# the downstream is the user's table: ALTER TABLE on it is the user's to make
# (the foreign upstream has no primary key here; its key is the source's)
$local->safe_psql('postgres', q{
ALTER TABLE copy1 ALTER COLUMN b SET DEFAULT 'none';
COMMENT ON TABLE copy1 IS 'a copy of remote.t';
});
is($local->safe_psql('postgres', "SELECT pg_catalog.pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'copy1'::regclass"),
	"'none'::text", 'ALTER TABLE on the downstream of a remote job is allowed');

# after the finish, run_job applies what the source committed
is($local->safe_psql('postgres', "SELECT progress FROM backfill.jobs WHERE job_id = $job1")
	  . ' ' . $local->safe_psql('postgres', "SELECT count(*) FROM backfill.ddl_progress WHERE ddl_id = $job1"),
	'100% 0', 'a finished job: progress 100% in backfill.jobs, no longer in ddl_progress (being created)');
$w = start_writers($source, $script, 4, rate => 300);
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job1)"),
	'0', 'verify_job of a finished job: what the source committed since its last run is pending');
finish_bg($w);
$local->safe_psql('postgres', "CALL backfill.run_job($job1)");
is(differences('copy1'), '0 0', 'parallelism 1: the downstream equals the source both ways');
is($local->safe_psql('postgres', "SELECT lag_bytes FROM backfill.jobs WHERE job_id = $job1"),
	'0', 'no lag once caught up');

$source->safe_psql('postgres', q{
UPDATE t SET b = 'later' WHERE id % 100 = 0;
DELETE FROM t WHERE id % 101 = 0;
INSERT INTO t VALUES (-1, 1, 'new'), (-2, 2, 'new');
UPDATE t SET id = -3 WHERE id = 4;
});
$local->safe_psql('postgres', "CALL backfill.run_job($job1)");
is(differences('copy1'), '0 0', 'a finished job follows the source at each run');

$local->safe_psql('postgres', "SELECT backfill.drop_job($job1)");
is(source_objects(), '0 0', 'drop_job drops the slot and the publication on the source');

# ---- four actors in the background, while pgbench writes ----
my $job4 = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy4', 'remote.t', kind => 'cdc', parallelism => 4, chunk_size => 1000)");
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.actor WHERE job_id = $job4"),
	'4', 'four actors');
$w = start_writers($source, $script, 10, rate => 300);
$local->safe_psql('postgres', "SELECT backfill.start_job($job4)");
is(wait_status($local, $job4, ['finished', 'failed']), 'finished', 'the four actors finished the job');
finish_bg($w);
is($local->safe_psql('postgres', "SELECT last_error FROM backfill.jobs WHERE job_id = $job4"),
	'', 'no error');
is($local->safe_psql('postgres', "SELECT count(*) FILTER (WHERE NOT backfill_finished) FROM backfill.state_$job4"),
	'0', 'every split finished');

# after the finish, one worker follows the source until stop_job
ok( wait_until(30, sub {
		$local->safe_psql('postgres', "SELECT count(*) FROM backfill.workers WHERE job_id = $job4") eq '1' }),
	'one worker follows the source after the finish');
is(wait_until(60, sub { differences('copy4') eq '0 0' }), 1,
	'parallelism 4: the downstream equals the source both ways, without run_job');
is(join(': ', (psql_error($local, "CALL backfill.run_job($job4)"))[0, 1]),
	"55006: backfill job $job4 is already running", 'run_job is refused while the worker follows');
$w = start_writers($source, $script, 6, rate => 300);
$bad = 0;
for my $i (1 .. 5)
{
	$bad += $local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job4)");
	sleep 1;
}
finish_bg($w);
is($bad, 0, 'verify_job finds nothing while the worker follows a source being written');
is(wait_until(60, sub { differences('copy4') eq '0 0' }), 1, 'the worker applied the writes');
is(wait_until(30, sub { $local->safe_psql('postgres', "SELECT lag_bytes FROM backfill.jobs WHERE job_id = $job4") eq '0' }),
	1, 'no lag once caught up');

$local->safe_psql('postgres', "SELECT backfill.stop_job($job4)");
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.workers WHERE job_id = $job4"),
	'0', 'stop_job stops the worker');
$source->safe_psql('postgres', "UPDATE t SET b = 'after stop' WHERE id % 97 = 0");
sleep 1;
isnt(differences('copy4'), '0 0', 'a stopped job does not follow');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job4)"),
	'0', 'what it has not fetched is pending');
$local->safe_psql('postgres', "SELECT backfill.start_job($job4)");
is(wait_until(60, sub { differences('copy4') eq '0 0' }), 1, 'start_job of the finished job follows again');

# the launcher starts the worker that follows after a restart
$local->restart;
ok( wait_until(30, sub {
		$local->safe_psql('postgres', "SELECT count(*) FROM backfill.workers WHERE job_id = $job4") eq '1' }),
	'the launcher starts the follower again after a restart');
$source->safe_psql('postgres', "UPDATE t SET b = 'after restart' WHERE id % 89 = 0");
is(wait_until(60, sub { differences('copy4') eq '0 0' }), 1, 'and it follows');

# a TRUNCATE on the source stops the worker, with the error on the job
$source->safe_psql('postgres', "TRUNCATE t");
ok( wait_until(30, sub {
		$local->safe_psql('postgres', "SELECT count(*) FROM backfill.workers WHERE job_id = $job4") eq '0' }),
	'a TRUNCATE of the source stops the worker');
is($local->safe_psql('postgres', "SELECT status || ': ' || last_error FROM backfill.jobs WHERE job_id = $job4"),
	'finished: table "public.t" was truncated on the source', 'the job stays finished, with the error');
$local->safe_psql('postgres', "SELECT backfill.drop_job($job4)");
is(source_objects(), '0 0', 'nothing left on the source');

no_crash_in_log($local);
done_testing();
