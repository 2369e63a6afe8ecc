/*
 * src/sql/catalog/verification.sql
 *	  The catalog of the last verify and the last repair of each job, and
 *	  what verify_job(job, 'changed') keeps between its calls.
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
'A verify''s method, checksum, changed or rows (auto recorded as the one it chose); NULL for a repair, which verifies with auto.';
COMMENT ON COLUMN backfill.verification.range_rows IS
'The range_rows the verify or the repair was called with.';
COMMENT ON COLUMN backfill.verification.pid IS
'The backend that verified or repairs.';
COMMENT ON COLUMN backfill.verification.started_at IS
'When the verify or the repair started.';
COMMENT ON COLUMN backfill.verification.finished_at IS
'When it finished; NULL while a repair runs, and for a repair that stopped before its end (an error, a cancel, its session gone): backfill.verifications shows which.';
COMMENT ON COLUMN backfill.verification.ranges_done IS
'A verify: the ranges of keys it compared by checksums, parts of ranges that differed included (NULL for the rows method); by method changed, the ranges written since the last check that it compared again. A repair: the ranges it has repaired and committed.';
COMMENT ON COLUMN backfill.verification.ranges_total IS
'A verify: as ranges_done; by method changed, the ranges it keeps (backfill.verification_range). A repair: the ranges it has to repair, NULL until its first verify is done.';
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

-- What verify_job(job, 'changed') keeps between its calls, so that a call
-- compares only the ranges of keys written since the last one
-- (src/api/verify_changed.c): per job, the position in the WAL its last
-- call started from, the shape of the comparison, and, per leaf relation
-- of each side, its file and which ranges each of its pages held; per
-- range of keys, its bounds and what its last comparison found.  Holds
-- key values: only the job's owner reads it.  Written by the extension's
-- owner; not dumped: a restored table is a new file, whose pages say
-- nothing of the old one's, and the first call after builds it again.
CREATE TABLE backfill.verification_state (
    job_id bigint PRIMARY KEY REFERENCES backfill.job ON DELETE CASCADE,
    checked_lsn pg_lsn NOT NULL,
    checked_at timestamptz NOT NULL,
    shape text NOT NULL,
    relations oid[] NOT NULL,
    filenodes oid[] NOT NULL,
    pages bytea[] NOT NULL
);
COMMENT ON TABLE backfill.verification_state IS
'What verify_job(job, ''changed'') keeps of a job between its calls: where in the WAL its last call started, and which ranges of keys each page of each side held then.';
COMMENT ON COLUMN backfill.verification_state.checked_lsn IS
'The WAL position the last call started from: a page written since has a newer one.';
COMMENT ON COLUMN backfill.verification_state.checked_at IS
'When the last call started.';
COMMENT ON COLUMN backfill.verification_state.shape IS
'The comparison the ranges were compared with (columns, computed columns, filter): another one compares all of them again.';
COMMENT ON COLUMN backfill.verification_state.relations IS
'The leaf tables of the upstream, then those of the downstream.';
COMMENT ON COLUMN backfill.verification_state.filenodes IS
'Each relation''s file then (pg_class.relfilenode): a table rewritten or truncated since is compared again whole.';
COMMENT ON COLUMN backfill.verification_state.pages IS
'Each relation''s pages: for each, the ranges of keys its rows fell in (internal format).';

CREATE TABLE backfill.verification_range (
    job_id bigint NOT NULL REFERENCES backfill.verification_state ON DELETE CASCADE,
    range_no integer NOT NULL,
    lower_key text[],
    upper_key text[],
    upstream_rows bigint,
    downstream_rows bigint,
    checksum numeric,
    checked_at timestamptz NOT NULL,
    differs boolean NOT NULL,
    PRIMARY KEY (job_id, range_no)
);
COMMENT ON TABLE backfill.verification_range IS
'The ranges of keys verify_job(job, ''changed'') compares, and what each one''s last comparison found.';
COMMENT ON COLUMN backfill.verification_range.range_no IS
'The range''s place, in key order from 0.';
COMMENT ON COLUMN backfill.verification_range.lower_key IS
'Its first key (the key''s columns as text), or NULL: from the lowest.';
COMMENT ON COLUMN backfill.verification_range.upper_key IS
'The key after it (not in it), or NULL: to the highest.';
COMMENT ON COLUMN backfill.verification_range.upstream_rows IS
'The upstream''s rows in it (those that pass the filter), at its last comparison; NULL when it was compared with every other range at once.';
COMMENT ON COLUMN backfill.verification_range.downstream_rows IS
'The downstream''s rows in it, at its last comparison; NULL as upstream_rows.';
COMMENT ON COLUMN backfill.verification_range.checksum IS
'The sum of its rows'' hashes on the upstream''s side at its last comparison; NULL as upstream_rows.';
COMMENT ON COLUMN backfill.verification_range.checked_at IS
'When it was last compared.';
COMMENT ON COLUMN backfill.verification_range.differs IS
'Whether its two sides differed at its last comparison: the next call compares it again.';
GRANT SELECT ON backfill.verification_state, backfill.verification_range TO PUBLIC;
ALTER TABLE backfill.verification_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.verification_range ENABLE ROW LEVEL SECURITY;
CREATE POLICY verification_state_owner ON backfill.verification_state FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) verification_state.job_id));
CREATE POLICY verification_range_owner ON backfill.verification_range FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) verification_range.job_id));
