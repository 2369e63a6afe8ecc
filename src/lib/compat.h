/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The one place for differences between PostgreSQL versions.
 *
 * The extension is built and tested against PostgreSQL 15.  A shim for
 * another version goes here, as a macro or an inline function named after
 * the newer API, so that no other file tests PG_VERSION_NUM.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_COMPAT_H
#define BACKFILL_COMPAT_H

#if PG_VERSION_NUM < 150000
#error "backfill needs PostgreSQL 15 or later"
#endif

#endif							/* BACKFILL_COMPAT_H */
