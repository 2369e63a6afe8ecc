
# Copyright (c) backfill authors
#
# t/015_estimate.pl: backfill.estimate_job() against the job it estimates,
# on the benchmark's table (bench/run.sh: up (id bigint PRIMARY KEY, a int,
# b text, c timestamptz), 1M rows, frozen and analyzed) and on a wider one
# with out-of-line values that was never analyzed.
#
# For each, the estimate is made, then the job is created and run to the
# end in a session with barriers of 1 s (the default): rows, the size of the
# downstream (with its index and TOAST table) and the WAL the run wrote
# (pg_current_wal_insert_lsn() before and after) must be within 30% of the
# estimate, the run's duration within a factor of 3, give or take a second:
# a run of the wide table lasts half a second, which a machine shared with
# other work stretches by more than half now and then (0.34 s estimated
# against 0.69 s run, once in two full runs; 0.37 s against 1.20 s with the
# valgrind suite running beside the tests), with nothing of the extension
# changed.  The estimate leaves nothing behind: no table, no extension
# member.
#
# Twice: with wal_level = replica, where the sample's WAL is measured, and
# with wal_level = minimal, where the sample's table, new in its
# transaction, writes none and the estimate counts what a bulk insert
# writes instead.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use BackfillTestLib;

sub make_tables
{
	my ($node) = @_;
	$node->safe_psql(
		'postgres', q{
CREATE TABLE up (id bigint PRIMARY KEY, a int, b text, c timestamptz);
INSERT INTO up SELECT g, ((g::bigint * 7919) % 1000003)::int, md5(g::text),
                      '2026-01-01'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 1000000) g;
VACUUM (FREEZE, ANALYZE) up;
CREATE TABLE wide (k text PRIMARY KEY, n numeric, doc jsonb, big text);
INSERT INTO wide SELECT 'key-' || lpad(g::text, 8, '0'), g * 1.25,
                        jsonb_build_object('g', g, 'tags', ARRAY['x', 'y', md5(g::text)]),
                        CASE WHEN g % 50 = 0 THEN repeat(md5(g::text), 200) ELSE md5(g::text) END
  FROM generate_series(1, 150000) g;
CHECKPOINT;
});
}

sub within
{
	my ($est, $real, $fraction) = @_;
	return $real > 0 && abs($est - $real) / $real <= $fraction;
}

# estimate, run, compare
sub check_estimate
{
	my ($node, $up, $down, $columns) = @_;
	my $label = $node->name . ": $down ($up, columns $columns)";
	# the relations of the database and the extension's members, to compare
	my $before = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_class; SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass");
	my ($rows, $bytes, $wal, $secs) = split /\|/, $node->safe_psql('postgres',
		"SELECT rows, downstream_bytes, wal_bytes, extract(epoch FROM duration) "
		  . "FROM backfill.estimate_job('$up', columns => $columns)");
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM pg_class; SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass"),
		$before, "$label: the estimate left nothing behind");

	my $job = $node->safe_psql('postgres',
		"SELECT backfill.create_job('$down', '$up', columns => $columns)");
	my $t = time;
	my @out = split /\n/, $node->safe_psql(
		'postgres', qq{
SET backfill.barrier_interval_ms = 1000;
SELECT pg_current_wal_insert_lsn() AS l0 \\gset
CALL backfill.run_job($job);
SELECT row_count, pg_total_relation_size('$down'), pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0')
  FROM backfill.jobs WHERE job_id = $job;
});
	my $real_secs = time - $t;
	my ($real_rows, $real_bytes, $real_wal) = split /\|/, $out[-1];
	my $line = sprintf(
		'%s: rows %d / %d, downstream bytes %d / %d (%.2f), WAL bytes %d / %d (%.2f), duration %.2f s / %.2f s (%.2f)',
		$label, $rows, $real_rows, $bytes, $real_bytes, $bytes / $real_bytes,
		$wal, $real_wal, $wal / $real_wal, $secs, $real_secs, $secs / $real_secs);
	note "estimate / real: $line";
	ok(within($rows, $real_rows, 0.3), "$label: rows within 30%");
	ok(within($bytes, $real_bytes, 0.3), "$label: downstream bytes within 30%");
	ok(within($wal, $real_wal, 0.3), "$label: WAL bytes within 30%");
	ok($secs > 0 && $secs <= 3 * $real_secs + 1 && $real_secs <= 3 * $secs + 1,
		"$label: duration within a factor of 3, give or take a second");
	$node->safe_psql('postgres', "SELECT backfill.drop_job($job)");
	$node->safe_psql('postgres', 'CHECKPOINT');
}

for my $wal_level ('replica', 'minimal')
{
	my $node = backfill_node(
		"estimate_$wal_level",
		init => { allows_streaming => $wal_level eq 'replica' },
		conf => q{
autovacuum = off
shared_buffers = 256MB
max_wal_size = 4GB
checkpoint_timeout = 30min
});
	is($node->safe_psql('postgres', 'SHOW wal_level'), $wal_level, "wal_level is $wal_level");
	make_tables($node);
	check_estimate($node, 'up', 'up_down', 'NULL');
	check_estimate($node, 'up', 'up_ab', q{'{a,b}'}) if $wal_level eq 'replica';
	check_estimate($node, 'wide', 'wide_down', 'NULL');
	$node->stop;
}

done_testing();
