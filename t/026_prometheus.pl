
# Copyright (c) backfill authors
#
# t/026_prometheus.pl: contrib/prometheus/queries.yaml in Debian's
# prometheus-postgres-exporter (installed by scripts/test.sh), against this
# test's cluster, while a job runs in two workers.
#
# The exporter listens on 127.0.0.1 on a free port, with only the metrics of
# the queries file (the default ones and the settings off), connected as the
# test's superuser through the cluster's socket.  /metrics, scraped twice a
# couple of seconds apart while the job runs, has every metric of the job
# (status backfilling, two running actors, progress, rows, rate, ETA,
# throttled, barriers), with progress and rows copied growing from one
# scrape to the next; once the job has finished, its status is finished, its
# progress 1 and its rows copied the upstream's.  Then its verify and repair
# series: none before it is verified (NaN, no repair running); a verify that
# finds 20 rows missing shows when and 20 differences; a repair of them,
# slowed by a trigger, shows as running with its ranges done of 20 growing,
# then not running, its 20 ranges done, and its last verify clean.  A legacy
# no_shuffle job that fails on its restart counts one failure.
#
# Skipped when the exporter is not installed.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use HTTP::Tiny;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $exporter = '/usr/bin/prometheus-postgres-exporter';
plan skip_all => "$exporter is not installed (Debian: apt-get install prometheus-postgres-exporter)"
  unless -x $exporter;
my $queries = "$FindBin::RealBin/../contrib/prometheus/queries.yaml";

my $node = worker_node('prom');
make_upstream($node, 'up', 1, 6000);
my $job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down', 'up', parallelism => 2, chunk_size => 50, rate_limit => 500)");

# the exporter, on 127.0.0.1 only
my $port = PostgreSQL::Test::Cluster::get_free_port();
# as a monitoring role: the jobs are the superuser's
$node->safe_psql('postgres', 'CREATE ROLE prometheus LOGIN IN ROLE pg_monitor');
my $user = 'prometheus';
my ($eout, $eerr) = ('', '');
local $ENV{DATA_SOURCE_NAME} =
  "host=" . $node->host . " port=" . $node->port . " user=$user dbname=postgres sslmode=disable";
my $h = IPC::Run::start(
	[
		$exporter, "--web.listen-address=127.0.0.1:$port",
		"--extend.query-path=$queries", '--disable-default-metrics',
		'--disable-settings-metrics', '--no-collector.database',
		'--no-collector.bgwriter', '--log.level=warn'
	],
	'<', \undef, '>', \$eout, '2>', \$eerr,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));

my $http = HTTP::Tiny->new(timeout => 10);

# the samples of the job's metrics in one scrape: "name{status}" => value
sub scrape
{
	my %m;
	my $res = $http->get("http://127.0.0.1:$port/metrics");
	return undef unless $res->{success};
	for (split /\n/, $res->{content})
	{
		next if /^#/;
		next unless /^(backfill_\w+)\{([^}]*)\} (\S+)$/;
		my ($name, $labels, $value) = ($1, $2, $3);
		next unless $labels =~ /\bjob_id="$job"/;
		$name .= "{$1}" if $labels =~ /\bstatus="(\w+)"/;
		$m{$name} = $value;
	}
	return \%m;
}

$node->safe_psql('postgres', "SELECT backfill.start_job($job)");
my $first = wait_until(30, sub {
	my $m = scrape();
	return $m && ($m->{backfill_job_rows_copied_total} // 0) > 0
	  && ($m->{backfill_job_running_actors} // 0) == 2 ? $m : undef;
});
ok($first, 'the exporter serves the metrics of the running job')
  or diag("exporter stderr: $eerr");
$first //= {};
note(join("\n", map { "$_ $first->{$_}" } sort keys %$first));
my @names = qw(backfill_job_progress_ratio backfill_job_rows_copied_total
  backfill_job_upstream_rows backfill_job_rows_per_second backfill_job_eta_seconds
  backfill_job_lag_bytes backfill_job_lag_seconds backfill_job_throttled
  backfill_job_running_actors backfill_job_barriers_total backfill_job_runs_total
  backfill_job_failures_total);
is_deeply([ grep { !exists $first->{$_} } @names ], [], 'every metric of the job is there');
is($first->{'backfill_job_status{backfilling}'}, 1, 'its status is backfilling');
is(join(',', map { $first->{"backfill_job_status{$_}"} } qw(pending finished failed cancelled)),
	'0,0,0,0', 'and no other');
is($first->{backfill_job_upstream_rows}, 6000, 'upstream rows: the upstream counted');
cmp_ok($first->{backfill_job_progress_ratio}, '>', 0, 'progress is above 0');
cmp_ok($first->{backfill_job_progress_ratio}, '<', 1, 'and below 1');
cmp_ok($first->{backfill_job_barriers_total}, '>', 0, 'barriers are counted');
is($first->{backfill_job_lag_bytes}, 'NaN', 'no lag for a job whose upstream is local');

sleep 2;
my $second = scrape() // {};
note(join("\n", map { "$_ $second->{$_}" } sort keys %$second));
cmp_ok($second->{backfill_job_progress_ratio} // 0, '>', $first->{backfill_job_progress_ratio},
	'progress grows between two scrapes');
cmp_ok($second->{backfill_job_rows_copied_total} // 0, '>', $first->{backfill_job_rows_copied_total},
	'so do the rows copied');
cmp_ok($second->{backfill_job_barriers_total} // 0, '>', $first->{backfill_job_barriers_total},
	'and the barriers');
ok(wait_until(10, sub { my $m = scrape(); $m && ($m->{backfill_job_throttled} // 0) == 1 }),
	'the rate limit shows as throttled');
ok(wait_until(10, sub { my $m = scrape(); $m && ($m->{backfill_job_rows_per_second} // 0) > 0 }),
	'rows per second are shown');

$node->safe_psql('postgres', "SELECT backfill.wait_job($job)");
my $last = scrape() // {};
is($last->{'backfill_job_status{finished}'}, 1, 'once finished, its status is finished');
is($last->{backfill_job_progress_ratio}, 1, 'its progress 1');
is($last->{backfill_job_rows_copied_total}, 6000, 'its rows copied the upstream\'s');
is($last->{backfill_job_running_actors}, 0, 'no actor runs');
is($last->{backfill_job_failures_total}, 0, 'no failure');

# verified and repaired
is(join(',', map { $last->{$_} // 'none' } qw(backfill_job_last_verified_timestamp_seconds
  backfill_job_last_verify_differences backfill_job_repair_running backfill_job_repair_ranges_done
  backfill_job_repair_ranges_total)), 'NaN,NaN,0,NaN,NaN', 'never verified nor repaired');
$node->safe_psql('postgres', q{
DELETE FROM down WHERE id % 100 = 0 AND id <= 2000;
CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_sleep(0.2); RETURN NEW; END $$;
CREATE TRIGGER slow BEFORE INSERT ON down FOR EACH ROW EXECUTE FUNCTION slow_row();
});
my $before = time;
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"), 20,
	'a verify finds 20 rows missing');
$last = scrape() // {};
is($last->{backfill_job_last_verify_differences}, 20, 'its differences are served');
cmp_ok($last->{backfill_job_last_verified_timestamp_seconds}, '>=', $before - 1, 'and when it ran');
my $repair = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-c', "CALL backfill.repair_job($job, 1)"
	]);
my $running = wait_until(30, sub {
	my $m = scrape();
	return $m && ($m->{backfill_job_repair_running} // 0) == 1
	  && ($m->{backfill_job_repair_ranges_done} // 'NaN') ne 'NaN'
	  && $m->{backfill_job_repair_ranges_done} > 0 ? $m : undef;
});
ok($running, 'a repair shows as running, with ranges done');
$running //= {};
is($running->{backfill_job_repair_ranges_total}, 20, 'of 20 ranges');
is($running->{backfill_job_running_actors}, 0, 'a running repair is no actor');
ok(wait_until(30, sub {
	my $m = scrape();
	return $m && ($m->{backfill_job_repair_ranges_done} // 0) > $running->{backfill_job_repair_ranges_done};
}), 'its ranges done grow');
is(finish_bg($repair), 0, 'the repair ends');
$last = scrape() // {};
is(join(',', map { $last->{$_} } qw(backfill_job_repair_running backfill_job_repair_ranges_done
  backfill_job_repair_ranges_total backfill_job_last_verify_differences)), '0,20,20,0',
	'then not running, its 20 ranges done, and its last verify clean');

# a legacy job cannot resume: its restart fails, counted
$job = $node->safe_psql('postgres',
	"SELECT backfill.create_job('legacy', 'up', kind => 'no_shuffle', chunk_size => 50)");
$node->safe_psql('postgres', "SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($job, 1)");
my ($rc) = $node->psql('postgres', "CALL backfill.run_job($job)");
isnt($rc, 0, 'the legacy job fails on its restart');
$last = scrape() // {};
is($last->{'backfill_job_status{failed}'}, 1, 'its status is failed');
is($last->{backfill_job_failures_total}, 1, 'one failure is counted');
is($last->{backfill_job_runs_total}, 1, 'a restart that fails its recovery check is not a run');

$h->kill_kill;
no_crash_in_log($node);
done_testing();
