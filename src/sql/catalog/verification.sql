/*
 * src/sql/catalog/verification.sql
 *	  The catalog of the last verify and the last repair of each job.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql).
 */

-- The last verify and the last repair of each job (verify_job, repair_job):
-- one row per job and operation, so that a repair, whose own verifies write
-- the job's verify row, never hides when the job was last verified and
-- what that found.  verify_job writes its row at its end, in its caller's
-- transaction (nothing in a read-only one); repair_job writes its row at
-- its start and in each range's committed transaction, so that another
-- session sees it go.  A repair whose session died leaves finished_at
-- NULL: it runs only while its pid holds the job's lock, which is what
-- backfill.progress and backfill.verifications look at.  Written only by
-- the extension's owner, on behalf of a caller who owns the job
-- (src/catalog/verification_rows.c).
CREATE TABLE backfill.verification (
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    operation text NOT NULL
        CHECK (operation OPERATOR(pg_catalog.=) ANY (ARRAY['verify', 'repair'])),
    method text,
    range_rows integer,
    pid integer NOT NULL,
    started_at timestamptz NOT NULL,
    finished_at timestamptz,
    ranges_done bigint,
    ranges_total bigint,
    rows_read bigint,
    differences bigint,
    missing bigint,
    extra bigint,
    different bigint,
    clean boolean,
    PRIMARY KEY (job_id, operation)
);
COMMENT ON TABLE backfill.verification IS
'The last verify_job and the last repair_job of each job (one row per job and operation): when, by which backend, what they compared and found, and what the repair repaired.';
COMMENT ON COLUMN backfill.verification.job_id IS
'The job verified or repaired.';
COMMENT ON COLUMN backfill.verification.operation IS
'verify (backfill.verify_job, also when repair_job or cutover(verify => true) calls it) or repair (backfill.repair_job).';
COMMENT ON COLUMN backfill.verification.method IS
'A verify''s method, checksum or rows (auto recorded as the one it chose); NULL for a repair, which verifies with auto.';
COMMENT ON COLUMN backfill.verification.range_rows IS
'The range_rows the verify or the repair was called with.';
COMMENT ON COLUMN backfill.verification.pid IS
'The backend that verified or repairs.';
COMMENT ON COLUMN backfill.verification.started_at IS
'When the verify or the repair started.';
COMMENT ON COLUMN backfill.verification.finished_at IS
'When it finished; NULL while a repair runs, and for a repair that stopped before its end (an error, a cancel, its session gone): backfill.verifications shows which.';
COMMENT ON COLUMN backfill.verification.ranges_done IS
'A verify: the ranges of keys it compared by checksums (NULL for the rows method). A repair: the ranges it has repaired and committed.';
COMMENT ON COLUMN backfill.verification.ranges_total IS
'A verify: as ranges_done. A repair: the ranges it has to repair, NULL until its first verify is done.';
COMMENT ON COLUMN backfill.verification.rows_read IS
'A verify by checksums: the rows of the upstream it compared (NULL for the rows method); NULL for a repair.';
COMMENT ON COLUMN backfill.verification.differences IS
'A verify: the differences it found. A repair: those its first verify found, the rows it has to repair; NULL until that verify is done.';
COMMENT ON COLUMN backfill.verification.missing IS
'A repair: the rows missing from the downstream that it has repaired so far; NULL for a verify.';
COMMENT ON COLUMN backfill.verification.extra IS
'A repair: the rows extra in the downstream that it has repaired so far; NULL for a verify.';
COMMENT ON COLUMN backfill.verification.different IS
'A repair: the rows that differed that it has repaired so far; NULL for a verify.';
COMMENT ON COLUMN backfill.verification.clean IS
'A repair: whether the verify at its end found no difference; NULL until then, and for a verify.';
SELECT pg_catalog.pg_extension_config_dump('backfill.verification', '');
GRANT SELECT ON backfill.verification TO PUBLIC;
ALTER TABLE backfill.verification ENABLE ROW LEVEL SECURITY;

CREATE POLICY verification_owner ON backfill.verification FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) verification.job_id));

-- (counts and times only: no value of the upstream)
CREATE POLICY verification_monitor ON backfill.verification FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));
