/*-------------------------------------------------------------------------
 *
 * partition_pair_names.c
 *	  The pairs of partitions of two partitioned tables at the swap
 *	  (partition_pairs.c), each with the names and the schema the renames
 *	  of carry_partitions.c give and take.
 *
 * The pairs are read as a statement of their own, then their names as the
 * caller sees them in its SPI connection, before any partition is renamed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"

#include "cutover/carry_internal.h"
#include "cutover/lock_step.h"
#include "lib/lib.h"

#define PARTITION_PAIRS \
	"SELECT p.old_part, p.new_part, o.relname, n.relname, ns.nspname" \
	"  FROM unnest($1::pg_catalog.oid[], $2::pg_catalog.oid[]) p(old_part, new_part)" \
	"  JOIN pg_class o ON o.oid = p.old_part" \
	"  JOIN pg_namespace ns ON ns.oid = o.relnamespace" \
	"  JOIN pg_class n ON n.oid = p.new_part" \
	" ORDER BY o.relname"

/*
 * cutover_partition_pairs
 *		The pairs of partitions of src and dst, by the name of src's, *n of
 *		them: an error unless they match one to one (partition_pairs.c),
 *		read with the snapshot of a statement of their own.  The caller is
 *		connected to SPI.
 */
PartitionPair *
cutover_partition_pairs(Oid src, Oid dst, int *n)
{
	PartitionPair *pairs;
	List	   *old_parts;
	List	   *new_parts;
	Oid			types[2] = {OIDARRAYOID, OIDARRAYOID};
	Datum		values[2];

	cutover_statement_begin();
	backfill_cutover_pair_partitions(src, dst, true, &old_parts, &new_parts);
	cutover_statement_end();
	values[0] = backfill_oid_list_array(old_parts);
	values[1] = backfill_oid_list_array(new_parts);
	backfill_spi_exec_args(PARTITION_PAIRS, 2, types, values, NULL, SPI_OK_SELECT);
	*n = (int) SPI_processed;
	pairs = palloc0(sizeof(PartitionPair) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		pairs[i].old_part = cutover_oid(i, 1);
		pairs[i].new_part = cutover_oid(i, 2);
		pairs[i].name = cutover_value(i, 3);
		pairs[i].new_name = cutover_value(i, 4);
		pairs[i].schema = cutover_value(i, 5);
	}
	return pairs;
}
