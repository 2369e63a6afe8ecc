/*-------------------------------------------------------------------------
 *
 * copy.h
 *	  What a job copies and where its position is kept: the state tables
 *	  (state.c), columns, computed columns and filters (shape.c), a downstream
 *	  the user made (downstream.c), range vnodes (ranges.c), the upstream's
 *	  size (size.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_COPY_COPY_H
#define BACKFILL_COPY_COPY_H

#include "backfill.h"

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

/* size.c: an upstream's blocks and rows, from the catalog */
extern bool backfill_measure_upstream(Oid relid, bool nowait, int64 *blocks, int64 *tuples);

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

#endif							/* BACKFILL_COPY_COPY_H */
