/*-------------------------------------------------------------------------
 *
 * carry_columns.c
 *	  What the swap carries column by column, from each of src's columns to
 *	  dst's of the same name: its comment, statistics target, options, its
 *	  identity or its default, and the sequences it owns.
 *
 * Options: only those a user sets (n_distinct, n_distinct_inherited),
 * each that dst's column has not set itself; the server keeps entries of
 * its own there.  An identity that only src's column has moves to dst's,
 * its sequence going on where src's was, with src's options but a bound
 * that is its type's own, left to the new column's type (which a
 * migration may have widened).  A default that dst's column lacks is
 * given, unless src's column is generated.  An identity or default of
 * dst's own stays, as _cutover_weaker lists it.  A sequence owned by a
 * column of src (serial) is owned by dst's of that name after.
 *
 * Run as the caller, after the renames, in its SPI connection.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

/* each column of src that dst has by name, in src's order, with what the swap carries */
#define COLUMNS \
	"SELECT sa.attname, sa.attstattarget, sa.attidentity," \
	"       (SELECT string_agg(format('%s = %L', o.option_name, o.option_value), ', ')" \
	"          FROM pg_options_to_table(sa.attoptions) o" \
	"         WHERE o.option_name IN ('n_distinct', 'n_distinct_inherited')" \
	"           AND o.option_name NOT IN (SELECT option_name FROM pg_options_to_table(da.attoptions)))," \
	"       da.attidentity, da.atthasdef, pg_get_expr(ad.adbin, ad.adrelid), sa.attgenerated," \
	"       col_description($1, sa.attnum)" \
	"  FROM pg_attribute sa" \
	"  JOIN pg_attribute da ON da.attrelid = $2 AND da.attname = sa.attname" \
	"                      AND da.attnum > 0 AND NOT da.attisdropped" \
	"  LEFT JOIN pg_attrdef ad ON ad.adrelid = $1 AND ad.adnum = sa.attnum" \
	" WHERE sa.attrelid = $1 AND sa.attnum > 0 AND NOT sa.attisdropped" \
	" ORDER BY sa.attnum"

/*
 * the sequence of src's identity column $2, with its options, a bound that
 * is its type's own left out
 */
#define IDENTITY_SEQUENCE \
	"SELECT s.seq," \
	"       (SELECT concat_ws(' ', 'INCREMENT BY ' || q.seqincrement," \
	"                         CASE WHEN q.seqmin <> CASE WHEN q.seqincrement > 0 THEN 1" \
	"                                                    ELSE lim.lo END" \
	"                              THEN 'MINVALUE ' || q.seqmin END," \
	"                         CASE WHEN q.seqmax <> CASE WHEN q.seqincrement > 0 THEN lim.hi" \
	"                                                    ELSE -1 END" \
	"                              THEN 'MAXVALUE ' || q.seqmax END," \
	"                         'START WITH ' || q.seqstart, 'CACHE ' || q.seqcache," \
	"                         CASE WHEN q.seqcycle THEN 'CYCLE' ELSE 'NO CYCLE' END)" \
	"          FROM pg_sequence q," \
	"               LATERAL (SELECT CASE q.seqtypid WHEN 'int2'::regtype THEN -32768" \
	"                                               WHEN 'int4'::regtype THEN -2147483648" \
	"                                               ELSE -9223372036854775808 END AS lo," \
	"                               CASE q.seqtypid WHEN 'int2'::regtype THEN 32767" \
	"                                               WHEN 'int4'::regtype THEN 2147483647" \
	"                                               ELSE 9223372036854775807 END AS hi) lim" \
	"         WHERE q.seqrelid = s.seq)" \
	"  FROM (SELECT pg_get_serial_sequence($1::text, $2)::regclass AS seq) s"

/* the sequences owned by a column of src that dst has by name */
#define OWNED_SEQUENCES \
	"SELECT dep.objid::regclass AS seq, a.attname" \
	"  FROM pg_depend dep" \
	"  JOIN pg_class c ON c.oid = dep.objid AND c.relkind = 'S'" \
	"  JOIN pg_attribute a ON a.attrelid = $1 AND a.attnum = dep.refobjsubid" \
	" WHERE dep.classid = 'pg_class'::regclass AND dep.refclassid = 'pg_class'::regclass" \
	"   AND dep.refobjid = $1 AND dep.deptype = 'a'" \
	"   AND EXISTS (SELECT FROM pg_attribute b WHERE b.attrelid = $2 AND b.attname = a.attname" \
	"                                           AND b.attnum > 0 AND NOT b.attisdropped)"

/* one column of src as COLUMNS reads it */
typedef struct Column
{
	char	   *name;
	int			stattarget;
	char		identity;
	char	   *options;
	char		dst_identity;
	bool		dst_hasdef;
	char	   *default_expr;
	char		generated;
	char	   *comment;
} Column;

/* the first character of a "char" column, '\0' for '' */
static char
char_value(int row, int col)
{
	char	   *value = cutover_value(row, col);

	return value ? value[0] : '\0';
}

/*
 * The identity of src's column moves to dst's, its sequence going on where
 * src's was
 */
static void
move_identity(Swap *swap, const Column *col)
{
	char	   *seq;
	char	   *options;
	Datum		last;
	Datum		called;
	bool		isnull;
	Oid			types[4] = {REGCLASSOID, TEXTOID, INT8OID, BOOLOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	cutover_query_rel_text(IDENTITY_SEQUENCE, swap->src, col->name);
	seq = cutover_value(0, 1);
	options = cutover_value(0, 2);
	cutover_run(psprintf("SELECT last_value, is_called FROM %s", seq ? seq : ""));
	last = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	nulls[2] = isnull ? 'n' : ' ';
	called = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	nulls[3] = isnull ? 'n' : ' ';
	cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s DROP IDENTITY",
						 backfill_regclass_text(swap->src), quote_identifier(col->name)));
	cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL,"
						 " ALTER COLUMN %s ADD GENERATED %s AS IDENTITY (%s)",
						 backfill_regclass_text(swap->dst), quote_identifier(col->name),
						 quote_identifier(col->name),
						 col->identity == 'a' ? "ALWAYS" : "BY DEFAULT",
						 options ? options : ""));
	values[0] = ObjectIdGetDatum(swap->dst);
	values[1] = CStringGetTextDatum(col->name);
	values[2] = last;
	values[3] = called;
	backfill_spi_exec_args("SELECT setval(pg_get_serial_sequence($1::text, $2)::regclass, $3, $4)",
						   4, types, values, nulls, SPI_OK_SELECT);
}

/* what one column of src gives dst's of its name */
static void
carry_column(Swap *swap, const Column *col)
{
	const char *column = quote_identifier(col->name);

	if (col->comment)
		cutover_run(psprintf("COMMENT ON COLUMN %s.%s IS %s", backfill_regclass_text(swap->dst),
							 column, quote_literal_cstr(col->comment)));
	if (col->stattarget >= 0)
		cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s SET STATISTICS %d",
							 backfill_regclass_text(swap->dst), column, col->stattarget));
	if (col->options)
		cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s SET (%s)",
							 backfill_regclass_text(swap->dst), column, col->options));
	if (col->identity != '\0' && col->dst_identity == '\0')
		move_identity(swap, col);
	else if (col->default_expr && !col->dst_hasdef && col->generated == '\0')
		cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s",
							 backfill_regclass_text(swap->dst), column, col->default_expr));
}

/* the sequences of src's columns are dst's columns' */
static void
carry_owned_sequences(Swap *swap)
{
	int			n;
	char	  **seqs;
	char	  **names;

	cutover_query_pair(OWNED_SEQUENCES, false, swap->src, swap->dst);
	n = (int) SPI_processed;
	seqs = palloc(sizeof(char *) * Max(n, 1));
	names = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		seqs[i] = cutover_value(i, 1);
		names[i] = cutover_value(i, 2);
	}
	for (int i = 0; i < n; i++)
		cutover_run(psprintf("ALTER SEQUENCE %s OWNED BY %s.%s", seqs[i],
							 backfill_regclass_text(swap->dst), quote_identifier(names[i])));
}

/*
 * swap_carry_columns
 *		Each column of src gives dst's of its name its comment, statistics
 *		target, options and identity or default; then the sequences src's
 *		columns own (see the file header).  After the renames.
 */
void
swap_carry_columns(Swap *swap)
{
	int			n;
	Column	   *cols;

	cutover_query_pair(COLUMNS, false, swap->src, swap->dst);
	n = (int) SPI_processed;
	cols = palloc0(sizeof(Column) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		cols[i].name = cutover_value(i, 1);
		cols[i].stattarget = pg_strtoint32(cutover_value(i, 2));
		cols[i].identity = char_value(i, 3);
		cols[i].options = cutover_value(i, 4);
		cols[i].dst_identity = char_value(i, 5);
		cols[i].dst_hasdef = cutover_bool(i, 6);
		cols[i].default_expr = cutover_value(i, 7);
		cols[i].generated = char_value(i, 8);
		cols[i].comment = cutover_value(i, 9);
	}
	for (int i = 0; i < n; i++)
		carry_column(swap, &cols[i]);
	carry_owned_sequences(swap);
}
