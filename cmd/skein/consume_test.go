package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestStartOffset(t *testing.T) {
	tests := []struct {
		offset        string
		fromBeginning bool
		partition     int
		group         string
		want          string // kgo.Offset's String form, or the error
	}{
		{partition: -1, want: kgo.NewOffset().AtEnd().String()},
		{partition: -1, fromBeginning: true, want: kgo.NewOffset().AtStart().String()},
		{partition: -1, offset: "earliest", want: kgo.NewOffset().AtStart().String()},
		{offset: "latest", partition: 0, want: kgo.NewOffset().AtEnd().String()},
		{offset: "42", partition: 1, want: kgo.NewOffset().At(42).String()},
		{offset: "42", partition: -1, want: "needs --partition"},
		{offset: "42", partition: 0, group: "g", want: "needs --partition and no --group"},
		{offset: "-3", partition: 0, want: "want earliest, latest or an offset"},
		{offset: "soon", partition: 0, want: "want earliest, latest or an offset"},
		{offset: "earliest", fromBeginning: true, want: "not both"},
	}
	for _, tt := range tests {
		got, err := startOffset(tt.offset, tt.fromBeginning, tt.partition, tt.group)
		s := got.String()
		if err != nil {
			s = err.Error()
		}
		if !strings.Contains(s, tt.want) {
			t.Errorf("startOffset(%q, %v, %d, %q) = %q, want %q", tt.offset, tt.fromBeginning, tt.partition, tt.group, s, tt.want)
		}
	}
}

func TestRecordFormatter(t *testing.T) {
	rec := &kgo.Record{
		Topic: "t", Partition: 2, Offset: 7, Timestamp: time.UnixMilli(1700000000123),
		Key: []byte("k"), Value: []byte("v\"1"),
		Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: nil}},
	}
	binary := &kgo.Record{Topic: "t", Timestamp: time.UnixMilli(5), Key: nil, Value: []byte{0xff, 0x00}}
	tests := []struct {
		name string
		f    recordFormatter
		rec  *kgo.Record
		want string
	}{
		{"value only", recordFormatter{}, rec, "v\"1\n"},
		{"every text field", recordFormatter{printKey: true, printHeaders: true, printOffset: true, printTimestamp: true}, rec,
			"CreateTime:1700000000123\tPartition:2\tOffset:7\ta:1,b:null\tk\tv\"1\n"},
		{"null key, no headers", recordFormatter{printKey: true, printHeaders: true}, binary, "NO_HEADERS\tnull\t\xff\x00\n"},
		{"json", recordFormatter{json: true}, rec,
			`{"topic":"t","partition":2,"offset":7,"timestamp":1700000000123,"key":"k","value":"v\"1","headers":[{"key":"a","value":"1"},{"key":"b","value":null}]}` + "\n"},
		{"json of binary and null", recordFormatter{json: true}, binary,
			`{"topic":"t","partition":0,"offset":0,"timestamp":5,"key":null,"value_base64":"/wA=","headers":[]}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.f.write(&b, tt.rec); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got  %q\nwant %q", b.String(), tt.want)
			}
		})
	}
}

func TestConsume(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "feed", "--partitions", "2", "-b", addr)
	mustRun(t, runProduce, "a\nb\nc\n", "--topic", "feed", "--partition", "1", "-b", addr)
	mustRun(t, runProduce, "z\n", "--topic", "feed", "--partition", "0", "-b", addr)

	t.Run("partition and offset", func(t *testing.T) {
		out := mustRun(t, runConsume, "", "--topic", "feed", "--partition", "1", "--offset", "1", "--max-messages", "2", "--print-offset", "-b", addr)
		if want := "Partition:1\tOffset:1\tb\nPartition:1\tOffset:2\tc\n"; out != want {
			t.Errorf("got %q, want %q", out, want)
		}
	})
	t.Run("exits when idle", func(t *testing.T) {
		r := runCLI(t, runConsume, "", "--topic", "feed", "--from-beginning", "--timeout", "300ms", "-b", addr)
		if r.err != nil {
			t.Fatal(r.err)
		}
		got := strings.Fields(r.stdout)
		if len(got) != 4 || r.stderr != "Processed a total of 4 messages\n" {
			t.Errorf("stdout %q, stderr %q; want the 4 records", r.stdout, r.stderr)
		}
	})
	t.Run("latest by default", func(t *testing.T) {
		r := runCLI(t, runConsume, "", "--topic", "feed", "--timeout", "200ms", "-b", addr)
		if r.err != nil || r.stdout != "" {
			t.Errorf("err %v, stdout %q; want nothing from the end of the log", r.err, r.stdout)
		}
	})

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown topic", []string{"--topic", "nope"}, `topic "nope": UNKNOWN_TOPIC_OR_PARTITION: `},
		{"unknown partition", []string{"--topic", "feed", "--partition", "9"}, `topic "feed" has no partition 9 (it has 2 partitions)`},
		{"no topic", nil, "--topic is required"},
		{"bad format", []string{"--topic", "feed", "--format", "xml"}, `--format "xml"`},
		{"group and partition", []string{"--topic", "feed", "--group", "g", "--partition", "0"}, "cannot be combined with --group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, runConsume, "", append(tt.args, "-b", addr)...)
			if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("error %v, want %q", r.err, tt.want)
			}
		})
	}
}

// Until the broker serves consumer groups, --group must say so plainly
// rather than hang or print a connection error.
func TestConsumeGroupUnsupported(t *testing.T) {
	addr := startTestBroker(t)
	mustRun(t, runTopic, "", "create", "g", "-b", addr)
	adm, err := newAdmin(&clusterFlags{bootstrap: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	versions, err := adm.ApiVersions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v := versions.Sorted()[0]; func() bool { _, ok := v.KeyMaxVersion(11); return ok }() {
		t.Skip("the broker serves JoinGroup now; this check is moot")
	}
	r := runCLI(t, runConsume, "", "--topic", "g", "--group", "readers", "-b", addr)
	if r.err == nil || !strings.Contains(r.err.Error(), "--group: broker 1 does not support consumer groups yet") ||
		!strings.Contains(r.err.Error(), "JoinGroup (key 11)") {
		t.Errorf("error %v", r.err)
	}
}
