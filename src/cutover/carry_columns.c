/*-------------------------------------------------------------------------
 *
 * carry_columns.c
 *	  What the swap carries column by column, from each of src's columns to
 *	  dst's of the same name: its comment, statistics target, options, its
 *	  identity or its default, and the sequences it owns.
 *
 * Options: only those a user sets (n_distinct, n_distinct_inherited),
 * each that dst's column has not set itself; the server keeps entries of
 * its own there.  An identity that only src's column has moves to dst's
 * (column_sequences.c).  A default that dst's column lacks is given,
 * unless src's column is generated.  An identity or default of dst's own
 * stays, as _cutover_weaker lists it.  Then the sequences src's columns
 * own are dst's columns' (column_sequences.c).
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
		swap_move_identity(swap, col->name, col->identity);
	else if (col->default_expr && !col->dst_hasdef && col->generated == '\0')
		cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s",
							 backfill_regclass_text(swap->dst), column, col->default_expr));
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
	swap_carry_owned_sequences(swap);
}
