/*-------------------------------------------------------------------------
 *
 * partition_index_names.c
 *	  The indexes of a pair of partitions (carry_partitions.c) exchange
 *	  their names, as the indexes of the swap's two tables do (swap.c).
 *
 * Each pair of indexes of the same definition (index_pairs.c) exchanges
 * its names through a third, so that the rollback, the same swap the
 * other way, exchanges them back.  Each ALTER INDEX runs as the caller,
 * who needs to own the partition; the swap holds the tables ACCESS
 * EXCLUSIVE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "cutover/carry_internal.h"

/* one index of schema renamed, all names unquoted */
static void
rename_index(const char *schema, const char *from, const char *to)
{
	cutover_run(psprintf("ALTER INDEX %s RENAME TO %s",
						 quote_qualified_identifier(schema, from), quote_identifier(to)));
}

/*
 * cutover_swap_index_names
 *		The indexes of pair's two partitions of the same definition
 *		exchange their names, through a name of the old partition's own.
 *		The caller is connected to SPI.
 */
void
cutover_swap_index_names(const PartitionPair *pair)
{
	int			n;
	char	  **src_indexes;
	char	  **dst_indexes;

	cutover_query_pair(cutover_index_pairs_sql, false, pair->old_part, pair->new_part);
	n = (int) SPI_processed;
	src_indexes = palloc(sizeof(char *) * Max(n, 1));
	dst_indexes = palloc(sizeof(char *) * Max(n, 1));
	for (int k = 0; k < n; k++)
	{
		src_indexes[k] = cutover_value(k, 1);
		dst_indexes[k] = cutover_value(k, 2);
	}
	for (int k = 0; k < n; k++)
	{
		char	   *tmp = psprintf("backfill_cutover_%u_%d", pair->old_part, k + 1);

		rename_index(pair->schema, src_indexes[k], tmp);
		rename_index(pair->schema, dst_indexes[k], src_indexes[k]);
		rename_index(pair->schema, tmp, dst_indexes[k]);
	}
}
