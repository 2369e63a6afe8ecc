# bench/pages.sh: sourced by bench/run.sh and bench/lib.sh.
# The page size of a cluster's shared memory ($1: its data directory), from
# its postmaster's mappings.  huge_pages = try, PostgreSQL's default, takes
# huge pages when the kernel has enough reserved (vm.nr_hugepages) and 4 kB
# pages otherwise.  It matters for a copy: every process that touches a
# shared buffer for the first time maps its pages, one minor fault per
# 4 kB page, and the contenders differ in how many processes touch the
# same buffers (bench/README.md, "Huge pages").
shm_pages() {
    if grep -q anon_hugepage "/proc/$(head -1 "$1/postmaster.pid")/maps" 2>/dev/null; then
        echo "huge pages ($(awk '/^Hugepagesize/ {print $2 " " $3}' /proc/meminfo))"
    else
        echo "4 kB pages"
    fi
}
