package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeFetchMaxWait is how long the broker may hold a fetch that has no
// data yet.
const consumeFetchMaxWait = 500 * time.Millisecond

func init() {
	commands["consume"] = command{summary: "print records of a topic to stdout (like kafka-console-consumer)", run: clientCommand(runConsume)}
}

func runConsume(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein consume", s)
	bootstrap := clusterFlag(fs)
	topic := fs.String("topic", "", "topic to consume (required)")
	fromBeginning := fs.Bool("from-beginning", false, "start at the earliest offset instead of the end")
	group := fs.String("group", "", "consume as a member of this consumer group")
	partition := fs.Int("partition", -1, "consume only this partition (-1: every partition)")
	offset := fs.String("offset", "", "where to start in --partition: earliest, latest or an offset (default: latest)")
	maxMessages := fs.Int64("max-messages", 0, "exit after printing this many records (0: no limit)")
	format := fs.String("format", "text", "text, or json (one object per line, every field included)")
	var f recordFormatter
	fs.BoolVar(&f.printKey, "print-key", false, "text format: print the key before the value")
	fs.BoolVar(&f.printHeaders, "print-headers", false, "text format: print the headers")
	fs.BoolVar(&f.printOffset, "print-offset", false, "text format: print the partition and offset")
	fs.BoolVar(&f.printTimestamp, "print-timestamp", false, "text format: print the timestamp")
	idle := fs.Duration("timeout", 0, "exit when no record arrives for this long (0: wait forever)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case *topic == "":
		return errors.New("--topic is required")
	case *format != "text" && *format != "json":
		return fmt.Errorf("--format %q: want text or json", *format)
	case *maxMessages < 0:
		return fmt.Errorf("--max-messages %d: want 0 or more", *maxMessages)
	case *idle < 0:
		return fmt.Errorf("--timeout %v: want 0 or a positive duration", *idle)
	case *partition < -1 || *partition > math.MaxInt32:
		return fmt.Errorf("--partition %d: want a partition number, or -1", *partition)
	case *group != "" && *partition >= 0:
		return errors.New("--partition cannot be combined with --group: the group assigns partitions")
	}
	f.json = *format == "json"
	start, err := startOffset(*offset, *fromBeginning, *partition, *group)
	if err != nil {
		return err
	}
	opts, err := bootstrap.opts()
	if err != nil {
		return err
	}

	adm, err := newAdmin(bootstrap)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := checkConsumable(ctx, adm, *topic, int32(*partition), *group); err != nil {
		return err
	}

	// Kafka's fetch.max.wait.ms default (kgo waits 5 s): an idle --timeout
	// and Ctrl-C are noticed sooner, and the broker parks fewer fetches.
	opts = append(opts, kgo.FetchMaxWait(consumeFetchMaxWait))
	switch {
	case *group != "":
		opts = append(opts, kgo.ConsumerGroup(*group), kgo.ConsumeTopics(*topic), kgo.ConsumeResetOffset(start))
	case *partition >= 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{*topic: {int32(*partition): start}}))
	default:
		opts = append(opts, kgo.ConsumeTopics(*topic), kgo.ConsumeResetOffset(start))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("client for %s: %w", bootstrap, err)
	}
	defer cl.Close()

	n, err := consumeLoop(ctx, cl, s.out, f, *maxMessages, *idle)
	fmt.Fprintf(s.err, "Processed a total of %d messages\n", n)
	return err
}

// startOffset turns --offset and --from-beginning into where to start.
// A numeric offset names a place in one partition, so it needs
// --partition, and a group resumes from its committed offsets.
func startOffset(offset string, fromBeginning bool, partition int, group string) (kgo.Offset, error) {
	if fromBeginning && offset != "" {
		return kgo.Offset{}, errors.New("give either --from-beginning or --offset, not both")
	}
	switch offset {
	case "":
		if fromBeginning {
			return kgo.NewOffset().AtStart(), nil
		}
		return kgo.NewOffset().AtEnd(), nil
	case "earliest", "beginning":
		return kgo.NewOffset().AtStart(), nil
	case "latest", "end":
		return kgo.NewOffset().AtEnd(), nil
	}
	at, err := strconv.ParseInt(offset, 10, 64)
	if err != nil || at < 0 {
		return kgo.Offset{}, fmt.Errorf("--offset %q: want earliest, latest or an offset of 0 or more", offset)
	}
	if partition < 0 || group != "" {
		return kgo.Offset{}, errors.New("--offset with a number needs --partition and no --group")
	}
	return kgo.NewOffset().At(at), nil
}

// groupAPIs are the requests a group member sends; a broker missing any
// of them cannot host a consumer group.
var groupAPIs = []struct {
	key  int16
	name string
}{
	{8, "OffsetCommit"}, {9, "OffsetFetch"}, {10, "FindCoordinator"}, {11, "JoinGroup"},
	{12, "Heartbeat"}, {13, "LeaveGroup"}, {14, "SyncGroup"},
}

// checkConsumable fails early, with a message naming the cause, where
// the client would otherwise wait forever: an unknown topic or partition,
// or a group on a cluster that does not serve groups.
func checkConsumable(ctx context.Context, adm *kadm.Client, topic string, partition int32, group string) error {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return fmt.Errorf("look up topic %q: %w", topic, explainError(err))
	}
	t := md.Topics[topic]
	if t.Err != nil {
		return fmt.Errorf("topic %q: %w", topic, t.Err)
	}
	if _, ok := t.Partitions[partition]; partition >= 0 && !ok {
		return fmt.Errorf("topic %q has no partition %d (it has %d partitions)", topic, partition, len(t.Partitions))
	}
	if group == "" {
		return nil
	}
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		return fmt.Errorf("ask the cluster which APIs it serves: %w", explainError(err))
	}
	for _, v := range versions.Sorted() {
		if v.Err != nil {
			return fmt.Errorf("ask broker %d which APIs it serves: %w", v.NodeID, explainError(v.Err))
		}
		var missing []string
		for _, api := range groupAPIs {
			if _, ok := v.KeyMaxVersion(api.key); !ok {
				missing = append(missing, fmt.Sprintf("%s (key %d)", api.name, api.key))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("--group: broker %d does not support consumer groups yet (it does not serve %s); consume without --group, choosing where to start with --partition and --offset",
				v.NodeID, strings.Join(missing, ", "))
		}
	}
	return nil
}

// consumeLoop prints records until maxMessages (0: no limit), until no
// record arrives for idle (0: never), or until ctx ends. It returns how
// many records it printed. Output is flushed after every poll so that a
// terminal or pipe sees records as they arrive.
func consumeLoop(ctx context.Context, cl *kgo.Client, out io.Writer, f recordFormatter, maxMessages int64, idle time.Duration) (int64, error) {
	w := bufio.NewWriter(out)
	var printed int64
	lastRecord := time.Now()
	for maxMessages == 0 || printed < maxMessages {
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if idle > 0 {
			pollCtx, cancel = context.WithDeadline(ctx, lastRecord.Add(idle))
		}
		fetches := cl.PollFetches(pollCtx)
		idleExpired := errors.Is(pollCtx.Err(), context.DeadlineExceeded)
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			break // Ctrl-C: print the summary and exit cleanly, as Kafka's console consumer does
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			return printed, errors.Join(fmt.Errorf("consume topic %q partition %d: %w", fe.Topic, fe.Partition, explainError(fe.Err)), w.Flush())
		}
		got := false
		var writeErr error
		fetches.EachRecord(func(r *kgo.Record) {
			if writeErr != nil || (maxMessages > 0 && printed >= maxMessages) {
				return
			}
			got = true
			writeErr = f.write(w, r)
			printed++
		})
		if writeErr == nil {
			writeErr = w.Flush()
		}
		if writeErr != nil {
			return printed, fmt.Errorf("write records: %w", writeErr)
		}
		if got {
			lastRecord = time.Now()
		} else if idleExpired {
			break
		}
	}
	return printed, w.Flush()
}

// recordFormatter prints records as text lines in the shape of Kafka's
// console consumer (fields separated by tabs) or as JSON lines.
type recordFormatter struct {
	json           bool
	printKey       bool
	printHeaders   bool
	printOffset    bool
	printTimestamp bool
}

func (f recordFormatter) write(w io.Writer, r *kgo.Record) error {
	if f.json {
		b, err := json.Marshal(newJSONRecord(r))
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	var line []byte
	if f.printTimestamp {
		kind := "CreateTime"
		if r.Attrs.TimestampType() == 1 {
			kind = "LogAppendTime"
		}
		line = fmt.Appendf(line, "%s:%d\t", kind, r.Timestamp.UnixMilli())
	}
	if f.printOffset {
		line = fmt.Appendf(line, "Partition:%d\tOffset:%d\t", r.Partition, r.Offset)
	}
	if f.printHeaders {
		if len(r.Headers) == 0 {
			line = append(line, "NO_HEADERS"...)
		}
		for i, h := range r.Headers {
			if i > 0 {
				line = append(line, ',')
			}
			line = append(append(append(line, h.Key...), ':'), textOrNull(h.Value)...)
		}
		line = append(line, '\t')
	}
	if f.printKey {
		line = append(append(line, textOrNull(r.Key)...), '\t')
	}
	line = append(append(line, textOrNull(r.Value)...), '\n')
	_, err := w.Write(line)
	return err
}

// textOrNull prints a missing key or value as "null", as Kafka's tools do.
func textOrNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// jsonRecord is one record in --format json. Keys, values and header
// values are JSON strings when they are UTF-8 text and null when absent;
// other bytes go in the *_base64 field instead, so nothing is mangled.
type jsonRecord struct {
	Topic       string          `json:"topic"`
	Partition   int32           `json:"partition"`
	Offset      int64           `json:"offset"`
	Timestamp   int64           `json:"timestamp"` // milliseconds since the Unix epoch
	Key         json.RawMessage `json:"key,omitempty"`
	KeyBase64   string          `json:"key_base64,omitempty"`
	Value       json.RawMessage `json:"value,omitempty"`
	ValueBase64 string          `json:"value_base64,omitempty"`
	Headers     []jsonHeader    `json:"headers"`
}

type jsonHeader struct {
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value,omitempty"`
	ValueBase64 string          `json:"value_base64,omitempty"`
}

func newJSONRecord(r *kgo.Record) jsonRecord {
	j := jsonRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Headers: []jsonHeader{}}
	j.Key, j.KeyBase64 = jsonBytes(r.Key)
	j.Value, j.ValueBase64 = jsonBytes(r.Value)
	for _, h := range r.Headers {
		jh := jsonHeader{Key: h.Key}
		jh.Value, jh.ValueBase64 = jsonBytes(h.Value)
		j.Headers = append(j.Headers, jh)
	}
	return j
}

// jsonBytes encodes b as a JSON string when it is UTF-8 text, as null
// when absent, and otherwise as base64 for the *_base64 field.
func jsonBytes(b []byte) (json.RawMessage, string) {
	if b == nil {
		return json.RawMessage("null"), ""
	}
	if !utf8.Valid(b) {
		return nil, base64.StdEncoding.EncodeToString(b)
	}
	text, err := json.Marshal(string(b))
	if err != nil { // cannot happen for a string; keep the bytes rather than lose them
		return nil, base64.StdEncoding.EncodeToString(b)
	}
	return text, ""
}
