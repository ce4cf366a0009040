package metadata

func ptr[T any](v T) *T { return &v }

func idOf(b byte) TopicID { return TopicID{0: b, 15: 1} }

// mustApply applies records or fails the test through panic-free reporting.
func mustApply(t interface {
	Helper()
	Fatalf(string, ...any)
}, im *Image, recs ...Record) *Image {
	t.Helper()
	next, err := im.Apply(recs...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return next
}

func broker(id int32, epoch int64) RegisterBroker {
	return RegisterBroker{Broker: Broker{
		ID:        id,
		Rack:      "r" + string(rune('a'+id%3)),
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id}},
		Epoch:     epoch,
	}}
}

func partition(index int32, leader int32, replicas ...int32) Partition {
	return Partition{Index: index, Replicas: replicas, ISR: append([]int32(nil), replicas...), Leader: leader}
}

// baseImage has brokers 1..3 and topic "orders" (id 1) with two partitions.
func baseImage(t interface {
	Helper()
	Fatalf(string, ...any)
}) *Image {
	t.Helper()
	return mustApply(t, Empty("cluster-1"),
		broker(1, 10), broker(2, 20), broker(3, 30),
		CreateTopic{Name: "orders", ID: idOf(1), Configs: map[string]string{"retention.ms": "1000"}, Partitions: []Partition{
			partition(0, 1, 1, 2, 3),
			partition(1, 2, 2, 3, 1),
		}},
	)
}
