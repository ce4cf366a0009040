#!/usr/bin/env bash
# latency-under-load.sh: produce latency at fixed rates (issue #14's
# "latency under load" target), with what the machine was doing meanwhile.
# Starts a fresh `skein dev` cluster (3 brokers, each also a controller,
# durable defaults: fsync before the ack), creates topic "lat" (3
# partitions, RF=3, plus TOPIC_CONFIG), then RUNS times, for each rate in
# RATES, runs `skein perf produce --rate-mb R --duration DURATION` (1 KiB
# records, acks ACKS, franz-go with its defaults and the perf tool's:
# 5 ms linger, 1 MiB batches, latency counted from each record's slot in
# the schedule). One JSON line per run on stdout: the rate held, p50, p99,
# p99.9 and max in ms, the load average and the CPU pressure
# (/proc/pressure/cpu "some" avg10) before and after, the CPU the three
# broker processes used and the time their threads spent runnable but
# waiting for a CPU and the times they were scheduled onto one (thread
# wake-ups and preemptions: /proc/PID/task/*/schedstat), their fsyncs
# (skein_fsync_duration_seconds_count), their io_uring worker threads
# (iou-wrk) alive at the end of the run and the load generator's own user
# and system CPU.
#
# The run-queue wait is the number to read the tail against: on a shared
# machine it says how long the brokers' threads waited for a core, which
# no change to the broker removes.
#
# With KFAKE_DIR (a github.com/twmb/franz-go checkout), the same runs go
# first against 3 kfake brokers (in memory, no replication, no disk:
# scripts/kfake.sh builds them from the checkout), their lines labelled
# "kfake" and their fsyncs 0: the load generator's own floor on this
# machine in this sitting, to read Skein's numbers against (at the p50:
# on a shared 2-core machine kfake's own p99 swung over 70-1000 ms,
# docs/performance.md). kfake is stopped before the Skein cluster starts.
#
# Usage: scripts/latency-under-load.sh
# Environment: BROKER_BIN (the skein binary the brokers run, to compare
# builds; default: built from this tree, which always runs the load),
# PORT (15092, below the ephemeral range 32768-60999; broker i on PORT+100*(i-1), admin on +2), RATES ("20 40"
# MiB/s), RUNS (3), DURATION (20s), ACKS (all), LINGER (the producer's
# linger, passed to --linger; default the perf tool's 5ms; 0s sends
# each batch at once, to show the linger's share of the latency),
# TOPIC_CONFIG (extra topic properties, space-separated key=value),
# LABEL, KFAKE_DIR (unset: no kfake runs), KFAKE_PORT (25092; kfake
# broker i on KFAKE_PORT+i-1), WORK (a fresh temporary directory,
# removed at the end).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
PORT=${PORT:-15092}
RATES=${RATES:-20 40}
RUNS=${RUNS:-3}
DURATION=${DURATION:-20s}
ACKS=${ACKS:-all}
LINGER=${LINGER:-5ms}
KFAKE_PORT=${KFAKE_PORT:-25092}
# shellcheck source=scripts/dev-cluster.sh
. "$root/scripts/dev-cluster.sh"
# shellcheck source=scripts/kfake.sh
. "$root/scripts/kfake.sh"
dev_cluster_setup lat
trap 'kfake_stop; rm -rf "$work/kfake" "$work/kfake.out"; dev_cluster_cleanup' EXIT
topic_flags=()
for kv in ${TOPIC_CONFIG:-}; do
	topic_flags+=(--config "$kv")
done
create_topic() {
	"$work/skein" perf produce -b "$bs" --topic lat --partitions 3 --replication-factor 3 \
		"${topic_flags[@]}" --num-records 20000 --linger "$LINGER" --json >/dev/null
}

# sched prints the brokers' CPU and run-queue wait, in ns, and the times
# their threads were put on a CPU, summed over their threads.
sched() {
	local cpu=0 wait=0 slices=0 p t a b c
	for p in $pids; do
		for t in /proc/"$p"/task/*/schedstat; do
			read -r a b c <"$t" || continue
			cpu=$((cpu + a))
			wait=$((wait + b))
			slices=$((slices + c))
		done
	done
	echo "$cpu $wait $slices"
}
fsyncs() {
	local n=0 i v
	if [[ $sys == kfake ]]; then
		echo 0
		return
	fi
	for i in 0 1 2; do
		v=$(curl -s "http://127.0.0.1:$((PORT + 2 + 100 * i))/metrics" |
			awk '/^skein_fsync_duration_seconds_count/ {print $2}')
		n=$(awk -v a="$n" -v b="${v:-0}" 'BEGIN {printf "%d", a + b}')
	done
	echo "$n"
}
# iouwrk counts the brokers' io_uring worker threads (iou-wrk-*, idle
# ones exit after a few seconds: counted right after a run).
iouwrk() {
	local n=0 p
	for p in $pids; do
		n=$((n + $(cat /proc/"$p"/task/*/comm 2>/dev/null | grep -c '^iou-wrk' || true)))
	done
	echo "$n"
}
psi() { awk '/^some/ {sub("avg10=", "", $2); print $2}' /proc/pressure/cpu; }
field() { grep -o "\"$1\":[0-9.e+-]*" <<<"$2" | cut -d: -f2; }

# runs SYSTEM LABEL: RUNS rounds of the rates against the cluster at $bs
# whose processes are $pids, one JSON line per run.
runs() {
	sys=$1
	local label=$2 run rate l0 l1 p0 p1 c0 c1 w0 w1 s0 s1 f0 f1 iw out json cu cs
	for run in $(seq "$RUNS"); do
		for rate in $RATES; do
			l0=$(cut -d' ' -f1 /proc/loadavg)
			p0=$(psi)
			read -r c0 w0 s0 <<<"$(sched)"
			f0=$(fsyncs)
			out=$({ /usr/bin/time -f 'client-cpu %U %S' "$work/skein" perf produce -b "$bs" --topic lat \
				--acks "$ACKS" --linger "$LINGER" --rate-mb "$rate" --duration "$DURATION" --json; } 2>&1)
			read -r c1 w1 s1 <<<"$(sched)"
			iw=$(iouwrk)
			f1=$(fsyncs)
			l1=$(cut -d' ' -f1 /proc/loadavg)
			p1=$(psi)
			json=$(grep '^{' <<<"$out")
			read -r _ cu cs <<<"$(grep '^client-cpu' <<<"$out")"
			awk -v l="$label" -v lg="$LINGER" -v r="$run" -v rate="$rate" -v m="$(field mb_per_sec "$json")" \
				-v p50="$(field p50_ms "$json")" -v p99="$(field p99_ms "$json")" \
				-v p999="$(field p999_ms "$json")" -v mx="$(field max_latency_ms "$json")" \
				-v l0="$l0" -v l1="$l1" -v p0="$p0" -v p1="$p1" -v bc=$((c1 - c0)) -v bw=$((w1 - w0)) \
				-v ts=$((s1 - s0)) \
				-v f=$((f1 - f0)) -v iw="$iw" -v cu="$cu" -v cs="$cs" 'BEGIN {
					printf "{\"label\":\"%s\",\"linger\":\"%s\",\"run\":%d,\"rate_mb\":%s,\"mb_per_sec\":%.1f,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"p999_ms\":%.1f,\"max_ms\":%.1f,\"load\":\"%s-%s\",\"cpu_psi\":\"%s-%s\",\"broker_cpu_s\":%.2f,\"broker_runqueue_wait_s\":%.2f,\"broker_timeslices\":%d,\"fsyncs\":%d,\"iou_wrk_threads\":%d,\"client_cpu_s\":%.2f}\n",
						l, lg, r, rate, m, p50, p99, p999, mx, l0, l1, p0, p1, bc / 1e9, bw / 1e9, ts, f, iw, cu + cs
				}'
		done
	done
}

if [[ -n ${KFAKE_DIR:-} ]]; then
	kfake_build "$KFAKE_DIR" "$work"
	kfake_start "$work" "$KFAKE_PORT"
	bs=$kfake_bs
	pids=$kfake_pid
	create_topic
	runs kfake kfake
	kfake_stop
fi
dev_cluster_start
create_topic
runs skein "$LABEL"
