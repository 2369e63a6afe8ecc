/*-------------------------------------------------------------------------
 *
 * names.c
 *	  The names backfill.job gives kinds and statuses, and the kind a job
 *	  of a kind is when its upstream is a foreign table.
 *
 * The catalog names the remote cdc kind "cdc", with backfill.job.remote
 * set: backfill_remote_kind decides which kind reads such a job, for
 * create_job and for a loaded job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "backfill.h"
#include "catalog/catalog_access.h"

static const char *const kind_names[] = {
	[BACKFILL_KIND_NO_SHUFFLE] = "no_shuffle",
	[BACKFILL_KIND_ARRANGEMENT] = "arrangement",
	[BACKFILL_KIND_SNAPSHOT] = "snapshot",
	[BACKFILL_KIND_CDC] = "cdc",
	[BACKFILL_KIND_REMOTE_CDC] = "cdc",	/* with backfill.job.remote */
};

const char *
backfill_kind_name(BackfillKind kind)
{
	return kind_names[kind];
}

/* the kind a name in backfill.job or create_job's argument stands for */
BackfillKind
backfill_parse_kind(const char *name)
{
	for (int i = 0; i < lengthof(kind_names); i++)
		if (strcmp(name, kind_names[i]) == 0)
			return (BackfillKind) i;

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized backfill kind \"%s\"", name),
			 errhint("Valid kinds are \"no_shuffle\", \"arrangement\", \"snapshot\" and \"cdc\".")));
	pg_unreachable();
}

/*
 * backfill_remote_kind
 *		The kind a job of kind "kind" is when it reads a foreign table: cdc
 *		on a foreign table is the remote cdc kind, which follows another
 *		server's changes.  Decided here alone, for create_job (the relation
 *		is foreign, kind.c) and for a loaded job (backfill.job.remote says
 *		it was); a kind that cannot read one is the caller's to refuse.
 */
BackfillKind
backfill_remote_kind(BackfillKind kind)
{
	return kind == BACKFILL_KIND_CDC ? BACKFILL_KIND_REMOTE_CDC : kind;
}

static const char *const status_names[] = {
	[BACKFILL_STATUS_PENDING] = "pending",
	[BACKFILL_STATUS_BACKFILLING] = "backfilling",
	[BACKFILL_STATUS_FINISHED] = "finished",
	[BACKFILL_STATUS_FAILED] = "failed",
	[BACKFILL_STATUS_CANCELLED] = "cancelled",
	[BACKFILL_STATUS_DROPPED] = "dropped",
};

/* the status a word of backfill.job.status stands for */
BackfillJobStatus
backfill_parse_status(const char *name)
{
	for (int i = 0; i < lengthof(status_names); i++)
		if (strcmp(name, status_names[i]) == 0)
			return (BackfillJobStatus) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized backfill job status \"%s\"", name),
			 errhint("Valid statuses are \"pending\", \"backfilling\", \"finished\", \"failed\" and \"cancelled\".")));
	pg_unreachable();
}
