# bench/pages.sh: sourced by bench/run.sh and bench/lib.sh.
# The page size of the shared memory of running clusters (their data
# directories), from their postmasters' mappings: one answer when they all
# got the same, else each cluster's (too few huge pages reserved for all).  huge_pages = try, PostgreSQL's default, takes
# huge pages when the kernel has enough reserved (vm.nr_hugepages) and 4 kB
# pages otherwise.  It matters for a copy: every process that touches a
# shared buffer for the first time maps its pages, one minor fault per
# 4 kB page, and the contenders differ in how many processes touch the
# same buffers (bench/README.md, "Huge pages").
shm_pages() {
    local dir huge="huge pages ($(awk '/^Hugepagesize/ {print $2 " " $3}' /proc/meminfo))"
    for dir in "$@"; do
        if grep -q anon_hugepage "/proc/$(head -1 "$dir/postmaster.pid")/maps" 2>/dev/null; then
            echo "$(basename "$dir"): $huge"
        else
            echo "$(basename "$dir"): 4 kB pages"
        fi
    done | awk -F': ' '{all = all (NR > 1 ? ", " : "") $0; seen[$2]} END {n = 0; for (k in seen) {n++; one = k}; print n == 1 ? one : all}'
}
