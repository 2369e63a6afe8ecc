/*-------------------------------------------------------------------------
 *
 * ddl.h
 *	  The event triggers and utility hook that keep jobs in step with DDL
 *	  (ddl.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_DDL_H
#define BACKFILL_API_DDL_H

#include "backfill.h"

/* ddl.c */
struct ReassignOwnedStmt;
extern void backfill_ddl_init(void);
extern void backfill_reassign_owned(struct ReassignOwnedStmt *stmt);

#endif							/* BACKFILL_API_DDL_H */
