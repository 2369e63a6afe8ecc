/*-------------------------------------------------------------------------
 *
 * create.h
 *	  What create_job (create.c) shares with estimate_job (estimate.c): how
 *	  a job's key, columns and downstream table follow from its upstream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CREATE_H
#define BACKFILL_CREATE_H

#include "utils/array.h"

#include "backfill.h"

extern int	backfill_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations);
extern int	backfill_output_columns(Relation rel, ArrayType *requested, int npk,
									AttrNumber *pk, AttrNumber **attnums);
extern char *backfill_downstream_ddl(Relation upstream, int ncols, const AttrNumber *cols,
									 const char *table_sql, const char *key_list);

#endif							/* BACKFILL_CREATE_H */
