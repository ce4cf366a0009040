package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skein-log/skein/internal/testport"
)

func TestLineRecord(t *testing.T) {
	tests := []struct {
		name, line, sep    string
		wantKey, wantValue []byte
		wantErr            string
	}{
		{name: "no separator: value only", line: "a:b", wantValue: []byte("a:b")},
		{name: "split at the first separator", line: "k:v:w", sep: ":", wantKey: []byte("k"), wantValue: []byte("v:w")},
		{name: "multi-byte separator", line: "k=>v", sep: "=>", wantKey: []byte("k"), wantValue: []byte("v")},
		{name: "empty key and value", line: ":", sep: ":", wantKey: []byte{}, wantValue: []byte{}},
		{name: "empty line is an empty value", line: "", wantValue: []byte{}},
		{name: "separator missing", line: "novalue", sep: ":", wantErr: `no key separator ":"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := lineRecord([]byte(tt.line), tt.sep, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(rec.Key) != string(tt.wantKey) || (rec.Key == nil) != (tt.wantKey == nil) {
				t.Errorf("key %q, want %q", rec.Key, tt.wantKey)
			}
			if rec.Value == nil || string(rec.Value) != string(tt.wantValue) {
				t.Errorf("value %q, want %q (never null)", rec.Value, tt.wantValue)
			}
		})
	}
}

// TestProduceThenConsumeJSON sends keyed lines with headers and reads them
// back as JSON, comparing every field that was sent.
func TestProduceThenConsumeJSON(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "events", "--partitions", "1", "-b", addr)

	input := "user-1:signed up\nuser-2:paid: 30 EUR\n:no key text\n"
	r := runCLI(t, runProduce, input, "--topic", "events", "--key-separator", ":", "--header", "source=cli",
		"--header", "source=again", "--compression", "zstd", "-b", addr)
	if r.err != nil {
		t.Fatalf("produce: %v\n%s", r.err, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "3 lines read, 3 records acknowledged by topic events, 0 failed") {
		t.Errorf("produce summary %q", r.stderr)
	}

	r = runCLI(t, runConsume, "", "--topic", "events", "--from-beginning", "--format", "json", "--max-messages", "3", "-b", addr)
	if r.err != nil {
		t.Fatalf("consume: %v\n%s", r.err, r.stderr)
	}
	if r.stderr != "Processed a total of 3 messages\n" {
		t.Errorf("consume summary %q", r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	want := []struct{ key, value string }{{"user-1", "signed up"}, {"user-2", "paid: 30 EUR"}, {"", "no key text"}}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), r.stdout)
	}
	for i, line := range lines {
		var got struct {
			Topic     string  `json:"topic"`
			Partition int32   `json:"partition"`
			Offset    int64   `json:"offset"`
			Timestamp int64   `json:"timestamp"`
			Key       *string `json:"key"`
			Value     *string `json:"value"`
			Headers   []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"headers"`
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		if got.Topic != "events" || got.Partition != 0 || got.Offset != int64(i) || got.Timestamp <= 0 {
			t.Errorf("line %d: topic/partition/offset/timestamp = %s/%d/%d/%d", i, got.Topic, got.Partition, got.Offset, got.Timestamp)
		}
		if got.Key == nil || *got.Key != want[i].key || got.Value == nil || *got.Value != want[i].value {
			t.Errorf("line %d: key/value = %v/%v, want %q/%q", i, got.Key, got.Value, want[i].key, want[i].value)
		}
		if len(got.Headers) != 2 || got.Headers[0].Key != "source" || got.Headers[0].Value != "cli" || got.Headers[1].Value != "again" {
			t.Errorf("line %d: headers %+v", i, got.Headers)
		}
	}
}

func TestProduceFailures(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "logs", "--partitions", "2", "-b", addr)

	t.Run("line without key separator", func(t *testing.T) {
		r := runCLI(t, runProduce, "a=1\nbroken\nb=2\n", "--topic", "logs", "--key-separator", "=", "-b", addr)
		if r.err == nil || r.err.Error() != "1 of 3 records failed" {
			t.Fatalf("error %v, want 1 of 3 records failed", r.err)
		}
		if !strings.Contains(r.stderr, "2 records acknowledged") || !strings.Contains(r.stderr, `line 2: no key separator "="`) {
			t.Errorf("summary:\n%s", r.stderr)
		}
	})
	t.Run("record larger than the topic allows", func(t *testing.T) {
		mustRun(t, runTopic, "", "alter", "logs", "--config", "max.message.bytes=200", "-b", addr)
		r := runCLI(t, runProduce, "small\n"+strings.Repeat("x", 1000)+"\n", "--topic", "logs", "--partition", "1", "-b", addr)
		if r.err == nil || !strings.Contains(r.stderr, "line 2: MESSAGE_TOO_LARGE: ") {
			t.Errorf("error %v, stderr:\n%s", r.err, r.stderr)
		}
	})
	t.Run("line longer than --max-line-bytes", func(t *testing.T) {
		r := runCLI(t, runProduce, "ok\n"+strings.Repeat("y", 100)+"\n", "--topic", "logs", "--max-line-bytes", "10", "-b", addr)
		if r.err == nil || !strings.Contains(r.err.Error(), "line 2 is longer than --max-line-bytes (10 bytes)") {
			t.Errorf("error %v", r.err)
		}
	})
	t.Run("flag errors", func(t *testing.T) {
		for args, want := range map[string]string{
			"":                               "--topic is required",
			"--topic t --acks 2":             `--acks "2"`,
			"--topic t --compression brotli": `--compression "brotli"`,
			"--topic t --partition -2":       "--partition -2",
			"--topic t extra":                "unexpected arguments",
		} {
			r := runCLI(t, runProduce, "", append(strings.Fields(args), "-b", addr)...)
			if r.err == nil || !strings.Contains(r.err.Error(), want) {
				t.Errorf("%q: error %v, want %q", args, r.err, want)
			}
		}
	})
}

// The manual partitioner must put every record where --partition says.
func TestProduceToPartition(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "spread", "--partitions", "3", "-b", addr)
	mustRun(t, runProduce, "a\nb\nc\n", "--topic", "spread", "--partition", "2", "-b", addr)
	out := mustRun(t, runTopic, "", "describe", "spread", "-b", addr)
	for p, hw := range map[string]string{"0": "0", "1": "0", "2": "3"} {
		if got := tableRow(t, out, p)[5]; got != hw {
			t.Errorf("partition %s high watermark %s, want %s", p, got, hw)
		}
	}
}

// TestProduceUnreachableFailsFast: with no broker listening, produce says
// so within seconds, naming every address it tried, instead of holding
// the records for --timeout (2 minutes).
func TestProduceUnreachableFailsFast(t *testing.T) {
	// Reserved and never listened on: connections are refused.
	a, b := testport.One(t), testport.One(t)
	addrs := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", a, b)
	start := time.Now()
	r := runCLI(t, runProduce, "one\ntwo\n", "--bootstrap-server", addrs, "--topic", "t")
	took := time.Since(start)
	if r.err == nil || !strings.Contains(r.err.Error(), fmt.Sprintf("no broker reachable at 127.0.0.1:%d, 127.0.0.1:%d", a, b)) {
		t.Fatalf("err %v after %v; stderr:\n%s", r.err, took, r.stderr)
	}
	if took > produceConnectTimeout+2*time.Second {
		t.Errorf("took %v to fail", took)
	}
}
