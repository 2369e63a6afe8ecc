# Copyright (c) backfill authors
#
# A cdc job over a sharded table: a partitioned table here whose six
# partitions are foreign tables of three source servers (two per server, one
# server's two under a partitioned level of their own), copied into one
# downstream by three background workers while pgbench writes on every
# source.  In the middle of the copy: an ATTACH and a CREATE ... PARTITION OF
# of a seventh foreign partition and a DETACH of one, refused and changing
# nothing; kill -9 of one source's postmaster, while the job goes on with the
# other servers and says which one it waits for, then that source started
# again (verify_job then finds nothing, the sources still written); kill -9
# of the local server.  Afterwards each source table equals the downstream
# rows of its partition's range both ways, verify_job finds nothing, each
# server has its offset in backfill.job_source, the finished job follows
# every source, and drop_job leaves no slot and no publication on any
# source.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# keys of a partition: [lo, lo + $range); the initial rows are lo + 2 .. lo +
# 2 * $rows, even, and the writers go up to lo + 99999
my $range = 100000;
my $rows = 20000;

# the partitions: name here, server, table there, its first key, and the
# partitioned table here it is a partition of
my @parts = (
	[ 't_1a', 's1', 't_a', 0,           'sharded.t' ],
	[ 't_1b', 's1', 't_b', $range,      'sharded.t' ],
	[ 't_2a', 's2', 't_a', 2 * $range,  'sharded.t_2' ],
	[ 't_2b', 's2', 't_b', 3 * $range,  'sharded.t_2' ],
	[ 't_3a', 's3', 't_a', 4 * $range,  'sharded.t' ],
	[ 't_3b', 's3', 't_b', 5 * $range,  'sharded.t' ]);

# ---- three sources, each with two tables of its partitions' keys ----
my %source;
for my $name (qw(s1 s2 s3))
{
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', q{
max_replication_slots = 10
log_statement = none
});
	$node->start;
	$source{$name} = $node;
}
for my $p (@parts)
{
	my ($part, $server, $table, $lo) = @$p;
	$source{$server}->safe_psql('postgres', qq{
CREATE TABLE $table (id bigint PRIMARY KEY, a int, b text);
INSERT INTO $table SELECT $lo + 2 * g, g % 1000, md5(g::text) FROM generate_series(1, $rows) g;
ANALYZE $table;
});
}
# the seventh table, on s3, for a partition that tries to join
$source{s3}->safe_psql('postgres', qq{
CREATE TABLE t_c (id bigint PRIMARY KEY, a int, b text);
INSERT INTO t_c SELECT 6 * $range + g, g, 'c' FROM generate_series(1, 100) g;
});

# ---- here: the servers and the sharded table ----
my $local = worker_node('local');
$local->safe_psql('postgres', 'CREATE EXTENSION postgres_fdw');
for my $name (sort keys %source)
{
	$local->safe_psql('postgres', sprintf(q{
CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '%s', port '%s', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER %s;
}, $name, $source{$name}->host, $source{$name}->port, $name));
}
$local->safe_psql('postgres', sprintf(q{
CREATE SCHEMA sharded;
CREATE TABLE sharded.t (id bigint NOT NULL, a int, b text) PARTITION BY RANGE (id);
CREATE TABLE sharded.t_2 PARTITION OF sharded.t FOR VALUES FROM (%d) TO (%d) PARTITION BY RANGE (id);
}, 2 * $range, 4 * $range));
for my $p (@parts)
{
	my ($part, $server, $table, $lo, $parent) = @$p;
	$local->safe_psql('postgres', sprintf(q{
CREATE FOREIGN TABLE sharded.%s PARTITION OF %s FOR VALUES FROM (%d) TO (%d)
    SERVER %s OPTIONS (schema_name 'public', table_name '%s');
}, $part, $parent, $lo, $lo + $range, $server, $table));
}
$local->safe_psql('postgres', sprintf(q{
CREATE FOREIGN TABLE sharded.t_3c (id bigint NOT NULL, a int, b text)
    SERVER s3 OPTIONS (schema_name 'public', table_name 't_c');
}));
is($local->safe_psql('postgres', 'SELECT count(*) FROM sharded.t'),
	6 * $rows, 'the sharded table reads its six partitions from three servers');

# the slots and publications of this extension on a source: "slots pubs"
sub source_objects
{
	my ($server) = @_;
	return $source{$server}->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'backfill%')
    || ' ' || (SELECT count(*) FROM pg_publication WHERE pubname LIKE 'backfill%')});
}

# "<rows of the partition's table missing downstream> <rows downstream in
# its range not in the table>", the table read through its foreign partition
sub part_differences
{
	my ($p, $down) = @_;
	my ($part, $server, $table, $lo) = @$p;
	my $hi = $lo + $range;
	return $local->safe_psql('postgres', qq{
SELECT (SELECT count(*) FROM (SELECT * FROM ONLY sharded.$part
                              EXCEPT SELECT * FROM $down WHERE id >= $lo AND id < $hi) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM $down WHERE id >= $lo AND id < $hi
                                     EXCEPT SELECT * FROM ONLY sharded.$part) y)});
}

# every partition's differences, "part: d1 d2" joined; and the downstream
# rows outside every partition's range
sub all_differences
{
	my ($down) = @_;
	my $outside = $local->safe_psql('postgres',
		"SELECT count(*) FROM $down WHERE id < 0 OR id >= " . (6 * $range));
	return join(', ', (map { "$_->[0]: " . part_differences($_, $down) } @parts), "outside: $outside");
}
my $equal = join(', ', (map { "$_->[0]: 0 0" } @parts), 'outside: 0');

# the writers' script for a source: on each of its two tables, inserts,
# updates, deletes and key changes within the table's partition range; each
# client touches the keys of its parity only (-c 2), so no statement fails
sub shard_script
{
	my ($server) = @_;
	my $file = $source{$server}->basedir . "/writers_$server.sql";
	unlink $file;
	my $sql = '';
	for my $p (grep { $_->[1] eq $server } @parts)
	{
		my ($part, undef, $table, $lo) = @$p;
		$sql .= <<"EOS";
\\set i1 $lo + 2 * random(0, 49999) + :client_id
\\set i2 $lo + 2 * random(0, 49999) + :client_id
\\set i3 $lo + 2 * random(0, 49999) + :client_id
\\set i4 $lo + 2 * random(0, 49999) + :client_id
\\set i5 $lo + 2 * random(0, 49999) + :client_id
INSERT INTO $table (id, a, b) VALUES (:i1, :i1 % 1000, 'ins') ON CONFLICT (id) DO NOTHING;
UPDATE $table SET a = a + 1, b = md5(random()::text) WHERE id = :i2;
DELETE FROM $table WHERE id = :i3;
UPDATE $table SET id = :i5, b = 'moved' WHERE id = :i4 AND NOT EXISTS (SELECT FROM $table WHERE id = :i5);
EOS
	}
	append_to_file($file, $sql);
	return $file;
}
my %script = map { $_ => shard_script($_) } keys %source;

# kill -9 of a source's postmaster; returns once every one of its processes
# has exited (it is then down, until started again)
sub kill_source
{
	my ($server) = @_;
	my $node = $source{$server};
	my $pm = $node->{_pid};
	my @children = grep { /^\d+$/ } split /\s+/, `pgrep -P $pm`;
	$node->kill9;
	ok(wait_until($PostgreSQL::Test::Utils::timeout_default,
			sub { !grep { kill(0, $_) } ($pm, @children) }),
		"kill -9 of the postmaster of $server: every process of it has exited");
}

# ---- the job ----
# the sources log their statements while create_job counts the rows
my %log_offset;
for my $name (qw(s1 s2 s3))
{
	$source{$name}->safe_psql('postgres',
		"ALTER SYSTEM SET log_statement = 'all'; SELECT pg_reload_conf()");
	$log_offset{$name} = -s $source{$name}->logfile;
}
my $job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('merged', 'sharded.t', kind => 'cdc', parallelism => 3, "
	  . "chunk_size => 500, rate_limit => 1000)");
my @fetched;
for my $name (qw(s1 s2 s3))
{
	$source{$name}->safe_psql('postgres',
		"ALTER SYSTEM RESET log_statement; SELECT pg_reload_conf()");
	my $log = slurp_file($source{$name}->logfile, $log_offset{$name});
	push @fetched, "$name: " . join(',', sort $log =~ /SELECT (count\(\*\)|NULL) FROM public\.(t_\w)/g);
}
is(join(' | ', @fetched),
	's1: count(*),count(*),t_a,t_b | s2: count(*),count(*),t_a,t_b | s3: count(*),count(*),t_a,t_b',
	'create_job counts each partition on its server, without fetching its rows');
is($local->safe_psql('postgres', "SELECT total_rows FROM backfill.job WHERE job_id = $job"),
	6 * $rows, 'the progress total is the rows of the six partitions');
is($local->safe_psql('postgres', "SELECT kind || ' ' || remote FROM backfill.jobs WHERE job_id = $job"),
	'cdc true', 'a cdc job over the sharded table is a remote job');
is($local->safe_psql('postgres', qq{
SELECT string_agg(server || ':' || n, ' ' ORDER BY server)
  FROM (SELECT server, count(DISTINCT partition) n FROM backfill.job_splits($job) GROUP BY server) x}),
	's1:2 s2:2 s3:2', 'job_splits: the splits of two partitions on each of the three servers');
is($local->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE partition::text IN ('sharded.t_2a', 'sharded.t_2b') AND server <> 's2')
     + count(*) FILTER (WHERE partition::text NOT LIKE 'sharded.t\\___')
  FROM backfill.job_splits($job)}),
	'0', 'each split knows its leaf partition and its server, the sub-partitioned ones too');
like($local->safe_psql('postgres', "SELECT progress FROM backfill.ddl_progress WHERE ddl_id = $job"),
	qr{^0\.00% \(0/\d+\) \[servers: 0/3, splits: 0/\d+\]$}, 'ddl_progress counts servers and splits');
is(join(' | ', map { source_objects($_) } qw(s1 s2 s3)), '0 0 | 0 0 | 0 0',
	'create_job makes nothing on the sources');

# the committed snapshot rows of the splits of the servers in @servers
sub rows_on
{
	my (@servers) = @_;
	my $list = join(',', map { "'$_'" } @servers);
	return $local->safe_psql('postgres', qq{
SELECT coalesce(sum(s.row_count), 0) FROM backfill.state_$job s
  JOIN backfill.job_splits($job) p USING (split_id) WHERE p.server IN ($list)});
}

# the writers stop about when the copy does, at the rate limit
my %w = map { $_ => start_writers($source{$_}, $script{$_}, 50, rate => 100) } qw(s1 s2 s3);
$local->safe_psql('postgres', "SELECT backfill.start_job($job)");
ok(wait_workers($local, $job, map { $_->{actor_id} } @{ actor_rows($local, $job) }),
	'three workers run');
like($local->safe_psql('postgres', "SELECT wait_rows($job, 15000, 120)"),
	qr/^backfilling/, 'an eighth of the copy done');
my $slot = $local->safe_psql('postgres', "SELECT slot_name FROM backfill.jobs WHERE job_id = $job");
like($slot, qr/^backfill_\d+_\d+_$job$/, 'the slot name of the job');
for my $server (qw(s1 s2 s3))
{
	is($source{$server}->safe_psql('postgres', q{
SELECT (SELECT string_agg(slot_name, ',') FROM pg_replication_slots)
    || ' ' || (SELECT string_agg(pubname, ',') FROM pg_publication)}),
		"$slot $slot", "one slot and one publication on $server, named as for one server");
}

# ---- partitions joining or leaving during the copy: refused ----
my $inherits = q{SELECT string_agg(inhrelid::regclass || '<' || inhparent::regclass, ' ' ORDER BY inhrelid::regclass::text)
  FROM pg_inherits WHERE inhparent IN ('sharded.t'::regclass, 'sharded.t_2'::regclass)};
my $tree = $local->safe_psql('postgres', $inherits);
my ($state, $msg) = psql_error($local, sprintf(
	'ALTER TABLE sharded.t ATTACH PARTITION sharded.t_3c FOR VALUES FROM (%d) TO (%d)',
	6 * $range, 7 * $range));
is("$state: $msg",
	qq{55006: cannot add partition "t_3c" to table "t" while backfill job $job copies it from other servers},
	'ATTACH of a seventh foreign partition during the copy is refused');
($state, $msg) = psql_error($local, sprintf(q{
CREATE FOREIGN TABLE sharded.t_3d PARTITION OF sharded.t FOR VALUES FROM (%d) TO (%d)
    SERVER s3 OPTIONS (schema_name 'public', table_name 't_c')}, 7 * $range, 8 * $range));
is("$state: $msg",
	qq{55006: cannot add partition "t_3d" to table "t" while backfill job $job copies it from other servers},
	'so is CREATE FOREIGN TABLE ... PARTITION OF');
($state, $msg) = psql_error($local, 'ALTER TABLE sharded.t_2 DETACH PARTITION sharded.t_2b');
is("$state: $msg",
	qq{55006: cannot detach partition "t_2b" from table "t_2" while backfill job $job copies it from other servers},
	'DETACH of a partition of the lower level is refused');
is($local->safe_psql('postgres', $inherits), $tree, 'and the partitions are as they were');
is($local->safe_psql('postgres', "SELECT to_regclass('sharded.t_3d') IS NULL"), 't',
	'the refused partition was not created');

# ---- kill -9 of the postmaster of s2: the job goes on with s1 and s3 ----
my $s2_before = rows_on('s2');
kill_source('s2');
finish_bg($w{s2});
ok(wait_until(60, sub {
		$local->safe_psql('postgres', "SELECT coalesce(waiting_for, '') FROM backfill.jobs WHERE job_id = $job") =~ /"s2"/ }),
	'backfill.jobs.waiting_for names the server that is down');
note('waiting_for: ' . $local->safe_psql('postgres', "SELECT waiting_for FROM backfill.jobs WHERE job_id = $job"));
my $others = rows_on('s1', 's3');
my $s2_down = rows_on('s2');
ok(wait_until(60, sub { rows_on('s1', 's3') >= $others + 3000 }),
	"the splits of s1 and s3 go on while s2 is down (from $others rows)");
is($local->safe_psql('postgres', "SELECT status FROM backfill.jobs WHERE job_id = $job"),
	'backfilling', 'the job is still backfilling');
is(rows_on('s2'), $s2_down, 'the splits of s2 do not move while it is down');
like($local->safe_psql('postgres', "SELECT progress FROM backfill.ddl_progress WHERE ddl_id = $job"),
	qr{\[servers: [0-2]/3, splits: \d+/\d+\]$}, 'ddl_progress while s2 is down: not every server done');
note('progress with s2 down: '
	  . $local->safe_psql('postgres', "SELECT progress FROM backfill.ddl_progress WHERE ddl_id = $job"));
note("s2 rows before its kill $s2_before, while down $s2_down");

$source{s2}->start;
$w{s2} = start_writers($source{s2}, $script{s2}, 35, rate => 100);
ok(wait_until(60, sub { rows_on('s2') > $s2_down }), 'the splits of s2 go on once it is back');
ok(wait_until(60, sub {
		$local->safe_psql('postgres', "SELECT coalesce(waiting_for, '') FROM backfill.jobs WHERE job_id = $job") eq '' }),
	'and the job waits for nothing');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"), '0',
	'verify_job finds nothing in the middle of the copy while every source is written');

# ---- kill -9 of the local server in the middle of the copy ----
my $total = $local->safe_psql('postgres', "SELECT row_count FROM backfill.jobs WHERE job_id = $job");
like($local->safe_psql('postgres', sprintf("SELECT wait_rows($job, %d, 120)", $total + 5000)),
	qr/^backfilling/, 'more of the copy done');
kill_postmaster_and_restart($local, 'local crash');
is($local->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE NOT backfill_finished AND row_count > 0) <= 3 FROM backfill.state_$job}),
	't', 'at most one split per actor to read again after the crash');
ok(wait_workers($local, $job, map { $_->{actor_id} } @{ actor_rows($local, $job) }),
	'the launcher starts the workers again');

is(wait_status($local, $job, [ 'finished', 'failed' ], 240), 'finished', 'the job finished');
is($local->safe_psql('postgres', "SELECT coalesce(last_error, '') FROM backfill.jobs WHERE job_id = $job"),
	'', 'no error recorded');
for my $server (qw(s1 s2 s3))
{
	finish_bg($w{$server});
	my $n = writer_transactions($w{$server});
	ok($n > 100, "the writers ran on $server during the copy ($n transactions)");
}
is($local->safe_psql('postgres', "SELECT count(*) FILTER (WHERE NOT backfill_finished) FROM backfill.state_$job"),
	'0', 'every split finished');

# ---- after the finish ----
ok(wait_until(30, sub {
		$local->safe_psql('postgres', "SELECT count(*) FROM backfill.workers WHERE job_id = $job") eq '1' }),
	'one worker follows the sources after the finish');
my $diff;
is(wait_until(90, sub { ($diff = all_differences('merged')) eq $equal }), 1,
	'each source table equals the downstream rows of its range, both ways')
  or diag($diff);
is($local->safe_psql('postgres', "SELECT count(*) FROM merged"),
	$local->safe_psql('postgres', "SELECT count(*) FROM sharded.t"),
	'as many rows downstream as in the six partitions');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"),
	'0', 'verify_job finds nothing');
is($local->safe_psql('postgres', qq{
SELECT string_agg(server || ' ' || (remote_lsn IS NOT NULL), ', ' ORDER BY source)
  FROM backfill.job_source WHERE job_id = $job}),
	's1 true, s2 true, s3 true', 'backfill.job_source: an offset of each server');

# the finished job still follows every source
for my $server (qw(s1 s2 s3))
{
	$source{$server}->safe_psql('postgres', q{
UPDATE t_a SET b = 'after' WHERE id % 97 = 0;
DELETE FROM t_b WHERE id % 89 = 0;
});
}
is(wait_until(90, sub { ($diff = all_differences('merged')) eq $equal }), 1,
	'the finished job follows the writes of every source')
  or diag($diff);

# differences planted downstream, one in the range of each server: a
# finished job over several servers is compared by checksums (auto), each
# partition's summed on its server (its log shows the aggregate), and they
# find what the rows method finds
my ($planted_u, $planted_d) = split /\|/, $local->safe_psql('postgres', sprintf(q{
SELECT (SELECT min(id) FROM merged WHERE id >= 0) || '|' || (SELECT min(id) FROM merged WHERE id >= %d)},
	2 * $range));
my $planted_x = 4 * $range + 1;
$local->safe_psql('postgres', qq{
UPDATE merged SET b = 'planted' WHERE id = $planted_u;
DELETE FROM merged WHERE id = $planted_d;
INSERT INTO merged VALUES ($planted_x, 1, 'extra');
});
for my $name (qw(s1 s2 s3))
{
	$source{$name}->safe_psql('postgres',
		"ALTER SYSTEM SET log_statement = 'all'; SELECT pg_reload_conf()");
	$log_offset{$name} = -s $source{$name}->logfile;
}
my $by_sums = $local->safe_psql('postgres',
	"SELECT string_agg(pk || ' ' || problem, ', ' ORDER BY pk) FROM backfill.verify_job($job)");
my @summed;
for my $name (qw(s1 s2 s3))
{
	$source{$name}->safe_psql('postgres',
		"ALTER SYSTEM RESET log_statement; SELECT pg_reload_conf()");
	my $log = slurp_file($source{$name}->logfile, $log_offset{$name});
	my $n = () = $log =~ /SELECT count\(\*\), sum\(/g;
	push @summed, "$name: " . ($n > 0 ? 'summed' : 'not summed');
}
is(join(' | ', @summed), 's1: summed | s2: summed | s3: summed',
	'each server sums the rows of its partitions');
is($local->safe_psql('postgres',
	"SELECT method FROM backfill.verification WHERE job_id = $job AND operation = 'verify'"),
	'checksum', 'auto compares a finished job over several servers by checksums');
is($by_sums, "($planted_u) different, ($planted_d) missing, ($planted_x) extra",
	'the checksums find the three differences');
is($local->safe_psql('postgres',
	"SELECT string_agg(pk || ' ' || problem, ', ' ORDER BY pk) FROM backfill.verify_job($job, 'rows')"),
	$by_sums, 'as the rows method does');
$local->safe_psql('postgres', qq{
UPDATE merged m SET b = t.b FROM sharded.t t WHERE t.id = m.id AND m.id = $planted_u;
INSERT INTO merged SELECT * FROM sharded.t WHERE id = $planted_d;
DELETE FROM merged WHERE id = $planted_x;
});
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"), '0',
	'mended, nothing');

($state, $msg) = psql_error($local, sprintf(
	'ALTER TABLE sharded.t ATTACH PARTITION sharded.t_3c FOR VALUES FROM (%d) TO (%d)',
	6 * $range, 7 * $range));
is("$state: $msg",
	qq{55006: cannot add partition "t_3c" to table "t" while backfill job $job copies it from other servers},
	'ATTACH is refused after the finish too, for as long as the job exists');
is($local->safe_psql('postgres', $inherits), $tree, 'the partitions are as they were');

$local->safe_psql('postgres', "SELECT backfill.drop_job($job)");
is(join(' | ', map { source_objects($_) } qw(s1 s2 s3)), '0 0 | 0 0 | 0 0',
	'after drop_job no slot and no publication is left on any source');
$local->safe_psql('postgres', sprintf(
	'ALTER TABLE sharded.t ATTACH PARTITION sharded.t_3c FOR VALUES FROM (%d) TO (%d)',
	6 * $range, 7 * $range));
is($local->safe_psql('postgres', 'SELECT count(*) FROM sharded.t_3c'), '100',
	'once the job is dropped, the partition attaches');

no_crash_in_log($local, 1);
done_testing();
