package chaos

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Client debugging (Config.ClientDebug, skein verify --client-debug), for
// a transactional client that stops making progress: each transactional
// producer and transformer logs at franz-go's debug level to
// <out>/client-<n>.log, the local brokers serve Go's profiles
// (admin.pprof.enable), and when a transaction's records go unanswered
// (answerGrace) this process's goroutines and each local broker's are
// written to <out>/unanswered-<txn>-<time>-<who>.txt.

// clientDebugDumpTimeout bounds one broker's goroutine dump.
const clientDebugDumpTimeout = 10 * time.Second

// debugBrokerProps are the local brokers' properties with ClientDebug.
func debugBrokerProps(cfg *Config) map[string]string {
	if !cfg.ClientDebug {
		return brokerOverrides
	}
	props := maps.Clone(brokerOverrides)
	props["admin.pprof.enable"] = "true"
	return props
}

// clientDebugLog is the debug logger option of client n (none without
// ClientDebug); the file stays open for the run.
func clientDebugLog(cfg *Config, n int) ([]kgo.Opt, error) {
	if !cfg.ClientDebug {
		return nil, nil
	}
	f, err := os.OpenFile(filepath.Join(cfg.Out, fmt.Sprintf("client-%d.log", n)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("client debug log: %w", err)
	}
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, func() string {
		return time.Now().UTC().Format("15:04:05.000000 ")
	}))}, nil
}

var dumpMu sync.Mutex

// dumpUnanswered writes the goroutine dumps for transaction name (a
// broker that cannot be asked gets its error written instead).
func dumpUnanswered(cfg *Config, name string) {
	if !cfg.ClientDebug {
		return
	}
	dumpMu.Lock()
	defer dumpMu.Unlock()
	base := filepath.Join(cfg.Out, "unanswered-"+name+"-"+time.Now().UTC().Format("150405"))
	if f, err := os.Create(base + "-verify.txt"); err == nil {
		_ = pprof.Lookup("goroutine").WriteTo(f, 2)
		f.Close()
	}
	for i, addr := range cfg.adminAddrs {
		dumpBroker(addr, fmt.Sprintf("%s-broker%d.txt", base, i+1))
	}
}

func dumpBroker(addr, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), clientDebugDumpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/goroutine?debug=2", nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		_ = os.WriteFile(path, []byte(err.Error()+"\n"), 0o644)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, io.LimitReader(resp.Body, 256<<20))
}
