/*-------------------------------------------------------------------------
 *
 * privilege.c
 *	  Who the extension acts as: the job's owner, or the extension's owner.
 *
 * A job belongs to the role that created it.  Everything a job does to user
 * tables (reading the upstream, writing the downstream, its own state and
 * change tables) runs as that role, whoever runs the job: a superuser
 * running another role's job, a background worker, a writer firing the
 * apply trigger.  It runs in a security-restricted context, as amcheck and
 * REFRESH MATERIALIZED VIEW run user code, so that whatever the upstream
 * carries (triggers, defaults, operators of the key types) has that role's
 * rights only and cannot change the session's.
 *
 * The catalogs, backfill.job and backfill.actor, are written by the
 * extension's owner only: no other role has a privilege to write them, and
 * row-level security shows each role its own jobs.  The C code writes them
 * in a catalog context, as the extension's owner; the SQL functions that
 * write them are SECURITY DEFINER and check that the caller owns the job.
 *
 * Contexts nest; each enter has its leave, and an error restores the user
 * of the transaction's start (AbortTransaction), so a leave is not needed
 * on the error path.
 *
 * No statement the extension runs is planned under a search_path that a
 * caller, a role's default or a database's default chose: an operator or a
 * function of the same name in a schema put first would run in its stead,
 * with the rights of whoever runs the statement (the extension's owner, a
 * superuser calling an API function, a worker).  The catalog context pins
 * a search_path of pg_catalog then pg_temp (backfill_pin_catalog_path), as
 * the SQL functions of the extension do with SET search_path and as
 * PostgreSQL advises for security-definer functions; the entry points that
 * run SQL of their own as the caller pin it too, after they have read the
 * caller's names; workers pin it for their whole session.  The job's SQL
 * is planned and run under the job's own search_path
 * (backfill_pin_search_path), and under the settings that decide how the
 * text of its filter and computed columns is read
 * (backfill_pin_parse_settings; shape.c says why these).
 *
 * A job copies its upstream as its owner reads it.  When row-level security
 * applies to the owner there, the copy would be the part of the table the
 * policies show, and every check of it would agree, reading through the
 * same policies: create_job, each run and verify_job refuse such a job
 * (backfill_check_unfiltered_copy).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_am.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_operator.h"
#include "commands/defrem.h"
#include "utils/lsyscache.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "backfill.h"
#include "lib/lib.h"

/* the owner of extension "backfill" (it cannot change while installed) */
static Oid
extension_owner(void)
{
	static Oid	cached_ext = InvalidOid;
	static Oid	cached_owner = InvalidOid;
	Oid			ext = get_extension_oid(BACKFILL_SCHEMA, false);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	if (ext == cached_ext)
		return cached_owner;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "could not find extension %u", ext);
	cached_owner = ((Form_pg_extension) GETSTRUCT(tup))->extowner;
	cached_ext = ext;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return cached_owner;
}

/*
 * backfill_pin_catalog_path
 *		Set the search_path of the extension's own statements,
 *		BACKFILL_CATALOG_PATH, until backfill_unpin_search_path(level).
 */
int
backfill_pin_catalog_path(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", BACKFILL_CATALOG_PATH,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/*
 * backfill_catalog_enter
 *		Act as the extension's owner, to write the catalogs, under the
 *		search_path of the extension's own statements: nothing the caller
 *		put on its path runs as the extension's owner.
 */
void
backfill_catalog_enter(RoleContext *rc)
{
	GetUserIdAndSecContext(&rc->save_userid, &rc->save_sec_context);
	SetUserIdAndSecContext(extension_owner(),
						   rc->save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	rc->guc_level = backfill_pin_catalog_path();
	rc->discard_settings = false;
}

/*
 * backfill_owner_enter
 *		Act as the job's owner in a security-restricted context.  With
 *		pin_search_path, also under a search_path of pg_catalog only, until
 *		the caller sets its own.  Whatever setting the owner's code changes
 *		(a plain SET persists past a function's end) is undone on leaving,
 *		as REFRESH MATERIALIZED VIEW and index builds undo it: the session
 *		that ran it, a superuser's maybe, keeps its own settings.
 */
void
backfill_owner_enter(Oid owner, bool pin_search_path, RoleContext *rc)
{
	GetUserIdAndSecContext(&rc->save_userid, &rc->save_sec_context);
	SetUserIdAndSecContext(owner, rc->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	rc->guc_level = NewGUCNestLevel();
	rc->discard_settings = true;
	if (pin_search_path)
	{
		(void) set_config_option("search_path", BACKFILL_CATALOG_PATH,
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
		backfill_pin_parse_settings();
	}
}

/* set a setting until the current GUC nest level ends */
static void
pin_setting(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * backfill_pin_parse_settings
 *		Until the caller's GUC nest level ends, the settings under which the
 *		text of a job's filter and computed columns was written (shape.c)
 *		and must be read: standard_conforming_strings on (a backslash in a
 *		literal is itself), DateStyle ISO, MDY and IntervalStyle postgres
 *		(how dates, timestamps and intervals are written and read), as
 *		pg_dump pins them.  A setting that already has its value is left
 *		alone, so that a session with the defaults pays nothing.
 */
void
backfill_pin_parse_settings(void)
{
	if (!standard_conforming_strings)
		pin_setting("standard_conforming_strings", "on");
	if (DateStyle != USE_ISO_DATES || DateOrder != DATEORDER_MDY)
		pin_setting("DateStyle", "ISO, MDY");
	if (IntervalStyle != INTSTYLE_POSTGRES)
		pin_setting("IntervalStyle", "postgres");
}

/*
 * backfill_pin_deparse_settings
 *		backfill_pin_parse_settings(), and what decides only how a value is
 *		written: the time zone (UTC) and the digits of floats (as pg_dump's
 *		extra_float_digits = 3, the shortest text that reads back exactly).
 */
void
backfill_pin_deparse_settings(void)
{
	backfill_pin_parse_settings();
	pin_setting("TimeZone", "UTC");
	pin_setting("extra_float_digits", "3");
}

/* leave a context entered with backfill_catalog_enter or backfill_owner_enter */
void
backfill_role_leave(RoleContext *rc)
{
	if (rc->guc_level >= 0)
		AtEOXact_GUC(!rc->discard_settings, rc->guc_level);
	SetUserIdAndSecContext(rc->save_userid, rc->save_sec_context);
}

/*
 * backfill_may_write_catalogs
 *		Whether the current user has the privileges of the extension's
 *		owner, who alone may write the catalogs (a superuser has them).
 */
bool
backfill_may_write_catalogs(void)
{
	return has_privs_of_role(GetUserId(), extension_owner());
}

/*
 * backfill_check_job_owner
 *		The current user must have the privileges of the job's owner (be it,
 *		a member of it, or a superuser).
 */
void
backfill_check_job_owner(int64 job_id, Oid owner)
{
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of backfill job %lld", (long long) job_id),
				 errdetail("Backfill job %lld belongs to role \"%s\".", (long long) job_id,
						   GetUserNameFromId(owner, true) ? GetUserNameFromId(owner, true) : "?")));
}

/*
 * backfill_check_unfiltered_copy
 *		Refuse to copy table relid as role owner when row-level security
 *		would filter what the role reads of it: the table has it enabled,
 *		and the role is neither a superuser, nor has BYPASSRLS, nor owns the
 *		table unless it is FORCEd (check_enable_rls says which, whatever
 *		row_security is set to).  A job reads its upstream as its owner, in
 *		its chunks, counts and comparisons alike, so its copy would hold the
 *		rows the policies let the owner see and verify_job, which reads
 *		through the same policies, would find nothing missing; the cutover
 *		would then put the part in place of the whole.  SQLSTATE 42501, as
 *		PostgreSQL's own refusal of a query that row-level security would
 *		filter under row_security = off: what the owner lacks is the right to
 *		read every row.  A foreign table has no row-level security here; its
 *		source applies its own to what the user mapping may see.
 */
void
backfill_check_unfiltered_copy(Oid relid, Oid owner)
{
	char	   *role;

	if (check_enable_rls(relid, owner, true) != RLS_ENABLED)
		return;
	role = GetUserNameFromId(owner, true) ? GetUserNameFromId(owner, true) : "?";
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("role \"%s\" is subject to row-level security on table \"%s\"",
					role, get_rel_name(relid)),
			 errdetail("A backfill job reads its upstream as its owner, so its copy would hold only the rows the policies of the table let role \"%s\" see.",
					   role),
			 errhint("Run the job as the owner of the table, without FORCE ROW LEVEL SECURITY on it, or as a role with BYPASSRLS.")));
}

/*
 * backfill_safe_search_path
 *		The search_path under which the extension plans and runs its SQL:
 *		pg_catalog, then pg_temp.  Nothing a caller put on its own
 *		search_path can change what the statements mean, least of all when
 *		they run as the job's owner.  Every comparison of keys names its
 *		operators with their schemas, those of the key types' btree
 *		operator classes (sql.c), so no schema of theirs needs to be on the
 *		path; the stored filter and expressions qualify every name outside
 *		pg_catalog (shape.c).  The key's types are the job's, for a path
 *		that would ever depend on them.
 */
char *
backfill_safe_search_path(int npk, Oid *pk_types)
{
	(void) npk;
	(void) pk_types;
	return pstrdup("pg_catalog, pg_temp");
}

/*
 * backfill_pin_search_path
 *		Set the job's safe search_path, and the settings its expressions are
 *		read under, until backfill_unpin_search_path(level).
 */
int
backfill_pin_search_path(BackfillJob *job)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("search_path", job->search_path,
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	backfill_pin_parse_settings();
	return level;
}

void
backfill_unpin_search_path(int level)
{
	AtEOXact_GUC(true, level);
}

/*
 * backfill_relation_owner
 *		The owner of relation relid, or InvalidOid when there is no such
 *		relation (dropped meanwhile, or an OID a caller made up).
 */
Oid
backfill_relation_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}
