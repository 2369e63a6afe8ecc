
# Copyright (c) backfill authors
#
# A role that is not a superuser reaches a remote source only with a
# password the source asked for, as postgres_fdw requires (its
# check_conn_params() and connect_pg_server()): else, on a source that
# trusts local connections, a mapping naming user 'postgres' would connect
# as the source's superuser.  A superuser may waive this for a mapping with
# password_required 'false'.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use BackfillTestLib;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# the source trusts local connections (initdb's default in the tests), but
# asks pw_src for its password
my $source = remote_source('source', 100, "log_statement = all\n");
my $source_super = $source->safe_psql('postgres', 'SELECT current_user');
$source->safe_psql('postgres', q{
CREATE ROLE pw_src LOGIN REPLICATION PASSWORD 'secret';
ALTER TABLE t OWNER TO pw_src;
GRANT CREATE ON DATABASE postgres TO pw_src;
});
require_password($source, 'pw_src');

my $local = backfill_node('local');
import_remote($local, $source);
$local->safe_psql('postgres', qq{
CREATE ROLE regress_mal LOGIN;
CREATE SCHEMA mal AUTHORIZATION regress_mal;
GRANT USAGE ON FOREIGN SERVER src TO regress_mal;
GRANT USAGE ON SCHEMA remote TO regress_mal;
GRANT SELECT ON remote.t TO regress_mal;
CREATE USER MAPPING FOR regress_mal SERVER src OPTIONS (user '$source_super');
});

# create_job as regress_mal; returns (ok, stdout, stderr)
sub create_as_mal
{
	my ($name) = @_;
	my ($ret, $out, $err) = $local->psql('postgres', qq{
\\set VERBOSITY verbose
SELECT backfill.create_job('mal.$name', 'remote.t', kind => 'cdc')},
		extra_params => [ '-U', 'regress_mal' ], on_error_stop => 1);
	return ($ret == 0, $out, $err);
}

# nothing left behind by a refused create_job, on either side
sub nothing_left
{
	my ($what) = @_;
	is($local->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM backfill.job)
    || ' ' || (SELECT count(*) FROM pg_class WHERE relnamespace = 'mal'::regnamespace)}),
		'0 0', "$what: no job and no table left here");
	is($source->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM pg_replication_slots)
    || ' ' || (SELECT count(*) FROM pg_publication)}),
		'0 0', "$what: no slot and no publication left on the source");
	return;
}

# ---- no password in the mapping: refused before connecting ----
my ($ok, $out, $err) = create_as_mal('c1');
ok(!$ok, 'a plain role\'s mapping without a password is refused');
like($err, qr/ERROR:  2F003: password is required/, '2F003, password is required');
like($err, qr/DETAIL:  Non-superusers must provide a password in the user mapping\./,
	'postgres_fdw\'s detail');
nothing_left('no password');

# ---- a password the source never asked for: refused after connecting ----
$local->safe_psql('postgres',
	"ALTER USER MAPPING FOR regress_mal SERVER src OPTIONS (ADD password 'whatever')");
($ok, $out, $err) = create_as_mal('c2');
ok(!$ok, 'a connection the source trusted without its password is refused');
like($err, qr/ERROR:  2F003: password is required/, '2F003, password is required');
like($err,
	qr/DETAIL:  Non-superuser cannot connect if the server does not request a password\./,
	'the detail says the server did not request it');
like($err, qr/HINT:  .*password_required/, 'the hint names password_required');
unlike(PostgreSQL::Test::Utils::slurp_file($source->logfile),
	qr/backfill create_job LOG:  (?:statement|execute)/,
	'the extension ran nothing on the source as its superuser');
nothing_left('password not requested');

# ---- a superuser waives it for this mapping ----
$local->safe_psql('postgres', q{
ALTER USER MAPPING FOR regress_mal SERVER src OPTIONS (DROP password, ADD password_required 'false')});
my $job;
($ok, $job, $err) = create_as_mal('c3');
ok($ok, 'with password_required \'false\' set by a superuser, allowed') or diag($err);
($ok, $out, $err) = (0, '', '');
my $ret;
($ret, $out, $err) = $local->psql('postgres', "SELECT backfill.drop_job($job)",
	extra_params => [ '-U', 'regress_mal' ]);
is($ret, 0, 'and dropped') or diag($err);

# ---- a source that asks for the password, and gets the right one ----
$local->safe_psql('postgres', q{
CREATE ROLE regress_bob LOGIN;
CREATE SCHEMA bob AUTHORIZATION regress_bob;
GRANT USAGE ON FOREIGN SERVER src TO regress_bob;
GRANT USAGE ON SCHEMA remote TO regress_bob;
GRANT SELECT ON remote.t TO regress_bob;
CREATE USER MAPPING FOR regress_bob SERVER src OPTIONS (user 'pw_src', password 'secret');
});
($ret, $job, $err) = $local->psql('postgres',
	"SELECT backfill.create_job('bob.c4', 'remote.t', kind => 'cdc')",
	extra_params => [ '-U', 'regress_bob' ]);
is($ret, 0, 'a password the source asked for and accepted: allowed') or diag($err);
($ret, $out, $err) = $local->psql('postgres', "CALL backfill.run_job($job)",
	extra_params => [ '-U', 'regress_bob' ]);
is($ret, 0, 'and the job runs over it') or diag($err);
is(remote_differences($local, 'bob.c4'), '0 0', 'its copy equals the source');

# ---- verify_job's remote branch compares keys through their btree
# operators: an hstore key has no >= or < ----
$source->safe_psql('postgres', q{
CREATE EXTENSION hstore;
CREATE TABLE h (k hstore PRIMARY KEY, v int);
INSERT INTO h SELECT hstore('k', lpad(g::text, 4, '0')), g FROM generate_series(1, 1000) g;
ANALYZE h;
});
$local->safe_psql('postgres', q{
CREATE EXTENSION hstore;
IMPORT FOREIGN SCHEMA public LIMIT TO (h) FROM SERVER src INTO remote;
});
my $hjob = $local->safe_psql('postgres',
	"SELECT backfill.create_job('public.copy_h', 'remote.h', kind => 'cdc', parallelism => 2)");
ok($local->safe_psql('postgres',
		"SELECT cardinality(remote_splits) FROM backfill.job WHERE job_id = $hjob") >= 1,
	'the hstore key\'s range is cut into splits');
($ret, $out, $err) = $local->psql('postgres',
	"SELECT count(*) FROM backfill.verify_job($hjob)");
is($ret, 0, 'verify_job of a pending remote job on an hstore key runs') or diag($err);
unlike($err, qr/operator does not exist/, 'no >= or < of hstore is looked for');

$source->stop;
$local->stop;
done_testing();
