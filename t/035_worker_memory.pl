
# Copyright (c) backfill authors
#
# A background worker keeps the same memory however many barriers it runs:
# an arrangement job reads 10 rows a barrier, one barrier after the other,
# and its worker's private memory (RssAnon, from /proc) is read after a
# first thousand barriers and again after the next ones.  Each barrier read
# the names of the job's four tables again into the job's own memory, which
# lives as long as the run, and kept them (4 kB a barrier here: the worker
# grew by megabytes in ten seconds).

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = worker_node('memory', conf => "backfill.barrier_interval_ms = 0\nsynchronous_commit = off\n");
$node->safe_psql('postgres', q{
CREATE TABLE up (id bigint PRIMARY KEY, v text);
INSERT INTO up SELECT g, md5(g::text) FROM generate_series(1, 300000) g;
});
my $job = $node->safe_psql('postgres',
	q{SELECT backfill.create_job('down', 'up', kind => 'arrangement', chunk_size => 10)});
$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
my $pid;
ok(wait_until(30, sub { ($pid) = map { $_->[1] } @{ job_workers($node, $job) }; defined $pid }),
	'one worker runs the job');

# the barriers the worker has committed so far
sub barriers
{
	return $node->safe_psql('postgres', qq{
SELECT coalesce(sum(barriers), 0) FROM backfill.progress WHERE job_id = $job});
}

ok(wait_until(60, sub { barriers() >= 1000 }), 'the worker commits a thousand barriers');
my ($cpu0, $mem0) = process_usage($pid);
my $barriers0 = barriers();
ok(wait_until(60, sub { barriers() >= $barriers0 + 2000 }), 'and two thousand more');
my ($cpu1, $mem1) = process_usage($pid);
my $barriers1 = barriers();
note(sprintf('%d barriers: private memory %d kB -> %d kB', $barriers1 - $barriers0, $mem0, $mem1));
cmp_ok($mem1 - $mem0, '<', 1024, 'its private memory grows by less than 1 MB over them');
is($node->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'backfilling', 'the job is still copying');

$node->safe_psql('postgres', "SELECT backfill.drop_job($job)");
no_crash_in_log($node);
$node->stop;
done_testing();
