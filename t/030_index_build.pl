# Copyright (c) backfill authors
#
# t/030_index_build.pl: a kill -9 while a snapshot job builds its
# downstream's indexes, after its snapshot, loses the build and nothing
# else.
#
# A snapshot job (two actors, run_job) copies a table whose upstream has,
# besides its key, an index on an expression that is made slow for the
# occasion (an IMMUTABLE function that sleeps), given to the downstream with
# indexes => true; pgbench writes meanwhile.  The downstream has no index
# while the snapshot is copied.  Once the build is seen in
# pg_stat_progress_create_index, the backend running the job is killed with
# SIGKILL (the postmaster then kills every backend and reinitializes).
# After the crash:
# - every vnode has still finished its snapshot, the downstream has no
#   index and backfill.job_index still lists both (the build rolled back
#   with its barrier);
# - run_job resumes, builds both and takes the job to the end without
#   reading the snapshot again: the rows copied before the crash are still
#   the same row versions (their xmin is at most the last one before the
#   build), all but those the writers changed;
# - the downstream equals the upstream both ways (verify_job, and EXCEPT
#   ALL each way), and has both indexes, valid.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $rows = 20000;
my $node = backfill_node('main');

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $script = make_upstream($node, 'up', 1, $rows);
sql(q{
CREATE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$BEGIN RETURN x; END$$;
CREATE INDEX up_slow ON up (slow(a));
});
my $job = sql(
	"SELECT backfill.create_job('down', 'up', kind => 'snapshot', indexes => true, "
	  . "parallelism => 2, chunk_size => 1000)");
is(sql("SELECT count(*) FROM pg_index WHERE indrelid = 'down'::regclass"),
	'0', 'the downstream has no index while the snapshot is copied');
is(sql("SELECT string_agg(index_name, ',' ORDER BY position) FROM backfill.job_index WHERE job_id = $job"),
	'down_pkey,down_slow_idx', 'the key index and the upstream\'s other index are to be built');

# each row of the slow index's build now takes about a millisecond
sql(q{CREATE OR REPLACE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE
      AS $$BEGIN PERFORM pg_sleep(0.001); RETURN x; END$$});

my $writers = start_writers($node, $script, 60, rate => 100);
my $runner = start_run_job($node, $job);
my $pid = runner_pid($node, $runner);
ok($pid, 'run_job runs');

# the build of the slow index, in the job's barrier
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			sql("SELECT count(*) FROM pg_stat_progress_create_index p "
				  . "WHERE p.pid = $pid AND p.relid = 'down'::regclass "
				  . "AND p.phase LIKE 'building index%'") eq '1';
		}),
	'the job builds the downstream\'s indexes');
is(sql("SELECT bool_and(is_epoch_finished) AND count(*) = 256 FROM backfill.state_$job"),
	't', 'the snapshot is copied and committed before the build');
# (the downstream itself is locked by the build: ADD PRIMARY KEY; what the
# snapshot committed is read from the state table, whose last row versions
# come from the snapshot's last barrier)
my $copied = sql("SELECT sum(row_count) FROM backfill.state_$job");
my $last_xmin = sql("SELECT max(xmin::text::bigint) FROM backfill.state_$job");

kill_backend_and_wait($node, $pid);
finish_bg($runner);
finish_bg($writers);

is(sql("SELECT bool_and(is_epoch_finished) AND count(*) = 256 FROM backfill.state_$job"),
	't', 'after the crash, every vnode has still finished its snapshot');
is(sql("SELECT count(*) FROM pg_index WHERE indrelid = 'down'::regclass"),
	'0', 'after the crash, the downstream has no index: the build rolled back');
is(sql("SELECT count(*) FROM backfill.job_index WHERE job_id = $job"),
	'2', 'after the crash, both indexes are still to be built');
is(sql('SELECT count(*) FROM down'), $copied, 'after the crash, the copied rows are there');

# resume, fast again, under writes
sql(q{CREATE OR REPLACE FUNCTION slow(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE
      AS $$BEGIN RETURN x; END$$});
$writers = start_writers($node, $script, 3, rate => 100);
sql("CALL backfill.run_job($job)");
finish_bg($writers);
sql("CALL backfill.run_job($job)")
  if sql("SELECT status FROM backfill.jobs WHERE job_id = $job") ne 'finished';

is(sql("SELECT status FROM backfill.jobs WHERE job_id = $job"), 'finished', 'the job finished');
is(sql("SELECT count(*) FROM backfill.job_index WHERE job_id = $job"),
	'0', 'no index is left to build');
is( sql("SELECT string_agg(indexrelid::regclass::text || ':' || indisvalid, ',' ORDER BY 1) "
		  . "FROM pg_index WHERE indrelid = 'down'::regclass"),
	'down_pkey:true,down_slow_idx:true',
	'the downstream has both indexes, valid');
is(sql("SELECT count(*) FROM pg_constraint WHERE conrelid = 'down'::regclass AND contype = 'p'"),
	'1', 'the downstream\'s key is its primary key again');

# not copied again: the rows the writers did not touch are the versions
# written before the build
my $changed = sql(
	"SELECT count(*) FROM down WHERE xmin::text::bigint > $last_xmin");
my $kept = sql(
	"SELECT count(*) FROM down WHERE xmin::text::bigint <= $last_xmin");
cmp_ok($kept, '>', $rows / 2, "the snapshot was not copied again ($kept rows kept, $changed rewritten)");
cmp_ok($changed, '<', $rows / 2, 'only the changed keys were written again');

is(verify_rows($node, $job), '', 'verify_job finds no difference');
is(table_diff($node, 'up', 'down'), '0', 'the downstream equals the upstream, both ways');
no_crash_in_log($node, 1);

done_testing();
