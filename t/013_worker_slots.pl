
# Copyright (c) backfill authors
#
# t/013_worker_slots.pl: a worker slot whose worker never attached is freed
# once the postmaster says the worker has exited.
#
# A worker frees its slot in the registry when it exits, but only once it has
# attached to it; one that fails while it connects never does.  Its slot
# must be freed by whoever next looks at the registry, and the postmaster's
# handle of the worker tells whether it has exited: its pid could not, as the
# launching session may never have learnt it, and the system may give it to
# another process once the worker is gone.
#
# Here the launching session never learns the workers' pids: the postmaster
# is held (SIGSTOP) while start_job waits for its workers to start, so its
# statement times out; while it is held, the job's owner loses LOGIN, so the
# workers, started once the postmaster goes on, fail as they connect, before
# they attach.  Then the job must not look as if it ran: no worker in
# backfill.workers, stop_job returns at once (it waits for the workers to
# leave), and start_job starts it again once its owner may log in.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use BackfillTestLib;

my $node = worker_node('slots');
$node->safe_psql(
	'postgres', q{
CREATE ROLE regress_carol LOGIN;
CREATE SCHEMA carol AUTHORIZATION regress_carol;
});
my ($ret, $job, $err) = $node->psql(
	'postgres', q{
CREATE TABLE carol.up (id bigint PRIMARY KEY, a int, b text);
INSERT INTO carol.up SELECT g, g % 100, md5(g::text) FROM generate_series(1, 5000) g;
SELECT backfill.create_job('carol.down', 'carol.up', parallelism => 2, chunk_size => 500);
},
	extra_params => [ '-U', 'regress_carol' ],
	on_error_stop => 1);
is($ret, 0, 'a role without superuser creates a job') or diag($err);

# a session connected before the postmaster is held: it cannot connect after
my $s = $node->background_psql('postgres', on_error_stop => 0);
$s->query_safe("SET statement_timeout = '2s'");

my $offset = -s $node->logfile;
ok(kill('STOP', $node->{_pid}), 'the postmaster is held');
my ($out) = $s->query("SELECT backfill.start_job($job)");
my $start_err = $s->{stderr};
$s->{stderr} = '';
$s->query_safe("RESET statement_timeout");
$s->query_safe("ALTER ROLE regress_carol NOLOGIN");
ok(kill('CONT', $node->{_pid}), 'the postmaster goes on');
like($start_err, qr/canceling statement due to statement timeout/,
	'start_job timed out waiting for its workers to start');

# both workers start now, and fail as they connect
$node->wait_for_log(
	qr/(FATAL:  role "regress_carol" is not permitted to log in.*){2}/s, $offset);
pass('both workers failed as they connected');

is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.workers WHERE job_id = $job"),
	'0', 'backfill.workers shows no worker of the job');
is($node->safe_psql('postgres', "SELECT backfill._job_is_running($job)"),
	'f', 'the job is not running');

my $t0 = time;
($ret, $out, $err) = $node->psql('postgres',
	"SET statement_timeout = '10s'; SELECT backfill.stop_job($job)");
my $secs = time - $t0;
is($ret, 0, 'stop_job returns') or diag($err);
like($err, qr/NOTICE:  backfill job $job is not running in the background/,
	'and says that no worker runs the job');
cmp_ok($secs, '<', 5, sprintf('at once (%.2f s)', $secs));

$s->query_safe('ALTER ROLE regress_carol LOGIN');
$s->quit;
($ret, $out, $err) = $node->psql(
	'postgres', "SELECT backfill.start_job($job); SELECT backfill.wait_job($job)",
	extra_params => [ '-U', 'regress_carol' ]);
is($ret, 0, 'the owner starts the job again once she may log in') or diag($err);
is(job_info($node, $job)->{status}, 'finished', 'and it finishes');
is(table_diff($node, 'carol.up', 'carol.down'), '0', 'the downstream equals the upstream');

no_crash_in_log($node);
done_testing();
