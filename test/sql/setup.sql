-- The extension installs into schema "backfill" and cannot be relocated.
CREATE EXTENSION backfill;
SELECT extname, extversion, extrelocatable, extnamespace::regnamespace
  FROM pg_extension WHERE extname = 'backfill';
ALTER EXTENSION backfill SET SCHEMA public;
