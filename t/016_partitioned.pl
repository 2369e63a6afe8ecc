
# Copyright (c) backfill authors
#
# t/016_partitioned.pl: a job over a partitioned upstream under writers,
# with partitions attached and detached while it backfills, killed -9 and
# resumed.
#
# The upstream pt (id bigint primary key, a int, b text) is partitioned by
# range: pt_low, itself hashed into two partitions, pt_mid, and pt_old, with
# 120k rows in all.  An arrangement job with two actors copies the rows
# whose a is not a multiple of 3, with a computed column upper(b), while
# pgbench writes: inserts, updates and key changes through the partitioned
# table (routed, some moving rows from pt_low to pt_mid), updates straight
# into pt_mid and deletes straight into pt_low.  Meanwhile:
#
# - a table pt_gap with keys below every position is attached: the next
#   barrier must forward its rows;
# - pt_old, whose keys are above the positions, is detached: its rows must
#   never reach the downstream;
# - pt_gap is detached again, once its rows are downstream: they must leave;
# - the backend running the job is killed with SIGKILL while a barrier is in
#   flight (frozen as in 001_kill_and_resume.pl): the committed state must be
#   there, and the downstream consistent.
#
# Then run_job finishes the job while the writers go on; the downstream must
# equal the filtered projection of the upstream both ways (EXCEPT ALL), and
# stay equal under more writes.  The chunk query is checked, with
# auto_explain, to read the partitions' key indexes merged in key order,
# without a sort.

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
my $node = backfill_node('partitioned');

$node->safe_psql(
	'postgres', q{
CREATE TABLE pt (id bigint PRIMARY KEY, a int, b text) PARTITION BY RANGE (id);
CREATE TABLE pt_low PARTITION OF pt FOR VALUES FROM (0) TO (100000) PARTITION BY HASH (id);
CREATE TABLE pt_low_0 PARTITION OF pt_low FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE pt_low_1 PARTITION OF pt_low FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE pt_mid PARTITION OF pt FOR VALUES FROM (100000) TO (200000);
CREATE TABLE pt_old PARTITION OF pt FOR VALUES FROM (200000) TO (210000);
INSERT INTO pt SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 110000) g;
INSERT INTO pt SELECT g, g % 1000, md5(g::text) FROM generate_series(200000, 209999) g;
CREATE TABLE pt_gap (id bigint PRIMARY KEY, a int, b text);
INSERT INTO pt_gap SELECT -g, g % 1000, 'gap' || g FROM generate_series(1, 5000) g;
VACUUM ANALYZE pt, pt_gap;
CREATE VIEW pt_expected AS SELECT id, a, upper(b) AS b_up FROM pt WHERE a % 3 <> 0;
});

# the writers: each client touches the keys of its own parity only
my $script = $node->basedir . '/writers_pt.sql';
append_to_file($script, <<'EOS');
\set i1 2 * random(0, 49999) + :client_id
\set i2 100000 + 2 * random(0, 49999) + :client_id
\set i3 100000 + 2 * random(0, 49999) + :client_id
\set i4 2 * random(0, 49999) + :client_id
\set i5 100000 + 2 * random(0, 49999) + :client_id
\set i6 2 * random(0, 49999) + :client_id
INSERT INTO pt (id, a, b) VALUES (:i1, :i1 % 1000, 'ins') ON CONFLICT (id) DO NOTHING;
UPDATE pt SET a = a + 1, b = md5(random()::text) WHERE id = :i2;
UPDATE pt_mid SET a = a + 2, b = 'direct' WHERE id = :i3;
DELETE FROM pt_low WHERE id = :i4;
UPDATE pt SET id = :i5, b = 'moved' WHERE id = :i6 AND NOT EXISTS (SELECT FROM pt WHERE id = :i5);
EOS

my $job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('pt_down', 'pt', columns => ARRAY['a', 'upper(b) AS b_up'], "
	  . "filter => 'a % 3 <> 0', parallelism => 2, chunk_size => 256, rate_limit => 2500)");

# one barrier, its statements' plans logged: each actor's chunk merges the
# partitions' key indexes (pt_low's two, under the ordered range partitions)
my ($out, $err) = ('', '');
$node->psql(
	'postgres', q{
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET client_min_messages = log;
SET backfill.barrier_interval_ms = 0;
CALL backfill.run_job(} . $job . q{, 1);
},
	stdout => \$out,
	stderr => \$err);
my @chunk_plans = grep { /Query Text: SELECT id, a, \(upper\(b\)\) AS b_up FROM public\.pt u/ }
  split /LOG:  duration: [\d.]+ ms  plan:\n/, $err;
is(scalar(@chunk_plans), 2, 'one chunk per actor in the first barrier');
for my $plan (@chunk_plans)
{
	like($plan, qr/Merge Append/, 'the chunk merges the partitions in key order');
	like($plan, qr/Index Scan using pt_low_0_pkey.*Index Scan using pt_low_1_pkey/s,
		'through the partitions\' key indexes');
	unlike($plan, qr/(^|->)\s*Sort\s+\(/m, 'without a sort');
}

my $total = $node->safe_psql('postgres', "SELECT count(*) FROM pt_expected");
my $w = start_writers($node, $script, 90);
my $r = start_run_job($node, $job);
my $pid = runner_pid($node, $r);
like($pid, qr/^\d+$/, 'found the run_job backend');

# a partition with keys below every position joins the upstream
like(wait_rows($node, $job, int($total * 0.15)), qr/^backfilling/, 'backfilling at 15%');
$node->safe_psql('postgres',
	"ALTER TABLE pt ATTACH PARTITION pt_gap FOR VALUES FROM (-100000) TO (0)");
# one whose keys are above every position leaves it
like(wait_rows($node, $job, int($total * 0.25)), qr/^backfilling/, 'backfilling at 25%');
$node->safe_psql('postgres', "ALTER TABLE pt DETACH PARTITION pt_old");
ok(wait_epoch_past($node, $job, 2), 'two barriers after the attach and the detach');
is($node->safe_psql('postgres', "SELECT count(*) FROM pt_down WHERE id < 0"),
	$node->safe_psql('postgres', "SELECT count(*) FROM pt_gap WHERE a % 3 <> 0"),
	'the attached partition\'s rows below the position were forwarded');
is($node->safe_psql('postgres', "SELECT count(*) FROM pt_down WHERE id >= 200000"), 0,
	'no row of the detached partition reached the downstream');
# and the attached one leaves again, its rows downstream
$node->safe_psql('postgres', "ALTER TABLE pt DETACH PARTITION pt_gap");
ok(wait_epoch_past($node, $job, 2), 'two barriers after the second detach');
is($node->safe_psql('postgres', "SELECT count(*) FROM pt_down WHERE id < 0"), 0,
	'the detached partition\'s rows left the downstream');

# kill -9 with a barrier in flight
my $f = freeze_job($node, $job, int($total * 0.5));
ok(wait_blocked_on_state($node, $job, $pid), 'run_job is blocked before committing a barrier');
my $before = job_info($node, $job);
is($before->{status}, 'backfilling', 'still backfilling when it is killed');
my $state_before = job_state($node, $job);
kill_backend_and_wait($node, $pid);
isnt(finish_bg($r), 0, 'the interrupted run_job failed');
finish_bg($f);
finish_bg($w);
my $after = job_info($node, $job);
is($after->{row_count}, $before->{row_count}, 'the committed row_count survived the crash');
is_deeply(job_state($node, $job), $state_before, 'the state is the one committed before the crash');
is(verify_rows($node, $job), '', 'the downstream holds exactly what the committed barriers wrote');

# resume to the end under writers
$w = start_writers($node, $script, 5);
$node->safe_psql('postgres', "CALL backfill.run_job($job)");
is(finish_bg($w), 0, 'writers ran without errors during the resume') or diag($w->{err});
cmp_ok(writer_transactions($w), '>', 0, 'writers did write');
is(job_info($node, $job)->{status}, 'finished', 'the job finished');
is(verify_rows($node, $job), '', 'verify_job is empty');
is(table_diff($node, 'pt_expected', 'pt_down'), 0,
	'the downstream equals the filtered projection of the upstream, both ways');

# once finished: writers, and a partition attached and detached
$w = start_writers($node, $script, 3);
is(finish_bg($w), 0, 'writers after the finish ran without errors') or diag($w->{err});
$node->safe_psql('postgres',
	"ALTER TABLE pt ATTACH PARTITION pt_old FOR VALUES FROM (200000) TO (210000)");
$node->safe_psql('postgres', "ALTER TABLE pt_low DETACH PARTITION pt_low_1");
is(verify_rows($node, $job), '', 'verify_job stays empty');
is(table_diff($node, 'pt_expected', 'pt_down'), 0,
	'the downstream still equals the filtered projection');
cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM pt_down WHERE id >= 200000"), '>', 0,
	'the partition attached after the finish was copied');

no_crash_in_log($node, 1);
$node->stop;
note sprintf('total %.1fs', time - $t0);
done_testing();
