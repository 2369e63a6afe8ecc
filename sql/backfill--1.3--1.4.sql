/* backfill--1.3--1.4.sql: from version 1.3 to 1.4 */

-- CREATE EXTENSION backfill installs 1.3 (backfill--1.3.sql) and runs this
-- script; ALTER EXTENSION backfill UPDATE runs it on a 1.3 catalog.  Every
-- object it changes is defined here once, in its final form.

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.4'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Internal functions: what each checks before it touches anything
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- A job's own tables: the extension's, not a place for its owner's code
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- Copies that row-level security would filter, and what indexes => true copies
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- The cutover: what it refuses, what it carries, and as whom
-- ---------------------------------------------------------------------------
