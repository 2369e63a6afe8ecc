# Copyright (c) backfill authors
#
# t/033_remote_index_build.pl: a remote job (cdc on a foreign table) copies
# into a downstream without indexes and builds them once, in its final
# barrier; a kill -9 there loses the barrier and nothing else.
#
# The source has a table of 20,000 rows, written by pgbench during the copy.
# Two jobs, two actors each, run_job:
# - one: its key's index is written down in backfill.job_index and dropped
#   at create, the downstream has no index while the splits are copied, and
#   has its primary key once finished, with no change left waiting;
# - one whose final barrier is held off its build by a reader of the
#   downstream (ADD PRIMARY KEY waits for the table's lock), and the backend
#   running it killed with SIGKILL there.  After the crash every split has
#   still finished, the downstream has no index and backfill.job_index
#   still lists its key (the final barrier rolled back); run_job resumes,
#   builds it and finishes without reading the source again: the rows
#   copied before the crash are the same row versions, but those the
#   writers changed.
# Each downstream equals the source both ways afterwards.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $rows = 20000;
my $source = remote_source('source', $rows);
my $local = backfill_node('local');
import_remote($local, $source);
my $script = writer_script($source, 't');

sub sql { return $local->safe_psql('postgres', $_[0]); }
sub indexes
{
	return sql("SELECT coalesce(string_agg(indexrelid::regclass::text || ':' || indisvalid, ',' "
		  . "ORDER BY 1), '') FROM pg_index WHERE indrelid = '$_[0]'::regclass");
}

# ---- a downstream of its own
my $job = sql("SELECT backfill.create_job('copy_t', 'remote.t', kind => 'cdc', parallelism => 2)");
is(indexes('copy_t'), '', 'the new downstream has no index while the splits are copied');
is(sql("SELECT string_agg(index_name, ',' ORDER BY position) FROM backfill.job_index WHERE job_id = $job"),
	'copy_t_pkey', 'its key\'s index is to be built once');
my $writers = start_writers($source, $script, 6, rate => 200);
sql("CALL backfill.run_job($job)");
is(sql("SELECT status FROM backfill.jobs WHERE job_id = $job"), 'finished', 'the job finished');
is(indexes('copy_t'), 'copy_t_pkey:true', 'the downstream has its key\'s index, built once');
is(sql("SELECT count(*) FROM backfill.job_index WHERE job_id = $job"), '0', 'no index is left to build');
# the writers go on: the finished job follows the source
sql("CALL backfill.run_job($job)");
is(sql("SELECT count(*) FROM backfill.changes_$job"), '0', 'no change is left waiting');

# ---- killed in the final barrier, before its build is done
my $job2 = sql("SELECT backfill.create_job('copy2', 'remote.t', kind => 'cdc', parallelism => 2)");
# a reader holds off the build (ADD PRIMARY KEY takes the table's lock)
my $reader = BackfillTestLib::start_bg(
	[
		'psql', '-XAtq', '-h', $local->host, '-p', $local->port, '-d', 'postgres',
		'-c', 'BEGIN; LOCK copy2 IN ACCESS SHARE MODE; SELECT pg_sleep(600)'
	]);
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub { sql("SELECT count(*) FROM pg_locks WHERE relation = 'copy2'::regclass AND mode = 'AccessShareLock' AND granted") eq '1' }),
	'a reader holds the downstream');
my $runner = start_run_job($local, $job2);
my $pid = runner_pid($local, $runner);
ok($pid, 'run_job runs');
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			sql("SELECT count(*) FROM pg_locks WHERE pid = $pid AND relation = 'copy2'::regclass "
				  . "AND mode = 'AccessExclusiveLock' AND NOT granted") eq '1';
		}),
	'the final barrier waits to build the downstream\'s key');
is(sql("SELECT bool_and(backfill_finished) FROM backfill.state_$job2"), 't',
	'every split is copied and committed before the build');
my $copied = sql("SELECT sum(row_count) FROM backfill.state_$job2");
my $last_xmin = sql("SELECT max(xmin::text::bigint) FROM backfill.state_$job2");

kill_backend_and_wait($local, $pid);
finish_bg($runner);
finish_bg($reader);

is(sql("SELECT bool_and(backfill_finished) FROM backfill.state_$job2"), 't',
	'after the crash, every split has still finished');
is(indexes('copy2'), '', 'after the crash, the downstream has no index: the final barrier rolled back');
is(sql("SELECT count(*) FROM backfill.job_index WHERE job_id = $job2"), '1',
	'after the crash, the key\'s index is still to be built');
is(sql('SELECT count(*) FROM copy2'), $copied, 'after the crash, the copied rows are there');

sql("CALL backfill.run_job($job2)");
is(sql("SELECT status FROM backfill.jobs WHERE job_id = $job2"), 'finished', 'the job finished after the crash');
is(indexes('copy2'), 'copy2_pkey:true', 'the downstream has its key\'s index, valid');
my $kept = sql("SELECT count(*) FROM copy2 WHERE xmin::text::bigint <= $last_xmin");
cmp_ok($kept, '>', $rows / 2, "the source was not read again ($kept rows kept)");

finish_bg($writers);
sql("CALL backfill.run_job($job)");
sql("CALL backfill.run_job($job2)");
is(remote_differences($local, 'copy_t'), '0 0', 'the first downstream equals the source both ways');
is(remote_differences($local, 'copy2'), '0 0', 'the second downstream equals the source both ways');
is(verify_rows($local, $job2), '', 'verify_job finds no difference');

sql("SELECT backfill.drop_job($job)");
sql("SELECT backfill.drop_job($job2)");
is($source->safe_psql('postgres',
		"SELECT (SELECT count(*) FROM pg_replication_slots) + (SELECT count(*) FROM pg_publication)"),
	'0', 'no slot or publication is left on the source');
no_crash_in_log($local, 1);

done_testing();
