# Copyright (c) backfill authors
#
# t/047_repair_progress.pl: a repair seen from another session, and a
# repair killed partway.
#
# A finished arrangement job over 1000 rows; 60 rows are deleted from its
# downstream, and a trigger on the downstream sleeps 0.1 s per row it
# inserts, so that repair_job with range_rows 1 takes 60 committed ranges
# of about 0.1 s each.  While it runs, a second session sees:
#
# - a row of backfill.progress for it: phase repairing, its backend's pid,
#   no actor, its ranges done of 60 growing from one look to the next, the
#   rows it has repaired of the 60 to repair;
# - its row of backfill.verifications, running, not finished.
#
# The repair's backend is then killed with SIGKILL.  After the restart,
# backfill.progress shows no repair of the job, and backfill.verifications
# shows the repair not running and not finished, with the ranges it had
# committed; a second repair repairs the rest and finishes clean.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = backfill_node('repair_progress');

make_upstream($node, 'up', 1, 1000);
my $job = $node->safe_psql('postgres', "SELECT backfill.create_job('down', 'up')");
$node->safe_psql('postgres', "SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($job)");
is($node->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'finished', 'the job finished');

$node->safe_psql(
	'postgres', q{
DELETE FROM down WHERE id % 16 = 0 AND id <= 960;
CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_sleep(0.1); RETURN NEW; END $$;
CREATE TRIGGER slow BEFORE INSERT ON down FOR EACH ROW EXECUTE FUNCTION slow_row();
});
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"),
	'60', '60 rows missing downstream');

my $repair = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres') . ' application_name=repairer',
		'-c', "CALL backfill.repair_job($job, 1)"
	]);
my $pid;
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			$pid = $node->safe_psql('postgres',
				"SELECT pid FROM pg_stat_activity WHERE application_name = 'repairer'");
			return $pid ne '';
		}),
	'the repair runs');

# the repair's row of backfill.progress, once it has repaired some ranges
my $row_sql =
  "SELECT pid, actor_id IS NULL, phase, actor_phase, run_mode, ranges_done, ranges_total, "
  . "rows_done, job_rows_done, job_rows_total, tuples_total, relid = 'up'::regclass "
  . "FROM backfill.progress WHERE job_id = $job";
my $first;
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			$first = $node->safe_psql('postgres', $row_sql);
			return $first =~ /^\d+\|t\|repairing\|repair\|foreground\|([3-9]|\d\d)\|/;
		}),
	'backfill.progress shows the repair with some ranges done')
  or diag($first);
my @f = split /\|/, $first;
is($f[0], $pid, 'the row is the repairing backend\'s');
is($f[6], '60', 'of 60 ranges');
is($f[7], $f[5], 'a row repaired per range');
is($f[8], $f[5], 'the rows repaired, as the job\'s rows done');
is($f[9], '60', 'of the 60 to repair');
is($f[10], '60', 'in rows, as pg_stat_progress_copy counts them');
is($f[11], 't', 'its relid is the upstream');

my $second;
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			$second = $node->safe_psql('postgres', $row_sql);
			my @s = split /\|/, $second;
			return @s > 5 && $s[5] > $f[5];
		}),
	'a look later shows more ranges done')
  or diag("$first / $second");

like(
	$node->safe_psql('postgres',
		"SELECT operation, running, finished_at IS NULL, pid FROM backfill.verifications "
		  . "WHERE job_id = $job AND operation = 'repair'"),
	qr/^repair\|t\|t\|$pid$/,
	'backfill.verifications shows the repair running');

kill_backend_and_wait($node, $pid);
isnt(finish_bg($repair), 0, 'the killed repair failed');

is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.progress WHERE job_id = $job"),
	'0', 'after the kill: backfill.progress shows no repair of the job');
my $left = $node->safe_psql('postgres',
	"SELECT running, finished_at IS NULL, ranges_done, ranges_total, clean IS NULL "
	  . "FROM backfill.verifications WHERE job_id = $job AND operation = 'repair'");
like($left, qr/^f\|t\|\d+\|60\|t$/, 'the repair row: not running, not finished, what it had committed');
my $done = (split /\|/, $left)[2];
cmp_ok($done, '>', 2, 'its committed ranges are recorded');
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"),
	60 - $done, 'the ranges it recorded are those repaired');

$node->safe_psql('postgres', 'DROP TRIGGER slow ON down');
is($node->safe_psql('postgres', "CALL backfill.repair_job($job, 1)"),
	(60 - $done) . "|" . (60 - $done) . "|0|0|t", 'a second repair repairs the rest');
is( $node->safe_psql('postgres',
		"SELECT running, finished_at IS NOT NULL, ranges_done, clean FROM backfill.verifications "
		  . "WHERE job_id = $job AND operation = 'repair'"),
	"f|t|" . (60 - $done) . "|t",
	'and is recorded finished, clean');
no_crash_in_log($node, 1);

done_testing();
