/*-------------------------------------------------------------------------
 *
 * partition_pairs.c
 *	  The partitions of two partitioned tables that take each other's place
 *	  at a cutover, paired.
 *
 * Each partition of src goes with the one of dst of the same bounds, one
 * to one, both tables partitioned by the same key (partition_keys.c): the
 * partition of dst takes the name of the one it replaces.  Anything else
 * is refused before anything is locked or changed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "cutover/lock_step.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_partition_pairs);

/* the partitions of both, matched by their bounds, the unmatched last */
static const char *const pairs_sql =
"WITH s AS (SELECT i.inhrelid AS part, pg_get_expr(c.relpartbound, c.oid) AS bound"
"             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1),"
"     d AS (SELECT i.inhrelid AS part, pg_get_expr(c.relpartbound, c.oid) AS bound"
"             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $2)"
"SELECT s.part::regclass AS s_part, d.part::regclass AS d_part, coalesce(s.bound, d.bound) AS bound"
"  FROM s FULL JOIN d ON d.bound = s.bound"
" ORDER BY s.part IS NULL, d.part IS NULL, coalesce(s.part, d.part)";

/* column col of row i of the last SPI result as text, "" for NULL */
static char *
text_or_empty(uint64 i, int col)
{
	char	   *value = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, col);

	return value ? value : "";
}

/* refuse the partition of row i, which has no match on the other side */
static void
refuse_unmatched(Oid src, Oid dst, uint64 i, bool src_has_it)
{
	Oid			part_table = src_has_it ? src : dst;
	Oid			other_table = src_has_it ? dst : src;

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot cut over table %s because the partitions of table %s do not match its own",
					backfill_regclass_text(src), backfill_regclass_text(dst)),
			 errdetail("Partition %s of table %s, %s, has no partition of table %s with the same bounds. Each partition takes the name of the partition it replaces.",
					   text_or_empty(i, src_has_it ? 1 : 2), backfill_regclass_text(part_table),
					   text_or_empty(i, 3), backfill_regclass_text(other_table)),
			 errhint("Partition table %s as table %s is before the cutover.",
					 backfill_regclass_text(dst), backfill_regclass_text(src))));
}

/*
 * backfill_cutover_pair_partitions
 *		The partitions of src and of dst, two partitioned tables, in pairs:
 *		(*old_parts)[k] is src's whose place (*new_parts)[k] of dst's takes;
 *		an error unless both are partitioned by the same key and their
 *		partitions match one to one.  read_only: the catalogs are read under
 *		the caller's snapshot, as a STABLE function reads them.
 */
void
backfill_cutover_pair_partitions(Oid src, Oid dst, bool read_only,
								 List **old_parts, List **new_parts)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	MemoryContext caller = CurrentMemoryContext;

	*old_parts = NIL;
	*new_parts = NIL;
	backfill_spi_enter();
	backfill_cutover_check_partition_keys(src, dst, read_only);
	if (SPI_execute_with_args(pairs_sql, 2, types, values, NULL, read_only, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		src_null;
		bool		dst_null;
		Datum		old_part = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &src_null);
		Datum		new_part = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &dst_null);
		MemoryContext old;

		if (src_null || dst_null)
			refuse_unmatched(src, dst, i, !src_null);
		old = MemoryContextSwitchTo(caller);
		*old_parts = lappend_oid(*old_parts, DatumGetObjectId(old_part));
		*new_parts = lappend_oid(*new_parts, DatumGetObjectId(new_part));
		MemoryContextSwitchTo(old);
	}
	backfill_spi_leave();
}

/*
 * backfill._cutover_partition_pairs(src regclass, dst regclass,
 *									 OUT old_part regclass, OUT new_part regclass)
 *		RETURNS SETOF record
 *		The pairs of backfill_cutover_pair_partitions.
 */
Datum
backfill_cutover_partition_pairs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *old_parts;
	List	   *new_parts;
	ListCell   *o;
	ListCell   *n;

	InitMaterializedSRF(fcinfo, 0);
	backfill_cutover_pair_partitions(PG_GETARG_OID(0), PG_GETARG_OID(1), true,
									 &old_parts, &new_parts);
	forboth(o, old_parts, n, new_parts)
	{
		Datum		values[2] = {ObjectIdGetDatum(lfirst_oid(o)), ObjectIdGetDatum(lfirst_oid(n))};
		bool		nulls[2] = {false, false};

		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
