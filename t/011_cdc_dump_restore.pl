
# Copyright (c) backfill authors
#
# t/011_cdc_dump_restore.pl: cdc jobs dumped and restored into a second
# database of the same server.
#
# In database postgres, three cdc jobs, each on a table of its own: one has
# run 3 barriers, and writes to its upstream after the last of them, at and
# above its position, are decoded by its slot but not yet forwarded; one has
# finished and follows its upstream; one has never run.  The database is
# dumped (pg_dump -Fc) and restored into a new database, where every table,
# the upstreams too, gets another OID.
#
# In the restored database:
#
# - the unfinished job's state row is for the old upstream's OID;
#   verify_job shows the writes made at or below its position after its last
#   barrier as differences: they are in the restored upstream and not in the
#   restored downstream, and they went to the WAL of the first database,
#   which no slot of this one decodes;
# - so its first run fails, with SQLSTATE 55000 and a message that says why
#   (DETAIL) and what to do (HINT), recorded on the job; no slot is made,
#   the downstream is left alone, and every later run fails the same way;
# - cancel and recreate, as the hint says, and the new job finishes equal to
#   the upstream;
# - the finished job runs (nothing to do) and keeps applying writes;
# - the job that never ran runs to the end in this database, with a slot of
#   its own, and is equal to its upstream.
#
# In postgres, meanwhile, the first job still resumes from its own slot and
# finishes equal to its upstream.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $n = 2000;
my $chunk_size = 100;

my $node = backfill_node(
	'main', conf => q{
wal_level = logical
max_replication_slots = 8
output_plugin_libraries = 'pgoutput, test_decoding, backfill'
});

sub sql
{
	my ($db, $q) = @_;
	return $node->safe_psql($db, $q);
}

make_upstream($node, $_, 1, $n) for ('up', 'up_new');
make_upstream($node, 'up_fin', 1, 300);
my %job;
for my $t ('up', 'up_fin', 'up_new')
{
	$job{$t} = sql('postgres',
		"SELECT backfill.create_job('${t}_down', '$t', 'cdc', chunk_size => $chunk_size)");
}
my ($job, $fin, $new) = @job{ 'up', 'up_fin', 'up_new' };

sql(
	'postgres', qq{
SET backfill.barrier_interval_ms = 0;
CALL backfill.run_job($job, 3);
CALL backfill.run_job($fin);
});
my $pos = sql('postgres', "SELECT id FROM backfill.state_$job");
cmp_ok($pos, '>', 10, "postgres: job $job has read rows (position $pos)");
cmp_ok($pos, '<', $n - 10, "postgres: job $job has not read them all");
is(job_info($node, $fin)->{status}, 'finished', "postgres: job $fin has finished");

# after the last barrier: at and below the position (an update, a delete,
# an insert, a key moved from above to below), and above it
sql(
	'postgres', qq{
UPDATE up SET b = 'after the last barrier' WHERE id IN (5, $pos);
DELETE FROM up WHERE id = 7;
INSERT INTO up VALUES (-1, 1, 'after the last barrier');
UPDATE up SET id = -2 WHERE id = $n;
UPDATE up SET b = 'after the last barrier' WHERE id = $n - 1;
});
is(verify_rows($node, $job), '',
	"postgres: job $job is consistent, its slot holding the writes pending");
my $dboid = sql('postgres', "SELECT oid FROM pg_database WHERE datname = 'postgres'");
is( sql('postgres', 'SELECT string_agg(slot_name, \',\' ORDER BY slot_name) FROM pg_replication_slots'),
	"backfill_${dboid}_$job",
	'postgres: the unfinished job has a slot, the finished one none');
my $state_at_dump = sql('postgres', "SELECT s::text FROM backfill.state_$job s");

# --- dump, and restore into a second database ---

my $dump = $node->basedir . '/dump.custom';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres') ],
	'pg_dump -Fc of postgres');
sql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
	'pg_restore into database restored');
my $rdboid = sql('postgres', "SELECT oid FROM pg_database WHERE datname = 'restored'");

is(sql('restored', "SELECT s::text FROM backfill.state_$job s"),
	$state_at_dump, 'restored: the state row as at the dump');
my $old_oid = sql('postgres', "SELECT 'up'::regclass::oid");
my $new_oid = sql('restored', "SELECT 'up'::regclass::oid");
isnt($new_oid, $old_oid, "restored: the upstream has another OID ($new_oid, was $old_oid)");
is(sql('restored', "SELECT split_id FROM backfill.state_$job"),
	$old_oid, "restored: the state row's split is the old upstream's OID");

# what a resume from a new slot would lose
is( sql('restored',
		"SELECT string_agg(pk || ' ' || problem, ', ' ORDER BY trim(both '()' from pk)::int) FROM backfill.verify_job($job)"
	),
	"(-2) missing, (-1) missing, (5) different, (7) extra, ($pos) different",
	'restored: verify_job shows the writes at and below the position made after the last barrier'
);

# --- the unfinished job stops with an error ---

my $offset = sql('restored', "SELECT cdc_offset->>'lsn' FROM backfill.state_$job");
my $message = "cannot resume backfill job $job after a restore";
my $detail =
	"State table backfill.state_$job of backfill job $job has its row for split \"$old_oid\", "
  . "but table public.up has OID $new_oid: the job was dumped and restored. Its offset $offset "
  . "is a position in the write-ahead log of the database it was dumped from, where the writes "
  . "to the upstream since its last barrier went, and no replication slot of this database can "
  . 'decode them.';
my $hint =
  "Cancel the job with backfill.cancel_job($job) and create it again with backfill.recreate_job($job).";
my $down_before = sql('restored', 'SELECT count(*) FROM up_down');
for my $try (1, 2)
{
	my ($sqlstate, $msg, $err) = psql_error($node, "CALL backfill.run_job($job)", 'restored');
	is($sqlstate, '55000', "restored: run $try of job $job fails with SQLSTATE 55000")
	  or diag($err);
	is($msg, $message, "restored: run $try: the message");
	like($err, qr/^DETAIL:  \Q$detail\E$/m, "restored: run $try: the DETAIL")
	  or diag($err);
	like($err, qr/^HINT:  \Q$hint\E$/m, "restored: run $try: the HINT");
	is( sql('restored',
			"SELECT concat_ws('|', status, last_error, last_error_detail, last_sqlstate) FROM backfill.job WHERE job_id = $job"
		),
		"failed|$message|$detail|55000",
		"restored: run $try: the failure is recorded on the job");
}
is(sql('restored', "SELECT count(*) FROM pg_replication_slots WHERE database = 'restored'"),
	0, 'restored: no slot was made');
is(sql('restored', 'SELECT count(*) FROM up_down'), $down_before,
	'restored: the failed runs left the downstream alone');

# the way out: cancel and recreate
my $again = sql('restored', "SELECT backfill.recreate_job($job)");
sql('restored', "CALL backfill.run_job($again)");
is(job_info_in('restored', $again), 'finished', "restored: the recreated job $again finished");
is(sql('restored', "SELECT count(*) FROM backfill.verify_job($again)"),
	0, 'restored: verify_job of the recreated job is empty');
is(diff_in('restored', 'up', 'up_down'), 0,
	'restored: the recreated job\'s downstream equals the upstream');

# the finished job: nothing to resume, it follows its upstream
sql('restored', "CALL backfill.run_job($fin)");
is(job_info_in('restored', $fin), 'finished', "restored: job $fin runs and stays finished");
sql(
	'restored', q{
UPDATE up_fin SET b = 'after the restore' WHERE id <= 10;
DELETE FROM up_fin WHERE id BETWEEN 11 AND 20;
INSERT INTO up_fin VALUES (-1, 1, 'after the restore');
});
is(diff_in('restored', 'up_fin', 'up_fin_down'), 0,
	"restored: job $fin applies writes made after the restore");

# the job that never ran: its first run makes a slot here
sql(
	'restored', qq{
SET backfill.barrier_interval_ms = 0;
CALL backfill.run_job($new, 2);
UPDATE up_new SET b = 'between barriers' WHERE id IN (1, 150, $n);
CALL backfill.run_job($new);
});
is(job_info_in('restored', $new), 'finished', "restored: job $new, which had never run, finished");
is(sql('restored', "SELECT count(*) FROM backfill.verify_job($new)"),
	0, "restored: verify_job of job $new is empty");
is(diff_in('restored', 'up_new', 'up_new_down'), 0,
	"restored: job ${new}'s downstream equals the upstream");
is(sql('restored', "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'backfill_${rdboid}_%'"),
	0, 'restored: no slot is left');

# --- the first database is undisturbed ---

sql('postgres', "CALL backfill.run_job($job)");
is(job_info($node, $job)->{status}, 'finished', "postgres: job $job finished");
is(verify_rows($node, $job), '', "postgres: verify_job of job $job is empty");
is(table_diff($node, 'up', 'up_down'), 0, "postgres: job ${job}'s downstream equals the upstream");

no_crash_in_log($node);
done_testing();

sub job_info_in
{
	my ($db, $j) = @_;
	return sql($db, "SELECT status FROM backfill.job WHERE job_id = $j");
}

sub diff_in
{
	my ($db, $up, $down) = @_;
	return sql($db,
		    "SELECT count(*) FROM ((TABLE $up EXCEPT ALL TABLE $down) "
		  . "UNION ALL (TABLE $down EXCEPT ALL TABLE $up)) x");
}
