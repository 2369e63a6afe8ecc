/*-------------------------------------------------------------------------
 *
 * carry_replication.c
 *	  What logical replication knows of src that the swap carries to dst:
 *	  its replica identity, and the publications it is in.
 *
 * Replica identity: src's, through dst's index on the same columns when it
 * is an index (index_pairs.c).  Publications: dst joins each that src
 * leaves.
 *
 * Run as the caller, after the renames, in its SPI connection.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

/* the publications src is in, by name */
#define PUBLICATIONS \
	"SELECT p.pubname FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid" \
	" WHERE pr.prrelid = $1 ORDER BY 1"

/* dst's index standing for src's replica identity index */
static char *
identity_index(Swap *swap)
{
	char	   *index;

	cutover_query_pair(psprintf("SELECT relname FROM pg_class WHERE oid = (%s)",
								cutover_identity_index_sql),
					   false, swap->src, swap->dst);
	index = SPI_processed == 1 ? cutover_value(0, 1) : NULL;
	if (index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot carry the replica identity of table %s over to table %s",
						backfill_regclass_text(swap->src), backfill_regclass_text(swap->dst)),
				 errdetail("Table %s has no unique index on the columns of the replica identity index of table %s.",
						   backfill_regclass_text(swap->dst), backfill_regclass_text(swap->src)),
				 errhint("Create such an index on table %s first.", swap->dst_text)));
	return psprintf("USING INDEX %s", quote_identifier(index));
}

/*
 * swap_carry_replica_identity
 *		src's replica identity is dst's.  After the renames.
 */
void
swap_carry_replica_identity(Swap *swap)
{
	const char *identity;

	switch (swap->src_replident)
	{
		case 'd':
			identity = "DEFAULT";
			break;
		case 'f':
			identity = "FULL";
			break;
		case 'n':
			identity = "NOTHING";
			break;
		default:
			identity = identity_index(swap);
			break;
	}
	cutover_run(psprintf("ALTER TABLE %s REPLICA IDENTITY %s", backfill_regclass_text(swap->dst),
						 identity));
}

/*
 * swap_carry_publications
 *		dst joins each publication src leaves.  After the renames.
 */
void
swap_carry_publications(Swap *swap)
{
	ListCell   *lc;

	foreach(lc, swap_read_statements(PUBLICATIONS, swap->src, InvalidOid, 0, 0, 0))
	{
		const char *pubname = quote_identifier(((SwapStatement *) lfirst(lc))->sql);

		cutover_run(psprintf("ALTER PUBLICATION %s ADD TABLE %s", pubname,
							 backfill_regclass_text(swap->dst)));
		cutover_run(psprintf("ALTER PUBLICATION %s DROP TABLE %s", pubname,
							 backfill_regclass_text(swap->src)));
	}
}
