
# Copyright (c) backfill authors
#
# A remote job (cdc on a foreign table of postgres_fdw) reaches its source
# through its owner's user mapping only, create_job included, as
# postgres_fdw connects as the current user.
#
# regress_alice, a role without superuser, has her own user mapping (the
# source's role alice_src) and nobody else has one: she creates a remote job
# and it copies the source's table.  Then the extension's owner gets a
# mapping to the source's superuser, who sees every row of table s, while
# row-level security there shows alice_src only the keys above 1000: the
# bounds of her new job's splits (remote_splits, job_state) are cut from
# what alice_src sees, and show no key she may not read.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $source = remote_source('source', 2000);
$source->safe_psql('postgres', q{
CREATE ROLE alice_src LOGIN REPLICATION PASSWORD 'secret';
ALTER TABLE t OWNER TO alice_src;
GRANT CREATE ON DATABASE postgres TO alice_src;  -- for the job's publication
CREATE TABLE s (id int PRIMARY KEY, a int);
INSERT INTO s SELECT g, g FROM generate_series(1, 2000) g;
ANALYZE s;
GRANT SELECT ON s TO alice_src;
ALTER TABLE s ENABLE ROW LEVEL SECURITY;
CREATE POLICY above_1000 ON s FOR SELECT TO alice_src USING (id > 1000);
});
# postgres_fdw lets a plain role connect only to a source that asks for its
# password
require_password($source, 'alice_src');
is($source->safe_psql('postgres', q{
SET ROLE alice_src; SELECT min(id) || ' ' || count(*) FROM s}),
	'1001 1000', 'on the source, alice_src sees the keys of s above 1000 only');

my $local = backfill_node('local');
import_remote($local, $source);
$local->safe_psql('postgres', q{
IMPORT FOREIGN SCHEMA public LIMIT TO (s) FROM SERVER src INTO remote;
DROP USER MAPPING FOR CURRENT_USER SERVER src;
CREATE ROLE regress_alice LOGIN;
CREATE SCHEMA alice AUTHORIZATION regress_alice;
GRANT USAGE ON FOREIGN SERVER src TO regress_alice;
GRANT USAGE ON SCHEMA remote TO regress_alice;
GRANT SELECT ON remote.t, remote.s TO regress_alice;
CREATE USER MAPPING FOR regress_alice SERVER src OPTIONS (user 'alice_src', password 'secret');
});

# run SQL as a role; returns (ok, stdout, stderr)
sub as_alice
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $local->psql('postgres', $sql,
		extra_params => [ '-U', 'regress_alice' ], on_error_stop => 1);
	return ($ret == 0, $out, $err);
}

# ---- no mapping but hers: her job is created, runs and copies ----
my ($ok, $job, $err) = as_alice(
	"SELECT backfill.create_job('alice.copy_t', 'remote.t', kind => 'cdc', chunk_size => 300)");
ok($ok, 'a plain role with a user mapping of her own creates a remote job, '
	  . 'with no mapping for the extension\'s owner') or diag($err);
unlike($err, qr/user mapping not found/, 'no other role\'s user mapping is looked for');
my $out;
($ok, $out, $err) = as_alice("CALL backfill.run_job($job)");
ok($ok, 'she runs it') or diag($err);
($ok, $out, $err) = as_alice(qq{
SELECT status FROM backfill.jobs WHERE job_id = $job;
SELECT (SELECT count(*) FROM (SELECT * FROM remote.t EXCEPT SELECT * FROM alice.copy_t) x)
    || ' ' || (SELECT count(*) FROM (SELECT * FROM alice.copy_t EXCEPT SELECT * FROM remote.t) y)});
is($out, "finished\n0 0", 'the job finished and its copy equals the source') or diag($err);

# ---- a mapping of the extension's owner that sees more than hers ----
$local->safe_psql('postgres', 'CREATE USER MAPPING FOR CURRENT_USER SERVER src');
is($local->safe_psql('postgres', 'SELECT min(id) FROM remote.s'), '1',
	'the extension\'s owner\'s mapping sees every key of s');
my $job2;
($ok, $job2, $err) = as_alice(
	"SELECT backfill.create_job('alice.copy_s', 'remote.s', kind => 'cdc', parallelism => 2)");
ok($ok, 'she creates a remote job on the table under row-level security') or diag($err);
is($local->safe_psql('postgres', qq{
SELECT count(*) FILTER (WHERE b::int <= 1000) || ' of ' || count(*)
  FROM backfill.job, unnest(remote_splits) b WHERE job_id = $job2}),
	'0 of ' . $local->safe_psql('postgres',
		"SELECT cardinality(remote_splits) FROM backfill.job WHERE job_id = $job2"),
	'no split bound is a key her mapping cannot see');
ok($local->safe_psql('postgres',
		"SELECT cardinality(remote_splits) FROM backfill.job WHERE job_id = $job2") >= 1,
	'the key range is cut into splits all the same');
is($local->safe_psql('postgres', qq{
SELECT count(*) FROM backfill.job_state($job2)
 WHERE EXISTS (SELECT FROM regexp_matches(current_pos, '\\d+', 'g') m WHERE m[1]::int <= 1000)}),
	'0', 'job_state shows no hidden key in the splits\' ranges');

$source->stop;
$local->stop;
done_testing();
