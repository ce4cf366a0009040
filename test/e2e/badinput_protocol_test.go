package e2e

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawHeaderFrame is a size-prefixed frame holding a request header v1
// (null client id) followed by body.
func rawHeaderFrame(key, version int16, corr int32, body []byte) []byte {
	b := sizePrefix(0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xFFFF)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// TestBadInputClosesConnection sends byte streams the broker cannot
// understand. Each must close that connection (no answer, no hang), and the
// broker must keep serving everyone else.
func TestBadInputClosesConnection(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("after-bad-input", 1, nil)

	garbageProduce := rawHeaderFrame(0, 9, 1, []byte{0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0xff, 0x7f, 0x01})
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"unknown API key", rawHeaderFrame(999, 0, 1, nil)},
		{"key we do not serve (GetTelemetrySubscriptions)", rawHeaderFrame(71, 0, 1, []byte{0})},
		{"Produce below our floor (v2)", rawHeaderFrame(0, 2, 1, nil)},
		{"Produce v99", rawHeaderFrame(0, 99, 1, nil)},
		{"Metadata at a negative version", rawHeaderFrame(3, -1, 1, nil)},
		{"garbage Produce body", garbageProduce},
		{"client id longer than the frame", append(sizePrefix(12), 0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0xff, 'x', 'y')},
		{"frame smaller than a request header", append(sizePrefix(4), 0, 18, 0, 0)},
		{"zero length prefix", sizePrefix(0)},
		{"negative length prefix", sizePrefix(0xFFFFFFFF)},
		{"2 GiB length prefix (reads as negative)", sizePrefix(1 << 31)},
		{"2 GiB - 1 length prefix (over socket.request.max.bytes)", sizePrefix(math.MaxInt32)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, tb.addr)
			c.write(tt.bytes) // may fail if the broker already closed; the read decides
			c.expectClosed()
		})
	}

	// A client that dies halfway through a frame costs the broker nothing.
	for _, partial := range [][]byte{
		{0, 0},                                  // inside the prefix
		append(sizePrefix(100), 0, 18, 0, 3, 0), // inside the body
	} {
		c := dialRaw(t, tb.addr)
		if err := c.write(partial); err != nil {
			t.Fatalf("write partial frame: %v", err)
		}
		c.nc.Close()
	}

	// A good request on a fresh connection right after.
	c := dialRaw(t, tb.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	c.send(req, 7)
	if resp := c.receive(req, 7).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions after bad input: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	requireServing(t, tb, "after-bad-input", 20)
}

// TestApiVersionsUnknownVersion: a client newer than the broker asks with
// a version we do not know. The answer is in v0 format (so any client can
// read it) with UNSUPPORTED_VERSION and our range for ApiVersions, and the
// connection stays open for the retry.
func TestApiVersionsUnknownVersion(t *testing.T) {
	tb := startBroker(t)
	c := dialRaw(t, tb.addr)
	// A v99 request: header v2 with tags, the body layout unknown to us.
	frame := rawHeaderFrame(18, 99, 41, []byte{0, 5, 'n', 'e', 'w', 'e', 'r', 0})
	if err := c.write(frame); err != nil {
		t.Fatal(err)
	}
	corr, body, err := c.readResponse()
	if err != nil {
		t.Fatalf("read answer to ApiVersions v99: %v", err)
	}
	if corr != 41 {
		t.Fatalf("correlation id %d, want 41", corr)
	}
	v0 := kmsg.NewPtrApiVersionsRequest() // decode the answer as v0
	resp := decodeRawResponse(t, v0, body).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION (35)", resp.ErrorCode)
	}
	if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MinVersion != 0 || resp.ApiKeys[0].MaxVersion < 3 {
		t.Fatalf("api keys %+v, want only key 18 with range 0..>=3", resp.ApiKeys)
	}

	// The client retries with the highest version offered, on the same
	// connection.
	retry := kmsg.NewPtrApiVersionsRequest()
	retry.SetVersion(resp.ApiKeys[0].MaxVersion)
	retry.ClientSoftwareName = "badinput"
	retry.ClientSoftwareVersion = "1.0"
	c.send(retry, 42)
	full := c.receive(retry, 42).(*kmsg.ApiVersionsResponse)
	if full.ErrorCode != 0 || len(full.ApiKeys) < 2 {
		t.Fatalf("retry: error %d, %d keys", full.ErrorCode, len(full.ApiKeys))
	}
}

// TestProduceRejectsBadBatches checks each per-partition validation error
// and that none of the rejected batches reaches the log: a good batch sent
// afterwards lands at offset 0.
func TestProduceRejectsBadBatches(t *testing.T) {
	tb := startBroker(t)
	const topic = "guarded"
	maxMessageBytes := "1024"
	tb.createTopic(topic, 1, map[string]*string{"max.message.bytes": &maxMessageBytes})

	badCRC := recordsBatch(3, 10)
	badCRC[len(badCRC)-1] ^= 0xFF // a record byte, covered by the CRC
	badLength := recordsBatch(1, 10)
	binary.BigEndian.PutUint32(badLength[8:], 1<<20) // batchLength past the end

	tests := []struct {
		name      string
		acks      int16
		topic     string
		partition int32
		records   []byte
		want      *kerr.Error
	}{
		{"CRC mismatch", -1, topic, 0, badCRC, kerr.CorruptMessage},
		{"batch length past the end", -1, topic, 0, badLength, kerr.CorruptMessage},
		{"truncated batch", -1, topic, 0, recordsBatch(2, 10)[:40], kerr.CorruptMessage},
		{"no records", -1, topic, 0, nil, kerr.InvalidRecord},
		{"batch over max.message.bytes", -1, topic, 0, recordsBatch(2, 1000), kerr.MessageTooLarge},
		{"partition out of range", -1, topic, 1, recordsBatch(1, 10), kerr.UnknownTopicOrPartition},
		{"negative partition", -1, topic, -1, recordsBatch(1, 10), kerr.UnknownTopicOrPartition},
		{"unknown topic", -1, "no-such-topic", 0, recordsBatch(1, 10), kerr.UnknownTopicOrPartition},
		{"acks=5", 5, topic, 0, recordsBatch(1, 10), kerr.InvalidRequiredAcks},
		{"acks=-2", -2, topic, 0, recordsBatch(1, 10), kerr.InvalidRequiredAcks},
	}
	c := dialRaw(t, tb.addr)
	corr := int32(0)
	for _, version := range []int16{7, 9} { // classic and flexible encodings
		for _, tt := range tests {
			t.Run(fmt.Sprintf("v%d/%s", version, tt.name), func(t *testing.T) {
				corr++
				res := produceResult(t, c, produceRequest(version, tt.acks, tt.topic, tt.partition, tt.records), corr)
				if res.ErrorCode != tt.want.Code {
					t.Fatalf("error code %d (%v), want %d (%s)", res.ErrorCode, kerr.ErrorForCode(res.ErrorCode), tt.want.Code, tt.want.Message)
				}
				if res.Partition != tt.partition {
					t.Errorf("answer for partition %d, want %d", res.Partition, tt.partition)
				}
			})
		}
	}

	// Nothing was stored, and the connection that sent all that still works.
	corr++
	res := produceResult(t, c, produceRequest(9, -1, topic, 0, recordsBatch(4, 10)), corr)
	if res.ErrorCode != 0 || res.BaseOffset != 0 {
		t.Fatalf("good batch after rejected ones: error %d, base offset %d; want 0, 0", res.ErrorCode, res.BaseOffset)
	}
	consumeCount(t, tb, topic, 4)
}

// TestPipelinedRequestsAnsweredInOrder sends 50 mixed requests without
// reading; the answers must come back in request order even though they
// complete at different times (acks=all waits for fsync, Metadata does not).
func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("pipelined", 1, nil)
	c := dialRaw(t, tb.addr)

	const n = 50
	reqs := make([]kmsg.Request, n)
	for i := range reqs {
		switch i % 5 {
		case 0:
			reqs[i] = produceRequest(7, -1, "pipelined", 0, recordsBatch(1, 8))
		case 1:
			m := kmsg.NewPtrMetadataRequest()
			m.SetVersion(12)
			reqs[i] = m
		case 2:
			a := kmsg.NewPtrApiVersionsRequest()
			a.SetVersion(int16(i % 4))
			reqs[i] = a
		case 3:
			reqs[i] = produceRequest(9, 1, "pipelined", 0, recordsBatch(2, 8))
		case 4:
			m := kmsg.NewPtrMetadataRequest()
			m.SetVersion(1)
			reqs[i] = m
		}
	}
	var all []byte
	for i, r := range reqs {
		all = append(all, rawRequestFrame(r, int32(1000+i))...)
	}
	if err := c.write(all); err != nil {
		t.Fatalf("write %d pipelined requests: %v", n, err)
	}
	var lastOffset int64 = -1
	for i, r := range reqs {
		resp := c.receive(r, int32(1000+i)) // fails on any out-of-order id
		if p, ok := resp.(*kmsg.ProduceResponse); ok {
			pr := p.Topics[0].Partitions[0]
			if pr.ErrorCode != 0 || pr.BaseOffset <= lastOffset {
				t.Fatalf("request %d: produce error %d, base offset %d after %d", i, pr.ErrorCode, pr.BaseOffset, lastOffset)
			}
			lastOffset = pr.BaseOffset
		}
	}
}

// TestAcksZeroProduceHasNoResponse: acks=0 gets no answer at all, so the
// next response on the connection belongs to the next request; the record
// is still stored.
func TestAcksZeroProduceHasNoResponse(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("fire-and-forget", 1, nil)
	c := dialRaw(t, tb.addr)
	c.send(produceRequest(7, 0, "fire-and-forget", 0, recordsBatch(3, 8)), 1)
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(9)
	c.send(meta, 2)
	c.receive(meta, 2) // fails if the acks=0 produce was answered (id 1)

	res := produceResult(t, c, produceRequest(7, 1, "fire-and-forget", 0, recordsBatch(1, 8)), 3)
	if res.ErrorCode != 0 || res.BaseOffset != 3 {
		t.Fatalf("acks=1 after acks=0: error %d, base offset %d; want 0, 3", res.ErrorCode, res.BaseOffset)
	}
}

// TestAcksZeroProduceFailureClosesConnection: a failed acks=0 produce has
// no answer to carry its error, so the broker closes the connection (as
// Kafka does) and the client learns to refresh its metadata.
func TestAcksZeroProduceFailureClosesConnection(t *testing.T) {
	tb := startBroker(t)
	tb.createTopic("fire-and-forget-fail", 1, nil)
	c := dialRaw(t, tb.addr)
	c.send(produceRequest(7, 0, "fire-and-forget-fail", 5, recordsBatch(1, 8)), 1) // no partition 5
	c.expectClosed()
}
