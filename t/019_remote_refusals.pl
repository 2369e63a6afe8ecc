
# Copyright (c) backfill authors
#
# What create_job refuses for a cdc job on a foreign table, when the source
# answers: a source without wal_level = logical, a table without a primary
# key, a table that is not there, a role that may not replicate, a source
# without a free replication slot, and what the job would copy that a remote
# job cannot serve (a row filter, computed columns, a table of the user's).
# Each refusal is a clear error naming what is missing, and leaves nothing
# behind on either side: no job, no table here, no slot or publication on the
# source.  Then, for a job that runs, what a fetch does when its publication
# or its slot has gone from the source.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# a source with the default wal_level (replica)
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->append_conf('postgresql.conf', 'wal_level = replica');
$plain->start;
is($plain->safe_psql('postgres', 'SHOW wal_level'), 'replica', 'the first source has wal_level replica');

# a source with wal_level logical and a single replication slot
my $source = PostgreSQL::Test::Cluster->new('source');
$source->init(allows_streaming => 'logical');
$source->append_conf('postgresql.conf', q{
max_replication_slots = 1
max_wal_senders = 2
});
$source->start;

for my $node ($plain, $source)
{
	$node->safe_psql('postgres', q{
CREATE TABLE t (id int PRIMARY KEY, a int, b text);
INSERT INTO t SELECT g, g % 10, 'b' || g FROM generate_series(1, 1000) g;
CREATE TABLE nopk (id int, a int);
INSERT INTO nopk SELECT g, g FROM generate_series(1, 10) g;
CREATE ROLE plain_role LOGIN;
GRANT SELECT ON t TO plain_role;
});
}

my $local = backfill_node('local');
$local->safe_psql('postgres', sprintf(q{
CREATE EXTENSION postgres_fdw;
CREATE SERVER src_plain FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '%s', port '%s', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER src_plain;
CREATE SERVER src FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '%s', port '%s', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER src;
CREATE SERVER src_norepl FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '%s', port '%s', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER src_norepl OPTIONS (user 'plain_role');
CREATE SCHEMA plain;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src_plain INTO plain;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t, nopk) FROM SERVER src INTO remote;
CREATE FOREIGN TABLE remote.gone (id int, a int) SERVER src OPTIONS (table_name 'gone');
CREATE SCHEMA norepl;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src_norepl INTO norepl;
CREATE TABLE mine (id int PRIMARY KEY, a int, b text);
}, $plain->host, $plain->port, $source->host, $source->port, $source->host, $source->port));

# nothing of a job on either side: jobs, tables named after the jobs, the
# source's slots and publications
sub leftovers_everywhere
{
	my $here = $local->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM backfill.job)
    || ' ' || (SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relname LIKE 'copy%')
    || ' ' || (SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relnamespace = 'backfill'::regnamespace
                                             AND relname ~ '^(state|changes)_')});
	my @there = map {
		$_->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots) || ' ' || (SELECT count(*) FROM pg_publication)})
	} ($plain, $source);
	return join(', ', $here, @there);
}

# the error of a create_job: "SQLSTATE: message / detail / hint"
sub refusal
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $local->psql('postgres', qq{
\\set VERBOSITY verbose
$sql});
	return 'no error' if $ret == 0;
	$err =~ s/^psql:<stdin>:\d+: //mg;
	# the line that ends a run comes before its error
	$err =~ s/^INFO: .*\n(LOCATION: .*\n)?//mg;
	$err =~ s/\n?LOCATION:.*//s;
	return $err;
}

my $nothing = '0 0 0, 0 0, 0 0';

like(refusal("SELECT backfill.create_job('copy_plain', 'plain.t', kind => 'cdc')"),
	qr/^ERROR:  55000: server "src_plain" does not have "wal_level" set to "logical"\nDETAIL:  Its wal_level is "replica"; a cdc job reads the source's changes through a logical replication slot\.\nHINT:  Set wal_level = logical on the source and restart it\.$/,
	'a source without wal_level = logical is refused, naming the setting');
is(leftovers_everywhere(), $nothing, 'nothing left on either side');

like(refusal("SELECT backfill.create_job('copy_nopk', 'remote.nopk', kind => 'cdc')"),
	qr/^ERROR:  55000: table "public\.nopk" on server "src" has no primary key\nDETAIL:  A backfill reads the upstream in primary key order and records its progress as a primary key\.\nHINT:  Add a primary key to the table on the source\.$/,
	'a table without a primary key on the source is refused');
is(leftovers_everywhere(), $nothing, 'nothing left on either side');

like(refusal("SELECT backfill.create_job('copy_gone', 'remote.gone', kind => 'cdc')"),
	qr/^ERROR:  42P01: table "remote\.gone" does not exist on server "src"\nDETAIL:  Foreign table "gone" names it\.$/,
	'a foreign table naming no table of the source is refused');
is(leftovers_everywhere(), $nothing, 'nothing left on either side');

like(refusal("SELECT backfill.create_job('copy_norepl', 'norepl.t', kind => 'cdc')"),
	qr/^ERROR:  42501: the role of the user mapping for server "src_norepl" may not replicate\nDETAIL:  A cdc job owns a logical replication slot on the source\.\nHINT:  Give that role the REPLICATION attribute on the source\.$/,
	'a role without REPLICATION on the source is refused');
is(leftovers_everywhere(), $nothing, 'nothing left on either side');

# what a remote job cannot copy
for my $case (
	[ "filter => 'a > 1'", 'a row filter' ],
	[ "columns => ARRAY['id', 'a * 2 AS a2']", 'computed columns' ])
{
	my ($arg, $what) = @$case;
	like(refusal("SELECT backfill.create_job('copy_shape', 'remote.t', kind => 'cdc', $arg)"),
		qr/^ERROR:  0A000: a cdc job from foreign table "t" cannot have $what\nDETAIL:  A job whose upstream is on another server copies the source's columns as they are into a table of its own\.\nHINT:  /,
		"$what is refused");
}
like(refusal("SELECT backfill.create_job('mine', 'remote.t', kind => 'cdc', into_existing => true)"),
	qr/^ERROR:  0A000: a cdc job from foreign table "t" cannot have a downstream table of the user's\n/,
	'a downstream of the user\'s is refused');
is(leftovers_everywhere(), $nothing, 'nothing left on either side');
is($local->safe_psql('postgres', 'SELECT count(*) FROM mine'), '0', 'the table of the user\'s is untouched');

# the one slot taken: no free replication slot
$source->safe_psql('postgres', "SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput')");
like(refusal("SELECT backfill.create_job('copy_noslot', 'remote.t', kind => 'cdc')"),
	qr/^ERROR:  53400: server "src" has no free replication slot\nHINT:  Raise max_replication_slots on the source, or drop a slot it no longer needs\.$/,
	'a source without a free replication slot is refused');
$source->safe_psql('postgres', "SELECT pg_drop_replication_slot('someone_else')");
is(leftovers_everywhere(), $nothing, 'nothing left on either side');

# and once all is there, a column list is fine; the job's slot and
# publication appear with its first fetch, and go with drop_job
my $job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy_ok', 'remote.t', kind => 'cdc', columns => ARRAY['id', 'b'])");
is(leftovers_everywhere(), '1 1 2, 0 0, 0 0', 'create_job makes its tables here and nothing on the source');
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
is($local->safe_psql('postgres', "SELECT count(*) FROM copy_ok"), '1000', 'the copy has every row');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"), '0', 'verify_job is empty');
$local->safe_psql('postgres', "SELECT backfill.drop_job($job)");
is(leftovers_everywhere(), $nothing, 'drop_job leaves nothing on either side');

# text keys with what COPY's text format escapes (tab, newline, carriage
# return, backslash, backspace, form feed, vertical tab), read one row per
# chunk so that each of them ends a chunk, each followed in byte order by a
# key it is a prefix of: an escape left in a position would sort after that
# key, which the next chunk would skip
$source->safe_psql('postgres', q{
CREATE TABLE tk (k text COLLATE "C" PRIMARY KEY, v int);
INSERT INTO tk SELECT 'k' || g || chr(9) || chr(10) || chr(13) || chr(92) || chr(8) || chr(12) || chr(11), g
  FROM generate_series(1, 40) g;
INSERT INTO tk SELECT 'k' || g || '0', 100 + g FROM generate_series(1, 40) g;
INSERT INTO tk VALUES (chr(92) || 'N', 41), (chr(92), 42), ('a' || chr(9) || 'b', 43), ('plain', 44);
});
$local->safe_psql('postgres', 'IMPORT FOREIGN SCHEMA public LIMIT TO (tk) FROM SERVER src INTO remote');
$job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy_tk', 'remote.tk', kind => 'cdc', chunk_size => 1)");
$local->safe_psql('postgres', "CALL backfill.run_job($job)");
is($local->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM (SELECT * FROM remote.tk EXCEPT SELECT * FROM copy_tk) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM copy_tk EXCEPT SELECT * FROM remote.tk) y)
    || ' ' || (SELECT count(*) FROM copy_tk)}),
	'0 0 84', 'keys with escaped characters: chunks end on them, and the copy equals the source');
is($local->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"), '0', 'verify_job is empty');
$local->safe_psql('postgres', "SELECT backfill.drop_job($job)");

# the job's publication and slot on the source are looked up before every
# fetch: a publication dropped between two runs is made again, and a slot
# dropped once the job has an offset is an error that says the changes
# since it are lost
$job = $local->safe_psql('postgres',
	"SELECT backfill.create_job('copy_pub', 'remote.t', kind => 'cdc', chunk_size => 100)");
$local->safe_psql('postgres', "CALL backfill.run_job($job, 1)");
my $slot = $local->safe_psql('postgres', "SELECT slot_name FROM backfill.jobs WHERE job_id = $job");
is($source->safe_psql('postgres', "SELECT count(*) FROM pg_publication WHERE pubname = '$slot'"),
	'1', 'the first barrier made the publication');
$source->safe_psql('postgres', "DROP PUBLICATION $slot");
$local->safe_psql('postgres', "CALL backfill.run_job($job, 1)");
is($source->safe_psql('postgres', "SELECT count(*) FROM pg_publication WHERE pubname = '$slot'"),
	'1', 'the next barrier made it again');
$source->safe_psql('postgres', "SELECT pg_drop_replication_slot('$slot')");
like(refusal("CALL backfill.run_job($job)"),
	qr/^ERROR:  55000: replication slot "\Q$slot\E" of backfill job $job does not exist on server "src"\nDETAIL:  The changes of the source since the job's offset are lost\.\nHINT:  Cancel the job with backfill\.cancel_job\($job\) and create it again with backfill\.recreate_job\($job\)\.$/,
	'a slot dropped behind the job\'s back is an error, not a new slot');
$local->safe_psql('postgres', "SELECT backfill.drop_job($job)");
is(leftovers_everywhere(), $nothing, 'drop_job leaves nothing on either side');

done_testing();
