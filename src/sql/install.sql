/* install.sql: the install script of backfill's current version */

-- CREATE EXTENSION backfill reads the script assembled from this file
-- (scripts/assemble_sql.sh): each "\ir" line below is replaced by the part
-- it names.  Every object of the extension is defined once, in its final
-- form, in one part; the upgrade script of the current version
-- (update-1.3--1.4.sql) includes the same parts.  The order is that of the
-- dependencies: the catalogs, then the functions (a function in SQL is
-- checked against those before it), then the views over them, and last the
-- event triggers, which fire from then on.

\echo Use "CREATE EXTENSION backfill" to load this file. \quit

\ir catalog/tables.sql
\ir catalog/comments.sql
\ir catalog/job_settings.sql
\ir catalog/verification.sql
\ir catalog/monitor_policies.sql
\ir functions/keys.sql
\ir functions/capture.sql
\ir functions/workers.sql
\ir functions/job_rows.sql
\ir functions/slots.sql
\ir functions/ddl.sql
\ir functions/job_tables.sql
\ir functions/risingwave_text.sql
\ir functions/background.sql
\ir functions/jobs.sql
\ir functions/switchover.sql
\ir functions/cutover.sql
\ir functions/cutover_lock.sql
\ir functions/observe.sql
\ir functions/monitoring.sql
\ir functions/verify.sql
\ir functions/vocabulary.sql
\ir functions/view_jobs.sql
\ir views.sql
\ir event_triggers.sql
