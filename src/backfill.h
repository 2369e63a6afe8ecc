/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  The shared types of the backfill extension: jobs, actors, vnode
 *	  positions, role contexts, kept plans.
 *
 * A streaming job copies an upstream table into a downstream table while
 * the upstream keeps changing.  Its definition lives in backfill.job and
 * backfill.actor; its progress in its own state table, laid out as
 * RisingWave's state tables of its kind (each kind's file says how).
 *
 * The sources are cut in folders by layer: src/LAYERS is the map, which
 * doc/layers.md renders with each folder's files, and a file calls only
 * files of its own folder and of the folders its folder may depend on
 * (scripts/check_layers.sh checks it from the includes and the call graph).
 * Each folder's headers declare what the layers above it may call; this
 * file and barrier.h (the barrier executor's state) hold the types they
 * share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_H
#define BACKFILL_H

#include "access/attnum.h"
#include "access/htup.h"
#include "access/stratnum.h"
#include "access/tupdesc.h"
#include "access/xlogdefs.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/palloc.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "lib/compat.h"

/* RisingWave's vnode count, kept for compatibility (VirtualNode::COUNT) */
#define BACKFILL_VNODE_COUNT 256

/* upper bound of parallelism: one actor per vnode */
#define BACKFILL_MAX_PARALLELISM BACKFILL_VNODE_COUNT

/* the schema the extension lives in (backfill.control: relocatable = false) */
#define BACKFILL_SCHEMA "backfill"

/*
 * The search_path of the extension's own statements (privilege.c), as the
 * SQL functions of the extension set it
 */
#define BACKFILL_CATALOG_PATH "pg_catalog, pg_temp"

/* field4 of the advisory lock tag that marks a job as being run or changed */
#define BACKFILL_LOCK_FIELD4 0x6266

/* field4 of the advisory lock tag that guards a cdc job's replication slot */
#define BACKFILL_SLOT_LOCK_FIELD4 0x6267

/* field4 of the advisory lock tag that makes taking an id one step */
#define BACKFILL_ID_LOCK_FIELD4 0x6268

/* field4 of the advisory lock tag that makes a role's creators count in turn */
#define BACKFILL_CAPS_LOCK_FIELD4 0x6269

/*
 * field4 of the transaction-level advisory lock taken, without waiting, by
 * the transaction that writes a job's verify row (verification_rows.c)
 */
#define BACKFILL_VERIFY_LOCK_FIELD4 0x6276

typedef enum BackfillKind
{
	BACKFILL_KIND_NO_SHUFFLE,	/* legacy: cannot resume */
	BACKFILL_KIND_ARRANGEMENT,	/* per-vnode progress, resumes */
	BACKFILL_KIND_SNAPSHOT,
	BACKFILL_KIND_CDC,
	BACKFILL_KIND_REMOTE_CDC	/* "cdc" from a foreign table
								 * (kinds/remote/kind_remote.c) */
} BackfillKind;

#define BACKFILL_NUM_KINDS 5

/*
 * The progress of one vnode, as decoded from its state row.  A vnode without
 * a row is "not started": no position, not finished, no rows.
 */
typedef struct VnodeState
{
	bool		present;		/* a state row exists */
	bool		finished;		/* backfill_finished */
	bool		has_pos;		/* current_pos is not NULL */
	Datum	   *pos;			/* current_pos, npk values */
	bool	   *pos_null;
	int64		row_count;
	int64		epoch;			/* snapshot kind: the epoch of row_count */
	bool		dirty;			/* changed since the last persisted barrier */
} VnodeState;

typedef struct BackfillActor
{
	int32		actor_id;
	int			vnode_start;	/* inclusive */
	int			vnode_end;		/* inclusive */
} BackfillActor;

/*
 * A job's status, as backfill.job.status spells it (its CHECK constraint
 * lists the same words), parsed once when the job is loaded or its status
 * re-read.  DROPPED is no row: the job was dropped while loaded.
 */
typedef enum BackfillJobStatus
{
	BACKFILL_STATUS_PENDING,
	BACKFILL_STATUS_BACKFILLING,
	BACKFILL_STATUS_FINISHED,
	BACKFILL_STATUS_FAILED,
	BACKFILL_STATUS_CANCELLED,
	BACKFILL_STATUS_DROPPED
} BackfillJobStatus;

/*
 * A job as loaded by a run.  Lives in the run's memory context, which
 * survives the commit of each barrier.
 */
typedef struct BackfillJob
{
	int64		job_id;
	char	   *job_name;
	BackfillKind kind;
	BackfillJobStatus status;
	Oid			owner;
	Oid			upstream;
	Oid			downstream;
	Oid			state_table;
	Oid			change_table;
	int32		fragment_id;
	int			chunk_size;
	int			rate_limit;		/* rows/s per actor; 0 paused; -1 none */
	bool		background;		/* run_mode 'background' */
	bool		follows;		/* once finished, a worker follows the upstream
								 * (no trigger applies its changes) */
	int64		epoch;			/* of the last barrier, any actor */
	int32		runs;
	void	   *kind_data;		/* its kind's own state of the job and its
								 * actors, which only the kind's file reads:
								 * made by load_state, kept for the run */

	/* SQL names, quoted and schema-qualified, fixed for the run */
	char	   *upstream_sql;
	char	   *downstream_sql;
	char	   *state_sql;
	char	   *changes_sql;

	/* output columns (quoted, comma-separated) and the key */
	char	   *columns_sql;
	int			ncols;
	char	  **col_names;		/* unquoted */
	char	  **col_exprs;		/* per column its expression, NULL when copied */
	char	   *select_sql;		/* the upstream's side of the columns, over alias u */
	char	   *filter;			/* the row filter over alias u, NULL for none */
	bool		into_existing;	/* the downstream is a table the user made */
	bool		partitioned;	/* the upstream is a partitioned table */
	int			npk;
	char	  **pk_names;		/* unquoted */
	Oid		   *pk_types;
	Oid		   *pk_collations;
	ArrayType  *vnode_bounds;	/* range vnodes' bounds (vnode.c); NULL: hashed */
	char	   *search_path;	/* to plan and run the job's SQL under */

	int			nactors;
	BackfillActor *actors;

	VnodeState	vnodes[BACKFILL_VNODE_COUNT];
} BackfillJob;

/* what an actor worker gets in bgw_extra (registry.c writes, worker.c reads) */
typedef struct ActorArgs
{
	int64		job_id;
	int32		actor_id;
	Oid			dboid;			/* database */
	Oid			owner;			/* the job's owner, whom the worker runs as */
} ActorArgs;

/* what a change of the current role saved (privilege.c) */
typedef struct RoleContext
{
	Oid			save_userid;
	int			save_sec_context;
	int			guc_level;		/* -1 when the search_path was not pinned */
	bool		discard_settings;	/* leaving undoes what the code run set */
} RoleContext;

/* plans kept across transactions, owned by one user of them (sql.c) */
typedef struct KeptPlans
{
	List	   *plans;
} KeptPlans;

#endif							/* BACKFILL_H */
