/*
 * src/sql/catalog/monitor_policies.sql
 *	  What members of pg_read_all_stats see of the catalogs: every job's row.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql).
 */

CREATE POLICY actor_monitor ON backfill.actor FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));

CREATE POLICY job_cutover_monitor ON backfill.job_cutover FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));

CREATE POLICY job_source_monitor ON backfill.job_source FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));
