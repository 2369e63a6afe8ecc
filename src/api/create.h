/*-------------------------------------------------------------------------
 *
 * create.h
 *	  What create_job (create.c) shares with estimate_job (estimate.c): which
 *	  tables may be an upstream, its key, and the downstream's DDL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CREATE_H
#define BACKFILL_CREATE_H

#include "storage/lockdefs.h"

#include "backfill.h"
#include "copy.h"

extern Relation backfill_open_upstream(Oid upstream_oid, LOCKMODE lockmode,
									   const AclMode *needed, int nneeded, bool foreign);
extern int	backfill_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations);
extern void backfill_check_key_hashable(Relation rel, int npk, const AttrNumber *pk, const char *why,
										const char *hint);
extern char *backfill_downstream_ddl(const JobShape *shape, const char *table_sql,
									 const char *key_list);

#endif							/* BACKFILL_CREATE_H */
