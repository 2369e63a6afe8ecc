#!/usr/bin/perl
# contrib/render/scrape.pl: scrape the backfill metrics of a postgres_exporter
# once a second, as Prometheus would, into one file per job and metric.
#
#   perl scrape.pl URL SECONDS DIR
#
# URL is the exporter's /metrics (http://127.0.0.1:9187/metrics).  Stops
# after SECONDS, or once every job it saw is finished (two scrapes later).
# Writes DIR/<metric>.<job_name>.dat, lines "seconds value" (seconds since
# the first scrape), and DIR/status.<job_name>.dat, lines "seconds status".
# Only Perl's core modules: HTTP::Tiny.
use strict;
use warnings;
use HTTP::Tiny;
use Time::HiRes qw(time sleep);

my ($url, $seconds, $dir) = @ARGV;
die "usage: scrape.pl URL SECONDS DIR\n" unless $dir;
mkdir $dir;
my $http = HTTP::Tiny->new(timeout => 5);
my $t0 = time;
my %fh;
my $done_scrapes = 0;

sub out
{
	my ($file, $line) = @_;
	unless ($fh{$file})
	{
		open($fh{$file}, '>', "$dir/$file") or die "$dir/$file: $!";
		$fh{$file}->autoflush(1);
	}
	print { $fh{$file} } $line;
}

while (time - $t0 < $seconds)
{
	my $at = time;
	my $res = $http->get($url);
	my ($jobs, $finished) = (0, 0);
	if ($res->{success})
	{
		for (split /\n/, $res->{content})
		{
			next unless /^backfill_(job_\w+|job_status)\{([^}]*)\} (\S+)$/;
			my ($metric, $labels, $value) = ($1, $2, $3);
			my ($job) = $labels =~ /\bjob_name="([^"]*)"/;
			next unless defined $job;
			$job =~ s/[^A-Za-z0-9_]/_/g;
			my $t = sprintf('%.1f', $at - $t0);
			if ($metric eq 'job_status')
			{
				next unless $value == 1;
				my ($status) = $labels =~ /\bstatus="(\w+)"/;
				out("status.$job.dat", "$t $status\n");
				$jobs++;
				$finished++ if $status eq 'finished';
				next;
			}
			$metric =~ s/^job_//;
			out("$metric.$job.dat", "$t $value\n");
		}
	}
	die "scrape.pl: no job in $url after 20 s\n" if $jobs == 0 && time - $t0 > 20;
	$done_scrapes = ($jobs > 0 && $jobs == $finished) ? $done_scrapes + 1 : 0;
	last if $done_scrapes > 2;
	my $left = 1 - (time - $at);
	sleep($left) if $left > 0;
}
close $_ for values %fh;
