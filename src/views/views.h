/*-------------------------------------------------------------------------
 *
 * views.h
 *	  Jobs over a query: what a query over live tables must be for a job to
 *	  keep a downstream equal to its result (query_shape.c), the
 *	  downstream's key, and the order in which its upstreams are scanned
 *	  (scan_order.c).
 *
 * A view job's downstream holds, at every barrier, the query's result over
 * what the scans of its upstreams have reached: the rows of each upstream
 * at or below its position, as a table job forwards only the changes at or
 * below its own.  The rows a change or a chunk touches are computed again
 * from the live tables (the join rows of the changed keys, the groups of
 * the changed rows), so the shape of a query decides which rows those are:
 * its tables' keys for a join, its group key for an aggregate.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_VIEWS_H
#define BACKFILL_VIEWS_H

#include "nodes/parsenodes.h"

/* what the query computes, which decides the downstream's key */
typedef enum ViewShapeKind
{
	VIEW_SHAPE_ROWS,			/* rows of one table or of a join: the tables' keys */
	VIEW_SHAPE_GROUPS,			/* GROUP BY or aggregates: the group key */
	VIEW_SHAPE_DISTINCT			/* SELECT DISTINCT: every output column */
} ViewShapeKind;

/* one table the query reads */
typedef struct ViewUpstream
{
	Oid			relid;
	char	   *alias;			/* as the query names it */
	Index		rtindex;		/* its range table entry */
	List	   *key_columns;	/* names of its key's columns (char *) */
	bool		nullable;		/* on the nullable side of a LEFT JOIN */
	bool		joined_on_key;	/* an equality covers its whole key: a dimension */
	int			scan_order;		/* from 1: scanned to its end before the next */
} ViewUpstream;

/* one column of the downstream's key */
typedef struct ViewKeyColumn
{
	char	   *name;			/* the downstream's column */
	char	   *expression;		/* what it holds, as the query writes it */
	bool		hidden;			/* added: the query does not select it */
	bool		nullable;		/* may be NULL (a LEFT JOIN's other side) */
} ViewKeyColumn;

typedef struct ViewShape
{
	Query	   *query;			/* analyzed, as the caller */
	ViewShapeKind kind;
	bool		has_outer_join;
	List	   *upstreams;		/* ViewUpstream *, in scan order */
	List	   *key;			/* ViewKeyColumn * */
} ViewShape;

/* query_shape.c */
extern ViewShape *backfill_view_shape(const char *query_text);
extern const char *backfill_view_shape_name(const ViewShape *shape);

/* scan_order.c */
extern void backfill_view_scan_order(ViewShape *shape, const char *backfill_order);

#endif							/* BACKFILL_VIEWS_H */
