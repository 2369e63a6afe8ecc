/* backfill--1.1--1.2.sql: named internal catalog functions */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.2'" to load this file. \quit
