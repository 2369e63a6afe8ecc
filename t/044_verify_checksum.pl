
# Copyright (c) backfill authors
#
# verify_job(method => 'checksum') of a job whose upstream is on another
# server: the checksums of equal ranges are computed on the source, one
# aggregate query per range, so that no row of an equal range crosses the
# network (the source's log_statement = all shows what it was asked); the
# differences planted in the downstream are found exactly, the same rows as
# method => 'rows' finds, with the changes the job has not fetched pending;
# cutover(verify => true) refuses the switchover over a difference;
# repair_job repairs them, reading the source's rows of those keys only.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $source = remote_source('source', 20000, "log_statement = all\n");
my $local = worker_node('local');
import_remote($local, $source);

my $job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy1', 'remote.t', kind => 'cdc', chunk_size => 5000)");
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'finished', 'the remote job finished');

# the source's cursors over t opened since the log was at $offset
sub source_queries
{
	my ($offset) = @_;
	my $log = slurp_file($source->logfile, $offset);
	return [ grep { /FROM public\.t\b/ } $log =~ /DECLARE c\d+ CURSOR FOR\s+(SELECT[^\n]*)/g ];
}

my $offset = -s $source->logfile;
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"),
	'0', 'checksum: equal copies');
my $queries = source_queries($offset);
my @aggregates = grep { /^SELECT (?:'u'::text, )?count\(\*\), sum\(/ } @$queries;
my @fetches = grep { !/^SELECT (?:'u'::text, )?count\(\*\), sum\(/ && !/LIMIT 1::bigint$/ } @$queries;
is(scalar(@aggregates), 1, 'the source computed the checksum of the one range: one aggregate query');
is(scalar(@fetches), 0, 'and was asked for no rows')
  or diag(join("\n", @fetches));
like($aggregates[0] // '', qr/hashint4extended\(id, 1::bigint\).*hashtextextended\(b, 3::bigint\)/,
	'the aggregate hashes the rows on the source');

$offset = -s $source->logfile;
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job, 'rows')"),
	'0', 'rows: equal copies');
$queries = source_queries($offset);
ok((grep { /^SELECT id, a, b FROM public\.t/ } @$queries),
	'method rows fetches the rows of the source');

# planted differences: a changed value, a missing row, an extra row, a NULL
# against a value, a value against a NULL; and changes of the source the job
# has not fetched, which are pending
$source->safe_psql('postgres', "UPDATE t SET b = NULL WHERE id = 30000");
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
$local->safe_psql('postgres', q{
UPDATE copy1 SET a = -1 WHERE id = 100;
DELETE FROM copy1 WHERE id = 9000;
INSERT INTO copy1 VALUES (9001, 1, 'extra');
UPDATE copy1 SET b = NULL WHERE id = 20000;
UPDATE copy1 SET b = 'was null' WHERE id = 30000;
});
$source->safe_psql('postgres', "UPDATE t SET b = 'not fetched' WHERE id IN (500, 25000)");
my $expected = '(100) different,(9000) missing,(9001) extra,(20000) different,(30000) different';
is($local->safe_psql('postgres',
		"SELECT string_agg(pk || ' ' || problem, ',') FROM backfill.verify_job($job, 'rows')"),
	$expected, 'rows: the planted differences, the changes not fetched pending');
$offset = -s $source->logfile;
is($local->safe_psql('postgres',
		"SELECT string_agg(pk || ' ' || problem, ',') FROM backfill.verify_job($job)"),
	$expected, 'checksum: the same rows');
$queries = source_queries($offset);
my $fetched = grep { !/^SELECT (?:'u'::text, )?count\(\*\), sum\(/ && !/LIMIT 1::bigint$/ } @$queries;
ok($fetched >= 1 && (grep { /^SELECT (?:'u'::text, )?count\(\*\), sum\(/ } @$queries) > 1,
	'the ranges that differ were cut and fetched, the others checked by aggregates');
for my $r (1, 50, 1000)
{
	is($local->safe_psql('postgres',
			"SELECT string_agg(pk || ' ' || problem, ',') FROM backfill.verify_job($job, range_rows => $r)"),
		$expected, "checksum, ranges of at most $r rows: the same rows");
}

# the gate: the switchover is refused over the differences, and nothing is
# changed on the source
my ($ret, $out, $err) = $local->psql('postgres', "SELECT backfill.cutover($job, verify => true)");
like($err, qr/ERROR:  cannot cut over backfill job $job because its downstream differs from its upstream\n.*DETAIL:  backfill.verify_job\($job\) found 5 differences: \(100\) different, \(9000\) missing/s,
	'cutover(verify => true) refuses the switchover, the differences in its DETAIL');
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'finished', 'the job is untouched');

# repair_job repairs a job from another server: the source's rows of the
# keys that differ, read through the foreign table, and those only; the
# changes the job has not fetched stay pending, and its next run applies
# them over the repaired rows
$offset = -s $source->logfile;
is($local->safe_psql('postgres', "CALL backfill.repair_job($job, 2)"),
	'3|1|1|3|t', 'repair_job: 3 ranges of at most 2 keys, one missing, one extra, three different; clean after');
$queries = source_queries($offset);
my @row_reads = grep { !/^SELECT (?:'u'::text, )?count\(\*\), sum\(/ && !/LIMIT 1::bigint$/ } @$queries;
ok(!(grep { !/WHERE/ } @row_reads), 'every read of the source\'s rows is of some keys, none of the whole table')
  or diag(join("\n", @row_reads));
is($local->safe_psql('postgres',
		"SELECT string_agg(pk || ' ' || problem, ',') FROM backfill.verify_job($job, 'rows')"),
	'', 'rows: no difference after the repair');
is($local->safe_psql('postgres', "SELECT a, b FROM copy1 WHERE id IN (100, 9000, 30000) ORDER BY id"),
	$source->safe_psql('postgres', "SELECT a, b FROM t WHERE id IN (100, 9000, 30000) ORDER BY id"),
	'the repaired rows are the source\'s');
is($local->safe_psql('postgres', "SELECT count(*) FROM copy1 WHERE id = 9001"), '0', 'the extra row is gone');
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
is($local->safe_psql('postgres', "SELECT string_agg(b, ',' ORDER BY id) FROM copy1 WHERE id IN (500, 25000)"),
	'not fetched,not fetched', 'the next run applies the changes the repair left pending');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"),
	'0', 'checksum: equal copies');

$source->stop;
$local->stop;
done_testing();
