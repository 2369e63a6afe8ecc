#!/bin/bash
# scripts/check_links.sh: every link of the documentation leads somewhere.
#
#   bash scripts/check_links.sh [FILE.md ...]
#
# Reads README.md, CHANGELOG.md, doc/*.md, bench/README.md and
# bench/results/*.md (or the files given) and
# checks each Markdown link [text](target) that is not a URL: the file it
# names, relative to the linking file, exists, and its #fragment, if any, is
# an anchor of that file (of the linking file for a bare #fragment): a
# heading, as GitHub makes its anchor (lower case, punctuation dropped,
# spaces as hyphens, -1, -2 ... after repeats), or an <a name="..."> or
# id="...".  Code blocks and code spans are skipped.  Needs only bash and
# perl; prints every broken link and exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
    set -- README.md doc/*.md
    for f in CHANGELOG.md bench/README.md bench/results/*.md; do
        if [ -f "$f" ]; then set -- "$@" "$f"; fi
    done
fi

perl -e '
use strict;
use warnings;
use File::Basename qw(dirname);
binmode STDOUT, ":utf8";
binmode STDERR, ":utf8";

my %anchors;    # file => { anchor => 1 }
sub slurp { my ($f) = @_; open my $fh, "<:utf8", $f or return undef; local $/; my $t = <$fh>; close $fh; return $t; }

# the lines of a file outside fenced code blocks, with their numbers
sub prose {
    my ($text) = @_;
    my ($fence, $n, @out) = (0, 0);
    for my $line (split /\n/, $text, -1) {
        $n++;
        if ($line =~ /^\s*(```|~~~)/) { $fence = !$fence; next; }
        push @out, [$n, $line] unless $fence;
    }
    return @out;
}

sub anchors_of {
    my ($f) = @_;
    return $anchors{$f} if exists $anchors{$f};
    my %a;
    my %seen;
    my $text = slurp($f);
    if (defined $text) {
        for my $l (prose($text)) {
            my $line = $l->[1];
            if ($line =~ /^#{1,6}\s+(.*?)\s*#*\s*$/) {
                my $s = lc $1;
                $s =~ s/<[^>]*>//g;             # inline HTML
                $s =~ s/[^\w\- ]//g;
                $s =~ s/ /-/g;
                my $k = $seen{$s}++ ? "$s-" . ($seen{$s} - 1) : $s;
                $a{$k} = 1;
            }
            $a{$1} = 1 while $line =~ /<a\s+(?:name|id)="([^"]+)"/g;
            $a{$1} = 1 while $line =~ /\bid="([^"]+)"/g;
        }
    }
    return $anchors{$f} = \%a;
}

my @broken;
for my $f (@ARGV) {
    my $text = slurp($f);
    if (!defined $text) { push @broken, "$f: cannot be read"; next; }
    my $dir = dirname($f);
    for my $l (prose($text)) {
        my ($n, $line) = @$l;
        $line =~ s/`[^`]*`//g;                  # code spans
        while ($line =~ /\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)/g) {
            my $target = $1;
            next if $target =~ m{^[a-z][a-z0-9+.-]*:}i;     # http:, https:, mailto:
            my ($path, $frag) = $target =~ /^([^#]*)(?:#(.*))?$/;
            my $file = $path eq "" ? $f : ($dir eq "." ? $path : "$dir/$path");
            if ($path ne "" && !-e $file) {
                push @broken, "$f:$n: $target: no file $file";
                next;
            }
            next unless defined $frag && $frag ne "";
            if ($file !~ /\.md$/) {
                push @broken, "$f:$n: $target: a fragment of a file that is not Markdown";
            } elsif (!anchors_of($file)->{$frag}) {
                push @broken, "$f:$n: $target: no anchor \"$frag\" in $file";
            }
        }
    }
}
if (@broken) {
    print STDERR "check_links: broken links:\n";
    print STDERR "  $_\n" for @broken;
    exit 1;
}
printf "check_links: the links of %d files lead somewhere\n", scalar @ARGV;
' "$@"
