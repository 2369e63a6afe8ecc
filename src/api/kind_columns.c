/*-------------------------------------------------------------------------
 *
 * kind_columns.c
 *	  What the views show of a job's kind: the replication slot it holds
 *	  (backfill.jobs.slot_name) and whether it is RisingWave's snapshot
 *	  backfill (the phases of backfill.jobs.progress, and
 *	  backfill.ddl_progress.backfill_type).
 *
 * The views take these from the kind's routine (kinds/kind.h: slot_name,
 * snapshot_backfill) rather than naming kinds in SQL.  Both functions read
 * nothing but their arguments: a job's kind as backfill.job spells it
 * ("cdc" with backfill.job.remote is the remote cdc kind), its id and its
 * status.  The views run with their reader's rights (security_invoker),
 * so anyone may call them; a kind or a status that is not one is refused
 * as create_job refuses it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "catalog/catalog_access.h"
#include "kinds/kind.h"

PG_FUNCTION_INFO_V1(backfill_kind_slot_name_sql);
PG_FUNCTION_INFO_V1(backfill_kind_is_snapshot_backfill_sql);

/* the routine of the kind backfill.job's kind and remote columns name */
static const KindRoutine *
routine_of(text *kind, bool remote)
{
	BackfillKind k = backfill_parse_kind(text_to_cstring(kind));

	return backfill_kind_routine(remote ? backfill_remote_kind(k) : k);
}

/*
 * backfill._kind_slot_name(kind text, remote boolean, job_id bigint,
 *							status text) RETURNS text
 *		The replication slot a job of that kind holds in that status, by
 *		name; NULL when it holds none.  STRICT.
 */
Datum
backfill_kind_slot_name_sql(PG_FUNCTION_ARGS)
{
	const KindRoutine *routine = routine_of(PG_GETARG_TEXT_PP(0), PG_GETARG_BOOL(1));
	BackfillJobStatus status = backfill_parse_status(text_to_cstring(PG_GETARG_TEXT_PP(3)));
	char	   *slot = backfill_kind_slot_name(routine, PG_GETARG_INT64(2), status);

	if (slot == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(slot));
}

/*
 * backfill._kind_is_snapshot_backfill(kind text, remote boolean)
 *		RETURNS boolean
 *		Whether the kind is RisingWave's snapshot backfill.  STRICT.
 */
Datum
backfill_kind_is_snapshot_backfill_sql(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(routine_of(PG_GETARG_TEXT_PP(0), PG_GETARG_BOOL(1))->snapshot_backfill);
}
