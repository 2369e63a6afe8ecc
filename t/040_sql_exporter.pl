
# Copyright (c) backfill authors
#
# t/040_sql_exporter.pl: contrib/sql_exporter/backfill.yml in Debian's
# prometheus-sql-exporter, scraped from two databases of this test's cluster
# while a job runs in each, then contrib/prometheus/scrape.yml and
# backfill-rules.yml in a real Prometheus (Debian's prometheus), on
# 127.0.0.1 only.
#
# The exporter's configuration is the file as shipped, with its connections
# replaced by the two databases and its interval shortened to a second.
# The exporter connects as a member of pg_monitor, and the jobs are a
# superuser's.  Every series is served for the jobs of both databases, the rows copied
# grow from one scrape to the next, and an unknown value is left out rather
# than served as NaN.  Every series the dashboard uses is served.  Once
# the jobs have finished, the second job's downstream loses 20 rows: a
# verify serves its time and 20 differences, and a repair of them, slowed by
# a trigger, serves as running with its ranges done of 20, then as not
# running, 20 ranges done, the last verify clean.  The first job's
# downstream loses 3 rows, which a verify finds.
# Prometheus scrapes the exporter with the shipped relabelling, and its
# alerts fire for a failed job (BackfillJobFailed), for a job that is
# backfilling with nothing running it (BackfillJobNotRunning) and for the
# job whose last verify found differences (BackfillJobVerifyDifferences):
# the rules as shipped, their "for" shortened to a second.
#
# Skipped when the exporter or Prometheus is not installed.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $exporter = '/usr/bin/prometheus-sql-exporter';
my $prometheus = '/usr/bin/prometheus';
plan skip_all => "$exporter is not installed (Debian: apt-get install prometheus-sql-exporter)"
  unless -x $exporter;
plan skip_all => "$prometheus is not installed (Debian: apt-get install prometheus)"
  unless -x $prometheus;
my $contrib = "$FindBin::RealBin/../contrib";

my $node = worker_node('sqlexp');
$node->safe_psql('postgres', 'CREATE DATABASE app2');
$node->safe_psql('app2', 'CREATE EXTENSION backfill');
make_upstream($node, 'up', 1, 6000);
$node->safe_psql('app2', q{
CREATE TABLE up2 (id bigint PRIMARY KEY, a int);
INSERT INTO up2 SELECT g, g FROM generate_series(1, 4000) g;
ANALYZE up2;
});
my $job1 = $node->safe_psql('postgres',
	"SELECT backfill.create_job('down', 'up', parallelism => 2, chunk_size => 50, rate_limit => 400)");
my $job2 = $node->safe_psql('app2',
	"SELECT backfill.create_job('down2', 'up2', chunk_size => 50, rate_limit => 400)");

# the configuration as shipped, with this cluster's two databases, as a
# monitoring role: the jobs are the superuser's
$node->safe_psql('postgres', 'CREATE ROLE prometheus LOGIN IN ROLE pg_monitor');
my $user = 'prometheus';
my $yml = slurp_file("$contrib/sql_exporter/backfill.yml");
my ($host, $pgport) = ($node->host, $node->port);
my $conns = join '',
  map { "  - 'postgres://$user@/$_?host=$host&port=$pgport&sslmode=disable'\n" } qw(postgres app2);
$yml =~ s/^  connections:\n(?:  - .*\n)+/  connections:\n$conns/m
  or die 'no connections in backfill.yml';
$yml =~ s/^  interval: 15s$/  interval: 1s/m or die 'no interval in backfill.yml';
my $dir = PostgreSQL::Test::Utils::tempdir;
PostgreSQL::Test::Utils::append_to_file("$dir/sql_exporter.yml", $yml);

my $port = PostgreSQL::Test::Cluster::get_free_port();
# warnings and errors only (the default is every query), to a file: a pipe
# nobody reads would stop it once full
local $ENV{LOGLEVEL} = 'warn';
my $h = IPC::Run::start(
	[ $exporter, "-config.file=$dir/sql_exporter.yml", "-web.listen-address=127.0.0.1:$port" ],
	'<', \undef, '>', "$dir/sql_exporter.log", '2>&1');

my $http = HTTP::Tiny->new(timeout => 10);

# one scrape: "name{database,job_id[,status|reason]}" => value
sub scrape
{
	my %m;
	my $res = $http->get("http://127.0.0.1:$port/metrics");
	return undef unless $res->{success};
	for (split /\n/, $res->{content})
	{
		next unless /^sql_(backfill_\w+)\{([^}]*)\} (\S+)$/;
		my ($name, $labels, $value) = ($1, $2, $3);
		my %l = $labels =~ /(\w+)="([^"]*)"/g;
		my $key = "$name\{$l{database},$l{job_id}";
		$key .= ",$l{status}" if defined $l{status};
		$key .= ",$l{reason}" if defined $l{reason};
		$m{"$key}"} = $value;
	}
	return \%m;
}

$node->safe_psql('postgres', "SELECT backfill.start_job($job1)");
$node->safe_psql('app2', "SELECT backfill.start_job($job2)");
my @both = ("postgres,$job1", "app2,$job2");
my @series = qw(backfill_job_info backfill_job_created_timestamp_seconds
  backfill_job_started_timestamp_seconds backfill_job_last_barrier_timestamp_seconds
  backfill_job_running_actors backfill_job_rows_copied backfill_job_upstream_rows
  backfill_job_progress_ratio backfill_job_rows_per_second backfill_job_eta_seconds
  backfill_job_barriers backfill_job_runs backfill_job_failures);
# each query's rows are those of its last run, and the queries run one after
# the other: wait until every one has run since both jobs started
my $first = wait_until(60, sub {
	my $m = scrape();
	return undef unless $m;
	for my $j (@both)
	{
		return undef if grep { !defined $m->{"$_\{$j}"} } @series;
		return undef unless defined $m->{"backfill_job_throttled{$j,rate_limit}"}
		  && $m->{"backfill_job_rows_copied{$j}"} > 0;
	}
	return $m;
});
ok($first, 'the exporter serves the jobs of both databases')
  or diag(slurp_file("$dir/sql_exporter.log"));
$first //= {};
note(join("\n", map { "$_ $first->{$_}" } sort keys %$first));


for my $j (@both)
{
	is_deeply([ grep { !exists $first->{"$_\{$j}"} } @series ], [], "every series of job $j");
	is($first->{"backfill_job_status{$j,backfilling}"}, 1, "job $j: backfilling");
	is(join(',', map { $first->{"backfill_job_status{$j,$_}"} } qw(pending finished failed)),
		'0,0,0', "job $j: no other status");
	ok(wait_until(10, sub { (scrape()->{"backfill_job_throttled{$j,rate_limit}"} // 0) == 1 }),
		"job $j: throttled by its rate limit, at times");
	is($first->{"backfill_job_throttled{$j,replica_lag}"}, 0, "job $j: not by replica lag");
	ok(!grep({ /\{\Q$j\E\b/ && $first->{$_} eq 'NaN' } keys %$first), "job $j: no NaN");
	ok(!exists $first->{"backfill_job_source_lag_bytes{$j}"}, "job $j: a local job has no source lag");
	ok(!exists $first->{"backfill_job_finished_timestamp_seconds{$j}"}, "job $j: not finished");
}
is($first->{"backfill_job_upstream_rows{postgres,$job1}"}, 6000, 'upstream rows of the first job');
is($first->{"backfill_job_upstream_rows{app2,$job2}"}, 4000, 'upstream rows of the second');
is($first->{"backfill_job_running_actors{postgres,$job1}"}, 2, 'two actors run the first job');

# the exporter runs its queries every second, one after the other, and a
# loaded machine slows both it and the jobs: wait for a later scrape
my $second = wait_until(30, sub {
	my $m = scrape() // return undef;
	return (grep { ($m->{"backfill_job_rows_copied{$_}"} // 0) > $first->{"backfill_job_rows_copied{$_}"} } @both)
	  == @both ? $m : undef;
}) // scrape() // {};
for my $j (@both)
{
	cmp_ok($second->{"backfill_job_rows_copied{$j}"} // 0, '>', $first->{"backfill_job_rows_copied{$j}"},
		"job $j: rows copied grow between two scrapes");
}

# the series contrib/grafana/backfill.json draws, with its variables
my $dashboard = decode_json(slurp_file("$contrib/grafana/backfill.json"));
my %used;
for my $panel (@{ $dashboard->{panels} })
{
	$used{$_} = 1 for map { $_->{expr} =~ /\b(backfill_\w+)/g } @{ $panel->{targets} };
}
my %have = map { s/\{.*//r => 1 } keys %$first;
cmp_ok(scalar(keys %used), '>=', 6, 'the dashboard uses the series');
# the lag behind a source is served only for a job that copies another server's table
is_deeply([ grep { !$have{$_} && !/^backfill_job_source_lag_/ } sort keys %used ], [],
	'every series the dashboard uses is served');
is_deeply([ map { $_->{name} } @{ $dashboard->{templating}{list} } ],
	[qw(datasource instance database job_name)], 'the dashboard\'s variables');
ok(!grep({ ($_->{datasource}{uid} // '') ne '${datasource}' } @{ $dashboard->{panels} }),
	'every panel reads the data source of the variable');

$node->safe_psql('postgres', "SELECT backfill.wait_job($job1)");
$node->safe_psql('app2', "SELECT backfill.wait_job($job2)");
# each query's rows are those of its last run: a scrape can show a job
# finished by one query and still copying by another that ran before it ended
my $done = wait_until(60, sub {
	my $m = scrape();
	return $m && ($m->{"backfill_job_status{app2,$job2,finished}"} // 0) == 1
	  && ($m->{"backfill_job_status{postgres,$job1,finished}"} // 0) == 1
	  && !defined $m->{"backfill_job_eta_seconds{app2,$job2}"}
	  && defined $m->{"backfill_job_finished_timestamp_seconds{app2,$job2}"}
	  && ($m->{"backfill_job_progress_ratio{postgres,$job1}"} // 0) == 1
	  && ($m->{"backfill_job_rows_copied{app2,$job2}"} // 0) == 4000
	  && ($m->{"backfill_job_running_actors{app2,$job2}"} // 1) == 0 ? $m : undef;
});
ok($done, 'the exporter serves the finished jobs') or diag(slurp_file("$dir/sql_exporter.log"),
	$node->safe_psql('postgres', "SELECT pid, datname, application_name, state, wait_event_type, wait_event, left(query, 120) FROM pg_stat_activity"),
	"\n", $node->safe_psql('app2', "SELECT * FROM backfill.jobs"));
$done //= scrape() // {};
note(join("\n", map { "$_ $done->{$_}" } sort keys %$done));
is($done->{"backfill_job_progress_ratio{postgres,$job1}"}, 1, 'finished: progress 1');
is($done->{"backfill_job_rows_copied{app2,$job2}"}, 4000, 'finished: the upstream\'s rows copied');
is($done->{"backfill_job_running_actors{app2,$job2}"}, 0, 'finished: no actor runs');
ok(defined $done->{"backfill_job_finished_timestamp_seconds{app2,$job2}"}, 'finished: when');
ok(!defined $done->{"backfill_job_eta_seconds{app2,$job2}"}, 'finished: no ETA, rather than NaN');
ok(!grep({ /^backfill_job_(last_verif|repair_)/ } keys %$done), 'never verified nor repaired: no such series');

# the second job verified, then repaired slowly
$node->safe_psql('app2', q{
DELETE FROM down2 WHERE id % 100 = 0 AND id <= 2000;
CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN PERFORM pg_sleep(0.25); RETURN NEW; END $$;
CREATE TRIGGER slow BEFORE INSERT ON down2 FOR EACH ROW EXECUTE FUNCTION slow_row();
});
is($node->safe_psql('app2', "SELECT count(*) FROM backfill.verify_job($job2)"), 20,
	'a verify finds 20 rows missing');
my $verified = wait_until(30, sub {
	my $m = scrape();
	return $m && defined $m->{"backfill_job_last_verify_differences{app2,$job2}"} ? $m : undef;
}) // {};
is($verified->{"backfill_job_last_verify_differences{app2,$job2}"}, 20, 'its differences are served');
cmp_ok($verified->{"backfill_job_last_verified_timestamp_seconds{app2,$job2}"} // 0, '>', 0, 'and when it ran');
my $repair = BackfillTestLib::start_bg(
	[
		'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('app2'),
		'-c', "CALL backfill.repair_job($job2, 1)"
	]);
my $repairing = wait_until(30, sub {
	my $m = scrape();
	return $m && ($m->{"backfill_job_repair_running{app2,$job2}"} // 0) == 1
	  && ($m->{"backfill_job_repair_ranges_done{app2,$job2}"} // 0) > 0 ? $m : undef;
});
ok($repairing, 'a repair serves as running, with ranges done');
$repairing //= {};
is($repairing->{"backfill_job_repair_ranges_total{app2,$job2}"}, 20, 'of 20 ranges');
is($repairing->{"backfill_job_running_actors{app2,$job2}"}, 0, 'a running repair is no actor');
is(finish_bg($repair), 0, 'the repair ends');
my $repaired = wait_until(30, sub {
	my $m = scrape();
	return $m && ($m->{"backfill_job_repair_running{app2,$job2}"} // 1) == 0
	  && ($m->{"backfill_job_repair_ranges_done{app2,$job2}"} // 0) == 20
	  && ($m->{"backfill_job_last_verify_differences{app2,$job2}"} // 1) == 0 ? $m : undef;
}) // {};
is(join(',', map { $repaired->{"backfill_job_$_\{app2,$job2}"} // 'none' } qw(repair_running
  repair_ranges_done repair_ranges_total last_verify_differences)), '0,20,20,0',
	'then not running, its 20 ranges done, and its last verify clean');
# the first job: 3 rows missing, found
$node->safe_psql('postgres', 'DELETE FROM down WHERE id IN (10, 20, 30)');
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job1)"), 3,
	'a verify of the first job finds 3 rows missing');

# a failed job (a legacy job's restart) and a job left backfilling with
# nothing running it (one barrier of a run in a session)
my $failed = $node->safe_psql('postgres',
	"SELECT backfill.create_job('legacy', 'up', kind => 'no_shuffle', chunk_size => 50)");
$node->safe_psql('postgres', "SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($failed, 1)");
my ($rc) = $node->psql('postgres', "CALL backfill.run_job($failed)");
isnt($rc, 0, 'the legacy job fails on its restart');
my $idle = $node->safe_psql('app2', "SELECT backfill.create_job('idle', 'up2', chunk_size => 50)");
$node->safe_psql('app2', "SET backfill.barrier_interval_ms = 0; CALL backfill.run_job($idle, 1)");

# Prometheus, with the shipped scrape job and rules
my $rules = slurp_file("$contrib/prometheus/backfill-rules.yml");
$rules =~ s/^(\s+for:) \S+$/$1 1s/mg;
PostgreSQL::Test::Utils::append_to_file("$dir/rules.yml", $rules);
my $scrape = slurp_file("$contrib/prometheus/scrape.yml");
$scrape =~ s/^(\s+(?:scrape|evaluation)_interval:) \S+$/$1 1s/mg;
$scrape =~ s{/etc/prometheus/backfill-rules.yml}{$dir/rules.yml} or die 'no rules in scrape.yml';
$scrape =~ s/localhost:9237/127.0.0.1:$port/ or die 'no target in scrape.yml';
PostgreSQL::Test::Utils::append_to_file("$dir/prometheus.yml", $scrape);
my $pport = PostgreSQL::Test::Cluster::get_free_port();
my $ph = IPC::Run::start(
	[
		$prometheus, "--config.file=$dir/prometheus.yml", "--storage.tsdb.path=$dir/tsdb",
		"--web.listen-address=127.0.0.1:$pport", '--log.level=warn'
	],
	'<', \undef, '>', "$dir/prometheus.log", '2>&1');

sub firing
{
	my $res = $http->get("http://127.0.0.1:$pport/api/v1/alerts");
	return {} unless $res->{success};
	my %f;
	for my $a (@{ decode_json($res->{content})->{data}{alerts} })
	{
		next unless $a->{state} eq 'firing';
		$f{"$a->{labels}{alertname}:$a->{labels}{database}:$a->{labels}{job_id}"} = $a;
	}
	return \%f;
}
my $alerts = wait_until(90, sub {
	my $f = firing();
	return $f->{"BackfillJobFailed:postgres:$failed"} && $f->{"BackfillJobNotRunning:app2:$idle"}
	  && $f->{"BackfillJobVerifyDifferences:postgres:$job1"} ? $f : undef;
});
ok($alerts, 'Prometheus fires the alerts') or diag(slurp_file("$dir/prometheus.log"));
$alerts //= {};
note(join("\n", sort keys %$alerts));
like($alerts->{"BackfillJobFailed:postgres:$failed"}{annotations}{summary} // '',
	qr/^backfill job legacy \(id $failed, database postgres\) failed$/, 'a failed job');
like($alerts->{"BackfillJobNotRunning:app2:$idle"}{annotations}{summary} // '',
	qr/^backfill job idle \(id $idle, database app2\) is backfilling with nothing running it$/,
	'a job nothing runs');
like($alerts->{"BackfillJobVerifyDifferences:postgres:$job1"}{annotations}{summary} // '',
	qr/^backfill job down \(id $job1, database postgres\) differs from its upstream: its last verify found 3 differences$/,
	'a job whose last verify found differences');
is_deeply([ sort grep { !/^BackfillJob(Failed:postgres:$failed|NotRunning:app2:$idle|VerifyDifferences:postgres:$job1)$/ } keys %$alerts ], [],
	'and no other alert');

# the relabelled series: named backfill_job_*, without the exporter's labels
my $res = $http->get("http://127.0.0.1:$pport/api/v1/query?query=backfill_job_info");
my $info = $res->{success} ? decode_json($res->{content})->{data}{result} : [];
my ($one) = grep { $_->{metric}{job_id} eq $idle && $_->{metric}{database} eq 'app2' } @$info;
is(join(',', map { exists $one->{metric}{$_} ? 1 : 0 } qw(col sql_job driver user job_name kind)),
	'0,0,0,0,1,1', 'relabelled: the exporter\'s labels dropped, the job\'s kept');

is(join('', grep { /"level":"(warn|error)"/ } split /^/, slurp_file("$dir/sql_exporter.log")), '',
	'the exporter logged no warning and no error');
$ph->kill_kill;
$h->kill_kill;
no_crash_in_log($node);
done_testing();
