
# Copyright (c) backfill authors
#
# A remote job applies an update whose new row the source's WAL does not
# carry whole: an update that leaves a TOASTed column untouched sends it as
# "unchanged" (pgoutput's 'u'), and the job reads those rows again from the
# source by their keys (a refetch), for a one-column key and for a key of two
# columns.  The downstream equals the source both ways afterwards.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $source = remote_source('source', 2000);
$source->safe_psql('postgres', q{
ALTER TABLE t ALTER b SET STORAGE EXTERNAL;
UPDATE t SET b = repeat(md5(id::text), 200) WHERE id <= 200;
CREATE TABLE t2 (k1 int, k2 text, a int, b text, PRIMARY KEY (k1, k2));
ALTER TABLE t2 ALTER b SET STORAGE EXTERNAL;
INSERT INTO t2 SELECT g % 50, 'k' || (g / 50), g, repeat(md5(g::text), 200)
  FROM generate_series(1, 500) g;
ANALYZE t, t2;
});

my $local = worker_node('local');
import_remote($local, $source);
$local->safe_psql('postgres', "IMPORT FOREIGN SCHEMA public LIMIT TO (t2) FROM SERVER src INTO remote");

sub differences
{
	my ($remote, $table) = @_;
	return $local->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT * FROM $remote EXCEPT SELECT * FROM $table) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM $table EXCEPT SELECT * FROM $remote) y)});
}

foreach my $case (['remote.t', 'copy_t', 'id <= 200'], ['remote.t2', 'copy_t2', 'k1 < 10'])
{
	my ($remote, $copy, $where) = @$case;
	my $job = $local->safe_psql('postgres',
		"SELECT backfill.create_job('$copy', '$remote', kind => 'cdc', chunk_size => 300)");
	$local->safe_psql('postgres', "CALL backfill.run_job($job)");
	is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
		'finished', "$remote: the job finished");
	is(differences($remote, $copy), '0 0', "$remote: the copy equals the source");

	# the TOASTed column is left out of the WAL: its rows are read again
	(my $table = $remote) =~ s/^remote\.//;
	$source->safe_psql('postgres', "UPDATE $table SET a = a + 1000 WHERE $where");
	$local->safe_psql('postgres', "CALL backfill.run_job($job)");
	is($local->safe_psql('postgres', "SELECT count(*) FROM $copy WHERE $where AND a >= 1000"),
		$local->safe_psql('postgres', "SELECT count(*) FROM $remote WHERE $where"),
		"$remote: the updated rows are read again from the source");
	is(differences($remote, $copy), '0 0', "$remote: the downstream equals the source both ways");
	is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.changes_$job"),
		'0', "$remote: no change is left waiting");
	$local->safe_psql('postgres', "SELECT backfill.drop_job($job)");
}

done_testing();
