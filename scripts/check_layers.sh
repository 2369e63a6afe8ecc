#!/bin/bash
# scripts/check_layers.sh: check that src/ keeps its layers.
#
#   bash scripts/check_layers.sh            the rules, one line each, then the layers
#   bash scripts/check_layers.sh --graph    the file graph (edges with call counts) and the layers
#   bash scripts/check_layers.sh --markdown the layer map src/LAYERS as doc/layers.md
#
# The rules:
#   1. no circle of calls between src/*.c files: the graph "a function of
#      file A calls a function defined in file B" has no cycle; nor does it
#      get one from a file's use of another file's global variable (a GUC
#      variable read by a file below the one that defines it, say);
#   2. no function longer than 150 lines (its opening brace to its closing
#      brace);
#   3 to 7. the names in the table below appear only in the files it names:
#      only capture knows trigger names, only a kind's file knows its tables,
#      only one file begins and ends transactions, only the worker registry
#      touches shared memory, only the kinds' files name a kind;
#   8. the folders of src/ keep to the map src/LAYERS: a file calls, uses
#      the variables of and includes the headers of its own folder and of
#      the folders the map allows it (src/backfill.h, the shared types, is
#      everyone's and includes only lib/), each header by its folder's path
#      from src/ ("lib/lib.h"), the one include path; and doc/layers.md is
#      the map's rendering (--markdown);
#   9. the SQL branches on a job's kind no more than it did: the kinds live
#      behind their callbacks (src/kinds/kind.h), and SQL that asks which
#      kind a job is (kind = '...', kind <> '...', kind IN ('...'), or with
#      OPERATOR(pg_catalog.=) and OPERATOR(pg_catalog.<>)) belongs in C.  The
#      branches in the current definitions, the parts the scripts of the
#      current version are assembled from (src/sql/ but the released
#      scripts, backfill--*.sql), are counted and may not pass
#      MAX_KIND_BRANCHES: none.
#
# The call graph comes from the compiler, not from reading C with regular
# expressions: each source of src/ is compiled (at -O0, so that nothing is inlined
# or dropped) with gcc's -fcallgraph-info and the include flags PGXS uses,
# into a temporary directory.  gcc writes one .ci file per source (VCG
# format): a node per function defined or called, with the file and line of
# its definition or declaration, and an edge per call site.  A function
# defined in file B and called from file A makes the file edge A -> B.
# The uses of global variables come from the same objects: nm lists the
# variables each defines, objdump -r the relocations of each function's own
# section (-ffunction-sections -fdata-sections).  Calls through a function
# pointer (a struct of callbacks) make no edge: that is how a lower layer
# calls back into a higher one.  The layers printed are those of this graph
# (calls and uses).  Function lengths start from the definitions the
# compiler reports; the names are searched in the sources with comments
# blanked out.
#
# Exit status: 0 when every rule holds, 1 on a violation, 2 when the check
# could not run (a source that does not compile, a missing tool).
# Needs bash, gcc (10 or later), binutils, perl and PostgreSQL's server
# headers (Debian: postgresql-server-dev-15).
set -euo pipefail

# ---- the rules on names ----
# One line per rule:  rule ID SCOPE PATTERN FILES REASON
#   SCOPE    code: anywhere outside comments; str: inside string literals only
#   PATTERN  a Perl regular expression (ERE syntax works), matched per line
#   FILES    the only files of src/ (*.c, *.h) allowed to match, space-separated
# Files named here that do not exist yet are the planned layout's.
RULES=()
rule() { RULES+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"$'\t'"$5"); }
rule 3 str  'backfill_(capture|apply)_(truncate_|[^a-z]|$)'  capture/triggers.c  'trigger names (backfill_capture_<id>, backfill_apply_<id>, their truncate twins)'
rule 3 code '\b(CREATE|DROP) TRIGGER\b|\bEnableDisableTrigger\b'  'capture/triggers.c cutover/carry_triggers.c'  "a job's triggers are installed, switched and dropped by capture alone; the user's move to the new table in the cutover's swap"
rule 4 str  '\bis_epoch_finished\b'  kinds/kind_snapshot.c  "the snapshot kind's state table"
rule 4 str  '\b(backfill_seq|backfill_captured_at|backfill_old_row)\b'  'capture/capture_change.c capture/partitions.c kinds/kind_snapshot.c'  "the snapshot kind's log, which capture writes and the kind reads"
rule 4 str  '\b(split_id|cdc_offset)\b'  'kinds/kind_cdc.c kinds/remote/kind_remote.c kinds/remote/create.c kinds/remote/state.c kinds/remote/verify.c'  "the cdc kinds' state tables"
rule 4 str  '\b(cdc_offset_low|cdc_offset_high|backfill_lsn|backfill_order|backfill_xid|backfill_op|backfill_row)\b'  'kinds/remote/kind_remote.c kinds/remote/create.c kinds/remote/state.c kinds/remote/fetch.c kinds/remote/apply.c kinds/remote/chunk.c'  "the remote cdc kind's state and change tables"
rule 4 str  '\bbackfill_finished\b'  'kinds/kind_vnode.c kinds/kind_cdc.c kinds/remote/kind_remote.c kinds/remote/create.c kinds/remote/state.c kinds/remote/verify.c'  "the vnode kinds' and the cdc kinds' finished flag"
rule 5 code '\b(StartTransactionCommand|CommitTransactionCommand|AbortCurrentTransaction|AbortOutOfAnyTransaction|SPI_commit\w*|SPI_rollback\w*|SPI_start_transaction)\b'  lib/xact.c  'transactions begin and end in one place'
rule 6 code '\b(ShmemInitStruct|ShmemAlloc\w*|RequestAddinShmemSpace|RequestNamedLWLockTranche|GetNamedLWLockTranche|LWLockNewTrancheId|LWLockRegisterTranche|AddinShmemInitLock|shmem_request_hook|shmem_startup_hook)\b'  runtime/registry.c  'shared memory is requested and attached by the worker registry alone'
rule 6 code '\b(BackfillShared|BackfillRun|BackfillWorkerSlot)\b|\bLWLock\s*\*|\b(dsm|dsa|shm_mq)_\w+\s*\('  'runtime/registry.c runtime/registry_internal.h runtime/live_actors.c'  "the registry's shared structs and lock (the live actors' entries share it), dynamic shared memory"
rule 7 code '\bBACKFILL_KIND_(NO_SHUFFLE|ARRANGEMENT|SNAPSHOT|CDC|REMOTE_CDC)\b'  'backfill.h catalog/names.c kinds/kind.c kinds/kind_vnode.c kinds/kind_snapshot.c kinds/kind_cdc.c kinds/remote/kind_remote.c'  'only the kinds name a kind (and the catalog, which reads their names): the executor never tests one'
# ---- end of the rules on names ----

MAX_FUNCTION_LINES=150

# rule 9: the SQL of the current version (the parts its scripts are
# assembled from, not the released scripts), and the most branches on a
# job's kind it may have
CURRENT_SQL=$(cd "$(dirname "$0")/.." && ls src/sql/*.sql src/sql/*/*.sql | grep -v '/backfill--')
MAX_KIND_BRANCHES=0

usage() { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; }
mode=check
case "${1:-}" in
    "") ;;
    --graph) mode=graph ;;
    --markdown) mode=markdown ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."

# the map: "folder deps... -- what it is for", lowest first; "-" for no deps
layers_map() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' src/LAYERS; }
layers_markdown() {
    echo '# The layers of `src/`'
    echo
    echo 'Generated from `src/LAYERS` by `bash scripts/check_layers.sh --markdown`;'
    echo '`scripts/check_layers.sh` fails when this file differs from it, or when a'
    echo 'file of `src/` calls a function, uses a variable or includes a header of a'
    echo 'folder that its own folder may not depend on.  Lowest layer first; a folder'
    echo 'may always depend on itself and on `src/backfill.h` (the shared types).'
    echo
    echo '| folder | may depend on | files | what it is for |'
    echo '|---|---|---|---|'
    layers_map | while read -r folder rest; do
        deps=${rest%%--*}; desc=${rest#*-- }
        deps=$(echo $deps); [ "$deps" = - ] && deps=''
        files=$(cd "src/$folder" && ls *.c *.h 2>/dev/null | sed 's/.*/`&`/' | paste -sd' ' | sed 's/ /, /g')
        deps=$(for d in $deps; do printf '`%s/` ' "$d"; done | sed 's/ $//; s/ /, /g')
        echo "| \`$folder/\` | ${deps:-nothing} | $files | $desc |"
    done
}
if [ $mode = markdown ]; then
    layers_markdown
    exit 0
fi
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/${PGVER:-15}/bin/pg_config}
[ -x "$PG_CONFIG" ] || PG_CONFIG=$(command -v pg_config || true)
if [ -z "$PG_CONFIG" ] || [ ! -d "$("$PG_CONFIG" --includedir-server)" ]; then
    echo "check_layers: PostgreSQL's server headers are missing (Debian: postgresql-server-dev-${PGVER:-15})" >&2
    exit 2
fi
if ! gcc --help=common 2>/dev/null | grep -c -- -fcallgraph-info >/dev/null; then
    echo "check_layers: this gcc has no -fcallgraph-info (GCC 10 or later has it)" >&2
    exit 2
fi

tmp=$(mktemp -d /tmp/check_layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# the include flags of PGXS (Makefile.global: -I. -I./ $(includedir_server)
# $(includedir_internal) $(CPPFLAGS)); -w: warnings are the business of the
# build
read -ra cppflags <<<"$("$PG_CONFIG" --cppflags)"
cflags=(-O0 -w -fcallgraph-info -ffunction-sections -fdata-sections
        -I. -I./ -Isrc
        -I"$("$PG_CONFIG" --includedir-server)"
        -I"$("$PG_CONFIG" --pkgincludedir)/internal" -I"$("$PG_CONFIG" --includedir)"
        "${cppflags[@]}")
# a folder's sub-folders too (kinds/remote/); each object is named by its
# path, so that files of the same name in two folders stay apart
sources=(src/*/*.c src/*/*/*.c)
objname() { local p=${1#src/}; p=${p%.c}; echo "${p//\//__}"; }
pids=()
for src in "${sources[@]}"; do
    base=$(objname "$src")
    gcc "${cflags[@]}" -c "$src" -o "$tmp/$base.o" 2>"$tmp/$base.err" &
    pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then
        echo "check_layers: ${sources[$i]} does not compile:" >&2
        cat "$tmp/$(objname "${sources[$i]}").err" >&2
        failed=1
    fi
done
[ $failed = 0 ] || exit 2

printf '%s\n' "${RULES[@]}" >"$tmp/rules"

layers_map >"$tmp/layers"

status=0
LAYERS_FILE="$tmp/layers" MODE=$mode MAX_LINES=$MAX_FUNCTION_LINES RULES_FILE="$tmp/rules" CI_DIR="$tmp" \
perl -e "$(cat <<'PERL'
use strict;
use warnings;

my $mode = $ENV{MODE};
my $max_lines = $ENV{MAX_LINES};
my $ci_dir = $ENV{CI_DIR};
my @units = map { s{^src/}{}r } sort(glob('src/*/*.c'), glob('src/*/*/*.c'));
sub objname { my ($unit) = @_; return $unit =~ s/\.c$//r =~ s{/}{__}gr; }
my $violations = 0;

# ---- the call graph, from gcc's .ci files ----
# nodes: title "name" (extern) or "file:name" (static), label "name\nfile:line:col",
# "shape : ellipse" when only declared in this unit; edges: one per call site.
my (%global, %local, %edges, %defs);
for my $unit (@units) {
	my $ci = "$ci_dir/" . objname($unit) . '.ci';
	open(my $fh, '<', $ci) or die "check_layers: no call graph for src/$unit: $!\n";
	while (my $l = <$fh>) {
		if ($l =~ /^node: \{ title: "([^"]*)" label: "([^"]*)"(.*)/) {
			my ($title, $label, $rest) = ($1, $2, $3);
			next if $rest =~ /shape\s*:\s*ellipse/;		# declared, not defined here
			$local{$unit}{$title} = 1;
			my ($name, $file, $line) = $label =~ /^(.*)\\n(.*):(\d+):\d+$/ or next;
			$global{$title} = $unit if $file eq "src/$unit" && $title !~ /:/;
			$defs{"$file:$line"} = [$file, $line, $name] if $file =~ m{^src/};
		}
		elsif ($l =~ /^edge: \{ sourcename: "([^"]*)" targetname: "([^"]*)" label: "([^"]*)"/) {
			push @{$edges{$unit}}, [$1, $2, $3];
		}
	}
	close($fh);
}

# ---- the file graph ----
# %calls{A}{B}: call sites in A of functions defined in B; %uses{A}{B}:
# references in A to global variables defined in B; %example{A}{B}: the
# first call by line; %use_example{A}{B}: the first use
my (%calls, %uses, %example, %use_example, %first);
for my $unit (@units) {
	for my $e (@{$edges{$unit} // []}) {
		my ($from, $to, $site) = @$e;
		next if $local{$unit}{$to};
		my $callee = $global{$to} // next;
		next if $callee eq $unit;
		$calls{$unit}{$callee}++;
		my ($file, $line) = $site =~ /^(.*):(\d+):\d+$/ or next;
		next if defined $first{$unit}{$callee} && $first{$unit}{$callee} <= $line;
		$first{$unit}{$callee} = $line;
		$example{$unit}{$callee} = sprintf("%s -> %s (%s:%d)", $from =~ s/.*://r, $to, $file, $line);
	}
}

# variable uses: the global variables each object defines (nm), then the
# relocations (objdump -r) in each function's or variable's own section
# that point at a variable of another file
my %var;
for my $unit (@units) {
	my $obj = "$ci_dir/" . objname($unit) . '.o';
	open(my $nm, '-|', 'nm', '-g', '--defined-only', $obj) or die "check_layers: nm: $!\n";
	while (<$nm>) { $var{$2} = $unit if /^\S*\s+([BCDGRSV])\s+(\S+)$/; }
	close($nm) or die "check_layers: nm $obj failed\n";
}
for my $unit (@units) {
	my $obj = "$ci_dir/" . objname($unit) . '.o';
	open(my $od, '-|', 'objdump', '-r', $obj) or die "check_layers: objdump: $!\n";
	my $section;
	while (<$od>) {
		if (/^RELOCATION RECORDS FOR \[(.*)\]:/) { $section = $1; next; }
		next unless defined $section && /^[0-9a-f]+\s+\S+\s+([A-Za-z_]\w*)/;
		my $symbol = $1;
		my $owner = $var{$symbol} // next;
		next if $owner eq $unit || $section =~ /^\.(debug|eh_frame)/;
		my $user = $section =~ s/^\.(text|data\.rel\.ro\.local|data\.rel\.ro|data\.rel\.local|data\.rel|data|rodata|bss)\.//r;
		$uses{$unit}{$owner}++;
		$use_example{$unit}{$owner} //= "$user uses variable $symbol";
	}
	close($od) or die "check_layers: objdump $obj failed\n";
}
my %deps;
for my $u (@units) {
	$deps{$u}{$_} = 1 for keys %{$calls{$u} // {}}, keys %{$uses{$u} // {}};
}

# strongly connected components (Tarjan) of a graph given as $adj->{A}{B},
# and the layer of each: one more than the highest layer it depends on
# (Tarjan emits a component after every component it reaches)
sub components {
	my ($adj) = @_;
	my ($index, @stack, %idx, %low, %on, @sccs) = (0);
	my $strong;
	$strong = sub {
		my ($v) = @_;
		$idx{$v} = $low{$v} = $index++;
		push @stack, $v;
		$on{$v} = 1;
		for my $w (sort keys %{$adj->{$v} // {}}) {
			if (!defined $idx{$w}) { $strong->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v}; }
			elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v}; }
		}
		if ($low{$v} == $idx{$v}) {
			my @c;
			while (1) { my $w = pop @stack; $on{$w} = 0; push @c, $w; last if $w eq $v; }
			push @sccs, [sort @c];
		}
	};
	for my $u (@units) { $strong->($u) unless defined $idx{$u}; }
	undef $strong;
	my (%comp, @layer);
	for my $i (0 .. $#sccs) { $comp{$_} = $i for @{$sccs[$i]}; }
	for my $i (0 .. $#sccs) {
		my $l = 0;
		for my $u (@{$sccs[$i]}) {
			for my $w (keys %{$adj->{$u} // {}}) {
				my $j = $comp{$w};
				$l = $layer[$j] + 1 if $j != $i && $layer[$j] + 1 > $l;
			}
		}
		$layer[$i] = $l;
	}
	return { sccs => \@sccs, comp => \%comp, layer => \@layer };
}
my $by_calls = components(\%calls);
my $by_deps = components(\%deps);

sub comp_name {
	my ($g, $i) = @_;
	my @c = @{$g->{sccs}[$i]};
	return @c > 1 ? '{' . join(' ', @c) . '}' : $c[0];
}
sub layer_of { my ($g, $u) = @_; return $g->{layer}[$g->{comp}{$u}]; }
sub print_layers {
	my $g = $by_deps;
	print "layers (a file calls or uses only files of lower layers; {...}: a circle):\n";
	my $top = 0;
	for (@{$g->{layer}}) { $top = $_ if $_ > $top; }
	for my $l (0 .. $top) {
		my @names = sort map { comp_name($g, $_) } grep { $g->{layer}[$_] == $l } 0 .. $#{$g->{sccs}};
		printf "  %2d  %s\n", $l, join('  ', @names);
	}
}
sub edge_line {
	my ($u, $w, $use) = @_;
	my $n = $calls{$u}{$w} // 0;
	my $count = sprintf("%3d call%s", $n, $n == 1 ? ' ' : 's');
	$count .= sprintf(" + %d use%s", $uses{$u}{$w}, $uses{$u}{$w} == 1 ? '' : 's') if $uses{$u}{$w};
	return sprintf("%-12s -> %-12s %-16s %s", $u, $w, $count,
				   ($use ? undef : $example{$u}{$w}) // $use_example{$u}{$w});
}

if ($mode eq 'graph') {
	print "file graph (caller -> callee: call sites + variable uses, the first call):\n";
	my $order = sub { layer_of($by_deps, $b) <=> layer_of($by_deps, $a) || $a cmp $b };
	for my $u (sort $order @units) {
		print "  ", edge_line($u, $_), "\n" for sort $order keys %{$deps{$u} // {}};
	}
	print_layers();
	exit 0;
}

# one line per rule: OK or FAIL, what it says, then the violations
sub report {
	my ($head, $count, $what, @lines) = @_;
	printf "%-4s %s%s\n", $count ? 'FAIL' : 'OK', $head,
		$count ? ": $count $what" . ($count > 1 ? 's' : '') : '';
	print "       $_\n" for @lines;
	$violations += $count;
}

# ---- rule 1: no circle of calls; no variable use that closes one ----
{
	my @lines;
	my @circles = grep { @$_ > 1 } @{$by_calls->{sccs}};
	for my $c (@circles) {
		my %in = map { $_ => 1 } @$c;
		push @lines, 'circle of ' . scalar(@$c) . ' files: ' . join(' ', @$c);
		for my $u (@$c) {
			push @lines, '  ' . edge_line($u, $_) for sort grep { $in{$_} } keys %{$calls{$u} // {}};
		}
	}
	report('1  no circle of calls between src/*.c files', scalar(@circles), 'circle', @lines);

	# a use of a variable of a file that depends on the user, directly or
	# not: it closes a circle that calls alone do not (the layers show it)
	my @up;
	for my $u (@units) {
		for my $w (sort keys %{$uses{$u} // {}}) {
			push @up, edge_line($u, $w, 1) if $by_deps->{comp}{$u} == $by_deps->{comp}{$w};
		}
	}
	report("1  no circle through a use of another file's global variable", scalar(@up), 'edge', @up);
}

# ---- views of a source: comments blanked; and only its string literals ----
my (%code, %str, %bare);
sub views {
	my ($file) = @_;
	return if $code{$file};
	open(my $fh, '<', $file) or die "check_layers: $file: $!\n";
	local $/;
	my $text = <$fh>;
	close($fh);
	my ($code, $str, $bare) = ('', '', '');
	my $blank = sub { $_[0] =~ s/[^\n]/ /gr };
	while ($text =~ m{\G(?:("(?:\\.|[^"\\\n])*")|('(?:\\.|[^'\\\n])*')|(/\*.*?\*/|//[^\n]*)|([^"'/]+|.))}gs) {
		if (defined $1) { $code .= $1; $str .= $1; $bare .= '"' . (' ' x (length($1) - 2)) . '"'; }
		elsif (defined $2) { $code .= $2; $str .= $blank->($2); $bare .= $blank->($2); }
		elsif (defined $3) { my $b = $blank->($3); $code .= $b; $str .= $b; $bare .= $b; }
		else { $code .= $4; $str .= $blank->($4); $bare .= $4; }
	}
	$code{$file} = [split /\n/, $code, -1];
	$str{$file} = [split /\n/, $str, -1];
	$bare{$file} = [split /\n/, $bare, -1];
}

# ---- rule 2: function length, by counting braces from each definition ----
my @long;
for my $d (sort { $a->[0] cmp $b->[0] || $a->[1] <=> $b->[1] } values %defs) {
	my ($file, $line, $name) = @$d;
	views($file);
	my $lines = $bare{$file};
	my ($depth, $open, $close) = (0);
	for (my $i = $line - 1; $i < @$lines && !defined $close; $i++) {
		for my $ch ($lines->[$i] =~ /[{}]/g) {
			if ($ch eq '{') { $open //= $i + 1; $depth++; }
			elsif (defined $open && --$depth == 0) { $close = $i + 1; last; }
		}
	}
	next unless defined $close;
	my $n = $close - $open + 1;
	push @long, [$n, sprintf("%s:%d %s: %d lines", $file, $line, $name, $n)] if $n > $max_lines;
}
my @long_lines = map { $_->[1] } sort { $b->[0] <=> $a->[0] } @long;
report("2  no function over $max_lines lines", scalar(@long_lines), 'function', @long_lines);

# ---- rule 8: the folders keep to src/LAYERS ----
my (%may, @order);
open(my $lf, '<', $ENV{LAYERS_FILE}) or die;
while (<$lf>) {
	my ($folder, $deps) = /^(\S+)\s+(.*?)\s*--/ or next;
	push @order, $folder;
	$may{$folder}{$folder} = 1;
	$may{$folder}{$_} = 1 for grep { $_ ne '-' } split ' ', $deps;
}
close($lf);
$may{''}{lib} = 1;			# src/backfill.h: compat.h
# a sub-folder (kinds/remote) is a room of its parent's layer: its parent
# may depend on it (kind.c registers the routine it fills), and no other
# folder may, whatever the parent's line allows them
for my $folder (@order) {
	$may{$1}{$folder} = 1 if $folder =~ m{^(.*)/[^/]+$};
}
sub folder_of { my ($f) = @_; $f =~ s{^src/}{}; return $f =~ m{^(.*)/[^/]+$} ? $1 : ''; }
my @crossings;
for my $u (@units) {
	my $fu = folder_of($u);
	unless ($may{$fu}) { push @crossings, "src/$u: its folder $fu/ is not in src/LAYERS"; next; }
	for my $w (sort keys %{$deps{$u} // {}}) {
		my $fw = folder_of($w);
		next if $may{$fu}{$fw};
		push @crossings, "src/$u -> src/$w: $fu/ may not depend on $fw/ ("
			. ($example{$u}{$w} // $use_example{$u}{$w}) . ')';
	}
}
for my $file (sort(glob('src/*/*.[ch]'), glob('src/*/*/*.[ch]'), glob('src/*.h'))) {
	my $fu = folder_of($file);
	next unless $may{$fu};
	open(my $fh, '<', $file) or die;
	while (my $l = <$fh>) {
		my ($inc) = $l =~ /^\s*#\s*include\s+"([^"]+)"/ or next;
		my @found = -e "src/$inc" ? ("src/$inc") : (glob("src/*/$inc"), glob("src/*/*/$inc"));
		next unless @found;
		if ($found[0] ne "src/$inc") {
			push @crossings, "$file:$.: includes \"$inc\" by its name: include it by its folder's path, \"" . substr($found[0], 4) . '"';
			next;
		}
		my $fw = folder_of($found[0]);
		next if $fw eq '' || $may{$fu}{$fw};
		push @crossings, "$file:$.: includes $found[0]: $fu/ may not depend on $fw/";
	}
	close($fh);
}
report('8  the folders keep to src/LAYERS (calls, variables, includes)', scalar(@crossings), 'crossing', @crossings);

# ---- rules 3 to 6: names, from the table ----
my @files = sort(glob('src/*/*.c'), glob('src/*/*/*.c'), glob('src/*.h'), glob('src/*/*.h'), glob('src/*/*/*.h'));
open(my $rf, '<', $ENV{RULES_FILE}) or die;
while (my $r = <$rf>) {
	chomp $r;
	my ($id, $scope, $pattern, $allowed, $reason) = split /\t/, $r;
	my $re = qr/$pattern/;
	my %ok = map { ("src/$_" => 1) } split ' ', $allowed;
	my @hits;
	for my $file (grep { !$ok{$_} } @files) {
		views($file);
		my $lines = $scope eq 'str' ? $str{$file} : $code{$file};
		for my $i (0 .. $#$lines) {
			next unless $lines->[$i] =~ $re;
			(my $src = $code{$file}[$i]) =~ s/^\s+|\s+$//g;
			$src = substr($src, 0, 90) . '...' if length($src) > 93;
			push @hits, sprintf("%s:%d: %s", $file, $i + 1, $src);
		}
	}
	report("$id  only $allowed: $reason", scalar(@hits), 'line', @hits);
}

print "\n";
print_layers();
exit($violations ? 1 : 0);
PERL
)" || status=$?

# rule 8: doc/layers.md is the map's rendering
if layers_markdown | diff -u doc/layers.md - >"$tmp/layers.diff" 2>&1; then
    echo "OK   8  doc/layers.md is the rendering of src/LAYERS"
else
    echo "FAIL 8  doc/layers.md is the rendering of src/LAYERS: run bash scripts/check_layers.sh --markdown > doc/layers.md"
    sed 's/^/       /' "$tmp/layers.diff"
    status=1
fi

# rule 9: the branches on a job's kind in the current SQL (outside comments)
kind_branches=$(for f in $CURRENT_SQL; do
                    sed 's/--.*//' "$f" |
                        grep -inP "\bkind\s*(=|<>|!=|IN\s*\(|OPERATOR\(pg_catalog\.(=|<>)\)|WHEN)\s*'" |
                        sed "s|^|$f:|"
                done || true)
nbranches=$(printf '%s' "$kind_branches" | grep -c . || true)
if [ "$nbranches" -le "$MAX_KIND_BRANCHES" ]; then
    echo "OK   9  $nbranches branches on a job's kind in the SQL of the current version, src/sql/ (at most $MAX_KIND_BRANCHES)"
else
    echo "FAIL 9  $nbranches branches on a job's kind in the SQL of the current version, more than $MAX_KIND_BRANCHES: a kind's part belongs behind its callbacks (src/kinds/kind.h)"
    printf '%s\n' "$kind_branches" | sed "s|^|       |"
    status=1
fi
exit $status
