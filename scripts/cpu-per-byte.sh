#!/usr/bin/env bash
# cpu-per-byte.sh: the brokers' CPU per produced byte at RF=3 (issue #14),
# which depends less on the machine's load than throughput does. Starts a
# fresh `skein dev` cluster (3 brokers, each also a controller, durable
# defaults: fsync before the ack), creates topics t1024 and t100 (3
# partitions, RF=3, 64 MiB segments and 256 MiB retention per partition so
# the disk stays bounded), then RUNS times produces N1K records of 1 KiB
# and N100 records of 100 B (skein perf produce: franz-go, acks=all, 1 MiB
# batches, 100,000 buffered records, no compression, linger LINGER) and
# reads the three broker processes' utime+stime (/proc/PID/stat) before
# and after each. One JSON line per run on stdout: CPU seconds, µs per
# record, ns per byte of record values, MiB/s, and the load average
# before-after.
#
# Usage: scripts/cpu-per-byte.sh
# Environment: BROKER_BIN (the skein binary the brokers run, to compare
# builds; default: built from this tree, which always runs the load),
# PORT (14092, below the ephemeral range 32768-60999 so a client connection cannot hold it; broker i on PORT+100*(i-1), admin on +2), RUNS (3), N1K
# (1048576), N100 (5368709), LINGER (50ms: the batches fill to 1 MiB, so
# the requests per byte do not change with the machine's load), LABEL,
# WORK (a fresh temporary directory, removed at the end).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-14092}
RUNS=${RUNS:-3}
N1K=${N1K:-1048576}
N100=${N100:-5368709}
LINGER=${LINGER:-50ms}
# shellcheck source=scripts/dev-cluster.sh
. "$root/scripts/dev-cluster.sh"
dev_cluster_setup cpu
dev_cluster_start
cpu_ticks() {
	local t=0 p
	for p in $pids; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done
	echo "$t"
}
for size in 1024 100; do
	"$work/skein" perf produce -b "$bs" --topic "t$size" --partitions 3 --replication-factor 3 \
		--config retention.bytes=268435456 --config segment.bytes=67108864 \
		--num-records 20000 --record-size "$size" --json >/dev/null
done
tck=$(getconf CLK_TCK)
for run in $(seq "$RUNS"); do
	for size in 1024 100; do
		n=$([[ $size == 1024 ]] && echo "$N1K" || echo "$N100")
		c0=$(cpu_ticks)
		l0=$(cut -d' ' -f1 /proc/loadavg)
		out=$("$work/skein" perf produce -b "$bs" --topic "t$size" --num-records "$n" \
			--record-size "$size" --acks all --linger "$LINGER" --json)
		c1=$(cpu_ticks)
		l1=$(cut -d' ' -f1 /proc/loadavg)
		mbs=$(echo "$out" | grep -o '"mb_per_sec":[0-9.e+-]*' | cut -d: -f2)
		awk -v l="$LABEL" -v r="$run" -v s="$size" -v n="$n" -v c=$((c1 - c0)) -v t="$tck" \
			-v m="$mbs" -v l0="$l0" -v l1="$l1" 'BEGIN {
				sec = c / t
				printf "{\"label\":\"%s\",\"run\":%d,\"record_size\":%d,\"records\":%d,\"cpu_seconds\":%.2f,\"us_per_record\":%.3f,\"ns_per_byte\":%.3f,\"mb_per_sec\":%.1f,\"load\":\"%s-%s\"}\n",
					l, r, s, n, sec, sec * 1e6 / n, sec * 1e9 / (n * s), m, l0, l1
			}'
	done
done
