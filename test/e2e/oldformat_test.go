package e2e

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/rpc"
)

// messageSetV1 builds a one-message v1 message set (the format before
// record batches), the way a pre-0.11 client would send it.
func messageSetV1(value []byte) []byte {
	var msg []byte
	msg = append(msg, 1, 0)                                                  // magic 1, attributes
	msg = binary.BigEndian.AppendUint64(msg, uint64(time.Now().UnixMilli())) // timestamp
	msg = binary.BigEndian.AppendUint32(msg, 0xffffffff)                     // null key
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(value)))
	msg = append(msg, value...)
	var set []byte
	set = binary.BigEndian.AppendUint64(set, 0) // offset
	set = binary.BigEndian.AppendUint32(set, uint32(4+len(msg)))
	set = binary.BigEndian.AppendUint32(set, crc32.ChecksumIEEE(msg))
	return append(set, msg...)
}

// TestOldMessageFormatIsRefusedClearly: Produce v0-v2 are advertised (so
// librdkafka keeps compressing), but data in the old message formats gets
// UNSUPPORTED_FOR_MESSAGE_FORMAT and nothing is stored.
func TestOldMessageFormatIsRefusedClearly(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("oldformat", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Our own rpc client sends exactly the version asked for (a Kafka
	// client would pick the newest).
	conn, err := rpc.Dial(ctx, tb.addr, "old-client")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := tb.client()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 2
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "oldformat"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = messageSetV1([]byte("old"))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := conn.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnsupportedForMessageFormat.Code {
		t.Fatalf("got error %d, want UNSUPPORTED_FOR_MESSAGE_FORMAT (%d)", code, kerr.UnsupportedForMessageFormat.Code)
	}
	offsets := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "oldformat"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	offsets.Topics = append(offsets.Topics, lt)
	lresp, err := offsets.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if end := lresp.Topics[0].Partitions[0].Offset; end != 0 {
		t.Fatalf("log end is %d after a refused produce, want 0", end)
	}
}
