/*
 * src/sql/functions/capture.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Triggers on the upstream (create_job makes them, as the extension's owner)
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill.capture_change()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_capture_change'
LANGUAGE C;
COMMENT ON FUNCTION backfill.capture_change() IS 'Trigger: records the keys a writer touches while a job backfills.';
REVOKE ALL ON FUNCTION backfill.capture_change() FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill.apply_change()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_apply_change'
LANGUAGE C;
COMMENT ON FUNCTION backfill.apply_change() IS 'Trigger: keeps the downstream of a finished job equal to the upstream.';
REVOKE ALL ON FUNCTION backfill.apply_change() FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill.truncate_change()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_truncate_change'
LANGUAGE C;
COMMENT ON FUNCTION backfill.truncate_change() IS 'Trigger: refuses TRUNCATE of the upstream while a job backfills; truncates the downstream too once it has finished.';
REVOKE ALL ON FUNCTION backfill.truncate_change() FROM PUBLIC;
