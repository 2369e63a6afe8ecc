/*-------------------------------------------------------------------------
 *
 * carry_table.c
 *	  What the swap carries of src as a whole table: its comment, its
 *	  storage parameters, its row-level security, and its replica identity
 *	  (carry_replication.c, with the publications it is in).
 *
 * Storage parameters (fillfactor, autovacuum's, the TOAST table's as
 * toast.*): each that dst has not set itself, between two tables of one
 * access method, which validates the same parameters.
 *
 * Row-level security: the policies move, and dst gets src's flags; src
 * keeps its own, so that with no policy left it shows no row to a role
 * subject to them: the old table's grants, which stay, read nothing the
 * policies did not let them read.
 *
 * Run as the caller, after the renames, in its SPI connection.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

/* src's storage parameters and its TOAST table's that dst has not set */
#define STORAGE_OPTIONS \
	"SELECT string_agg(format('%s = %L', o.name, o.value), ', ')" \
	"  FROM (SELECT x.option_name AS name, x.option_value AS value" \
	"          FROM pg_class s, pg_options_to_table(s.reloptions) x WHERE s.oid = $1" \
	"        UNION ALL" \
	"        SELECT 'toast.' || x.option_name, x.option_value" \
	"          FROM pg_class s, pg_class t, pg_options_to_table(t.reloptions) x" \
	"         WHERE s.oid = $1 AND t.oid = s.reltoastrelid) o" \
	" WHERE o.name NOT IN (SELECT x.option_name" \
	"                        FROM pg_class d, pg_options_to_table(d.reloptions) x WHERE d.oid = $2" \
	"                      UNION ALL" \
	"                      SELECT 'toast.' || x.option_name" \
	"                        FROM pg_class d, pg_class t, pg_options_to_table(t.reloptions) x" \
	"                       WHERE d.oid = $2 AND t.oid = d.reltoastrelid)"

/* src's policies, each as the statement that makes it on dst */
#define POLICIES \
	"SELECT format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', p.polname, $2," \
	"              CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END," \
	"              CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'" \
	"                            WHEN 'd' THEN 'DELETE' ELSE 'ALL' END," \
	"              CASE WHEN p.polroles = '{0}' THEN 'PUBLIC'" \
	"                   ELSE (SELECT string_agg(quote_ident(rolname), ', ') FROM pg_roles" \
	"                          WHERE oid = ANY (p.polroles)) END," \
	"              ' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')'," \
	"              ' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')')," \
	"       NULL::oid, p.polname" \
	"  FROM pg_policy p WHERE p.polrelid = $1 ORDER BY p.polname"

/* src's comment */
static void
carry_comment(Swap *swap)
{
	char	   *comment;

	cutover_query_pair("SELECT obj_description($1, 'pg_class')", false, swap->src, InvalidOid);
	comment = cutover_value(0, 1);
	if (comment)
		cutover_run(psprintf("COMMENT ON TABLE %s IS %s", backfill_regclass_text(swap->dst),
							 quote_literal_cstr(comment)));
}

/* src's storage parameters that dst has not set itself */
static void
carry_storage(Swap *swap)
{
	char	   *options;

	if (!swap->same_heap)
		return;
	cutover_query_pair(STORAGE_OPTIONS, false, swap->src, swap->dst);
	options = cutover_value(0, 1);
	if (options)
		cutover_run(psprintf("ALTER TABLE %s SET (%s)", backfill_regclass_text(swap->dst), options));
}

/* the policies move to dst, which gets src's flags */
static void
carry_row_security(Swap *swap)
{
	ListCell   *lc;

	foreach(lc, swap_read_statements(POLICIES, swap->src, swap->dst, 0, 3, 0))
	{
		SwapStatement *policy = lfirst(lc);

		cutover_run(policy->sql);
		cutover_run(psprintf("DROP POLICY %s ON %s", quote_identifier(policy->name),
							 backfill_regclass_text(swap->src)));
	}
	cutover_run(psprintf("ALTER TABLE %s %s ROW LEVEL SECURITY, %s ROW LEVEL SECURITY",
						 backfill_regclass_text(swap->dst),
						 swap->src_rowsecurity ? "ENABLE" : "DISABLE",
						 swap->src_forcerowsecurity ? "FORCE" : "NO FORCE"));
}

/*
 * swap_carry_table
 *		src's comment, storage parameters, row-level security and replica
 *		identity are dst's (see the file header).  After the renames.
 */
void
swap_carry_table(Swap *swap)
{
	carry_comment(swap);
	carry_storage(swap);
	carry_row_security(swap);
	swap_carry_replica_identity(swap);
}
