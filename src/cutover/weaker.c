/*-------------------------------------------------------------------------
 *
 * weaker.c
 *	  What the old table of a cutover enforces that the new one does not,
 *	  one row per thing, with the word of cutover's "accept" that accepts
 *	  it (accepts.c).
 *
 * The swap carries src's defaults and identity to columns of dst that have
 * none, the foreign keys of other tables that reference src and src's own
 * to itself; what it does not carry is the table's own: NOT NULL, CHECK,
 * UNIQUE (a unique index or constraint, the primary key too), EXCLUDE, its
 * foreign keys to other tables, generated columns and partitioning.  A
 * default or an identity of dst's own that differs from src's stays dst's,
 * so it is listed too.  Constraints compare by their definitions as
 * PostgreSQL prints them (a NOT VALID one on dst checks new rows as src's
 * does), indexes as the swap pairs them: one catalog query, whose rows
 * each carry the word cutover's "accept" takes for them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/tuplestore.h"

#include "cutover/check.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_weaker);

/* what $1 (src) enforces that $2 (dst) does not: (kind, detail) rows */
const char cutover_weaker_sql[] =
	"WITH cols AS (\n"
	"    SELECT sa.attname, sa.attnotnull AS s_notnull, da.attnotnull AS d_notnull,\n"
	"           sa.attidentity AS s_identity, da.attidentity AS d_identity,\n"
	"           sa.attgenerated AS s_generated, da.attgenerated AS d_generated,\n"
	"           pg_get_expr(sd.adbin, sd.adrelid) AS s_expr, pg_get_expr(dd.adbin, dd.adrelid) AS d_expr,\n"
	"           (SELECT relname FROM pg_class WHERE oid = $1) AS tab\n"
	"      FROM pg_attribute sa\n"
	"      JOIN pg_attribute da ON da.attrelid = $2 AND da.attname = sa.attname\n"
	"                          AND da.attnum > 0 AND NOT da.attisdropped\n"
	"      LEFT JOIN pg_attrdef sd ON sd.adrelid = $1 AND sd.adnum = sa.attnum\n"
	"      LEFT JOIN pg_attrdef dd ON dd.adrelid = $2 AND dd.adnum = da.attnum\n"
	"     WHERE sa.attrelid = $1 AND sa.attnum > 0 AND NOT sa.attisdropped\n"
	"), cons AS (\n"
	"    SELECT c.conname, c.contype, c.conrelid, c.conindid, c.confrelid,\n"
	"           regexp_replace(pg_get_constraintdef(c.oid), ' NOT VALID$', '') AS def\n"
	"      FROM pg_constraint c WHERE c.conrelid IN ($1, $2)\n"
	"), idx AS (\n"
	"    SELECT x.indrelid, i.relname, x.indisvalid,\n"
	"           substr(pg_get_indexdef(i.oid), strpos(pg_get_indexdef(i.oid), ' USING ')) AS tail,\n"
	"           (SELECT c.conname FROM pg_constraint c WHERE c.conindid = i.oid AND c.conrelid = x.indrelid\n"
	"                                                   AND c.contype IN ('p', 'u')) AS conname,\n"
	"           (SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.conindid = i.oid AND c.conrelid = x.indrelid\n"
	"                                                                  AND c.contype IN ('p', 'u')) AS condef\n"
	"      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid\n"
	"     WHERE x.indrelid IN ($1, $2) AND x.indisunique\n"
	")\n"
	"SELECT w.kind, w.detail FROM (\n"
	"    -- the swap makes a column it carries an identity to NOT NULL\n"
	"    SELECT 1 AS o, 'not_null' AS kind, format('Column %I.%I is NOT NULL on the old table only.', tab, attname) AS detail, attname::text AS name\n"
	"      FROM cols WHERE s_notnull AND NOT d_notnull AND NOT (s_identity <> '' AND d_identity = '')\n"
	"    UNION ALL\n"
	"    SELECT 2, 'check', format('Constraint %I (%s) is on the old table only.', s.conname, s.def), s.conname\n"
	"      FROM cons s\n"
	"     WHERE s.conrelid = $1 AND s.contype = 'c'\n"
	"       AND NOT EXISTS (SELECT FROM cons d WHERE d.conrelid = $2 AND d.contype = 'c' AND d.def = s.def)\n"
	"    UNION ALL\n"
	"    SELECT 3, 'unique', format('%s %I (%s) is on the old table only.',\n"
	"                               CASE WHEN s.conname IS NULL THEN 'Unique index' ELSE 'Constraint' END,\n"
	"                               coalesce(s.conname, s.relname), coalesce(s.condef, 'UNIQUE' || s.tail)),\n"
	"           coalesce(s.conname, s.relname)\n"
	"      FROM idx s\n"
	"     WHERE s.indrelid = $1 AND s.indisvalid\n"
	"       AND NOT EXISTS (SELECT FROM idx d WHERE d.indrelid = $2 AND d.indisvalid AND d.tail = s.tail)\n"
	"    UNION ALL\n"
	"    SELECT 4, 'exclusion', format('Constraint %I (%s) is on the old table only.', s.conname, s.def), s.conname\n"
	"      FROM cons s\n"
	"     WHERE s.conrelid = $1 AND s.contype = 'x'\n"
	"       AND NOT EXISTS (SELECT FROM cons d WHERE d.conrelid = $2 AND d.contype = 'x' AND d.def = s.def)\n"
	"    UNION ALL\n"
	"    SELECT 5, 'foreign_key', format('Foreign key %I (%s) is on the old table only.', s.conname, s.def), s.conname\n"
	"      FROM cons s\n"
	"     WHERE s.conrelid = $1 AND s.contype = 'f' AND s.confrelid <> $1\n"
	"       AND NOT EXISTS (SELECT FROM cons d WHERE d.conrelid = $2 AND d.contype = 'f' AND d.def = s.def)\n"
	"    UNION ALL\n"
	"    SELECT 6, 'generated',\n"
	"           CASE WHEN d_generated = ''\n"
	"                THEN format('Column %I.%I is generated on the old table only: GENERATED ALWAYS AS (%s) STORED.', tab, attname, s_expr)\n"
	"                ELSE format('Column %I.%I is generated as (%s) on the old table and as (%s) on the new one.', tab, attname, s_expr, d_expr) END,\n"
	"           attname\n"
	"      FROM cols WHERE s_generated <> '' AND (d_generated = '' OR s_expr IS DISTINCT FROM d_expr)\n"
	"    UNION ALL\n"
	"    SELECT 7, 'default', format('The default of column %I.%I is %s on the old table and %s on the new one.', tab, attname, s_expr, d_expr), attname\n"
	"      FROM cols WHERE s_generated = '' AND d_generated = '' AND s_expr IS NOT NULL AND d_expr IS NOT NULL\n"
	"                  AND s_expr <> d_expr\n"
	"    UNION ALL\n"
	"    SELECT 8, 'identity', format('Column %I.%I is GENERATED %s AS IDENTITY on the old table and %s on the new one.', tab, attname,\n"
	"                                 CASE s_identity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END,\n"
	"                                 CASE d_identity WHEN 'a' THEN 'GENERATED ALWAYS AS IDENTITY'\n"
	"                                                 WHEN 'd' THEN 'GENERATED BY DEFAULT AS IDENTITY'\n"
	"                                                 ELSE 'has a default of its own' END), attname\n"
	"      FROM cols WHERE s_identity <> '' AND (d_identity NOT IN ('', s_identity) OR (d_identity = '' AND d_expr IS NOT NULL))\n"
	"    UNION ALL\n"
	"    SELECT 9, 'partitioning',\n"
	"           CASE WHEN d.relkind = 'p'\n"
	"                THEN format('Table %I is partitioned by %s; the new table by %s.', s.relname, pg_get_partkeydef(s.oid), pg_get_partkeydef(d.oid))\n"
	"                ELSE format('Table %I is partitioned by %s; the new table is not partitioned.', s.relname, pg_get_partkeydef(s.oid)) END,\n"
	"           s.relname\n"
	"      FROM pg_class s, pg_class d\n"
	"     WHERE s.oid = $1 AND d.oid = $2 AND s.relkind = 'p'\n"
	"       AND (d.relkind <> 'p' OR pg_get_partkeydef(s.oid) <> pg_get_partkeydef(d.oid))\n"
	") w\n"
	"ORDER BY w.o, w.name\n";

/*
 * backfill._cutover_weaker(src regclass, dst regclass)
 * RETURNS TABLE (kind text, detail text)
 */
Datum
backfill_cutover_weaker(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {PG_GETARG_DATUM(0), PG_GETARG_DATUM(1)};
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	backfill_spi_enter();
	n = cutover_query(cutover_weaker_sql, true, 2, types, values);
	for (int i = 0; i < n; i++)
	{
		Datum		row[2];
		bool		isnull[2];

		row[0] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull[0]);
		row[1] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull[1]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, isnull);
	}
	backfill_spi_leave();
	return (Datum) 0;
}
