package node

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/config"
)

func TestGroupConfigFollowsBrokerProperties(t *testing.T) {
	cfg, err := config.NewBroker(map[string]string{
		"node.id":                          "1",
		"listeners":                        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"group.initial.rebalance.delay.ms": "250",
		"group.min.session.timeout.ms":     "1000",
		"group.max.session.timeout.ms":     "20000",
		"offsets.retention.minutes":        "3",
		"offset.metadata.max.bytes":        "77",
		"group.max.size":                   "12",
	})
	if err != nil {
		t.Fatal(err)
	}
	gc := groupConfig(cfg)
	if gc.InitialRebalanceDelayMs != 250 || gc.MinSessionTimeoutMs != 1000 || gc.MaxSessionTimeoutMs != 20000 ||
		gc.OffsetsRetentionMs != 180000 || gc.MaxOffsetMetadataBytes != 77 || gc.MaxSize != 12 {
		t.Fatalf("group config %+v does not follow the properties", gc)
	}
}

func TestGroupConfigKeepsTheSizeCapAtKafkasDefault(t *testing.T) {
	cfg, err := config.NewBroker(map[string]string{
		"node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "log.dirs": t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := groupConfig(cfg).MaxSize; got != 10000 {
		t.Fatalf("group.max.size at Kafka's unbounded default gives %d members, want the coordinator's cap 10000", got)
	}
}

func TestCountdownFiresOnceAfterAll(t *testing.T) {
	fired := 0
	c := newCountdown(2, func() { fired++ })
	c.done()
	if fired != 0 {
		t.Fatal("fired before every part was done")
	}
	c.done()
	if fired != 1 {
		t.Fatalf("fired %d times, want 1", fired)
	}
	newCountdown(0, func() { fired++ })
	if fired != 2 {
		t.Fatal("a countdown of zero must fire at once")
	}
}

func TestGroupWriteAnswersInOrderOnceFinished(t *testing.T) {
	var w groupWrite
	var got []string
	w.then(func(err error) { got = append(got, "first:"+errString(err)) })
	w.then(func(err error) { got = append(got, "second:"+errString(err)) })
	if len(got) != 0 {
		t.Fatalf("answered before the write finished: %v", got)
	}
	w.finish(nil)
	w.finish(errors.New("late")) // only the first outcome counts
	w.then(func(err error) { got = append(got, "after:"+errString(err)) })
	want := []string{"first:ok", "second:ok", "after:ok"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	var failed groupWrite
	var code error
	failed.then(func(err error) { code = err })
	failed.finish(kerr.NotCoordinator)
	if !errors.Is(code, kerr.NotCoordinator) {
		t.Fatalf("a failed write answered %v", code)
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
