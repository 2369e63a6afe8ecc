/*-------------------------------------------------------------------------
 *
 * partition_keys.c
 *	  Two partitioned tables that take each other's place at a cutover are
 *	  partitioned by the same key, or the cutover is refused.
 *
 * Each partition of dst takes the name of the partition of src of the same
 * bounds (partition_pairs.c): bounds compare only under the same key.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "cutover/lock_step.h"
#include "lib/lib.h"

/*
 * backfill_cutover_check_partition_keys
 *		Refuse tables partitioned by different keys.  read_only: the
 *		catalogs are read under the caller's snapshot.  The caller is
 *		connected to SPI.
 */
void
backfill_cutover_check_partition_keys(Oid src, Oid dst, bool read_only)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	char	   *src_key;
	char	   *dst_key;

	if (SPI_execute_with_args("SELECT pg_get_partkeydef($1), pg_get_partkeydef($2)",
							  2, types, values, NULL, read_only, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed");
	src_key = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	dst_key = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	if ((src_key == NULL) != (dst_key == NULL) ||
		(src_key != NULL && strcmp(src_key, dst_key) != 0))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cut over table %s because table %s is partitioned differently",
						backfill_regclass_text(src), backfill_regclass_text(dst)),
				 errdetail("Table %s is partitioned by %s, table %s by %s. Each partition takes the name of the partition it replaces.",
						   backfill_regclass_text(src), src_key ? src_key : "",
						   backfill_regclass_text(dst), dst_key ? dst_key : ""),
				 errhint("Partition table %s as table %s is.",
						 backfill_regclass_text(dst), backfill_regclass_text(src))));
}
