package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

// rawIOTimeout bounds every read and write on a raw connection: a broker
// that should answer or close and does neither fails the test instead of
// hanging it.
const rawIOTimeout = 10 * time.Second

// maxRawResponseBytes bounds what a raw connection reads for one response.
const maxRawResponseBytes = 16 << 20

// rawConn is a bare TCP connection to a broker for sending bytes no real
// client would send.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, rawIOTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// write sends bytes as they are. A write may fail once the broker has
// closed the connection; callers that expect that check expectClosed.
func (c *rawConn) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(rawIOTimeout))
	_, err := c.nc.Write(b)
	return err
}

// send writes one well-formed request frame.
func (c *rawConn) send(req kmsg.Request, corr int32) {
	c.t.Helper()
	if err := c.write(rawRequestFrame(req, corr)); err != nil {
		c.t.Fatalf("send %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
}

// readResponse reads one response frame and returns its correlation id and
// the bytes after it (header tags, if any, and body).
func (c *rawConn) readResponse() (int32, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(rawIOTimeout))
	var prefix [4]byte
	if _, err := io.ReadFull(c.nc, prefix[:]); err != nil {
		return 0, nil, err
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if size < 4 || size > maxRawResponseBytes {
		return 0, nil, errors.New("response size out of range")
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(c.nc, buf); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:], nil
}

// receive reads the response to req, which must carry correlation id
// corr, and decodes it at req's version.
func (c *rawConn) receive(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	got, body, err := c.readResponse()
	if err != nil {
		c.t.Fatalf("read response to %s (corr %d): %v", kmsg.NameForKey(req.Key()), corr, err)
	}
	if got != corr {
		c.t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	return decodeRawResponse(c.t, req, body)
}

// decodeRawResponse decodes a response body (after the correlation id) to
// req, skipping the response header's tag section when it has one.
func decodeRawResponse(t testing.TB, req kmsg.Request, body []byte) kmsg.Response {
	t.Helper()
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("%s v%d response: expected an empty header tag section", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// expectClosed asserts that the broker closes the connection: a read
// returns EOF or a reset within rawIOTimeout, without any response.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(rawIOTimeout))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	switch {
	case n > 0:
		c.t.Fatalf("broker answered (%#x...) instead of closing the connection", b[0])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	case err != nil && errors.Is(err, syscall.EPIPE):
	default:
		c.t.Fatalf("connection not closed: read returned %v", err)
	}
}

// rawRequestFrame encodes req with its size prefix and a request header
// (v2 with an empty tag section for flexible versions).
func rawRequestFrame(req kmsg.Request, corr int32) []byte {
	const clientID = "badinput"
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// sizePrefix is a bare 4-byte frame size.
func sizePrefix(size uint32) []byte { return binary.BigEndian.AppendUint32(nil, size) }

// produceRequest builds a Produce request at version v carrying records
// for one topic partition.
func produceRequest(v int16, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks = acks
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceResult sends a produce on c and returns its single partition
// result.
func produceResult(t testing.TB, c *rawConn, req *kmsg.ProduceRequest, corr int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	c.send(req, corr)
	resp := c.receive(req, corr).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response shape: %+v", resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// recordsBatch is a valid uncompressed batch with n records of size bytes.
func recordsBatch(n, size int) []byte {
	values := make([][]byte, n)
	for i := range values {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		values[i] = v
	}
	return batch.Build(values, time.Now().UnixMilli())
}

// consumeCount reads a topic's single partition 0 from the start until it
// has want records, and fails the test if it gets fewer or more.
func consumeCount(t testing.TB, tb *testBroker, topic string, want int) {
	t.Helper()
	if err := readBack(tb, topic, want); err != nil {
		t.Fatal(err)
	}
}

// readBack reads a topic from the start until it has want records; more or
// fewer is an error. It does not touch testing.T, so it may run on any
// goroutine.
func readBack(tb *testBroker, topic string, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	defer cl.Close()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("%s: read %d of %d records: %w", topic, got, want, ctx.Err())
		}
		var fetchErr error
		fs.EachError(func(topic string, p int32, err error) { fetchErr = fmt.Errorf("fetch %s/%d: %w", topic, p, err) })
		if fetchErr != nil {
			return fetchErr
		}
		got += fs.NumRecords()
	}
	if got != want {
		return fmt.Errorf("%s: read %d records, want %d", topic, got, want)
	}
	return nil
}

// requireServing proves the broker still serves real clients: franz-go
// produces n records to a fresh topic and reads them all back.
func requireServing(t testing.TB, tb *testBroker, topic string, n int) {
	t.Helper()
	if err := produceAndReadBack(tb, topic, n); err != nil {
		t.Fatal(err)
	}
}

// produceAndReadBack is requireServing for use off the test goroutine.
func produceAndReadBack(tb *testBroker, topic string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr))
	if err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			return fmt.Errorf("produce %d to %s: %w", i, topic, err)
		}
	}
	return readBack(tb, topic, n)
}
