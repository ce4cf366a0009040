package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/batch"
)

// maxRawResponse bounds a response read by rawRequest.
const maxRawResponse = 16 << 20

// rawRequest sends one request on a fresh connection and decodes the
// answer, with no client library in between, so a test sees exactly the
// fields the broker filled. The request's version must be set.
func rawRequest(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	const correlationID = 7
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("skein-e2e-raw")).AppendRequest(nil, req, correlationID)
	if _, err := conn.Write(frame); err != nil {
		return nil, fmt.Errorf("write %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, fmt.Errorf("read response size: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > maxRawResponse {
		return nil, fmt.Errorf("response size %d out of range", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != correlationID {
		return nil, fmt.Errorf("correlation id %d, want %d", got, correlationID)
	}
	body = body[4:]
	// Flexible responses carry a tag buffer in the header, except
	// ApiVersions (whose header never has one).
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body, err = skipTags(body)
		if err != nil {
			return nil, fmt.Errorf("response header: %w", err)
		}
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// skipTags skips a tagged-field buffer.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("bad tag count")
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("bad tag")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, fmt.Errorf("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// rawProduce sends one Produce of the given version (3 to 12: v13 names
// topics by id) with one uncompressed batch of values, and returns the
// partition's answer and the response's broker endpoints (KIP-951).
func rawProduce(ctx context.Context, addr string, version, acks int16, topic string, partition int32, values ...string) (kmsg.ProduceResponseTopicPartition, []kmsg.ProduceResponseBroker, error) {
	var vs [][]byte
	for _, v := range values {
		vs = append(vs, []byte(v))
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch.Build(vs, time.Now().UnixMilli())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := rawRequest(ctx, addr, req)
	if err != nil {
		return kmsg.ProduceResponseTopicPartition{}, nil, err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return kmsg.ProduceResponseTopicPartition{}, nil, fmt.Errorf("produce response has %d topics, want one with one partition", len(pr.Topics))
	}
	return pr.Topics[0].Partitions[0], pr.Brokers, nil
}
