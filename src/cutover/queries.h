/*-------------------------------------------------------------------------
 *
 * queries.h
 *	  The SPI steps the cutover's files share (queries.c), and the catalog
 *	  queries they build on.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_QUERIES_H
#define BACKFILL_CUTOVER_QUERIES_H

#include "executor/spi.h"

extern int	cutover_query(const char *sql, bool read_only, int nargs, Oid *types,
						  Datum *values);
extern void cutover_query_pair(const char *sql, bool read_only, Oid src, Oid dst);
extern void cutover_query_rel_text(const char *sql, Oid rel, const char *text);
extern void cutover_run(const char *sql);
extern char *cutover_value(int row, int col);
extern bool cutover_bool(int row, int col);
extern Oid	cutover_oid(int row, int col);
extern void cutover_statement_begin(void);
extern void cutover_statement_end(void);

/*
 * Catalog queries of $1 (src) and $2 (dst) that other queries take in as
 * subqueries (index_pairs.c, weaker.c)
 */
extern const char cutover_index_pairs_sql[];
extern const char cutover_identity_index_sql[];
extern const char cutover_weaker_sql[];

#endif							/* BACKFILL_CUTOVER_QUERIES_H */
