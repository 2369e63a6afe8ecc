/*-------------------------------------------------------------------------
 *
 * swap_carry.c
 *	  The steps of the swap (swap.c) that are carry functions of their own
 *	  (carry_internal.h): the materialized views over src, printed before
 *	  the renames and made again over dst after them (matview_definitions.c,
 *	  carry_matviews.c), the owner and the privileges (carry_acl.c), the
 *	  sequences of identity columns, the functions of src's row type and
 *	  the subscriptions (carry_sequences.c, carry_functions.c,
 *	  carry_subscriptions.c).
 *
 * Each runs as the caller.  The materialized views and the identity
 * sequences are called directly, as a statement of their own with a
 * snapshot of its own, as the SQL functions behind them were.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"

#include "cutover/carry_internal.h"
#include "cutover/swap_internal.h"
#include "lib/lib.h"

/* the materialized views over src as matview_definitions.c prints them, or NULL */
Datum
swap_read_matviews(Swap *swap, bool *isnull)
{
	Datum		matviews;

	cutover_statement_begin();
	matviews = cutover_matviews(swap->src, isnull);
	cutover_statement_end();
	return matviews;
}

/* the materialized views, made again over dst */
void
swap_carry_matviews(Swap *swap, Datum matviews, bool isnull)
{
	if (isnull)
		return;
	cutover_statement_begin();
	cutover_carry_matviews(swap->src, swap->dst, matviews);
	cutover_statement_end();
}

/*
 * The owner, then the privileges: exactly src's, the table's and the
 * columns' (by name), with their grantors: a privilege granted through a
 * grant option stays within reach of REVOKE ... CASCADE of that option,
 * and dst's own column grants are gone (carry_acl.c)
 */
void
swap_carry_owner(Swap *swap)
{
	cutover_query_pair("SELECT relowner FROM pg_class WHERE oid = $1", false, swap->dst,
					   InvalidOid);
	if (SPI_processed == 1 && cutover_oid(0, 1) != swap->src_owner)
		cutover_run(psprintf("ALTER TABLE %s OWNER TO %s", backfill_regclass_text(swap->dst),
							 quote_identifier(GetUserNameFromId(swap->src_owner, false))));
	cutover_copy_acl(swap->src, swap->dst);
}

/*
 * The sequences of identity and serial columns that dst has of its own go
 * on where src's were, the functions of src's row type take dst's, the
 * subscriptions write to dst (carry_functions.c, carry_subscriptions.c)
 */
void
swap_carry_by_oid(Swap *swap)
{
	cutover_statement_begin();
	cutover_carry_identity(swap->src, swap->dst);
	cutover_statement_end();
	cutover_carry_functions(swap->src, swap->dst);
	cutover_carry_subscriptions(swap->src, swap->dst);
}
