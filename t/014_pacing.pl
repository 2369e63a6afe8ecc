
# Copyright (c) backfill authors
#
# t/014_pacing.pl: pacing that protects production, for jobs in background
# workers.  The primary streams to a standby and archives its WAL; each
# setting is changed with ALTER SYSTEM and a reload while the job's worker
# runs, which it picks up at its next barrier.
#
# 1. Replica lag: under pgbench writes, the standby's replay is paused while
#    a job runs with backfill.max_replica_lag = 2s.  Once the lag passes the
#    limit, throttled_by names the standby, the job's position stops moving
#    within two barriers and stays put, and a write below the position still
#    reaches the downstream; the worker's progress lines in the server log
#    say what it waits for.  After pg_wal_replay_resume() the job finishes
#    and verify_job is empty.
# 2. WAL rate: with backfill.max_wal_rate = 2MB, the WAL the server writes
#    over 20 s while only the job writes is within 15% of the limit, and
#    throttled_by says "WAL rate"; rows_per_second and eta are shown.
# 3. Retained WAL: an inactive physical slot that reserves WAL holds the job
#    once it retains more than backfill.max_retained_wal = 16MB; the
#    position stops; dropping the slot lets the job finish.
# 4. The archiver: with a failing archive_command, a WAL segment that waits
#    to be archived holds the job (8MB); once archiving works again, the job
#    finishes.
# In every case the barriers go on while the job is held (the epochs move),
# and once the job has finished no pace is shown.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

use BackfillTestLib;

my $t0 = time;
my $primary = worker_node(
	'primary',
	init => { allows_streaming => 1, has_archiving => 1 },
	conf => q{
autovacuum = off
backfill.log_progress_interval = '1s'
wal_keep_size = 0
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup('standby', 'replay');

# set and reload a setting of the primary
sub set_conf
{
	my ($name, $value) = @_;
	my $sql =
	  defined $value
	  ? "ALTER SYSTEM SET $name = '$value'"
	  : "ALTER SYSTEM RESET $name";
	$primary->safe_psql('postgres', "$sql; SELECT pg_reload_conf();");
}

# one column of a job's row in backfill.jobs
sub job_col
{
	my ($job, $col) = @_;
	return $primary->safe_psql('postgres',
		"SELECT coalesce(${col}::text, '') FROM backfill.jobs WHERE job_id = $job");
}

# wait until a job's throttled_by matches $re; returns it, or '' on timeout
sub wait_throttled
{
	my ($job, $re, $secs) = @_;
	my $t;
	return wait_until($secs // 60, sub { $t = job_col($job, 'throttled_by'); $t =~ $re })
	  ? $t : '';
}

# The job is held: after two more barriers its row_count no longer moves
# through five more barriers and a second, while its epochs do.
sub check_stopped
{
	my ($job, $label) = @_;
	ok(wait_epoch_past($primary, $job, 2), "$label: barriers go on while held");
	my $r2 = job_col($job, 'row_count');
	my $e2 = job_col($job, 'epoch');
	ok(wait_epoch_past($primary, $job, 5), "$label: five more barriers");
	usleep(1_000_000);
	is(job_col($job, 'row_count'), $r2, "$label: the position stopped within two barriers");
	isnt(job_col($job, 'epoch'), $e2, "$label: the barriers still commit");
	is(job_col($job, 'status'), 'backfilling', "$label: still backfilling");
	return $r2;
}

# the end of a job: finished, consistent, no pace shown
sub check_finished
{
	my ($job, $up, $label) = @_;
	$primary->safe_psql('postgres', "SELECT backfill.wait_job($job)");
	is(job_col($job, 'status'), 'finished', "$label: the job finished");
	is(verify_rows($primary, $job), '', "$label: verify_job is empty");
	is(table_diff($primary, $up, "${up}_down"), 0, "$label: the downstream equals the upstream");
	is( $primary->safe_psql('postgres',
			"SELECT throttled_by IS NULL AND rows_per_second IS NULL AND eta IS NULL FROM backfill.jobs WHERE job_id = $job"),
		't', "$label: no pace is shown once finished");
}

######################################################################
# 1. replica lag: replay paused on the standby
######################################################################
{
	my $n = 200_000;
	my $script = make_upstream($primary, 'lag_up', 1, $n);
	my $job = $primary->safe_psql('postgres',
		"SELECT backfill.create_job('lag_up_down', 'lag_up', rate_limit => 4000)");
	my $w = start_writers($primary, $script, 25);
	$primary->safe_psql('postgres', "SELECT backfill.start_job($job)");
	like(wait_rows($primary, $job, 8000), qr/^backfilling \d+$/, 'lag: the job reads');
	set_conf('backfill.max_replica_lag', '2s');
	is(job_col($job, 'status'), 'backfilling', 'lag: mid-backfill when replay pauses');

	my $offset = -s $primary->logfile;
	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
	ok( wait_until(30,
			sub { $standby->safe_psql('postgres', 'SELECT pg_get_wal_replay_pause_state()') eq 'paused' }),
		'lag: replay is paused');
	my $paused_at = time;
	my $t = wait_throttled($job, qr/^replica lag/);
	my $waited = time - $paused_at;
	like($t, qr/^replica lag \d+(\.\d)? s > (2|1\.6) s \(standby\)$/,
		"lag: throttled_by names the standby ($t)");
	ok($waited >= 1.5 && $waited < 20,
		sprintf('lag: held once the lag passed the limit (%.1f s after the pause)', $waited));
	note sprintf('lag: held %.1f s after the pause', $waited);

	my $r = check_stopped($job, 'lag');
	like(job_col($job, 'throttled_by'), qr/^replica lag .* \(standby\)$/, 'lag: still held');

	# writes below the position still reach the downstream
	$primary->safe_psql('postgres',
		"UPDATE lag_up SET b = 'while held' WHERE id = (SELECT min(id) FROM lag_up)");
	ok( wait_until(30,
			sub {
				$primary->safe_psql('postgres',
					"SELECT count(*) FROM lag_up_down WHERE b = 'while held'") eq '1';
			}),
		'lag: a write below the position reached the downstream while held');
	is(job_col($job, 'row_count'), $r, 'lag: the position did not move meanwhile');
	ok( wait_until(10,
			sub {
				slurp_file($primary->logfile, $offset) =~
				  /LOG:  backfill job $job actor \d+: \d+\.\d\d% \(\d+\/\d+\), \d+ rows\/s, ETA [^,]+, throttled by replica lag \d+(\.\d)? s > [\d.]+ s \(standby\)\n/;
			}),
		'lag: the progress line in the server log says what the worker waits for');

	$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
	ok(wait_until(60, sub { job_col($job, 'row_count') > $r }),
		'lag: the job moves again after replay resumes');
	$primary->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	is(finish_bg($w), 0, 'lag: writers ran without errors') or diag($w->{err});
	check_finished($job, 'lag_up', 'lag');
	$primary->wait_for_catchup('standby', 'replay');
	set_conf('backfill.max_replica_lag', undef);
	note sprintf('lag: done at %.1fs', time - $t0);
}

######################################################################
# 2. WAL rate
######################################################################
{
	my $limit = 2 * 1024 * 1024;
	make_upstream($primary, 'rate_up', 1, 400_000);
	my $job = $primary->safe_psql('postgres', "SELECT backfill.create_job('rate_up_down', 'rate_up')");
	set_conf('backfill.max_wal_rate', '2MB');
	$primary->safe_psql('postgres', "SELECT backfill.start_job($job)");
	like(wait_rows($primary, $job, 10_000), qr/^backfilling \d+$/, 'WAL rate: the job reads');
	my @out = split /\n/, $primary->safe_psql(
		'postgres', q{
SELECT pg_current_wal_insert_lsn() AS l0, clock_timestamp() AS t0 \gset
SELECT pg_sleep(20);
SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0'),
       extract(epoch FROM clock_timestamp() - :'t0');
});
	my ($wal, $secs) = split /\|/, $out[-1];
	my $rate = $wal / $secs;
	note sprintf('WAL rate: %.0f bytes in %.2f s: %.3f MB/s, %.1f%% of the limit',
		$wal, $secs, $rate / 1024 / 1024, 100 * $rate / $limit);
	ok(abs($rate - $limit) / $limit < 0.15,
		sprintf('WAL rate: %.2f MB/s over 20 s, within 15%% of 2 MB/s', $rate / 1024 / 1024));
	is(job_col($job, 'status'), 'backfilling', 'WAL rate: still backfilling after 20 s');
	is(job_col($job, 'throttled_by'), 'WAL rate', 'WAL rate: throttled_by says so');
	ok(job_col($job, 'rows_per_second') > 0, 'WAL rate: rows_per_second is shown');
	like(job_col($job, 'eta'), qr/^\d\d:\d\d:\d\d$/, 'WAL rate: eta is shown');
	set_conf('backfill.max_wal_rate', undef);
	check_finished($job, 'rate_up', 'WAL rate');
	note sprintf('WAL rate: done at %.1fs', time - $t0);
}

######################################################################
# 3. retained WAL: an inactive slot
######################################################################
{
	make_upstream($primary, 'ret_up', 1, 200_000);
	my $job = $primary->safe_psql('postgres',
		"SELECT backfill.create_job('ret_up_down', 'ret_up', rate_limit => 20000)");
	$primary->safe_psql('postgres', "SELECT pg_create_physical_replication_slot('s1', true)");
	$primary->safe_psql('postgres', "SELECT backfill.start_job($job)");
	like(wait_rows($primary, $job, 1000), qr/^backfilling \d+$/, 'retained WAL: the job reads');
	set_conf('backfill.max_retained_wal', '16MB');
	my $t = wait_throttled($job, qr/^retained WAL/);
	like($t, qr/^retained WAL \d+(\.\d)? MB > (16|12\.8) MB \(slot "s1"\)$/,
		"retained WAL: throttled_by names the slot ($t)");
	check_stopped($job, 'retained WAL');
	ok( $primary->safe_psql('postgres',
			"SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), restart_lsn) > 16 * 1024 * 1024 "
			  . "FROM pg_replication_slots WHERE slot_name = 's1'") eq 't',
		'retained WAL: the slot retains more than the limit');
	$primary->safe_psql('postgres', "SELECT pg_drop_replication_slot('s1')");
	$primary->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	check_finished($job, 'ret_up', 'retained WAL');
	note sprintf('retained WAL: done at %.1fs', time - $t0);
}

######################################################################
# 4. retained WAL: the archiver behind
######################################################################
{
	make_upstream($primary, 'arch_up', 1, 200_000);
	my $job = $primary->safe_psql('postgres',
		"SELECT backfill.create_job('arch_up_down', 'arch_up', rate_limit => 20000)");
	set_conf('backfill.max_retained_wal', '8MB');
	my $failed = $primary->safe_psql('postgres', 'SELECT failed_count FROM pg_stat_archiver');
	set_conf('archive_command', 'false');
	# the archiver's reload is not synchronous: switch until a segment fails
	ok( wait_until(30,
			sub {
				$primary->safe_psql('postgres',
					"CREATE TABLE IF NOT EXISTS arch_filler (i int); INSERT INTO arch_filler VALUES (1); "
					  . "SELECT pg_switch_wal()");
				usleep(200_000);
				$primary->safe_psql('postgres', 'SELECT failed_count FROM pg_stat_archiver') > $failed;
			}),
		'archiver: a segment fails to be archived');
	$primary->safe_psql('postgres', "SELECT backfill.start_job($job)");
	my $t = wait_throttled($job, qr/^retained WAL/);
	like($t, qr/^retained WAL \d+ MB > (8|6\.4) MB \(archiver\)$/,
		"archiver: throttled_by names the archiver ($t)");
	check_stopped($job, 'archiver');
	set_conf('archive_command', undef);
	$primary->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, NULL)");
	check_finished($job, 'arch_up', 'archiver');
	set_conf('backfill.max_retained_wal', undef);
	note sprintf('archiver: done at %.1fs', time - $t0);
}

no_crash_in_log($primary);
$standby->stop;
$primary->stop;
done_testing();
