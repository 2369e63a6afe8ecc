/*-------------------------------------------------------------------------
 *
 * column_sequences.c
 *	  The sequences of src's columns that the swap gives dst's columns of
 *	  the same names: an identity only src's column has, and the sequences
 *	  src's columns own.
 *
 * An identity that only src's column has moves to dst's, its sequence
 * going on where src's was, with src's options but a bound that is its
 * type's own, left to the new column's type (which a migration may have
 * widened).  A sequence owned by a column of src (serial) is owned by
 * dst's of that name after.  (Where both tables have a sequence of their
 * own, the new one goes on where the old one was: carry_sequences.c.)
 *
 * Run as the caller, after the renames, in its SPI connection.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

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

/*
 * swap_move_identity
 *		The identity of src's column moves to dst's column of that name, its
 *		sequence going on where src's was.  identity: src's attidentity.
 */
void
swap_move_identity(Swap *swap, const char *column, char identity)
{
	char	   *seq;
	char	   *options;
	Datum		last;
	Datum		called;
	bool		isnull;
	Oid			types[4] = {REGCLASSOID, TEXTOID, INT8OID, BOOLOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};

	cutover_query_rel_text(IDENTITY_SEQUENCE, swap->src, column);
	seq = cutover_value(0, 1);
	options = cutover_value(0, 2);
	cutover_run(psprintf("SELECT last_value, is_called FROM %s", seq ? seq : ""));
	last = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	nulls[2] = isnull ? 'n' : ' ';
	called = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	nulls[3] = isnull ? 'n' : ' ';
	cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s DROP IDENTITY",
						 backfill_regclass_text(swap->src), quote_identifier(column)));
	cutover_run(psprintf("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL,"
						 " ALTER COLUMN %s ADD GENERATED %s AS IDENTITY (%s)",
						 backfill_regclass_text(swap->dst), quote_identifier(column),
						 quote_identifier(column),
						 identity == 'a' ? "ALWAYS" : "BY DEFAULT",
						 options ? options : ""));
	values[0] = ObjectIdGetDatum(swap->dst);
	values[1] = CStringGetTextDatum(column);
	values[2] = last;
	values[3] = called;
	backfill_spi_exec_args("SELECT setval(pg_get_serial_sequence($1::text, $2)::regclass, $3, $4)",
						   4, types, values, nulls, SPI_OK_SELECT);
}

/*
 * swap_carry_owned_sequences
 *		The sequences src's columns own (serial) are owned by dst's columns
 *		of the same names.
 */
void
swap_carry_owned_sequences(Swap *swap)
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
