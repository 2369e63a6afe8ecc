
# Copyright (c) backfill authors
#
# t/009_rename_while_running.pl: renaming and moving a job's tables while it
# runs disturbs nothing.
#
# A job holds its tables by OID; its executor's plans name them, so every
# barrier locks the tables and looks their names up first, and makes its
# plans again under the new names when they changed (src/runtime/executor.c,
# backfill_executor_refresh).  Here the upstream and the downstream are
# renamed and moved to another schema while a rate-limited job runs, in the
# foreground and in background workers, under pgbench writers (which write
# through views, so that the renames do not break them); the jobs finish and
# the downstream equals the upstream.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = worker_node('rename');

# The writers write through a view, which holds the table by OID as the job
# does, so the renames do not break them either.
sub upstream_behind_view
{
	my ($table) = @_;
	make_upstream($node, $table, 1, 20000);
	$node->safe_psql('postgres', "CREATE VIEW ${table}_w AS SELECT * FROM $table");
	return writer_script($node, "${table}_w");
}

# --- in the foreground, under writers ---
my $script = upstream_behind_view('rn_up');
my $job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('rn_mv', 'rn_up', chunk_size => 500, rate_limit => 5000)");
my $writers = start_writers($node, $script, 3);
my $run = start_run_job($node, $job);
like(wait_rows($node, $job, 2000), qr/^backfilling/, 'the job is mid-backfill');

$node->safe_psql('postgres', 'ALTER TABLE rn_up RENAME TO rn_up2');
wait_rows($node, $job, 5000);
$node->safe_psql('postgres', 'CREATE SCHEMA rn_s; ALTER TABLE rn_mv SET SCHEMA rn_s');
wait_rows($node, $job, 8000);
$node->safe_psql('postgres', 'ALTER TABLE rn_s.rn_mv RENAME TO rn_mv2');

# each rename made a new executor; the old ones are gone with their memory:
# the run's backend has one barrier context, not one per executor it made
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE 'CALL backfill.run_job%'");
my $offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
$node->wait_for_log(qr/Grand total/, $offset);
my $contexts = slurp_file($node->logfile, $offset);
my $barrier_contexts = () = $contexts =~ /backfill barrier:/g;
is($barrier_contexts, 1, 'renames later, the run holds one executor');
$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");

is(finish_bg($writers), 0, 'the writers ran without an error');
is(finish_bg($run), 0, 'run_job finished without an error')
  or diag($run->{err});
is( $node->safe_psql('postgres',
		"SELECT status || ' ' || upstream || ' ' || downstream FROM backfill.jobs WHERE job_id = $job"),
	'finished rn_up2 rn_s.rn_mv2',
	'the job finished, under the tables\' new names');
is(verify_rows($node, $job), '', 'verify_job is empty');
is(table_diff($node, 'rn_up2', 'rn_s.rn_mv2'), '0', 'the downstream equals the upstream');

# --- in background workers: renamed between two barriers of the actors ---
$script = upstream_behind_view('rw_up');
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('rw_mv', 'rw_up', parallelism => 2, chunk_size => 500, rate_limit => 2500)");
$writers = start_writers($node, $script, 3);
$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
like(wait_rows($node, $job, 2000), qr/^backfilling/, 'the workers are mid-backfill');
$node->safe_psql('postgres', 'ALTER TABLE rw_up RENAME TO rw_up2; ALTER TABLE rw_mv RENAME TO rw_mv2');
wait_rows($node, $job, 6000);
$node->safe_psql('postgres', 'ALTER TABLE rw_up2 SET SCHEMA rn_s');
$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
is(finish_bg($writers), 0, 'the writers ran without an error');
is(wait_status($node, $job, [ 'finished', 'failed' ]), 'finished', 'the workers finished the job');
is($node->safe_psql('postgres', "SELECT last_error IS NULL FROM backfill.jobs WHERE job_id = $job"),
	't', 'with no error on the way');
is(verify_rows($node, $job), '', 'verify_job is empty');
is(table_diff($node, 'rn_s.rw_up2', 'rw_mv2'), '0', 'the downstream equals the upstream');

no_crash_in_log($node);
done_testing();
