# Copyright (c) backfill authors
#
# t/028_cutover.pl: backfill.cutover() under writers, and killed.
#
# 1. pgbench writers (two scripts: random inserts, updates, deletes and key
#    changes; and inserts of fresh keys, each recorded in a ledger in the
#    same transaction) write through a cutover, its rollback and a second
#    cutover, all under the writers, with --max-tries.  Afterwards no client
#    aborted, the table that has the name equals the old table both ways,
#    verify_job is empty, every key of the ledger is in both, and the server
#    log has a line per swap with how long the lock was held.
# 2. kill -9 of the backend, then of the postmaster, in the middle of a
#    swap (the tables renamed, waiting for the lock of a table whose
#    foreign key it re-points): after the restart everything is as before
#    the cutover (the names, the view, the foreign key, the job, no cutover
#    row), and a cutover then goes through.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

use BackfillTestLib;

my $node = backfill_node('cutover');

# ---- 1. writers through cutover, rollback, cutover ----

my $script = make_upstream($node, 'orders', 1, 100000);
$node->safe_psql(
	'postgres', q{
CREATE SEQUENCE ledger_seq START 1000000;
CREATE TABLE ledger (id bigint PRIMARY KEY);
CREATE VIEW recent_orders AS SELECT id, a FROM orders WHERE id > 200000;
SELECT backfill.create_job('orders_new', 'orders');
CALL backfill.run_job(1);
});
is($node->safe_psql('postgres', 'SELECT status FROM backfill.job WHERE job_id = 1'),
	'finished', 'the job has finished');

my $ledger = $node->basedir . '/ledger.sql';
append_to_file($ledger, <<'EOS');
BEGIN;
INSERT INTO ledger VALUES (nextval('ledger_seq'));
INSERT INTO orders VALUES (currval('ledger_seq'), 1, 'ledger');
COMMIT;
EOS
my $writers = BackfillTestLib::start_bg(
	[
		'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		'-c', 2, '-j', 2, '-T', 16, '-R', 300, '--max-tries=10',
		'-f', "$script\@3", '-f', "$ledger\@1", 'postgres'
	]);

my $offset = -s $node->logfile;
sleep 3;
my $r = $node->safe_psql('postgres',
	"SELECT state || ' ' || rollback_possible FROM backfill.cutover(1, lock_timeout => '1s', attempts => 50)");
is($r, 'cut_over true', 'cut over under the writers');
sleep 3;
$r = $node->safe_psql('postgres',
	"SELECT state FROM backfill.rollback_cutover(1, lock_timeout => '1s', attempts => 50)");
is($r, 'rolled_back', 'rolled back under the writers');
sleep 3;
$r = $node->safe_psql('postgres',
	"SELECT state FROM backfill.cutover(1, lock_timeout => '1s', attempts => 50)");
is($r, 'cut_over', 'cut over again under the writers');

is(BackfillTestLib::finish_bg($writers), 0, 'pgbench ended well') or diag($writers->{err});
unlike($writers->{out} . $writers->{err}, qr/aborted/, 'no client aborted');
ok(BackfillTestLib::writer_transactions($writers) > 1000, 'the writers wrote')
  or diag($writers->{out});

is($node->safe_psql('postgres', q{SELECT c.oid = j.upstream FROM pg_class c, backfill.job j
                                  WHERE c.relname = 'orders' AND j.job_id = 1}),
	't', 'the table named orders is the new one, the job\'s upstream now');
is(BackfillTestLib::table_diff($node, 'orders', 'orders_before_cutover_1'),
	'0', 'the old table equals the new one, both ways');
is(BackfillTestLib::verify_rows($node, 1), '', 'verify_job finds no difference');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM ledger l
 WHERE NOT EXISTS (SELECT FROM orders o WHERE o.id = l.id)
    OR NOT EXISTS (SELECT FROM orders_before_cutover_1 o WHERE o.id = l.id)}),
	'0', 'every committed ledger write is in both tables');
ok($node->safe_psql('postgres', 'SELECT count(*) FROM ledger') > 100, 'the ledger has writes');
is($node->safe_psql('postgres', q{SELECT count(DISTINCT d.refobjid) FILTER (WHERE d.refobjid = 'orders'::regclass)
                                    || '/' || count(DISTINCT d.refobjid)
                                  FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
                                 WHERE r.ev_class = 'recent_orders'::regclass AND d.refclassid = 'pg_class'::regclass
                                   AND d.refobjid <> 'recent_orders'::regclass}),
	'1/1', 'the view reads the table named orders');
my $log = slurp_file($node->logfile, $offset);
my @held = $log =~ /table \S+ swapped (?:back )?with table .*? lock held ([\d.]+) ms/g;
is(scalar @held, 3, 'the log has a line per swap, with how long the lock was held');
diag("lock held (ms): @held");
$node->safe_psql('postgres', 'SELECT backfill.finish_cutover(1)');
is($node->safe_psql('postgres', "SELECT to_regclass('orders_before_cutover_1') IS NULL"),
	't', 'finish_cutover dropped the old table');

# ---- 2. kill -9 in the middle of a swap ----

$node->safe_psql(
	'postgres', q{
CREATE TABLE accounts (id int PRIMARY KEY, v int);
INSERT INTO accounts SELECT g, g FROM generate_series(1, 1000) g;
CREATE TABLE account_refs (id int PRIMARY KEY, account int REFERENCES accounts);
INSERT INTO account_refs VALUES (1, 1);
CREATE VIEW account_view AS SELECT id, v FROM accounts;
CREATE TABLE account_notes (id int PRIMARY KEY, note text);
CREATE VIEW account_noted AS SELECT a.id, n.note FROM accounts a LEFT JOIN account_notes n USING (id);
SELECT backfill.create_job('accounts_new', 'accounts');
CALL backfill.run_job(2);
});
my $before = $node->safe_psql('postgres', q{
SELECT string_agg(relname || ':' || oid, ' ' ORDER BY relname) FROM pg_class
 WHERE relname IN ('accounts', 'accounts_new')});

# state before: the names, the view's table, the foreign key's table, the job
my $state_sql = q{
SELECT (SELECT string_agg(relname || ':' || oid, ' ' ORDER BY relname) FROM pg_class
         WHERE relname IN ('accounts', 'accounts_new', 'accounts_before_cutover_2')),
       (SELECT string_agg(DISTINCT d.refobjid::regclass::text, ',') FROM pg_depend d
          JOIN pg_rewrite r ON r.oid = d.objid
         WHERE r.ev_class = 'account_view'::regclass AND d.refclassid = 'pg_class'::regclass
           AND d.refobjid <> 'account_view'::regclass),
       (SELECT confrelid::regclass || ' ' || convalidated FROM pg_constraint
         WHERE conrelid = 'account_refs'::regclass AND contype = 'f'),
       (SELECT upstream || ' ' || downstream || ' ' || status FROM backfill.job WHERE job_id = 2),
       (SELECT count(*) FROM backfill.job_cutover WHERE job_id = 2)};
my $expected = $node->safe_psql('postgres', $state_sql);

for my $victim ('backend', 'postmaster')
{
	# the holder of a table that a view over accounts reads too: the lock
	# step takes what the swap alters, not the view's other tables, so the
	# swap waits for it when it re-creates the view, with the tables
	# already renamed
	my $holder = $node->background_psql('postgres', on_error_stop => 0);
	$holder->query_safe('BEGIN; LOCK account_notes IN ACCESS EXCLUSIVE MODE');
	my $cut = BackfillTestLib::start_bg(
		[
			'psql', '-X', '-At', '-d',
			$node->connstr('postgres') . ' application_name=cutover_victim',
			'-c', "SELECT backfill.cutover(2, lock_timeout => '60s')"
		]);
	my $pid = wait_until(
		$PostgreSQL::Test::Utils::timeout_default,
		sub {
			$node->safe_psql('postgres', q{
SELECT pid FROM pg_stat_activity
 WHERE application_name = 'cutover_victim' AND wait_event_type = 'Lock'
   AND query LIKE 'backfill cutover of job 2: swapping%'});
		});
	ok($pid, "$victim: the cutover waits in the middle of its swap");
	if ($victim eq 'backend')
	{
		BackfillTestLib::kill_backend_and_wait($node, $pid);
	}
	else
	{
		BackfillTestLib::kill_postmaster_and_restart($node, 'postmaster');
	}
	BackfillTestLib::finish_bg($cut);
	eval { $holder->quit; };
	is($node->safe_psql('postgres', $state_sql), $expected,
		"$victim: after kill -9, everything is as before the cutover");
}

$r = $node->safe_psql('postgres', "SELECT state FROM backfill.cutover(2)");
is($r, 'cut_over', 'the cutover goes through after the crashes');
is($node->safe_psql('postgres', q{SELECT confrelid = 'accounts'::regclass
                                    AND confrelid = (SELECT upstream FROM backfill.job WHERE job_id = 2)
                                  FROM pg_constraint WHERE conrelid = 'account_refs'::regclass AND contype = 'f'}),
	't', 'the foreign key references the new table');
BackfillTestLib::no_crash_in_log($node, 1);

done_testing();
