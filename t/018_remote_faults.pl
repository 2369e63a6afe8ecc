
# Copyright (c) backfill authors
#
# Faults during a copy from another server by four background workers while
# pgbench writes on the source: kill -9 of the local server, the source's
# backends of the job terminated, the source restarted after being down for a
# while.  After each the job resumes, re-reading at most one split per actor,
# and in the end the downstream equals the source both ways and nothing is
# left on the source after drop_job.

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
INSERT INTO t SELECT g * 2, g % 1000, md5(g::text) FROM generate_series(1, 120000) g;
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

sub differences
{
	my ($table) = @_;
	return $local->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT * FROM remote.t EXCEPT SELECT * FROM $table) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM $table EXCEPT SELECT * FROM remote.t) y)});
}

# the splits started and not finished, as committed: those a restart reads again
sub splits_to_reread
{
	my ($job) = @_;
	return $local->safe_psql('postgres', qq{
SELECT count(*) || ' ' || coalesce(sum(row_count), 0) FROM backfill.state_$job
 WHERE NOT backfill_finished AND row_count > 0});
}

my $script = writer_script($source, 't');
my $w = start_writers($source, $script, 60, rate => 200);

# rate limited, so that the faults come in the middle of the copy
my $job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy', 'remote.t', kind => 'cdc', parallelism => 4, "
	  . "chunk_size => 500, rate_limit => 2500)");
$local->safe_psql('postgres', "SELECT backfill.start_job($job)");
ok(wait_workers($local, $job, map { $_->{actor_id} } @{ actor_rows($local, $job) }),
	'four workers run');

# ---- kill -9 of the local server in the middle of the copy ----
like($local->safe_psql('postgres', "SELECT wait_rows($job, 40000, 120)"),
	qr/^backfilling/, 'a third of the copy done');
kill_postmaster_and_restart($local, 'local crash');
my ($reread, $rows) = split / /, splits_to_reread($job);
ok($reread <= 4, "at most one split per actor to read again ($reread splits, $rows rows)");
note("rows read again after the crash: $rows");
ok(wait_workers($local, $job, map { $_->{actor_id} } @{ actor_rows($local, $job) }),
	'the launcher starts the workers again');

# ---- the source's backends of the job terminated ----
like($local->safe_psql('postgres', "SELECT wait_rows($job, 80000, 120)"),
	qr/^backfilling/, 'two thirds of the copy done');
my $terminated = $source->safe_psql('postgres', q{
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
 WHERE application_name LIKE 'backfill job %'});
ok($terminated >= 1, "terminated $terminated backends of the job on the source");

# ---- the source down for a while, then back ----
$source->stop('fast');
sleep 3;
like($local->safe_psql('postgres', "SELECT coalesce(string_agg(waiting_for, ','), '') FROM backfill.jobs WHERE job_id = $job"),
	qr/waiting for the source/, 'backfill.jobs says the job waits for the source');
$source->start;
$w = start_writers($source, $script, 20, rate => 200);

is(wait_status($local, $job, [ 'finished', 'failed' ], 180), 'finished', 'the job finished');
finish_bg($w);
is($local->safe_psql('postgres', "SELECT last_error FROM backfill.jobs WHERE job_id = $job"),
	'', 'no error recorded');
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
is(differences('copy'), '0 0', 'the downstream equals the source both ways after the faults');

$local->safe_psql('postgres', "SELECT backfill.drop_job($job)");
is($source->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots) || ' ' || (SELECT count(*) FROM pg_publication)}),
	'0 0', 'no slot and no publication left on the source');

done_testing();
