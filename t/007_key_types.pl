
# Copyright (c) backfill authors
#
# t/007_key_types.pl: key shapes and column types under concurrent writes.
#
# One upstream table per key shape and kind, keyed by
#
#   int, bigint (both with their extreme values as keys), text with a non-C
#   collation (ICU "en-x-icu" where the server has it; mixed case, accents,
#   spaces and the empty string as keys, so that the collation's order is far
#   from the bytes' order), uuid, numeric (1.5, 3.50, -0.001, 4e20, 1e-30,
#   NaN, and writers that change a key's scale without changing its value),
#   timestamptz (with -infinity and infinity), and a composite key
#   (int, text with that collation, date) declared in another order than
#   the table's columns;
#
# each with non-key columns that are NULL on some rows: an int, a text
# stored out of line (STORAGE EXTERNAL, 9600 bytes on some rows, so that
# the upstream holds real TOAST pointers), a jsonb and an int[] with NULL
# elements.  Every shape is backfilled by an arrangement job of parallelism
# 3; the text and composite keys also by a snapshot job (parallelism 2) and
# a cdc job (parallelism 1).
#
# Each job runs in a background "CALL backfill.run_job" (chunk_size 32,
# barrier_interval_ms 20).  It reads a third of the table at a limited rate,
# then is paused (rate limit 0: barriers still commit, nothing more is read)
# while pgbench writes: inserts, updates of the int, jsonb and array columns
# (leaving the toasted value as it is), updates of the toasted column, key
# moves, deletes and a two-statement transaction, on keys spread over the
# whole range and beyond, so that they land behind and ahead of every
# vnode's position.  Being paused makes "mid-backfill" certain, whatever the
# machine's speed.  Then:
#
# - mid-backfill, once two barriers have passed after the writes: verify_job
#   is empty; an arrangement or cdc job has consumed every captured key; a
#   snapshot job is in phase 1, has consumed nothing of its log, and its
#   downstream holds only rows as they were at create_job (a copy taken
#   then), as many as it counts;
# - the job goes on reading while a second pgbench run writes, and finishes;
# - the downstream equals the upstream: verify_job, row counts, EXCEPT ALL
#   both ways on the typed columns, and EXCEPT ALL both ways on the text of
#   every column (the toasted one by md5), which also tells 1.5 from 1.50;
#   its columns have the upstream's types, typmods and collations and the
#   same primary key;
# - after more writes the finished job still follows the upstream;
# - a cdc job's replication slot exists while it backfills and is gone once
#   it has finished.
#
# At the end no replication slot is left and no process crashed.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

use BackfillTestLib;

my $t0 = time;
my $nrows = 3000;         # rows n = 0 .. nrows - 1; writers use n up to 2 * nrows + 1
my $chunk_size = 32;
my $job_rate = 1800;      # snapshot rows per second of a job, split over its actors

# The server's encoding must be UTF8 for the accented keys and for ICU;
# initdb takes it from LC_CTYPE.
my $node;
{
	local $ENV{LC_CTYPE} = 'C.UTF-8';
	$node = backfill_node(
		'keys', conf => q{
wal_level = logical
max_replication_slots = 10
output_plugin_libraries = 'pgoutput, test_decoding, backfill'
backfill.barrier_interval_ms = 20
});
}
is($node->safe_psql('postgres', 'SHOW server_encoding'), 'UTF8', 'the server encoding is UTF8');

# Waits until the job has read $target snapshot rows, then pauses it (rate
# limit 0), in one statement, so that the job reads little past the target.
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION pause_at(job bigint, target bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text := wait_rows(job, target, 60);
BEGIN
    PERFORM backfill.alter_rate_limit(job, 0);
    RETURN r;
END
$$;
});

# A deterministic collation that is not C: ICU's English if the server has
# it, else a libc English locale, else one made from ICU.
my $coll = $node->safe_psql(
	'postgres', q{
SELECT collname FROM pg_collation
 WHERE collname IN ('en-x-icu', 'en_US.utf8', 'en_US')
   AND collencoding IN (-1, pg_char_to_encoding('UTF8'))
 ORDER BY collname = 'en-x-icu' DESC, collname LIMIT 1});
if ($coll eq '')
{
	$node->safe_psql('postgres',
		q{CREATE COLLATION test_en (provider = icu, locale = 'en')});
	$coll = 'test_en';
}
note "key collation: $coll";
is( $node->safe_psql(
		'postgres', qq{
SELECT 'Zebra' < 'apple' COLLATE "C", 'Zebra' < 'apple' COLLATE "$coll",
       'Äpfel' < 'banana' COLLATE "C", 'Äpfel' < 'banana' COLLATE "$coll",
       collisdeterministic FROM pg_collation WHERE collname = '$coll'}),
	't|f|f|t|t',
	"collation $coll orders keys unlike C, and is deterministic");

my $words = "ARRAY['apple', 'Apple', 'Äpfel', 'apfel', 'banana', 'Banana', 'Ångström', "
  . "'zebra', 'Zebra', 'éclair', 'Eclair', 'Straße', 'strasse', 'a b', 'a-b', 'ab']";

# The key shapes: each key column as [name, type, collation or '', the
# key of row n (SQL, of a bigint n, one-to-one)], and the table's columns
# in their order.  The key of row n is what the writers use too, each
# client only on its own parity of n, so two clients never write one key.
my $m = $nrows;
my %shapes = (
	int => {
		keys => [
			[
				'k', 'int', '',
				"CASE n WHEN 0 THEN -2147483648 WHEN 1 THEN 2147483647 ELSE ((n - $m) * 7)::int END"
			]
		]
	},
	bigint => {
		keys => [
			[
				'k', 'bigint', '',
				"CASE n WHEN 0 THEN -9223372036854775808 WHEN 1 THEN 9223372036854775807 "
				  . "ELSE (n - $m) * 3000000000007 END"
			]
		]
	},
	text => {
		keys => [
			[
				'k', 'text', $coll,
				"CASE n WHEN 0 THEN '' ELSE ($words)[n % 16 + 1] || ' ' || n END"
			]
		]
	},
	uuid => {
		keys => [
			[
				'k', 'uuid', '',
				"CASE n WHEN 0 THEN '00000000-0000-0000-0000-000000000000'::uuid "
				  . "WHEN 1 THEN 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid ELSE md5(n::text)::uuid END"
			]
		]
	},
	numeric => {
		keys => [
			[
				'k', 'numeric', '',
				"CASE WHEN n = 4 THEN 'NaN'::numeric WHEN n = 8 THEN 1e-30 "
				  . "WHEN n % 4 = 0 THEN n * 1e20 WHEN n % 4 = 1 THEN n + 0.5 "
				  . "WHEN n % 4 = 2 THEN -(n / 2) * 0.001 ELSE n + 0.50 END"
			]
		],
		# a key's scale changes, its value does not: same key, other text
		more => q{
UPDATE %T SET k = trim_scale(k) WHERE k = k_numeric_1(:i9);
UPDATE %T SET k = k + 0.0000, v = coalesce(v, 0) + 1 WHERE k = k_numeric_1(:i10);
}
	},
	timestamptz => {
		keys => [
			[
				'k', 'timestamptz', '',
				"CASE n WHEN 0 THEN '-infinity'::timestamptz WHEN 1 THEN 'infinity'::timestamptz "
				  . "ELSE to_timestamp(946684800 + (n - $m) * 97217.123457) END"
			]
		]
	},
	composite => {
		keys => [
			[ 'ka', 'int', '', '(n % 7 - 3)::int' ],
			[ 'kb', 'text', $coll, "($words)[(n / 7) % 16 + 1]" ],
			[ 'kc', 'date', '', "date '2000-01-01' + (n / 7)::int" ]
		],
		# not in key order, not first
		columns => [ 'kc', 'v', 'kb', 'big', 'ka', 'j', 'arr' ]
	});

my %nonkey_types = (v => 'int', big => 'text', j => 'jsonb', arr => 'int[]');

sub key_names
{
	my ($shape) = @_;
	return map { $_->[0] } @{ $shapes{$shape}{keys} };
}

# The key of row $n (SQL text, e.g. ':i1'), one expression per key column.
sub key_values
{
	my ($shape, $n) = @_;
	my $i = 0;
	return map { $i++; "k_${shape}_$i($n)" } @{ $shapes{$shape}{keys} };
}

sub key_cond
{
	my ($shape, $n) = @_;
	my @v = key_values($shape, $n);
	my @k = key_names($shape);
	return join(' AND ', map { "$k[$_] = $v[$_]" } 0 .. $#k);
}

sub key_set
{
	my ($shape, $n) = @_;
	my @v = key_values($shape, $n);
	my @k = key_names($shape);
	return join(', ', map { "$k[$_] = $v[$_]" } 0 .. $#k);
}

# The functions giving the key of row n, one per key column.
for my $shape (sort keys %shapes)
{
	my $i = 0;
	for my $k (@{ $shapes{$shape}{keys} })
	{
		$i++;
		$node->safe_psql('postgres',
			"CREATE FUNCTION k_${shape}_$i(n bigint) RETURNS $k->[1] "
			  . "LANGUAGE sql IMMUTABLE AS \$\$ SELECT $k->[3] \$\$");
	}
	is( $node->safe_psql(
			'postgres',
			"SELECT count(DISTINCT ("
			  . join(', ', key_values($shape, 'n'))
			  . ")) FROM generate_series(0, 2 * $nrows + 1) n"),
		2 * $nrows + 2,
		"$shape: the key of row n is one-to-one");
}

# The upstream of a shape: rows n = 0 .. nrows - 1, the big text stored
# out of line.
sub make_table
{
	my ($shape, $t) = @_;
	my $s = $shapes{$shape};
	my %keys = map { $_->[0] => $_ } @{ $s->{keys} };
	my @cols = @{ $s->{columns} // [ 'v', 'k', 'big', 'j', 'arr' ] };
	my @ddl = map {
		$keys{$_}
		  ? "$_ $keys{$_}[1]" . ($keys{$_}[2] ne '' ? qq{ COLLATE "$keys{$_}[2]"} : '')
		  : "$_ $nonkey_types{$_}"
	} @cols;
	my $keycols = join(', ', key_names($shape));
	$node->safe_psql(
		'postgres', qq{
CREATE TABLE $t (@{[ join(', ', @ddl) ]}, PRIMARY KEY ($keycols));
ALTER TABLE $t ALTER big SET STORAGE EXTERNAL;
INSERT INTO $t ($keycols, v, big, j, arr)
SELECT @{[ join(', ', key_values($shape, 'n')) ]},
       CASE WHEN n % 7 = 3 THEN NULL ELSE n END,
       CASE n % 5 WHEN 0 THEN repeat(md5(n::text), 300) WHEN 1 THEN NULL ELSE 'b' || n END,
       CASE WHEN n % 6 = 0 THEN NULL
            ELSE jsonb_build_object('n', n, 'tags', jsonb_build_array('x', n % 10, NULL),
                                    'nested', jsonb_build_object('f', n * 0.5)) END,
       CASE WHEN n % 4 = 1 THEN NULL ELSE ARRAY[n, n % 10, NULL]::int[] END
  FROM generate_series(0, $nrows - 1) n;
ANALYZE $t;
});
}

# The writers' script on table $t of $shape (see start_writers in
# BackfillTestLib.pm: each of the two clients writes rows n of its own
# parity, so no statement ever fails).
sub writer_script_for
{
	my ($shape, $t) = @_;
	my $keycols = join(', ', key_names($shape));
	my $vals = sub { join(', ', key_values($shape, $_[0])) };
	my $cond = sub { key_cond($shape, $_[0]) };
	my $set = sub { key_set($shape, $_[0]) };
	my $more = $shapes{$shape}{more} // '';
	$more =~ s/%T/$t/g;
	my $file = $node->basedir . "/writers_$t.sql";
	unlink $file;
	my $sets = join('', map { "\\set i$_ 2 * random(0, $nrows) + :client_id\n" } 1 .. 10);
	append_to_file($file, <<"EOS");
$sets
INSERT INTO $t ($keycols, v, big, j, arr)
  VALUES (@{[ $vals->(':i1') ]}, :i1, CASE WHEN :i1 % 3 = 0 THEN repeat(md5(random()::text), 300) END,
          jsonb_build_object('ins', :i1, 'r', random()), ARRAY[:i1, NULL])
  ON CONFLICT ($keycols) DO NOTHING;
UPDATE $t SET v = CASE WHEN v IS NULL THEN :i2 WHEN v % 5 = 0 THEN NULL ELSE v + 1 END,
    j = jsonb_set(coalesce(j, '{}'), '{upd}', to_jsonb(:i2)), arr = arr || :i2
  WHERE @{[ $cond->(':i2') ]};
UPDATE $t SET big = CASE WHEN big IS NULL OR length(big) < 1000 THEN repeat(md5(random()::text), 300)
                         WHEN (:i3 / 2) % 4 = 1 THEN NULL
                         ELSE overlay(big placing 'XYZ' from 1 + :i3 % 9000) END
  WHERE @{[ $cond->(':i3') ]};
DELETE FROM $t WHERE @{[ $cond->(':i4') ]};
UPDATE $t SET @{[ $set->(':i6') ]}, v = -1
  WHERE @{[ $cond->(':i5') ]} AND NOT EXISTS (SELECT FROM $t WHERE @{[ $cond->(':i6') ]});
BEGIN;
UPDATE $t SET j = coalesce(j, '{}') || '{"tx": true}' WHERE @{[ $cond->(':i7') ]};
INSERT INTO $t AS u ($keycols, v, big, j, arr) VALUES (@{[ $vals->(':i8') ]}, 8, NULL, '{"ups": 1}', '{}')
  ON CONFLICT ($keycols) DO UPDATE SET v = excluded.v, j = excluded.j || coalesce(u.j, '{}'), arr = '{}';
COMMIT;
$more
EOS
	return $file;
}

# pgbench with two clients, $txns transactions each, at a bounded rate.
sub start_writers_txns
{
	my ($script, $txns) = @_;
	return BackfillTestLib::start_bg(
		[
			'pgbench', '-n', '-h', $node->host, '-p', $node->port,
			'-c', 2, '-j', 2, '-t', $txns, '-R', 400,
			'-f', $script, 'postgres'
		]);
}

sub run_writers
{
	my ($script, $txns, $label) = @_;
	my $w = start_writers_txns($script, $txns);
	is(finish_bg($w), 0, "$label: writers ran without errors") or diag($w->{err});
	is(writer_transactions($w), 2 * $txns, "$label: writers committed every transaction");
}

# Every column of $t as text, in name order, the toasted one by md5: a row
# literal that tells apart values that are equal but print differently
# (1.5 and 1.50).
sub text_row
{
	my ($t) = @_;
	my $cols = $node->safe_psql('postgres',
		"SELECT string_agg(CASE attname WHEN 'big' THEN 'md5(big)' ELSE quote_ident(attname) || '::text' END, "
		  . "', ' ORDER BY attname) FROM pg_attribute WHERE attrelid = '$t'::regclass AND attnum > 0 AND NOT attisdropped"
	);
	return "ROW($cols)::text";
}

# The number of rows in one query's result and not in the other's, both
# ways (EXCEPT ALL).
sub diff_count
{
	my ($q1, $q2) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM (($q1 EXCEPT ALL $q2) UNION ALL ($q2 EXCEPT ALL $q1)) x");
}

sub check_equal
{
	my ($up, $down, $job, $label) = @_;
	is(verify_rows($node, $job), '', "$label: verify_job is empty");
	is( $node->safe_psql('postgres', "SELECT count(*) FROM $down"),
		$node->safe_psql('postgres', "SELECT count(*) FROM $up"),
		"$label: downstream has as many rows as the upstream");
	my $cols = $node->safe_psql('postgres',
		"SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) "
		  . "FROM pg_attribute WHERE attrelid = '$up'::regclass AND attnum > 0 AND NOT attisdropped");
	is(diff_count("SELECT $cols FROM $up", "SELECT $cols FROM $down"),
		0, "$label: downstream equals the upstream, column for column (EXCEPT ALL)");
	is(diff_count('SELECT ' . text_row($up) . " FROM $up", 'SELECT ' . text_row($down) . " FROM $down"),
		0, "$label: downstream equals the upstream as text, toasted values by md5");
}

# The columns of a table (name, type with typmod, collation) and its
# primary key.
sub table_shape
{
	my ($t, $columns_only) = @_;
	my $key = $columns_only ? '' : qq{
       || ' ' || (SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '$t'::regclass AND contype = 'p')};
	return $node->safe_psql(
		'postgres', qq{
SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod)
                  || coalesce(' COLLATE ' || nullif(attcollation, 0)::regcollation::text, ''), ', ' ORDER BY attnum)$key
  FROM pg_attribute WHERE attrelid = '$t'::regclass AND attnum > 0 AND NOT attisdropped});
}

# One job of $kind on a new upstream of $shape, run in the background with
# writers; see the header.
sub run_case
{
	my ($shape, $kind, $parallelism) = @_;
	my $t = "${shape}_$kind";
	my $down = "${t}_down";
	my $label = "$shape key, $kind";
	my $ts = time;

	make_table($shape, $t);
	cmp_ok(
		$node->safe_psql('postgres',
			"SELECT count(*) FROM $t WHERE pg_column_size(big) > 8000 AND octet_length(big) > 8000"),
		'>', 0, "$label: the upstream has values over 8 kB");
	my $toasted = $node->safe_psql('postgres',
		"SELECT reltoastrelid::regclass FROM pg_class WHERE oid = '$t'::regclass");
	cmp_ok($node->safe_psql('postgres', "SELECT count(DISTINCT chunk_id) FROM $toasted"),
		'>=', $nrows / 5, "$label: the big values are stored out of line");

	my $job = $node->safe_psql('postgres',
		"SELECT backfill.create_job('$down', '$t', '$kind', NULL, $parallelism, $chunk_size, 0)");
	if ($kind eq 'snapshot')
	{
		# a snapshot job builds its downstream's key once, after its snapshot
		# (doc/indexes.md); the key is checked once the job has finished
		is(table_shape($down, 1), table_shape($t, 1),
			"$label: downstream has the upstream's column types and collations");
		is($node->safe_psql('postgres',
				"SELECT count(*) FROM backfill.job_index WHERE job_id = $job AND tail LIKE '%PRIMARY KEY%'"),
			'1', "$label: its key is to be built once, after the snapshot");
	}
	else
	{
		is(table_shape($down), table_shape($t),
			"$label: downstream has the upstream's column types, collations and key");
	}
	# the upstream as of create_job, for the snapshot kind's phase 1
	$node->safe_psql('postgres', "CREATE TABLE ${t}_at_create AS SELECT * FROM $t")
	  if $kind eq 'snapshot';
	my $script = writer_script_for($shape, $t);
	my $rate = int($job_rate / $parallelism);

	# read a third, then pause
	my $r = start_run_job($node, $job);
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, $rate)");
	like($node->safe_psql('postgres', "SELECT pause_at($job, $nrows / 3)"),
		qr/^backfilling \d+$/, "$label: job has read a third of the table");
	# two barriers after the pause took effect: nothing more is read
	is($node->safe_psql('postgres', "SELECT wait_epoch_past($job, 2, 30)"), 't',
		"$label: barriers go on while paused");
	my $info = job_info($node, $job);
	is($info->{status}, 'backfilling', "$label: job is backfilling when the writers start");
	cmp_ok($info->{row_count}, '<', $nrows, "$label: job has not read everything ($info->{row_count} rows)");
	if ($kind eq 'cdc')
	{
		is( $node->safe_psql(
				'postgres',
				"SELECT s.plugin FROM backfill.jobs j JOIN pg_replication_slots s ON s.slot_name = j.slot_name "
				  . "WHERE j.job_id = $job"),
			'backfill', "$label: job has its replication slot, with the extension's plugin");
	}

	# writes behind and ahead of every vnode's position, while paused
	run_writers($script, 150, "$label, paused");
	is($node->safe_psql('postgres', "SELECT wait_epoch_past($job, 2, 30)"), 't',
		"$label: two barriers have passed after the writes");
	is(verify_rows($node, $job), '', "$label: verify_job is empty mid-backfill");
	if ($kind eq 'snapshot')
	{
		$info = job_info($node, $job);
		like($node->safe_psql('postgres', "SELECT progress FROM backfill.ddl_progress WHERE ddl_id = $job"),
			qr/^Snapshot \[/, "$label: job is in phase 1");
		cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM backfill.changes_$job"),
			'>', 0, "$label: phase 1 has consumed nothing of the log");
		is($node->safe_psql('postgres', "SELECT count(*) FROM $down"), $info->{row_count},
			"$label: downstream holds the rows read");
		is( $node->safe_psql(
				'postgres',
				"SELECT count(*) FROM (SELECT " . text_row($down) . " FROM $down EXCEPT ALL SELECT "
				  . text_row("${t}_at_create") . " FROM ${t}_at_create) x"),
			0, "$label: downstream shows no change made after create_job");
	}
	else
	{
		is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.changes_$job"),
			0, "$label: every captured key has been consumed");
	}

	# go on reading while more writes come, to the end
	my $w = start_writers_txns($script, 200);
	$node->safe_psql('postgres', "SELECT backfill.alter_rate_limit($job, $rate)");
	is(finish_bg($w), 0, "$label: writers during the rest of the backfill ran without errors")
	  or diag($w->{err});
	is(writer_transactions($w), 400, "$label: writers committed every transaction");
	is(finish_bg($r), 0, "$label: run_job returned") or diag($r->{err});
	if (job_info($node, $job)->{status} ne 'finished')
	{
		diag("$label: job has not finished, running it again: $r->{err}");
		$node->safe_psql('postgres', "CALL backfill.run_job($job)");
	}
	is(job_info($node, $job)->{status}, 'finished', "$label: job finished");
	check_equal($t, $down, $job, "$label, finished");
	is(table_shape($down), table_shape($t), "$label: downstream still has the upstream's shape");
	if ($kind eq 'cdc')
	{
		is( $node->safe_psql('postgres',
				"SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'backfill\\_%\\_$job'"),
			0, "$label: the replication slot is gone once finished");
	}

	# the finished job follows the upstream
	run_writers($script, 50, "$label, after the finish");
	check_equal($t, $down, $job, "$label, after more writes");
	note sprintf('%s: %.1fs (total %.1fs)', $label, time - $ts, time - $t0);
}

run_case($_, 'arrangement', 3) for qw(int bigint text uuid numeric timestamptz composite);
for my $shape (qw(text composite))
{
	run_case($shape, 'snapshot', 2);
	run_case($shape, 'cdc', 1);
}

# the writers did change the scale of numeric keys (to 4, which no key of
# the initial rows has), and the text comparison above saw it through
cmp_ok(
	$node->safe_psql('postgres', 'SELECT count(*) FROM numeric_arrangement WHERE scale(k) = 4'),
	'>', 0, 'numeric key: writers changed the scale of some keys');

is($node->safe_psql('postgres', 'SELECT count(*) FROM pg_replication_slots'),
	0, 'no replication slot is left');
no_crash_in_log($node);

$node->stop;
note sprintf('total %.1fs', time - $t0);
done_testing();
