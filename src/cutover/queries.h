/*-------------------------------------------------------------------------
 *
 * queries.h
 *	  The SPI steps the cutover's files share (queries.c).
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

#endif							/* BACKFILL_CUTOVER_QUERIES_H */
