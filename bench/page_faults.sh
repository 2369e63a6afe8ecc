#!/bin/bash
# bench/page_faults.sh: what a minor page fault on shared memory costs on
# this machine (see bench/README.md, "Huge pages").
#
#   bash bench/page_faults.sh [--mb N]
#
# Maps N MB (default 512) of shared anonymous memory, as PostgreSQL's shared
# buffers are without huge pages, and times touching each 4 kB page: first in
# the process that mapped it (each page allocated and zeroed by the kernel),
# then in a child process (each page already allocated, only mapped into the
# child: what a backend or a background worker pays the first time it uses a
# shared buffer another process filled).  Prints microseconds per page, the
# median of 5 rounds.  Needs a C compiler (cc).
set -euo pipefail

MB=512
while [ $# -gt 0 ]; do
    case "$1" in
        --mb) MB=$2; shift 2 ;;
        -h|--help) sed -n 2,14p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done
DIR=$(mktemp -d /tmp/backfill-page-faults.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

cat >"$DIR/touch.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double
usec_per_page(volatile char *p, size_t size, int write)
{
	struct timespec t0, t1;
	long		sum = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < size; i += 4096)
	{
		if (write)
			p[i] = 1;
		else
			sum += p[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	(void) sum;
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / (size / 4096);
}

int
main(int argc, char **argv)
{
	size_t		size = (size_t) atol(argv[1]) << 20;
	char	   *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
	{
		perror("mmap");
		return 1;
	}
	printf("%.2f", usec_per_page(p, size, 1));
	fflush(stdout);
	if (fork() == 0)
	{
		printf(" %.2f\n", usec_per_page(p, size, 0));
		return 0;
	}
	wait(NULL);
	return 0;
}
C
cc -O2 -o "$DIR/touch" "$DIR/touch.c"
for r in 1 2 3 4 5; do "$DIR/touch" "$MB"; done >"$DIR/rounds"
echo "backfill page fault benchmark: $MB MB of shared memory in 4 kB pages, 5 rounds, $(nproc) cores"
printf '%-52s %s us\n' "first touch in the process that mapped it, a page" "$(cut -d' ' -f1 "$DIR/rounds" | sort -g | sed -n 3p)"
printf '%-52s %s us\n' "first touch in another process, a page" "$(cut -d' ' -f2 "$DIR/rounds" | sort -g | sed -n 3p)"
