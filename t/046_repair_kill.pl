
# Copyright (c) backfill authors
#
# t/046_repair_kill.pl: repair_job commits range by range, so a repair
# killed partway leaves every range it finished repaired, and a second call
# repairs the rest.
#
# A finished arrangement job over 200k rows; 2000 rows of its downstream
# are made to differ from the upstream's (changed, deleted, and extra rows
# besides), spread over the keys.  repair_job with range_rows 50 repairs
# them in 40 ranges.  Another session holds a row of the 20th range locked,
# so the repair blocks there, its first ranges committed; meanwhile a
# run_job of the job is refused (the job lock).  The repair's backend is
# then killed with SIGKILL.  After the restart:
#
# - verify_job finds fewer differences than before, and some: what the
#   committed ranges repaired stayed repaired, the range in flight did not
#   half happen;
# - a second repair_job, with backfill.client_progress_interval on, repairs
#   the rest and says so in its lines (ranges done of ranges, the rows per
#   kind, a verify's ranges and rows compared, a last line that sums it up);
# - verify_job is empty, and the two tables are equal row for row.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = backfill_node('repair_kill');

make_upstream($node, 'up', 1, 200000);
my $job = $node->safe_psql('postgres', "SELECT backfill.create_job('down', 'up', chunk_size => 10000)");
$node->safe_psql('postgres', "SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($job)");
is($node->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'finished', 'the job finished');

# 2000 differences: every 100th key, three kinds in turn
$node->safe_psql(
	'postgres', q{
UPDATE down SET b = 'changed' WHERE id % 300 = 100;
DELETE FROM down WHERE id % 300 = 200;
UPDATE up SET id = id + 1000000 WHERE id % 300 = 0 AND id <= 200000;
});
# (the last statement moved keys in the upstream, which the job applied:
# put those rows back downstream under their old keys, extra there)
$node->safe_psql('postgres',
	"INSERT INTO down SELECT id - 1000000, a, b FROM up WHERE id > 1000000");
my $planted = $node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)");
is($planted, 2000, '2000 differences planted');

# a row of the 20th range of 50 differences, held
my $blocker = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-c', "BEGIN; SELECT id FROM down WHERE id = 100000 FOR UPDATE; SELECT pg_sleep(600)"
	]);
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			$node->safe_psql('postgres',
				"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%FOR UPDATE; SELECT pg_sleep%' "
				  . "AND wait_event = 'PgSleep'") eq '1';
		}),
	'a session holds a row of the downstream');

my $repair = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
		'-d', $node->connstr('postgres') . ' application_name=repairer',
		'-c', "CALL backfill.repair_job($job, 50)"
	]);
my $pid;
ok( wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			$pid = $node->safe_psql('postgres',
				"SELECT pid FROM pg_stat_activity WHERE application_name = 'repairer' "
				  . "AND wait_event_type = 'Lock'");
			return $pid ne '';
		}),
	'the repair blocks on the held row');

# a run of the same job is refused while the repair holds the job
my ($rc, $out, $err) = $node->psql('postgres', "CALL backfill.run_job($job)");
like($err, qr/backfill job $job is already running/, 'run_job is refused during a repair');

my $before_kill = $node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)");
is($before_kill, 2000 - 19 * 50, 'the 19 ranges before the held row are repaired and committed');

kill_backend_and_wait($node, $pid);
isnt(finish_bg($repair), 0, 'the killed repair failed');
finish_bg($blocker);

my $after_kill = $node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)");
is($after_kill, $before_kill, 'after the crash: the committed ranges stay repaired, the one in flight is undone');

($rc, $out, $err) = $node->psql('postgres',
	"SET backfill.client_progress_interval = '1ms'; CALL backfill.repair_job($job, 50)");
is($rc, 0, 'a second repair runs') or diag($err);
like($out, qr/^21\|\d+\|\d+\|\d+\|t$/, 'it repairs the rest in 21 ranges, clean after');
my (undef, @kinds) = split /\|/, $out;
is($kinds[0] + $kinds[1] + $kinds[2], 1050, 'the rows it repaired are those left');
like($err, qr/INFO:  backfill job $job verify: \d+ of \d+ ranges, \d+ rows compared, \d+ differences so far/,
	'a verify prints its progress');
like($err, qr/INFO:  backfill job $job verified: \d+ ranges, \d+ rows compared, 1050 differences/,
	'and sums it up');
like($err, qr/INFO:  backfill job $job repair: \d+ of 21 ranges, \d+ missing, \d+ extra, \d+ different rows repaired/,
	'a repair prints its progress');
like($err,
	qr/INFO:  backfill job $job repaired: 21 ranges, \d+ missing, \d+ extra, \d+ different rows; verify finds no difference/,
	'and sums it up');

is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job, 'rows')"),
	'0', 'verify_job finds no difference');
is(table_diff($node, 'up', 'down'), '0', 'the two tables are equal row for row');
no_crash_in_log($node, 1);

done_testing();
