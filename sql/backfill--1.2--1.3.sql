/* backfill--1.2--1.3.sql */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.3'" to load this file. \quit
