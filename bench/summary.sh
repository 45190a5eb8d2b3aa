#!/bin/bash
# The figures of make bench's high-order allocation runs (bench/high_order.c)
# by kind (pool, thp, mthp) and variant: min / median / max over the boots, and
# kdefrag (direct) against the allocator as on stock 6.12 (off): the median
# of the ratios of runs with the same seed, "worse" when every kdefrag run
# is worse than every stock one. For THP faults also the latency floor
# (the same faults on unfragmented memory). A boot counts only once its
# program said "ok 1" (it measured, and contents were intact).
#   summary.sh BENCH_OUTPUT
[ $# -eq 1 ] && [ -r "$1" ] || { echo "usage: summary.sh BENCH_OUTPUT (make bench writes it)" >&2; exit 2; }
awk '
function num(s) { gsub(/[(%;,]/, "", s); return s + 0 }
function fmt(x) { return x == "-" ? x : x >= 100 || x <= -100 ? sprintf("%.0f", x) : sprintf("%.4g", x) }
/^== / { pend = "" }
# pool VARIANT seed S: nr_hugepages G of a physical limit of L (P%; ...) in T s
/^(pool (off|direct)|m?thp (off|direct|floor)) seed / {
	pend = $1 " " $2; seed = $4; delete p
	p["pct"] = num($10)
	if ($1 == "pool") p["pct"] = num($13)
	else { p["p50"] = $(NF - 4); p["p99"] = $(NF - 2); p["max"] = $NF }
}
# per huge page: migrated X, scanned Y, seconds Z (total: ...)
/^per huge page: migrated/ && pend != "" {
	p["mig"] = num($5); p["scan"] = num($7); p["spp"] = num($9)
}
# least possible: the cheapest ranges ... migrated Rx that
/^least possible: the cheapest/ && pend != "" { p["least"] = num($(NF - 1)) }
# compact_stall N success ...
/^compact_stall / && pend != "" { p["stall"] = num($2) }
/^ok 1 / && pend != "" {
	k = ++n[pend]; s[pend, k] = seed
	for (f in p) v[pend, f, k] = p[f]
	pend = ""
}
# median of the v[key, f, 1..n[key]] a run printed ("-" if none did);
# lo and hi get min and max
function med(key, f,    i, j, x, m, c) {
	c = 0
	for (i = 1; i <= n[key]; i++) if ((key, f, i) in v) x[++c] = v[key, f, i] + 0
	if (!c) { lo = hi = "-"; return "-" }
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
		if (x[j] < x[i]) { m = x[i]; x[i] = x[j]; x[j] = m }
	lo = x[1]; hi = x[c]
	return c % 2 ? x[(c + 1) / 2] : (x[c / 2] + x[c / 2 + 1]) / 2
}
# did run @i of @key print field @f?
function has(key, f, i) { return (key, f, i) in v }
# median ratio direct/off over the seeds both sides ran
function ratio(kind, f,    i, j, c, r, x, m) {
	c = 0
	for (i = 1; i <= n[kind " direct"]; i++)
		for (j = 1; j <= n[kind " off"]; j++)
			if (s[kind " direct", i] == s[kind " off", j] && has(kind " direct", f, i) &&
			    has(kind " off", f, j) && v[kind " off", f, j] > 0)
				r[++c] = v[kind " direct", f, i] / v[kind " off", f, j]
	if (!c) return -1
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
		if (r[j] < r[i]) { m = r[i]; r[i] = r[j]; r[j] = m }
	return c % 2 ? r[(c + 1) / 2] : (r[c / 2] + r[c / 2 + 1]) / 2
}
function row(kind, name, f, better,    mo, lo_o, hi_o, md, lo_d, hi_d, r, flag, fl) {
	mo = med(kind " off", f); lo_o = lo; hi_o = hi
	md = med(kind " direct", f); lo_d = lo; hi_d = hi
	r = ratio(kind, f)
	flag = ""
	if (mo != "-" && md != "-" && (better == "high" ? hi_d < lo_o : lo_d > hi_o))
		flag = " (kdefrag worse)"
	fl = n[kind " floor"] ? sprintf(" %s |", fmt(med(kind " floor", f))) : ""
	printf "| %s | %s / %s / %s | %s / %s / %s | %s%s |%s\n",
		name, fmt(lo_o), fmt(mo), fmt(hi_o), fmt(lo_d), fmt(md), fmt(hi_d),
		r < 0 ? "-" : sprintf("%.3f", r), flag, fl
}
# The rows of a fault table: @size names the block a fault asks for, @unit one of them.
function fault_rows(kind, size, unit) {
	row(kind, "% of the faults the limit allows, " size, "pct", "high")
	row(kind, size " fault latency p50, us", "p50", "low")
	row(kind, size " fault latency p99, us", "p99", "low")
	row(kind, size " fault latency max, us", "max", "low")
	row(kind, "seconds per " unit, "spp", "low")
	row(kind, "migrated per " unit, "mig", "low")
	row(kind, "migrated / least possible", "least", "low")
	row(kind, "direct compaction stalls", "stall", "low")
	row(kind, "scanned per " unit, "scan", "low")
}
function table(kind, title, floor) {
	if (!n[kind " off"] || !n[kind " direct"]) {
		printf "%s: no pair of runs to compare\n\n", title; bad = 1; return 0
	}
	printf "%s: %d boots off, %d direct%s\n\n", title, n[kind " off"], n[kind " direct"],
		floor ? sprintf(", %d on unfragmented memory", n[kind " floor"]) : ""
	printf "| per boot | off (stock allocator): min / median / max | direct: min / median / max | direct / off, same seed |%s\n",
		floor ? " floor |" : ""
	printf "| --- | --- | --- | --- |%s\n", floor ? " --- |" : ""
	return 1
}
END {
	if (table("pool", "hugetlb pool, \"echo 1000 > nr_hugepages\" once", 0)) {
		row("pool", "% of the physical limit", "pct", "high")
		row("pool", "seconds per huge page", "spp", "low")
		row("pool", "migrated per huge page", "mig", "low")
		row("pool", "migrated / least possible", "least", "low")
		row("pool", "scanned per huge page", "scan", "low")
		print ""
	}
	if (table("thp", "THP faults, 256 x 2 MiB with MADV_HUGEPAGE, one by one", n["thp floor"] > 0)) {
		fault_rows("thp", "huge", "huge page")
		print ""
	}
	if (n["mthp off"] + n["mthp direct"] > 0 &&
	    table("mthp", "mTHP faults, 2048 x 64 KiB (order 4) with MADV_HUGEPAGE, PMD THP off, one by one", n["mthp floor"] > 0))
		fault_rows("mthp", "64 KiB", "64 KiB folio")
	exit bad
}' "$1"
