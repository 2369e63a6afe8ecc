/* backfill--1.2--1.3.sql */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.3'" to load this file. \quit

-- ---- expressions read under pinned settings (issue 22, items 16d, 16f) ----

-- A job's filter and computed columns are stored as text written under
-- standard_conforming_strings = on, DateStyle = 'ISO, MDY' and IntervalStyle
-- = postgres (shape.c), and the C code reads them under the same settings
-- wherever it builds the job's SQL.  The two SQL functions that build SQL
-- from that text, verify_job (the comparison) and recreate_job (which hands
-- it back to create_job), read it under those settings too, whatever the
-- session's.  Whoever redefines either function must keep these settings.
-- Jobs made before 1.3 keep their text as it is (shape.c says why).
ALTER FUNCTION backfill.verify_job(bigint)
    SET standard_conforming_strings = on
    SET "DateStyle" = 'ISO, MDY'
    SET "IntervalStyle" = postgres;
ALTER FUNCTION backfill.recreate_job(bigint, text)
    SET standard_conforming_strings = on
    SET "DateStyle" = 'ISO, MDY'
    SET "IntervalStyle" = postgres;
