/*-------------------------------------------------------------------------
 *
 * create.h
 *	  What create_job (create.c) shares with estimate_job (estimate.c): which
 *	  tables may be an upstream, and how a job's key, columns and downstream
 *	  table follow from its upstream.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CREATE_H
#define BACKFILL_CREATE_H

#include "storage/lockdefs.h"
#include "utils/array.h"

#include "backfill.h"

extern Relation backfill_open_upstream(Oid upstream_oid, LOCKMODE lockmode,
									   const AclMode *needed, int nneeded);
extern int	backfill_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations);
extern int	backfill_output_columns(Relation rel, ArrayType *requested, int npk,
									AttrNumber *pk, AttrNumber **attnums);
extern char *backfill_downstream_ddl(Relation upstream, int ncols, const AttrNumber *cols,
									 const char *table_sql, const char *key_list);

#endif							/* BACKFILL_CREATE_H */
