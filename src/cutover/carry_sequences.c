/*-------------------------------------------------------------------------
 *
 * carry_sequences.c
 *	  The sequences a cutover carries: where the old table and the new one
 *	  both have an identity or serial column of one name, each with a
 *	  sequence of its own, the new one's goes on where the old one's was.
 *
 * The new table was filled with the old one's values, not from its own
 * sequence: left as it was, the first insert after the swap would take a
 * value the table holds already.  (A column whose sequence only the old
 * table has is the swap's: it moves the identity, its position with it.)
 *
 * Run as the caller, who needs SELECT on the old table's sequences and
 * UPDATE on the new one's; the swap holds both tables ACCESS EXCLUSIVE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "cutover/carry_internal.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_carry_identity);

/* each column of one name in both tables with its two sequences, by src's attnum */
#define SEQUENCE_PAIRS \
	"SELECT pg_get_serial_sequence($1::text, sa.attname)::regclass AS src_seq," \
	"       pg_get_serial_sequence($2::text, da.attname)::regclass AS dst_seq" \
	"  FROM pg_attribute sa" \
	"  JOIN pg_attribute da ON da.attrelid = $2 AND da.attname = sa.attname" \
	"                      AND da.attnum > 0 AND NOT da.attisdropped" \
	" WHERE sa.attrelid = $1 AND sa.attnum > 0 AND NOT sa.attisdropped" \
	" ORDER BY sa.attnum"

/* sequence dst_seq goes on where sequence src_seq is */
static void
carry_position(Oid src_seq, Oid dst_seq)
{
	char	   *sql = psprintf("SELECT last_value, is_called FROM %s", backfill_regclass_text(src_seq));
	Oid			types[3] = {REGCLASSOID, INT8OID, BOOLOID};
	Datum		values[3];
	bool		isnull;
	int			rc;

	cutover_run(sql);
	if (SPI_processed != 1)
		elog(ERROR, "sequence %u has no position", src_seq);
	values[0] = ObjectIdGetDatum(dst_seq);
	values[1] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	values[2] = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	rc = SPI_execute_with_args("SELECT setval($1, $2, $3)", 3, types, values, NULL, false, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed (%d): setval", rc);
}

/*
 * cutover_carry_identity
 *		Set the sequence of each identity or serial column of dst to the
 *		position of the sequence of the column of the same name of src,
 *		where both have one of their own.  A table not given (InvalidOid)
 *		has no columns.
 */
void
cutover_carry_identity(Oid src, Oid dst)
{
	int			n;
	Oid		   *pairs;

	backfill_spi_enter();
	cutover_query_pair(SEQUENCE_PAIRS, false, src, dst);
	n = (int) SPI_processed;
	pairs = palloc(sizeof(Oid) * 2 * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		pairs[2 * i] = cutover_oid(i, 1);
		pairs[2 * i + 1] = cutover_oid(i, 2);
	}
	for (int i = 0; i < n; i++)
	{
		Oid			src_seq = pairs[2 * i];
		Oid			dst_seq = pairs[2 * i + 1];

		if (!OidIsValid(src_seq) || !OidIsValid(dst_seq) || src_seq == dst_seq)
			continue;
		carry_position(src_seq, dst_seq);
	}
	backfill_spi_leave();
}

/*
 * backfill._cutover_carry_identity(src regclass, dst regclass) RETURNS void
 *		cutover_carry_identity.  Not strict: a NULL table has no columns.
 */
Datum
backfill_cutover_carry_identity(PG_FUNCTION_ARGS)
{
	cutover_carry_identity(PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0),
						   PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1));
	PG_RETURN_VOID();
}
