# shellcheck shell=bash
# kfake.sh: sourced by the measuring scripts (bench.sh,
# latency-under-load.sh) to run the same load against franz-go's kfake
# (in memory, no replication, no disk): the load generator's own ceiling,
# for ratios read in the same sitting. kfake is not vendored here and
# nothing of it is committed: it comes from a checkout of
# github.com/twmb/franz-go. The caller sets root (the repository).

# kfake_build FRANZ_GO_DIR WORK: writes a small main in WORK/kfake that
# imports the checkout's pkg/kfake and starts kfake brokers on fixed
# ports, and builds it to WORK/kfake/kfake.
kfake_build() {
	local dir=$1 out=$2/kfake kgo_version kmsg_version
	if [[ -z "$dir" || ! -d "$dir/pkg/kfake" ]]; then
		echo "kfake: $dir is not a github.com/twmb/franz-go checkout (no pkg/kfake)" >&2
		exit 2
	fi
	dir=$(cd "$dir" && pwd)
	mkdir -p "$out"
	cat >"$out/main.go" <<'EOF'
// A kfake cluster on fixed ports until SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 29092, "port of the first broker; the others follow")
	brokers := flag.Int("brokers", 3, "brokers")
	flag.Parse()
	ports := make([]int, *brokers)
	for i := range ports {
		ports[i] = *port + i
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(*brokers), kfake.Ports(ports...), kfake.AllowAutoTopicCreation())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("kfake ready on", strings.Join(c.ListenAddrs(), ","))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	c.Close()
}
EOF
	# kfake comes from the checkout; franz-go and kmsg at the versions
	# Skein uses, so that kfake parses what the load generator sends (an
	# older kmsg cannot parse a newer client's ApiVersions and closes the
	# connection).
	kgo_version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/twmb/franz-go)
	kmsg_version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/twmb/franz-go/pkg/kmsg)
	cat >"$out/go.mod" <<EOF
module skeinbench/kfake

go 1.25.0

require (
	github.com/twmb/franz-go $kgo_version
	github.com/twmb/franz-go/pkg/kfake v0.0.0
	github.com/twmb/franz-go/pkg/kmsg $kmsg_version
)

replace github.com/twmb/franz-go/pkg/kfake => $dir/pkg/kfake
EOF
	(cd "$out" && go mod tidy >/dev/null 2>&1 && go build -o kfake .)
}

# kfake_start WORK PORT: starts 3 kfake brokers on PORT, PORT+1 and
# PORT+2, waits until they serve, and sets kfake_pid and kfake_bs (the
# bootstrap servers).
kfake_start() {
	rm -f "$1/kfake.out" # a reused WORK's last "kfake ready" must not count
	"$1/kfake/kfake" --port "$2" >"$1/kfake.out" 2>&1 &
	kfake_pid=$!
	for _ in $(seq 600); do
		grep -qs "kfake ready" "$1/kfake.out" && break
		if ! kill -0 "$kfake_pid" 2>/dev/null; then
			cat "$1/kfake.out" >&2
			exit 1
		fi
		sleep 0.1
	done
	if ! grep -qs "kfake ready" "$1/kfake.out"; then
		echo "kfake did not start:" >&2
		cat "$1/kfake.out" >&2
		exit 1
	fi
	kfake_bs="127.0.0.1:$2,127.0.0.1:$(($2 + 1)),127.0.0.1:$(($2 + 2))"
}

# kfake_stop: stops the brokers kfake_start started.
kfake_stop() {
	if [[ -n ${kfake_pid:-} ]]; then
		kill -INT "$kfake_pid" 2>/dev/null || true
		wait "$kfake_pid" 2>/dev/null || true
		kfake_pid=
	fi
}
