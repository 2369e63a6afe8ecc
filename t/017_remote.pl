
# Copyright (c) backfill authors
#
# A cdc job whose upstream is a foreign table of postgres_fdw: a table of
# another server (a second node, wal_level = logical) copied in splits while
# pgbench writes on it (inserts, updates, deletes, key changes), with one
# actor in the foreground and four background workers; then the downstream
# equals the source both ways, the job follows the source after its finish,
# and drop_job leaves neither slot nor publication on the source.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $source = PostgreSQL::Test::Cluster->new('source');
$source->init(allows_streaming => 'logical');
$source->append_conf('postgresql.conf', q{
max_replication_slots = 10
log_statement = none
});
$source->start;
$source->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, a int, b text);
INSERT INTO t SELECT g * 2, g % 1000, md5(g::text) FROM generate_series(1, 100000) g;
ANALYZE t;
});

my $local = worker_node('local');
$local->safe_psql('postgres', sprintf(q{
CREATE EXTENSION postgres_fdw;
CREATE SERVER src FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '%s', port '%s', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER src;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src INTO remote;
}, $source->host, $source->port));

# rows of the source missing downstream, and rows downstream not on the source
sub differences
{
	my ($table) = @_;
	return $local->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT * FROM remote.t EXCEPT SELECT * FROM $table) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM $table EXCEPT SELECT * FROM remote.t) y)});
}

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

my $w = start_writers($source, $script, 8, rate => 300);
$local->safe_psql('postgres', "CALL backfill.run_job($job1)");
finish_bg($w);
ok(writer_transactions($w) > 100, 'the writers ran during the copy');
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job1"),
	'finished', 'the job finished');
is(source_objects(), '1 1', 'the job owns one slot and one publication on the source');

# after the finish, run_job applies what the source committed
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
$local->safe_psql('postgres', "CALL backfill.run_job($job4)");
is(differences('copy4'), '0 0', 'parallelism 4: the downstream equals the source both ways');
$local->safe_psql('postgres', "SELECT backfill.drop_job($job4)");
is(source_objects(), '0 0', 'nothing left on the source');

no_crash_in_log($local);
done_testing();
