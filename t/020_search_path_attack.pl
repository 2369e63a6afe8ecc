
# Copyright (c) backfill authors
#
# t/020_search_path_attack.pl: a worker's statements are immune to the
# search_path its role's default sets.
#
# regress_mal, no superuser, creates comparison operators of its own for the
# types the extension's SQL compares (int8, int4, text, oid, name...), each
# of which, when it runs as another role than regress_mal, logs a WARNING
# and tries to make regress_mal a superuser (which succeeds when that role
# is a superuser, such as the extension's owner).  It puts its schema first on the search_path of its
# role's default, which any role may do, and runs a job in background
# workers, which connect as it and so start with that search_path, while it
# writes to the upstream.  The job finishes, its downstream equals its
# upstream, none of the operators ever ran, and regress_mal is no
# superuser.  The same job's workers after a restart of the server (the
# launcher relaunches them) run none of them either.

use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use BackfillTestLib;

my $node = worker_node('search_path_attack');
$node->safe_psql(
	'postgres', q{
CREATE ROLE regress_mal LOGIN;
CREATE SCHEMA regress_mal AUTHORIZATION regress_mal;
GRANT USAGE ON SCHEMA regress_mal TO PUBLIC;
});

# run SQL as a role, in a session of its own; returns (ok, stdout, stderr)
sub as_role
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ '-U', $role ], on_error_stop => 1);
	return ($ret == 0, $out, $err);
}

my ($ok, $out, $err) = as_role(
	'regress_mal', q{
DO $$
DECLARE
    t text;
    o record;
BEGIN
    FOREACH t IN ARRAY ARRAY['int8', 'int4', 'int2', 'text', 'oid', 'name', 'bool',
                             'regclass', 'regrole', 'pg_lsn', 'timestamptz', 'numeric'] LOOP
        FOR o IN SELECT * FROM (VALUES ('=', 'eq'), ('<>', 'ne'), ('<', 'lt'), ('<=', 'le'),
                                       ('>', 'gt'), ('>=', 'ge')) v(op, fn) LOOP
            EXECUTE format($f$
                CREATE FUNCTION regress_mal.%1$s_%2$s(a %2$s, b %2$s) RETURNS bool
                LANGUAGE plpgsql AS $b$
                BEGIN
                    IF current_user OPERATOR(pg_catalog.<>) 'regress_mal'::pg_catalog.name THEN
                        RAISE WARNING 'operator %3$s(%2$s, %2$s) of regress_mal ran as %%', current_user;
                        BEGIN
                            ALTER ROLE regress_mal SUPERUSER;
                        EXCEPTION WHEN insufficient_privilege THEN NULL;
                        END;
                    END IF;
                    RETURN a OPERATOR(pg_catalog.%3$s) b;
                END $b$;
                CREATE OPERATOR regress_mal.%3$s (FUNCTION = regress_mal.%1$s_%2$s,
                                                  LEFTARG = %2$s, RIGHTARG = %2$s)$f$,
                o.fn, t, o.op);
        END LOOP;
    END LOOP;
END
$$;
CREATE TABLE regress_mal.up (id bigint PRIMARY KEY, v text);
INSERT INTO regress_mal.up SELECT g, md5(g::text) FROM generate_series(1, 3000) g;
ALTER ROLE regress_mal SET search_path = regress_mal, pg_catalog;
});
ok($ok, 'the plain role makes its operators and puts them first on its default search_path')
  or diag($err);

($ok, $out, $err) = as_role(
	'regress_mal', q{
SHOW search_path;
SELECT backfill.create_job('regress_mal.down', 'regress_mal.up', parallelism => 2,
                           chunk_size => 50, rate_limit => 100);
});
ok($ok, 'it creates a job under that search_path') or diag($err);
my ($path, $job) = split /\n/, $out;
is($path, 'regress_mal, pg_catalog', 'its sessions start with its schema first');

($ok, $out, $err) = as_role('regress_mal', "SELECT backfill.start_job($job)");
ok($ok, 'it starts the job in background workers') or diag($err);
ok(wait_workers($node, $job, map { $_->{actor_id} } @{ actor_rows($node, $job) }),
	'the workers run, as the role');
like(wait_rows($node, $job, 200), qr/^backfilling/, 'the job is under way');

# its writes meanwhile, and a restart: the launcher relaunches the workers
($ok, $out, $err) = as_role(
	'regress_mal', q{
UPDATE regress_mal.up SET v = 'upd' WHERE id OPERATOR(pg_catalog.<=) 100;
DELETE FROM regress_mal.up WHERE id OPERATOR(pg_catalog.>) 2900;
INSERT INTO regress_mal.up SELECT g, 'new' FROM generate_series(30001, 30100) g;
});
ok($ok, 'it writes to the upstream while the job runs') or diag($err);
$node->restart;
ok(wait_workers($node, $job, map { $_->{actor_id} } @{ actor_rows($node, $job) }),
	'after a restart the launcher relaunches the workers');

($ok, $out, $err) = as_role(
	'regress_mal', qq{
SELECT backfill.alter_rate_limit($job, NULL);
SELECT backfill.wait_job($job);
SELECT status FROM backfill.jobs WHERE job_id = $job;
});
ok($ok, 'it lifts the limit and waits for the job') or diag($err);
like($out, qr/finished$/, 'the job finished');
ok(wait_no_workers($node, $job), 'its workers are gone');
is($node->safe_psql('postgres', "SELECT count(*) FROM backfill.verify_job($job)"),
	'0', 'the downstream equals the upstream');

is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_mal'"),
	'f', 'the role is no superuser');
my $log = slurp_file($node->logfile);
unlike($log, qr/of regress_mal ran as/, 'none of its operators ran, in any process');
no_crash_in_log($node);

$node->stop;
done_testing();
