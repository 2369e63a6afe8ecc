/*-------------------------------------------------------------------------
 *
 * carry_views.c
 *	  The views that select from src select from dst after the swap: same
 *	  definition, same options, same OID.
 *
 * Each view's definition is printed before the renames, naming src by the
 * name dst then has; after them, CREATE OR REPLACE VIEW makes it again,
 * as the caller, who must own it.  A definition that does not fit dst (a
 * column it lacks, a type that differs) ends the cutover with a message
 * that names the view; a lock not had in time or a deadlock is a failed
 * attempt as any other (attempts.c), so that error goes up as it is.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

/* the views whose rules select from src, each as the statement that makes it again */
#define VIEWS \
	"SELECT format('CREATE OR REPLACE VIEW %s%s AS %s', v.oid::regclass," \
	"              CASE WHEN v.reloptions IS NOT NULL" \
	"                   THEN format(' WITH (%s)', array_to_string(v.reloptions, ', ')) ELSE '' END," \
	"              pg_get_viewdef(v.oid))," \
	"       v.oid::regclass" \
	"  FROM pg_class v" \
	" WHERE v.relkind = 'v'" \
	"   AND v.oid IN (SELECT rw.ev_class FROM pg_depend dep JOIN pg_rewrite rw ON rw.oid = dep.objid" \
	"                  WHERE dep.classid = 'pg_rewrite'::regclass AND dep.refclassid = 'pg_class'::regclass" \
	"                    AND dep.refobjid = $1 AND dep.deptype = 'n')" \
	" ORDER BY v.oid"

/* swap_read_views: the views over src, before the renames */
void
swap_read_views(Swap *swap)
{
	swap->views = swap_read_statements(VIEWS, swap->src, InvalidOid, 2, 0, 0);
}

/* CREATE OR REPLACE VIEW, for backfill_subxact_call */
static void
make_view(void *arg)
{
	cutover_run(((SwapStatement *) arg)->sql);
}

/* one view made again over dst, in a subtransaction whose error names the view */
static void
carry_view(Swap *swap, SwapStatement *view)
{
	ErrorData  *edata = backfill_subxact_call(make_view, view);

	if (edata == NULL)
		return;
	/* a failed attempt, tried again (attempts.c) */
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		edata->sqlerrcode == ERRCODE_T_R_DEADLOCK_DETECTED)
		ReThrowError(edata);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot carry view %s over to table %s",
					backfill_regclass_text(view->rel), swap->dst_text),
			 errdetail("Its definition does not fit table %s: %s.", swap->dst_text, edata->message),
			 errhint("Drop or redefine view %s before the cutover.",
					 backfill_regclass_text(view->rel))));
}

/* swap_carry_views: each view over src selects from dst, after the renames */
void
swap_carry_views(Swap *swap)
{
	ListCell   *lc;

	foreach(lc, swap->views)
		carry_view(swap, lfirst(lc));
}
