
# Copyright (c) backfill authors
#
# t/041_cutover_faults.pl: kill -9 inside cutover, rollback_cutover and
# finish_cutover, under a writer that keeps a ledger of acknowledged writes,
# then a promoted standby.
#
# A writer inserts fresh keys into the table by its name, one transaction
# each, and appends a key to its ledger only once its commit returned.  A
# user's event trigger sleeps at the end of a DDL command while a row of
# table "inject" names it: ALTER TABLE for the swaps of cutover and
# rollback_cutover (the tables renamed, the swap not committed), DROP TABLE
# for finish_cutover (the old table dropped, not committed).  Each call is
# killed there, once by kill -9 of its backend and once of the postmaster:
# afterwards the tables, the job and its cutover row are as before the
# call, every acknowledged write is in the table that has the name, and the
# same call then goes through.  At the end every acknowledged write is in
# the table exactly once, and a standby that streamed it all, promoted, has
# the same.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = backfill_node('cutfaults', init => { allows_streaming => 1 });
$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, v int, w text);
INSERT INTO t SELECT g, g, 'initial' FROM generate_series(1, 2000) g;
CREATE TABLE inject (command_tag text PRIMARY KEY);
GRANT SELECT ON inject TO PUBLIC;
CREATE FUNCTION sleep_at_injected_command() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM public.inject WHERE command_tag = tg_tag) THEN
        PERFORM pg_sleep(120);
    END IF;
END $$;
CREATE EVENT TRIGGER sleep_at_injected_command ON ddl_command_end
    EXECUTE FUNCTION sleep_at_injected_command();
});
my $job = $node->safe_psql('postgres', "SELECT backfill.create_job('t_new', 't')");
$node->safe_psql('postgres', "CALL backfill.run_job($job)");
is($node->safe_psql('postgres', "SELECT status FROM backfill.job WHERE job_id = $job"),
	'finished', 'the job has finished');

# a standby that streams everything from here on
$node->backup('before');
my $standby = PostgreSQL::Test::Cluster->new('cutfaults_standby');
$standby->init_from_backup($node, 'before', has_streaming => 1);
$standby->start;

# ---- the writer and its ledger ----
my $ledger = $node->basedir . '/writer.ledger';
my $writer = start_ledger_writer($node, $ledger,
	"INSERT INTO t VALUES (\$k, \$k, 'acknowledged')", step => 2);

sub acknowledged { return ledger_keys($ledger); }
sub wait_writes { return wait_ledger($ledger, $_[0]); }

# "<acknowledged> <of them in t>"
sub acknowledged_in_t
{
	my @keys = acknowledged();
	my $found = $node->safe_psql('postgres',
		'SELECT count(*) FROM t WHERE id = ANY (\'{' . join(',', @keys) . '}\'::int[])');
	return scalar(@keys) . " $found";
}

my $old_name = "t_before_cutover_$job";
my $state_sql = qq{
SELECT (SELECT string_agg(relname || ':' || oid, ' ' ORDER BY relname) FROM pg_class
         WHERE relname IN ('t', 't_new', '$old_name') AND relkind = 'r'),
       (SELECT upstream || ' ' || downstream || ' ' || status FROM backfill.job WHERE job_id = $job),
       (SELECT coalesce(string_agg(state, ','), 'no cutover row') FROM backfill.job_cutover WHERE job_id = $job)};

# kill -9 of the call's backend or of the postmaster while it sleeps at the
# end of the injected command; what it changed must be gone
sub kill_inside
{
	my ($call, $tag, $victim) = @_;
	ok(wait_writes(20), "$call, $victim: the writer writes");
	my $before = $node->safe_psql('postgres', $state_sql);
	$node->safe_psql('postgres', "INSERT INTO inject VALUES ('$tag')");
	my $h = BackfillTestLib::start_bg(
		[
			'psql', '-X', '-At', '-d',
			$node->connstr('postgres') . ' application_name=fault_victim',
			'-c', "SELECT backfill.$call($job)"
		]);
	my $pid = wait_until(
		60,
		sub {
			$node->safe_psql('postgres', q{
SELECT pid FROM pg_stat_activity
 WHERE application_name = 'fault_victim' AND wait_event = 'PgSleep'});
		});
	ok($pid, "$call, $victim: the call sleeps at the end of $tag");
	$node->safe_psql('postgres', 'DELETE FROM inject');
	if ($victim eq 'backend')
	{
		BackfillTestLib::kill_backend_and_wait($node, $pid);
	}
	else
	{
		BackfillTestLib::kill_postmaster_and_restart($node, "$call, postmaster");
	}
	BackfillTestLib::finish_bg($h);
	is($node->safe_psql('postgres', $state_sql), $before,
		"$call, $victim: the tables, the job and its cutover row are as before the call");
	ok(wait_writes(20), "$call, $victim: the writer writes again");
	my ($n, $found) = split / /, acknowledged_in_t();
	is($found, $n, "$call, $victim: all $n acknowledged writes are in the table that has the name");
}

for my $step (
	[ 'cutover', 'ALTER TABLE', 'cut_over' ],
	[ 'rollback_cutover', 'ALTER TABLE', 'rolled_back' ],
	[ 'cutover', 'ALTER TABLE', 'cut_over' ],
	[ 'finish_cutover', 'DROP TABLE', undef ])
{
	my ($call, $tag, $state) = @$step;
	kill_inside($call, $tag, $_) for ('backend', 'postmaster');
	my $r = $node->safe_psql('postgres',
		$call eq 'finish_cutover'
		? "SELECT backfill.finish_cutover($job)"
		: "SELECT state FROM backfill.$call($job)");
	is($r, $state // '', "$call goes through after the crashes");
}

is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = '$old_name'"),
	'0', 'the finish dropped the old table');
ok(wait_writes(20), 'the writer writes after the finish');
append_to_file("$ledger.stop", '');
BackfillTestLib::finish_bg($writer);

my @keys = acknowledged();
my $keys = '\'{' . join(',', @keys) . '}\'::int[]';
cmp_ok(scalar(@keys), '>', 100, 'the writer had its writes acknowledged throughout');
is($node->safe_psql('postgres', "SELECT count(*), count(DISTINCT id) FROM t WHERE id = ANY ($keys)"),
	scalar(@keys) . '|' . scalar(@keys), 'every acknowledged write is in the table, once');
is($node->safe_psql('postgres', "SELECT count(*) FROM t WHERE id <= 2000 AND w = 'initial'"),
	'2000', 'and the rows copied at the start');

# the standby has streamed all of it: promoted, it has the same
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
$standby->promote;
is($standby->safe_psql('postgres', "SELECT count(*), count(DISTINCT id) FROM t WHERE id = ANY ($keys)"),
	scalar(@keys) . '|' . scalar(@keys), 'the promoted standby has every acknowledged write, once');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM t'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM t'), 'and the same rows as the primary');
is($standby->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = '$old_name'"),
	'0', 'and no old table');

no_crash_in_log($standby);
done_testing();
