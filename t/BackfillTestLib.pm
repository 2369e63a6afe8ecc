
# Copyright (c) backfill authors
#
# t/BackfillTestLib.pm: helpers shared by the TAP tests of backfill.
#
# Crash tests need a few things PostgreSQL::Test::Cluster does not give
# directly: a CALL that runs in the background and can be killed, writers
# that run in the background while it does, polling with a deadline, and the
# decoded per-vnode state of a job to compare before and after a crash.

package BackfillTestLib;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use POSIX ();
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

our @EXPORT = qw(
  backfill_node
  no_crash_in_log
  make_upstream
  verify_rows
  table_diff
  start_run_job
  finish_bg
  writer_script
  writer_transactions
  start_writers
  wait_until
  runner_pid
  wait_rows
  freeze_job
  wait_blocked_on_state
  kill_backend_and_wait
  wait_accepting
  job_info
  job_state
  compare_states
  state_groups
  worker_node
  job_workers
  wait_workers
  wait_no_workers
  actor_rows
  wait_epoch_past
  wait_status
  kill_and_wait_restart
  kill_postmaster_and_restart
  wait_all_blocked_on_state
  psql_error
  legacy_message
  rw_debug_pos
  leftovers
  remote_source
  import_remote
  remote_differences
  require_password
  process_usage
  start_ledger_writer
  ledger_keys
  wait_ledger
);

# Every background process gets killed by IPC::Run after this long, so that
# a hung test ends instead of waiting forever.
my $bg_timeout = $PostgreSQL::Test::Utils::timeout_default;

# A node set up for crash tests: restart_after_crash is on (the test
# framework turns it off), statements are not logged (pgbench would flood the
# log), and barriers are short.
#
# Options (used by the background worker tests): conf, more lines for
# postgresql.conf, appended after the defaults; init, a hash of options for
# PostgreSQL::Test::Cluster's init (allows_streaming, has_archiving).
sub backfill_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opts{init} // {} });
	$node->append_conf(
		'postgresql.conf', q{
restart_after_crash = on
log_statement = none
max_connections = 40
backfill.barrier_interval_ms = 100
});
	$node->append_conf('postgresql.conf', $opts{conf}) if $opts{conf};
	$node->start;
	$node->safe_psql(
		'postgres', q{
CREATE EXTENSION backfill;
-- Waits, polling every 10 ms, until the committed row_count of a job reaches
-- target or the job has ended; returns "status row_count", prefixed with
-- "timeout " if it gave up.  Polling in the server reacts within one barrier
-- or so, where a psql per poll would not: a barrier can be 10k rows.
CREATE FUNCTION wait_rows(job bigint, target bigint, timeout_s float8)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
    rc bigint;
    deadline timestamptz := clock_timestamp() + make_interval(secs => timeout_s);
BEGIN
    LOOP
        SELECT status, row_count INTO st, rc FROM backfill.jobs WHERE job_id = job;
        IF st IN ('finished', 'failed') OR rc >= target THEN
            RETURN st || ' ' || rc;
        END IF;
        IF clock_timestamp() > deadline THEN
            RETURN 'timeout ' || st || ' ' || rc;
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
END
$$;
-- Waits, polling every 10 ms, until the status of a job is one of the given
-- ones; returns the status, prefixed with "timeout " if it gave up.
CREATE FUNCTION wait_status(job bigint, statuses text[], timeout_s float8)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
    deadline timestamptz := clock_timestamp() + make_interval(secs => timeout_s);
BEGIN
    LOOP
        SELECT status INTO st FROM backfill.jobs WHERE job_id = job;
        IF st = ANY (statuses) THEN
            RETURN st;
        END IF;
        IF clock_timestamp() > deadline THEN
            RETURN 'timeout ' || coalesce(st, 'no job');
        END IF;
        PERFORM pg_sleep(0.01);
    END LOOP;
END
$$;
-- Waits until every actor of a job has committed a barrier after the call
-- (its epoch in backfill.actor passed the largest one seen at the call),
-- n times over; returns false on timeout.
CREATE FUNCTION wait_epoch_past(job bigint, n int, timeout_s float8)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    e bigint;
    deadline timestamptz := clock_timestamp() + make_interval(secs => timeout_s);
BEGIN
    FOR i IN 1 .. n LOOP
        SELECT max(epoch) INTO e FROM backfill.actor WHERE job_id = job;
        LOOP
            EXIT WHEN (SELECT min(epoch) FROM backfill.actor WHERE job_id = job) > e;
            IF clock_timestamp() > deadline THEN
                RETURN false;
            END IF;
            PERFORM pg_sleep(0.01);
        END LOOP;
    END LOOP;
    RETURN true;
END
$$;
-- The snapshot rows per second of a job over about secs seconds, measured
-- between two commits of a barrier (moments where the job's committed
-- row_count changes), so that the barriers' granularity does not count.
CREATE FUNCTION measure_rate(job bigint, secs float8)
RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
    r0 bigint; r1 bigint; r bigint;
    t0 timestamptz; t1 timestamptz;
    deadline timestamptz := clock_timestamp() + make_interval(secs => secs + 30);
BEGIN
    SELECT row_count INTO r FROM backfill.jobs WHERE job_id = job;
    LOOP
        SELECT row_count, clock_timestamp() INTO r0, t0 FROM backfill.jobs WHERE job_id = job;
        EXIT WHEN r0 <> r;
        IF clock_timestamp() > deadline THEN RETURN NULL; END IF;
        PERFORM pg_sleep(0.005);
    END LOOP;
    PERFORM pg_sleep(secs);
    SELECT row_count INTO r FROM backfill.jobs WHERE job_id = job;
    LOOP
        SELECT row_count, clock_timestamp() INTO r1, t1 FROM backfill.jobs WHERE job_id = job;
        EXIT WHEN r1 <> r;
        IF clock_timestamp() > deadline THEN RETURN NULL; END IF;
        PERFORM pg_sleep(0.005);
    END LOOP;
    RETURN (r1 - r0) / extract(epoch FROM t1 - t0);
END
$$;
-- wait_rows(), then lock the job's state table against writes until the
-- caller's transaction ends; see freeze_job() in t/BackfillTestLib.pm
CREATE FUNCTION wait_and_lock(job bigint, target bigint, timeout_s float8)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text := wait_rows(job, target, timeout_s);
BEGIN
    EXECUTE format('LOCK TABLE %s IN SHARE MODE',
                   (SELECT state_table FROM backfill.jobs WHERE job_id = job));
    RETURN r;
END
$$;
});
	return $node;
}

# Start a command in the background, its output collected; returns a hash:
# h (the IPC::Run harness), out, err, and the given extra fields.
sub start_bg
{
	my ($cmd, %fields) = @_;
	my $r = { out => '', err => '', %fields };
	$r->{h} = IPC::Run::start($cmd, '<', \undef, '>', \$r->{out}, '2>',
		\$r->{err}, IPC::Run::timeout($bg_timeout));
	return $r;
}

# Start "CALL backfill.run_job(job)" in a psql of its own, in the background.
# The session is tagged with an application_name so that its backend can be
# found in pg_stat_activity.  Returns a hash: h (the IPC::Run harness), out,
# err.
sub start_run_job
{
	my ($node, $job_id, $appname) = @_;
	$appname //= "backfill_runner_$job_id";
	my $connstr = $node->connstr('postgres') . " application_name=$appname";
	return start_bg(
		[
			'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
			'-d', $connstr, '-c', "CALL backfill.run_job($job_id)"
		],
		name => $appname);
}

# Wait for a background process started here to exit; returns its exit code
# (-1 if IPC::Run had to kill it on timeout).
sub finish_bg
{
	my ($r) = @_;
	my $rc;
	eval { $r->{h}->finish; $rc = $r->{h}->result(0); 1 } or do {
		diag("background process failed: $@");
		eval { $r->{h}->kill_kill; };
		$rc = -1;
	};
	return $rc;
}

# The writers' script for pgbench on $table (id bigint primary key, a int,
# b text): single-row inserts, updates, deletes, key changes and a
# two-statement transaction, on random keys.  Each client only touches keys of
# its own parity (-c 2: client_id is 0 or 1), so the clients never conflict
# and no statement fails (pgbench 15 aborts a client on any error).  Keys go
# up to 250001, above the tables' initial keys, so inserts and key changes
# land both behind and ahead of the backfill's positions.

# An upstream table (id bigint primary key, a int, b text) with the ids
# $from..$to, analyzed; returns the writer script for it.
sub make_upstream
{
	my ($node, $table, $from, $to) = @_;
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $table (id bigint PRIMARY KEY, a int, b text);
INSERT INTO $table SELECT g, g % 1000, md5(g::text) FROM generate_series($from, $to) g;
VACUUM ANALYZE $table;
});
	return writer_script($node, $table);
}

# The first rows verify_job() reports, one "pk problem" a line: '' when the
# downstream is consistent.
sub verify_rows
{
	my ($node, $job_id) = @_;
	return $node->safe_psql('postgres',
		"SELECT pk || ' ' || problem FROM backfill.verify_job($job_id) LIMIT 10");
}

# The rows that are in one table and not in the other, counted both ways
# without the extension's help.
sub table_diff
{
	my ($node, $up, $down) = @_;
	return $node->safe_psql('postgres',
		    "SELECT count(*) FROM ((TABLE $up EXCEPT ALL TABLE $down) "
		  . "UNION ALL (TABLE $down EXCEPT ALL TABLE $up)) x");
}

# The server log shows no process that died on its own: no signal (but
# SIGKILL, when the test sends it itself), no exception, no PANIC.
sub no_crash_in_log
{
	my ($node, $sigkill_sent) = @_;
	my $signal = $sigkill_sent ? 'terminated by signal (?!9\b)\d+' : 'terminated by signal \d+';
	unlike(slurp_file($node->logfile),
		qr/$signal|was terminated by exception|PANIC:/,
		$sigkill_sent ? 'no process crashed on its own' : 'no process crashed');
}

sub writer_script
{
	my ($node, $table) = @_;
	my $file = $node->basedir . "/writers_$table.sql";
	unlink $file;
	append_to_file($file, <<"EOS");
\\set i1 2 * random(0, 125000) + :client_id
\\set i2 2 * random(0, 125000) + :client_id
\\set i3 2 * random(0, 125000) + :client_id
\\set i4 2 * random(0, 125000) + :client_id
\\set i5 2 * random(0, 125000) + :client_id
\\set i6 2 * random(0, 125000) + :client_id
\\set i7 2 * random(0, 125000) + :client_id
INSERT INTO $table (id, a, b) VALUES (:i1, :i1 % 1000, 'ins') ON CONFLICT (id) DO NOTHING;
UPDATE $table SET a = a + 1, b = md5(random()::text) WHERE id = :i2;
DELETE FROM $table WHERE id = :i3;
UPDATE $table SET id = :i5, b = 'moved' WHERE id = :i4 AND NOT EXISTS (SELECT FROM $table WHERE id = :i5);
BEGIN;
UPDATE $table SET a = -a WHERE id = :i6;
INSERT INTO $table VALUES (:i7, 7, 'tx') ON CONFLICT (id) DO UPDATE SET a = excluded.a, b = 'upsert';
COMMIT;
EOS
	return $file;
}

# The number of transactions a finished pgbench run reports.
sub writer_transactions
{
	my ($w) = @_;
	return $w->{out} =~ /number of transactions actually processed: (\d+)/ ? $1 : 0;
}

# Start pgbench in the background with the given script, for at most $secs
# seconds, at a bounded total rate so that a 2-core machine still leaves
# room for the backfill.  Each client only touches keys congruent to its
# client_id modulo $clients (the script must use that), so the writers never
# conflict with each other and never fail on a duplicate key.
sub start_writers
{
	my ($node, $script, $secs, %opts) = @_;
	my $clients = $opts{clients} // 2;
	my $rate = $opts{rate} // 400;
	return start_bg(
		[
			'pgbench', '-n', '-h', $node->host, '-p', $node->port,
			'-c', $clients, '-j', $clients, '-T', $secs, '-R', $rate,
			'-f', $script, 'postgres'
		]);
}

# Call $cb every 50 ms until it returns true or $secs have passed; returns
# its last value.
sub wait_until
{
	my ($secs, $cb) = @_;
	my $deadline = time + $secs;
	my $v;
	while (1)
	{
		$v = $cb->();
		return $v if $v || time > $deadline;
		usleep(50_000);
	}
}

# The pid of the backend that runs a background run_job, once it runs it
# (empty if it does not within the timeout).
sub runner_pid
{
	my ($node, $r) = @_;
	my $pid;
	wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			$pid = $node->safe_psql('postgres',
				    "SELECT pid FROM pg_stat_activity "
				  . "WHERE application_name = '$r->{name}' AND query LIKE '%run_job%'");
			return $pid ne '';
		});
	return $pid;
}

# Wait until the committed row_count of a job reaches $target or the job has
# ended; returns "status row_count" (prefixed "timeout " if it gave up).
sub wait_rows
{
	my ($node, $job_id, $target, $secs) = @_;
	$secs //= 120;
	return $node->safe_psql('postgres',
		"SELECT wait_rows($job_id, $target, $secs)");
}

# Freeze a running job once its committed row_count has reached $target:
# a session of its own waits for that (in the server, polling every 10 ms),
# then takes SHARE lock on the job's state table and keeps it.  The runner's
# barrier in flight then reads its chunks (inserting them downstream) for
# barrier_interval_ms as usual, and blocks where it persists its state,
# before its commit.  So the committed progress stays put, however fast the
# backfill runs, and a crash then loses a whole barrier's worth of reads.
# Returns the session (a hash like start_run_job's); it ends with the crash.
sub freeze_job
{
	my ($node, $job_id, $target) = @_;

	# a file, not a scalar: IPC::Run only feeds a scalar while it is pumped
	my $file = $node->basedir . "/freeze_${job_id}_$target.sql";
	unlink $file;
	append_to_file($file,
		    "BEGIN;\nSELECT wait_and_lock($job_id, $target, 120);\n"
		  . "SELECT pg_sleep($bg_timeout);\n");
	return start_bg(
		[
			'psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1',
			'-d', $node->connstr('postgres'), '-f', $file
		]);
}

# Wait until the backend $pid waits for a lock on the job's state table
# (see freeze_job).  Returns 'blocked', or false if the job ended or the
# timeout passed first.
sub wait_blocked_on_state
{
	my ($node, $job_id, $pid) = @_;
	return wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			my $s = $node->safe_psql(
				'postgres', qq{
SELECT CASE
    WHEN EXISTS (SELECT FROM pg_locks l JOIN backfill.jobs j ON l.relation = j.state_table
                  WHERE j.job_id = $job_id AND l.pid = $pid AND NOT l.granted) THEN 'blocked'
    WHEN NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid) THEN 'gone'
    ELSE '' END});
			return 'blocked' if $s eq 'blocked';
			return 'gone' if $s eq 'gone';
			return '';
		}) eq 'blocked';
}

# kill -9 one backend and wait until the postmaster has noticed, killed the
# other backends, reinitialized and accepts connections again.  Waiting for
# the "reinitializing" line first matters: right after the kill the
# Wait until the server accepts connections again after a crash.  Not
# poll_query_until: it writes the query to psql's stdin, and a psql refused
# while the server still recovers may exit before reading it (broken pipe).
sub wait_accepting
{
	my ($node) = @_;
	return wait_until(
		$bg_timeout,
		sub {
			my ($out, $err) = ('', '');
			IPC::Run::run(
				[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', 'SELECT 1' ],
				'<', '/dev/null', '>', \$out, '2>', \$err);
			return $out =~ /^1\n?$/;
		});
}

# postmaster may not have noticed yet, and a query could still succeed.
sub kill_backend_and_wait
{
	my ($node, $pid) = @_;
	my $offset = -s $node->logfile;
	ok(kill('KILL', $pid), "kill -9 of backend $pid");
	$node->wait_for_log(
		qr/server process \(PID $pid\) was terminated by signal 9.*all server processes terminated; reinitializing/s,
		$offset);
	ok(wait_accepting($node), 'server accepts connections again after the crash');
}

# One row of backfill.jobs, as a hash.
sub job_info
{
	my ($node, $job_id) = @_;
	my @cols = qw(status row_count epoch kind fragment_id parallelism
	  chunk_size upstream_table_id state_table last_error);
	my $out = $node->safe_psql('postgres',
		    "SELECT "
		  . join(', ', map { "coalesce(${_}::text, '')" } @cols)
		  . " FROM backfill.jobs WHERE job_id = $job_id",
		extra_params => [ '-F', "\x1f" ]);
	my @vals = split /\x1f/, $out, -1;
	my %h;
	@h{@cols} = @vals;
	return \%h;
}

# The decoded state of a job: vnode => { actor, pos (a number, or undef when
# the vnode has no position), pos_text, finished (0/1), rows }.  Keys must be
# a single bigint column.
sub job_state
{
	my ($node, $job_id) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT vnode, actor_id, coalesce(current_pos, 'NULL'), backfill_finished, row_count "
		  . "FROM backfill.job_state($job_id) ORDER BY vnode");
	my %s;
	for my $line (split /\n/, $out)
	{
		my ($v, $actor, $pos, $fin, $rows) = split /\|/, $line;
		my $num;
		$num = $1 if $pos =~ /^\((-?\d+)\)$/;
		$s{$v} = {
			actor => $actor,
			pos => $num,
			pos_text => $pos,
			finished => ($fin eq 't' ? 1 : 0),
			rows => $rows
		};
	}
	return \%s;
}

# The ways $after went back from $before, vnode by vnode: a position moved
# backwards or vanished, a finished vnode became unfinished, a count shrank.
# Returns a list of messages, empty when nothing went back.
sub compare_states
{
	my ($before, $after) = @_;
	my @bad;
	for my $v (sort { $a <=> $b } keys %$before)
	{
		my ($b, $a) = ($before->{$v}, $after->{$v});
		if (!defined $a)
		{
			push @bad, "vnode $v: missing";
			next;
		}
		push @bad, "vnode $v: was finished, is not"
		  if $b->{finished} && !$a->{finished};
		push @bad, "vnode $v: lost its position $b->{pos_text}"
		  if defined $b->{pos} && !defined $a->{pos};
		push @bad, "vnode $v: position went back from $b->{pos} to $a->{pos}"
		  if defined $b->{pos} && defined $a->{pos} && $a->{pos} < $b->{pos};
		push @bad, "vnode $v: row_count went back from $b->{rows} to $a->{rows}"
		  if $a->{rows} < $b->{rows};
	}
	return @bad;
}

# The number of sets of unfinished vnodes that share an actor and a
# position: a barrier with backfill.barrier_interval_ms = 0 reads one chunk
# for each of them (executor.c, "one round").
sub state_groups
{
	my ($state) = @_;
	my %g;
	for my $s (values %$state)
	{
		next if $s->{finished};
		$g{"$s->{actor}/$s->{pos_text}"} = 1;
	}
	return scalar keys %g;
}

# A node for the background worker tests: the library preloaded, barriers
# of 200 ms, room for a few jobs' workers.  %opts as for backfill_node; conf
# is appended after these lines, so it can override them.
sub worker_node
{
	my ($name, %opts) = @_;
	my $conf = q{
shared_preload_libraries = 'backfill'
backfill.barrier_interval_ms = 200
max_worker_processes = 16
};
	$conf .= $opts{conf} if $opts{conf};
	return backfill_node($name, %opts, conf => $conf);
}

# The background workers of a job, from backfill.workers: a list of
# [actor_id, pid], by actor_id.
sub job_workers
{
	my ($node, $job_id) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT actor_id, pid FROM backfill.workers WHERE job_id = $job_id ORDER BY actor_id"
	);
	return [ map { [ split /\|/ ] } grep { $_ ne '' } split /\n/, $out ];
}

# Wait until the workers of a job are exactly the given actors, each with a
# process that pg_stat_activity shows as a 'backfill actor' named after its
# job and actor.  Returns their pids by actor_id (a hash), or undef on timeout.
sub wait_workers
{
	my ($node, $job_id, @actors) = @_;
	my $want = join(',', sort { $a <=> $b } @actors);
	my %pids;
	my $ok = wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			my $out = $node->safe_psql(
				'postgres', qq{
SELECT w.actor_id, w.pid FROM backfill.workers w
  JOIN pg_stat_activity a ON a.pid = w.pid
 WHERE w.job_id = $job_id AND a.backend_type = 'backfill actor'
   AND a.application_name = 'backfill job ' || w.job_id || ' actor ' || w.actor_id
 ORDER BY w.actor_id});
			%pids = map { split /\|/ } grep { $_ ne '' } split /\n/, $out;
			return join(',', sort { $a <=> $b } keys %pids) eq $want;
		});
	return $ok ? \%pids : undef;
}

# Wait until no worker of the job is left, neither in backfill.workers nor
# in pg_stat_activity; true if so within $secs (default: the framework's
# timeout).
sub wait_no_workers
{
	my ($node, $job_id, $secs) = @_;
	return wait_until(
		$secs // $PostgreSQL::Test::Utils::timeout_default,
		sub {
			$node->safe_psql(
				'postgres', qq{
SELECT NOT EXISTS (SELECT FROM backfill.workers WHERE job_id = $job_id)
   AND NOT EXISTS (SELECT FROM pg_stat_activity
                    WHERE application_name LIKE 'backfill job $job_id actor %')}) eq 't';
		});
}

# The actors of a job: a list of hashes (actor_id, vnode_start, vnode_end,
# epoch, row_count), by actor_id.
sub actor_rows
{
	my ($node, $job_id) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT actor_id, vnode_start, vnode_end, epoch, row_count "
		  . "FROM backfill.actor WHERE job_id = $job_id ORDER BY actor_id");
	my @rows;
	for my $line (grep { $_ ne '' } split /\n/, $out)
	{
		my %h;
		@h{qw(actor_id vnode_start vnode_end epoch row_count)} = split /\|/, $line;
		push @rows, \%h;
	}
	return \@rows;
}

# Wait until every actor of the job has committed $n more barriers; true if
# they did within $secs.
sub wait_epoch_past
{
	my ($node, $job_id, $n, $secs) = @_;
	$secs //= 60;
	return $node->safe_psql('postgres',
		"SELECT wait_epoch_past($job_id, $n, $secs)") eq 't';
}

# Wait until a job's status is one of @$statuses; returns the status
# (prefixed "timeout " if it gave up).
sub wait_status
{
	my ($node, $job_id, $statuses, $secs) = @_;
	$secs //= 120;
	my $list = join(',', map { "'$_'" } @$statuses);
	return $node->safe_psql('postgres',
		"SELECT wait_status($job_id, ARRAY[$list], $secs)");
}

# kill -9 a backend or a background worker and wait until the postmaster
# has reinitialized and accepts connections again (like
# kill_backend_and_wait, whose log line only matches client backends).
sub kill_and_wait_restart
{
	my ($node, $pid, $label) = @_;
	my $offset = -s $node->logfile;
	ok(kill('KILL', $pid), "$label: kill -9 of process $pid");
	$node->wait_for_log(
		qr/\(PID $pid\) was terminated by signal 9.*all server processes terminated; reinitializing/s,
		$offset);
	ok(wait_accepting($node), "$label: server accepts connections again after the crash");
}

# kill -9 of the postmaster itself, then start the server again once every
# process it had forked is gone (they leave when they notice their
# postmaster died; shared memory still in use would stop the new one).
sub kill_postmaster_and_restart
{
	my ($node, $label) = @_;
	my $pm = $node->{_pid};
	my @children = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`;
	ok(kill(0, $pm), "$label: kill -9 of the postmaster $pm");
	$node->kill9;    # kill -9, and the node forgets the pid
	my $gone = wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub { !grep { kill(0, $_) } ($pm, @children) });
	ok($gone, "$label: every server process has exited")
	  or diag('left: ' . join(' ', grep { kill(0, $_) } ($pm, @children)));
	$node->start;
}

# Wait until every worker of a job (those of backfill.workers) waits for a
# lock on the job's state table (see freeze_job).  Returns the pids by
# actor_id (a hash), or undef on timeout or when a worker has gone.
sub wait_all_blocked_on_state
{
	my ($node, $job_id, $nworkers) = @_;
	my %pids;
	my $ok = wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			my $out = $node->safe_psql(
				'postgres', qq{
SELECT w.actor_id, w.pid FROM backfill.workers w
 WHERE w.job_id = $job_id
   AND EXISTS (SELECT FROM pg_locks l JOIN backfill.jobs j ON l.relation = j.state_table
                WHERE j.job_id = $job_id AND l.pid = w.pid AND NOT l.granted)});
			%pids = map { split /\|/ } grep { $_ ne '' } split /\n/, $out;
			return scalar(keys %pids) == $nworkers;
		});
	return $ok ? \%pids : undef;
}

# Run $sql, which must fail; returns (sqlstate, message, stderr), from
# psql's verbose error report.
sub psql_error
{
	my ($node, $sql, $db) = @_;
	my ($out, $err) = ('', '');
	my $rc = $node->psql($db // 'postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out, stderr => \$err);
	return ('', '', "no error (rc $rc): $out") if $rc == 0;
	my ($state, $msg) = $err =~ /ERROR:  ([0-9A-Z]{5}): (.*)$/m;
	return ($state // '', $msg // '', $err);
}

# RisingWave's {:?} of a legacy actor's current_pos, an Option<OwnedRow>,
# from job_state's row literal, for a job whose key is one integer column:
# "(96322)" is Some(OwnedRow([Some(Int64(96322))])) for a bigint key, no
# position is None.
sub rw_debug_pos
{
	my ($node, $job_id, $pos_text) = @_;
	return 'None' if $pos_text eq 'NULL';
	my $type = $node->safe_psql(
		'postgres', qq{
SELECT string_agg(format_type(a.atttypid, NULL), ',')
  FROM backfill.job j
  JOIN pg_index i ON i.indrelid = j.upstream AND i.indisprimary
  JOIN pg_attribute a ON a.attrelid = j.upstream AND a.attnum = ANY (i.indkey)
 WHERE j.job_id = $job_id});
	my %variant = (smallint => 'Int16', integer => 'Int32', bigint => 'Int64');
	die "rw_debug_pos: key of type $type" unless $variant{$type};
	die "rw_debug_pos: position $pos_text" unless $pos_text =~ /^\((-?\d+)\)$/;
	return "Some(OwnedRow([Some($variant{$type}($1))]))";
}

# RisingWave's legacy error for a job, built from the catalogs as they are
# now: the first actor, by actor_id, whose state (that of its first vnode)
# has not finished.  Returns (message, actor_id), or () when every actor has
# finished.
sub legacy_message
{
	my ($node, $job_id) = @_;
	my $info = job_info($node, $job_id);
	my $state = job_state($node, $job_id);
	for my $a (@{ actor_rows($node, $job_id) })
	{
		my $first = $state->{ $a->{vnode_start} };
		next if $first->{finished};
		return (
			'legacy no-shuffle backfill recovered unfinished progress; '
			  . 'cancel and recreate the streaming job. '
			  . "upstream_table_id=$info->{upstream_table_id}, fragment_id=$info->{fragment_id}, "
			  . "actor_id=$a->{actor_id}, current_pos=" . rw_debug_pos($node, $job_id, $first->{pos_text})
			  . ", row_count=$first->{rows}",
			$a->{actor_id});
	}
	return ();
}

# What a job left behind in the database, as a list of descriptions: its
# state and change tables, its triggers on $upstream, its downstream table
# $downstream, its workers.
sub leftovers
{
	my ($node, $job_id, $upstream, $downstream) = @_;
	my $out = $node->safe_psql(
		'postgres', qq{
SELECT 'table ' || c.oid::regclass FROM pg_class c
 WHERE c.oid::regclass::text IN ('backfill.state_$job_id', 'backfill.changes_$job_id', '$downstream')
UNION ALL
SELECT 'trigger ' || tgname FROM pg_trigger
 WHERE tgrelid = '$upstream'::regclass AND tgname IN ('backfill_capture_$job_id', 'backfill_apply_$job_id')
UNION ALL
SELECT 'worker ' || pid FROM backfill.workers WHERE job_id = $job_id
UNION ALL
SELECT 'process ' || pid FROM pg_stat_activity WHERE application_name LIKE 'backfill job $job_id actor %'});
	return grep { $_ ne '' } split /\n/, $out;
}

# A source server for the copy from another server: wal_level logical, room
# for slots, statements not logged (pgbench would flood the log), conf
# appended; table t of $rows rows (even keys 2 to 2 * $rows), analyzed.
sub remote_source
{
	my ($name, $rows, $conf) = @_;
	my $source = PostgreSQL::Test::Cluster->new($name);
	$source->init(allows_streaming => 'logical');
	$source->append_conf('postgresql.conf', q{
max_replication_slots = 10
log_statement = none
} . ($conf // ''));
	$source->start;
	$source->safe_psql('postgres', qq{
CREATE TABLE t (id int PRIMARY KEY, a int, b text);
INSERT INTO t SELECT g * 2, g % 1000, md5(g::text) FROM generate_series(1, $rows) g;
ANALYZE t;
});
	return $source;
}

# Make $node ask role $role for its password on local connections (the
# first line of pg_hba.conf), and reload: postgres_fdw lets a plain role
# connect only to a source that asked for one.
sub require_password
{
	my ($node, $role) = @_;
	my $hba = $node->data_dir . '/pg_hba.conf';
	my $hba_text = PostgreSQL::Test::Utils::slurp_file($hba);
	open(my $fh, '>', $hba) or die "could not write $hba: $!";
	print $fh "local all $role scram-sha-256\n", $hba_text;
	close($fh);
	$node->reload;
	return;
}

# On $local, foreign server src for $source (a user mapping for the current
# user) and its table t imported as remote.t.
sub import_remote
{
	my ($local, $source) = @_;
	$local->safe_psql('postgres', sprintf(q{
CREATE EXTENSION postgres_fdw;
CREATE SERVER src FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '%s', port '%s', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER src;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src INTO remote;
}, $source->host, $source->port));
	return;
}

# "<rows of the source missing from $table> <rows of $table not on the
# source>", through remote.t: "0 0" when they are equal
sub remote_differences
{
	my ($local, $table) = @_;
	return $local->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT * FROM remote.t EXCEPT SELECT * FROM $table) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM $table EXCEPT SELECT * FROM remote.t) y)});
}

# The CPU seconds a process has used and its private resident memory in kB
# (RssAnon: the shared buffers it touches are not its own), from /proc
sub process_usage
{
	my ($pid) = @_;
	my @stat = split / /, (slurp_file("/proc/$pid/stat") =~ s/^.*\) //r);
	my ($anon) = slurp_file("/proc/$pid/status") =~ /^RssAnon:\s+(\d+)/m;
	return (($stat[11] + $stat[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK), $anon);
}

# A writer that keeps a ledger of its acknowledged transactions: it runs
# $sql, where $k stands for the transaction's key, in a psql of its own for
# each transaction, keys from 100001 up by $opts{step} (1), and appends the
# key to the file $ledger only once the commit returned; psql's errors go to
# "$ledger.errors".  Each connection waits 2 s at most, each transaction
# $opts{timeout} seconds (10).  It stops once a file "$ledger.stop" exists.
# Returns what start_bg does.
sub start_ledger_writer
{
	my ($node, $ledger, $sql, %opts) = @_;
	my $step = $opts{step} // 1;
	my $timeout = $opts{timeout} // 10;
	$sql =~ s/\n/ /g;
	append_to_file($ledger, '');
	append_to_file("$ledger.errors", '');
	return start_bg(
		[
			'bash', '-c',
			sprintf(
				q{k=100001; while [ ! -e '%s.stop' ]; do }
				  . q{if PGCONNECT_TIMEOUT=2 timeout %d psql -X -q -v ON_ERROR_STOP=1 -h '%s' -p %d -d postgres }
				  . q{-c "%s" >/dev/null 2>>'%s.errors'; }
				  . q{then echo $k >> '%s'; fi; k=$((k + %d)); sleep 0.02; done},
				$ledger, $timeout, $node->host, $node->port, $sql, $ledger, $ledger, $step)
		]);
}

# The keys of the ledger's acknowledged transactions.
sub ledger_keys
{
	my ($ledger) = @_;
	return grep { /^\d+$/ } split /\n/, slurp_file($ledger);
}

# Wait (60 s at most) until $more transactions more are in the ledger;
# returns whether they are.
sub wait_ledger
{
	my ($ledger, $more) = @_;
	my $target = scalar(ledger_keys($ledger)) + $more;
	return wait_until(60, sub { scalar(ledger_keys($ledger)) >= $target });
}

1;
