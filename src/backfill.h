/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  The types of the backfill extension, and the functions of its lower
 *	  layers.
 *
 * A streaming job copies an upstream table into a downstream table while
 * the upstream keeps changing.  Its definition lives in backfill.job and
 * backfill.actor; its progress in its own state table, laid out as
 * RisingWave's state tables of its kind (each kind's file says how).
 *
 * The files form layers, and a file calls only files of the layers below
 * its own (scripts/check_layers.sh checks it):
 *
 *	entry points	backfill.c (_PG_init), create.c, estimate.c, run.c,
 *					control.c, worker.c, shmem.c (the worker registry and
 *					the live actors of backfill.progress), ddl.c
 *	driver			driver.c: the barrier loop of a run or of a worker
 *	executor		executor.c: one barrier, the final barrier (barrier.h)
 *	kinds			kind.c, one file per kind behind kind.h: kind_vnode.c
 *					(no_shuffle, arrangement), kind_snapshot.c, kind_cdc.c,
 *					kind_remote.c (cdc from another server)
 *	services		chunk.c (reading the upstream in key order), sink.c,
 *					state.c, capture.c (triggers, change tables), apply.c
 *					(a finished job's keys applied without SQL), slot.c
 *					(replication slots and origins), decode.c (the output
 *					plugin), pacing.c (replica lag, retained WAL, WAL rate),
 *					shape.c (columns, computed columns, filters),
 *					downstream.c (a downstream the user made), ranges.c
 *					(range vnodes: the cut at create, backfill.job_vnode()),
 *					remote.c (connections to another server), pgoutput.c
 *					(its logical replication protocol), progress.c (the
 *					lines of progress sent to the client)
 *	catalog			catalog.c: job and actor rows, the job lock
 *	privileges		privilege.c: role contexts, the pinned search_path
 *	foundations		sql.c (SQL text, SPI, kept plans), xact.c (commits,
 *					barriers' transactions, sleeps, epochs), vnode.c,
 *					rw_debug.c (values printed as RisingWave's Debug
 *					prints them), compat.h, this header
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

#include "compat.h"

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

typedef enum BackfillKind
{
	BACKFILL_KIND_NO_SHUFFLE,	/* legacy: cannot resume */
	BACKFILL_KIND_ARRANGEMENT,	/* per-vnode progress, resumes */
	BACKFILL_KIND_SNAPSHOT,
	BACKFILL_KIND_CDC,
	BACKFILL_KIND_REMOTE_CDC	/* "cdc" from a foreign table (kind_remote.c) */
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

	/* snapshot kind: the log store phase (kind_snapshot.c) */
	bool		in_log_store;	/* consumes the log store */
	bool		caught_up;		/* its last log store barrier found little */
	int64		lag_ms;			/* age of the oldest change it last consumed */
} BackfillActor;

/*
 * A job as loaded by a run.  Lives in the run's memory context, which
 * survives the commit of each barrier.
 */
typedef struct BackfillJob
{
	int64		job_id;
	char	   *job_name;
	BackfillKind kind;
	char	   *status;
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
	int64		snapshot_epoch; /* snapshot kind: the epoch it reads as of */
	bool		has_cdc_offset; /* cdc kind: the state row has an offset */
	uint64		cdc_offset;		/* cdc kind: its LSN */
	int32		runs;

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

/* what an actor worker gets in bgw_extra (shmem.c writes, worker.c reads) */
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

/* ---- foundations ---- */

/* sql.c: SQL text */
extern char *backfill_relation_sql(Oid relid);
extern char *backfill_upstream_scan(const char *upstream_sql, bool partitioned);
extern char *backfill_job_scan(BackfillJob *job);
extern char *backfill_filter_and(BackfillJob *job);
extern char *backfill_count_sql(const char *upstream_sql, bool partitioned, const char *filter);
extern char *backfill_pk_list(BackfillJob *job, const char *alias);
extern char *backfill_pk_list_desc(BackfillJob *job);
extern char *backfill_pk_params(BackfillJob *job, int first);
extern char *backfill_key_compare_types(int npk, const Oid *types, char **left, int strategy,
										char **right);
extern char *backfill_key_in_types(int npk, const Oid *types, char **left, const char *subquery);
extern char **backfill_pk_exprs(BackfillJob *job, const char *alias);
extern char **backfill_pk_param_exprs(BackfillJob *job, int first);
extern char *backfill_key_compare(BackfillJob *job, char **left, int strategy, char **right);
extern char *backfill_key_compare_params(BackfillJob *job, const char *alias, int strategy, int first);
extern char *backfill_key_in(BackfillJob *job, const char *alias, const char *subquery);
extern char *backfill_vnode_sql(BackfillJob *job, const char *keys);
extern void backfill_append_excluded_key(StringInfo sql, BackfillJob *job);
extern char *backfill_text_array_sql(Datum array, char ***elems, int *nelems);
extern char *backfill_sync_delete_sql(BackfillJob *job, const char *matching,
									  bool returning_vnode);
extern char *backfill_sync_insert_sql(BackfillJob *job, const char *matching,
									  bool returning_vnode);
extern char *backfill_sync_upsert_sql(BackfillJob *job);
extern char *backfill_sync_delete_gone_sql(BackfillJob *job);
extern char *backfill_sync_upsert_many_sql(BackfillJob *job);
extern char *backfill_sync_delete_gone_many_sql(BackfillJob *job);

/* sql.c: SPI */
extern void backfill_spi_enter(void);
extern void backfill_spi_leave(void);
extern void backfill_spi_exec(const char *sql, int expected);
extern bool backfill_spi_true(const char *sql);
extern int64 backfill_count_rows(const char *upstream_sql, bool partitioned, const char *filter);
extern void backfill_spi_exec_args(const char *sql, int nargs, Oid *types, Datum *values,
								   const char *nulls, int expected);
extern KeptPlans *backfill_kept_plans_create(void);
extern SPIPlanPtr backfill_keep_plan(KeptPlans *kept, const char *sql, int nargs,
									 Oid *argtypes);
extern void backfill_kept_plans_free(KeptPlans *kept);

/* xact.c */
extern void backfill_xact_pin_path(void);
extern void backfill_commit(void);
extern void backfill_next_barrier(bool with_snapshot);
extern void backfill_xact_begin(bool nonatomic);
extern void backfill_xact_end(void);
extern void backfill_xact_abort(void);
extern bool backfill_rollback_after_error(void);
extern ResourceOwner backfill_subxact_begin(void);
extern void backfill_subxact_rollback(ResourceOwner owner);
extern void backfill_subxact_release(ResourceOwner owner);
extern void backfill_sleep_ms(long ms);
extern void backfill_sleep_until(TimestampTz t);
extern void backfill_set_stop_check(bool (*check) (void));
extern bool backfill_stop_pending(void);
extern int64 backfill_next_epoch(int64 previous);

/*
 * vnode.c: how a job maps keys to vnodes, looked up once: the hash
 * functions of a key's types, or a range mapping's bounds and comparison
 * functions
 */
typedef struct VnodeHasher
{
	int			nkeys;
	FmgrInfo	procs[FUNC_MAX_ARGS];	/* hash, or btree comparison */
	Datum	   *bounds;			/* range mapping: the lowest key of vnodes
								 * 1..255, nkeys columns each; NULL: hash */
	Oid			collations[FUNC_MAX_ARGS];	/* range mapping: the key's */
	int			last;			/* range mapping: the vnode found last */
} VnodeHasher;

extern void backfill_vnode_hasher_init(VnodeHasher *hasher, int nkeys,
									   const Oid *types, MemoryContext cxt);
extern void backfill_vnode_ranges_init(VnodeHasher *hasher, int nkeys, const Oid *types,
									   const Oid *collations, ArrayType *bounds,
									   MemoryContext cxt);
extern int	backfill_vnode_compare(VnodeHasher *hasher, const Datum *a, const Datum *b);
extern const Datum *backfill_vnode_lower_bound(VnodeHasher *hasher, int v);
extern ArrayType *backfill_vnode_bounds_text(int nkeys, const Oid *types, const Datum *bounds);
extern int16 backfill_vnode_of(VnodeHasher *hasher, const Datum *values,
							   const bool *isnull);

/* rw_debug.c */
extern char *backfill_rw_debug_row(bool some, int n, const Datum *values,
								   const bool *isnull, const Oid *types);

/* ---- privileges (privilege.c) ---- */
extern int	backfill_pin_catalog_path(void);
extern void backfill_catalog_enter(RoleContext *rc);
extern void backfill_owner_enter(Oid owner, bool pin_search_path, RoleContext *rc);
extern void backfill_role_leave(RoleContext *rc);
extern void backfill_check_job_owner(int64 job_id, Oid owner);
extern bool backfill_may_write_catalogs(void);
extern char *backfill_safe_search_path(int npk, Oid *pk_types);
extern void backfill_pin_parse_settings(void);
extern void backfill_pin_deparse_settings(void);
extern int	backfill_pin_search_path(BackfillJob *job);
extern void backfill_unpin_search_path(int level);

/* ---- catalog (catalog.c) ---- */
extern const char *backfill_kind_name(BackfillKind kind);
extern BackfillKind backfill_parse_kind(const char *name);
extern bool backfill_job_catalog_has(const char *column);
extern bool backfill_partition_of(Oid relid, Oid ancestor);
extern BackfillJob *backfill_load_job(int64 job_id, MemoryContext cxt);
extern BackfillJob *backfill_load_job_to_run(int64 job_id, MemoryContext cxt);
extern void backfill_check_key_unchanged(BackfillJob *job, Oid made_with);
extern void backfill_lock_job(int64 job_id, bool session);
extern void backfill_unlock_job(int64 job_id);
extern void backfill_wait_job_lock(int64 job_id);
extern void backfill_lock_job_shared(int64 job_id);
extern void backfill_unlock_job_shared(int64 job_id);
extern bool backfill_job_lock_held(int64 job_id);
extern bool backfill_job_lock_mine(int64 job_id);
extern Oid	backfill_job_owner(int64 job_id);
extern Oid	backfill_job_upstream(int64 job_id);
extern Datum backfill_job_column(int64 job_id, const char *column, bool *isnull);
extern Oid	backfill_require_job_owner(int64 job_id);
extern void backfill_reload_settings(BackfillJob *job);
extern bool backfill_names_changed(BackfillJob *job);
extern void backfill_record_owner(int64 job_id, const char *state_sql, Oid owner);
extern void backfill_move_owner(int64 job_id, Oid state_table, Oid owner);
extern void backfill_record_failure(int64 job_id, int sqlerrcode, const char *message,
									const char *detail, bool only_if_backfilling);
extern void backfill_record_start(BackfillJob *job, bool background, int64 total_rows);
extern int64 backfill_next_id(const char *sequence);
extern void backfill_mark_cancelled(int64 job_id);
extern void backfill_delete_job_rows(int64 job_id);
extern void backfill_set_foreground(int64 job_id);
extern void backfill_set_rate_limit(int64 job_id, bool none, int64 rows_per_second);
extern void backfill_copy_names(int64 job_id, int64 from_job_id);
extern void backfill_replace_actors(int64 job_id, int parallelism);

/* ---- services ---- */

/* state.c */
extern void backfill_init_vnodes(BackfillJob *job);
extern void backfill_read_position(BackfillJob *job, VnodeState *vs, HeapTuple tup,
								   TupleDesc desc, int first);
extern void backfill_fail_job(BackfillJob *job, int sqlerrcode, const char *message,
							  const char *detail, const char *hint) pg_attribute_noreturn();
extern void backfill_state_error(BackfillJob *job, const char *field,
								 const char *detail) pg_attribute_noreturn();
extern void backfill_vnode_state_error(BackfillJob *job, const char *field,
									   int vnode) pg_attribute_noreturn();
extern void backfill_split_state_error(BackfillJob *job, const char *field,
									   const char *split) pg_attribute_noreturn();
extern char *backfill_column_list(Oid relid, int *natts, Oid **types);
extern char *backfill_pos_text(BackfillJob *job, VnodeState *vs);
extern void backfill_append_record_field(StringInfo buf, const char *value);
extern void backfill_recount_vnode_actors(int64 job_id, const char *state_sql,
										  bool one_total);
extern void backfill_create_job_table(const char *create, const char *table_sql,
									  Oid owner);
extern void backfill_create_job_type(const char *create, const char *type_sql, Oid owner);

/* capture.c: the triggers on a job's upstream and its change table */
typedef enum CaptureMode
{
	CAPTURE_KEYS,				/* a row trigger logs the keys written */
	CAPTURE_LOG,				/* ... with the rows' images before the write */
	CAPTURE_WAL,				/* the keys come from the WAL (slot.c) */
	CAPTURE_STREAM				/* another server's changes: no trigger; the
								 * kind makes its change table */
} CaptureMode;

extern void backfill_capture_create_table(CaptureMode mode,
										  const char *changes_sql, const char *key_ddl,
										  const char *key_list, const char *image_sql,
										  const char *image_ddl, Oid owner);
extern void backfill_capture_install(Relation upstream, const char *upstream_sql,
									 int64 job_id, CaptureMode mode);
extern void backfill_capture_switch_to_apply(BackfillJob *job);
extern void backfill_capture_init(void);
extern void backfill_assert_triggers(BackfillJob *job);
extern void backfill_drop_triggers(int64 job_id);
extern void backfill_lock_writers(Oid upstream);
extern int64 backfill_trigger_job(const char *tgname);
extern int64 backfill_any_trigger_job(const char *tgname);
extern void backfill_capture_partition(BackfillJob *job, Oid partition, bool attached);

/* apply.c: a statement's keys applied to a finished job's downstream directly */
typedef struct DirectApply DirectApply;

extern DirectApply *backfill_apply_direct_prepare(BackfillJob *job, MemoryContext cxt);
extern void backfill_apply_direct_free(DirectApply *da);
extern bool backfill_apply_direct_permitted(DirectApply *da);
extern bool backfill_apply_direct_evaluates(DirectApply *da);
extern void backfill_apply_direct(DirectApply *da, int nkeys, Datum **keys,
								  ItemPointerData *written_tids);

/* shape.c: what a job copies: its columns, computed columns and row filter */
typedef struct ShapeColumn
{
	char	   *name;			/* the downstream's column */
	char	   *expr;			/* its expression over the upstream, NULL when copied */
	AttrNumber	attnum;			/* the upstream's column, when copied */
	Oid			type;
	int32		typmod;
	Oid			collation;
} ShapeColumn;

typedef struct JobShape
{
	int			ncols;
	ShapeColumn *cols;
	char	   *filter;			/* deparsed, NULL for none */
	int			nsources;
	char	  **sources;		/* the upstream's columns it reads, the key first */
	bool		computed;		/* some column is computed */
} JobShape;

extern void backfill_shape_read(Relation upstream, ArrayType *columns, const char *filter,
								int npk, const AttrNumber *pk, const char *search_path,
								JobShape *shape);
extern Node *backfill_shape_expression(Relation upstream, const char *text, bool is_filter,
									   const char *column);
extern char *backfill_shape_select_list(const JobShape *shape);
extern char *backfill_shape_names(const JobShape *shape);

/* downstream.c: a downstream the user made */
extern char *backfill_existing_downstream(const char *name, Relation upstream,
										  const JobShape *shape, int npk,
										  const AttrNumber *pk);

/* ranges.c: range vnodes */
extern void backfill_ranges_init(void);
extern ArrayType *backfill_cut_vnodes(Oid upstream, const char *scan_sql, const char *filter,
									  int npk, char **pk_names, const Oid *pk_types);

/* pacing.c: its settings, and what an estimate needs of them */
extern void backfill_pacing_init(void);
extern int64 backfill_pacing_wal_rate(void);

/* slot.c: a cdc job's replication slot and origin */
extern char *backfill_slot_name(int64 job_id);
extern bool backfill_plugin_approved(void);
extern void backfill_lock_slot_of(int64 job_id);
extern void backfill_origin_enter(int64 job_id);
extern void backfill_origin_leave(void);
extern void backfill_drop_slot_now(int64 job_id);
extern void backfill_drop_leftover_slots(void);
extern XLogRecPtr backfill_flush_wal_upto(void);

/* ddl.c */
struct ReassignOwnedStmt;
extern void backfill_ddl_init(void);
extern void backfill_reassign_owned(struct ReassignOwnedStmt *stmt);

#endif							/* BACKFILL_H */
