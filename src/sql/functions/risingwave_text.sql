/*
 * src/sql/functions/risingwave_text.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Comparison and RisingWave's progress text
-- ---------------------------------------------------------------------------

-- Progress as RisingWave's meta prints it (barrier/progress.rs,
-- calculate_progress): {:.2}% of consumed/total as a float, forced to
-- 0.9999 only when more rows were consumed than counted, so N/N reads
-- 100.00% (N/N) until the job is done; a total of 0 reads 99.99%.
-- to_char of a float8 rounds as printf's %.2f does, as Rust's {:.2} does.
CREATE OR REPLACE FUNCTION backfill._rw_progress(consumed bigint, total bigint)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN total OPERATOR(pg_catalog.=) 0 THEN '99.99%'
    ELSE pg_catalog.format('%s%% (%s/%s)',
             pg_catalog.to_char(
                 CASE WHEN consumed::pg_catalog.float8 OPERATOR(pg_catalog./) total::pg_catalog.float8
                           OPERATOR(pg_catalog.>) 1.0::pg_catalog.float8
                      THEN 0.9999::pg_catalog.float8
                      ELSE consumed::pg_catalog.float8 OPERATOR(pg_catalog./) total::pg_catalog.float8
                 END OPERATOR(pg_catalog.*) 100.0::pg_catalog.float8, 'FM990.00'),
             consumed, total)
END;
COMMENT ON FUNCTION backfill._rw_progress(bigint, bigint) IS
'Internal: RisingWave''s progress text of consumed rows out of a total, "42.17% (421700/1000000)".';

-- Rust's Debug of a Duration of whole milliseconds: 0ns, 800ms, 1.2s, 61s
CREATE OR REPLACE FUNCTION backfill._rw_duration(ms bigint)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN ms OPERATOR(pg_catalog.<=) 0 THEN '0ns'
    WHEN ms OPERATOR(pg_catalog.<) 1000 THEN ms::pg_catalog.text OPERATOR(pg_catalog.||) 'ms'
    ELSE (ms OPERATOR(pg_catalog./) 1000)::pg_catalog.text
         OPERATOR(pg_catalog.||) pg_catalog.rtrim('.' OPERATOR(pg_catalog.||)
             pg_catalog.lpad((ms OPERATOR(pg_catalog.%) 1000)::pg_catalog.text, 3, '0'), '.0')
         OPERATOR(pg_catalog.||) 's'
END;
COMMENT ON FUNCTION backfill._rw_duration(bigint) IS
'Internal: a number of milliseconds as Rust''s Debug of a Duration prints it, "1.2s".';
