package quota

import (
	"testing"

	"github.com/skein-log/skein/internal/metadata"
)

func imageWith(t *testing.T, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	im, err := metadata.Empty("c").Apply(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func set(key string, v float64, parts ...metadata.QuotaEntityPart) metadata.Record {
	return metadata.ClientQuota{Entity: parts, Key: key, Value: v}
}

func user(n string) metadata.QuotaEntityPart {
	return metadata.QuotaEntityPart{Type: metadata.QuotaEntityUser, Name: &n}
}
func client(n string) metadata.QuotaEntityPart {
	return metadata.QuotaEntityPart{Type: metadata.QuotaEntityClientID, Name: &n}
}

var (
	defUser   = metadata.QuotaEntityPart{Type: metadata.QuotaEntityUser}
	defClient = metadata.QuotaEntityPart{Type: metadata.QuotaEntityClientID}
)

const pk = metadata.QuotaProducerByteRate

// TestResolvePrecedence walks Kafka's documented order: each case has
// every level below the expected one set too, so a wrong order picks
// another value.
func TestResolvePrecedence(t *testing.T) {
	all := []metadata.Record{
		set(pk, 1, user("alice"), client("app")),
		set(pk, 2, user("alice"), defClient),
		set(pk, 3, user("alice")),
		set(pk, 4, defUser, client("app")),
		set(pk, 5, defUser, defClient),
		set(pk, 6, defUser),
		set(pk, 7, client("app")),
		set(pk, 8, defClient),
	}
	cases := []struct {
		drop     int // how many of the highest levels are removed
		user     string
		clientID string
		want     float64
		sensor   Sensor
	}{
		{0, "alice", "app", 1, Sensor{pk, "alice", "app"}},
		{1, "alice", "app", 2, Sensor{pk, "alice", "app"}},
		{2, "alice", "app", 3, Sensor{pk, "alice", ""}},
		{3, "alice", "app", 4, Sensor{pk, "alice", "app"}},
		{4, "alice", "app", 5, Sensor{pk, "alice", "app"}},
		{5, "alice", "app", 6, Sensor{pk, "alice", ""}},
		{6, "alice", "app", 7, Sensor{pk, "", "app"}},
		{7, "alice", "app", 8, Sensor{pk, "", "app"}},
		// Another user falls to the default-user levels even with
		// alice's set.
		{0, "bob", "app", 4, Sensor{pk, "bob", "app"}},
		{0, "bob", "other", 5, Sensor{pk, "bob", "other"}},
	}
	for _, c := range cases {
		im := imageWith(t, all[c.drop:]...)
		got, s, ok := Resolve(im, pk, c.user, c.clientID)
		if !ok || got != c.want || s != c.sensor {
			t.Errorf("drop %d, %s/%s: got %v %+v %v, want %v %+v", c.drop, c.user, c.clientID, got, s, ok, c.want, c.sensor)
		}
	}
	// A quota on another key does not apply.
	im := imageWith(t, set(metadata.QuotaConsumerByteRate, 9, client("app")))
	if _, _, ok := Resolve(im, pk, "alice", "app"); ok {
		t.Error("a consumer quota limited producing")
	}
}

func TestRecordThrottle(t *testing.T) {
	im := imageWith(t, set(pk, 1000, client("slow")), set(metadata.QuotaConsumerByteRate, 1000, defClient))
	cfg := Config{Samples: 11, WindowMs: 1000}
	type step struct {
		atMs     int64
		clientID string
		key      string
		bytes    float64
		want     int64
	}
	cases := map[string][]step{
		// The first burst is averaged over the 10 whole windows that
		// Samples-1 guarantees: 10,000 bytes at once is exactly the bound.
		"burst within the window": {{0, "slow", pk, 10_000, 0}},
		// 10,500 bytes over 10 s is 1050 B/s: 5% over, so 5% of the
		// 10 s window.
		"over": {{0, "slow", pk, 10_500, 500}},
		// Far over: at most one window.
		"capped": {{0, "slow", pk, 100_000, 1000}},
		// Usage older than the whole window no longer counts.
		"expired": {{0, "slow", pk, 10_500, 500}, {11_000, "slow", pk, 100, 0}},
		// Within the window it still does: 10,300 bytes over 10 s is
		// 3% over.
		"accumulates": {{0, "slow", pk, 10_000, 0}, {5_000, "slow", pk, 300, 300}},
		// No quota for this client id.
		"unlimited": {{0, "fast", pk, 1 << 30, 0}},
		// The default client-id quota is counted per client id.
		"default per client": {{0, "a", metadata.QuotaConsumerByteRate, 10_000, 0}, {0, "b", metadata.QuotaConsumerByteRate, 10_000, 0}, {0, "a", metadata.QuotaConsumerByteRate, 500, 500}},
	}
	for name, steps := range cases {
		m := NewManager(cfg)
		for i, s := range steps {
			if got := m.Record(im, s.key, "ANONYMOUS", s.clientID, s.bytes, s.atMs); got != s.want {
				t.Errorf("%s: step %d: throttle %d ms, want %d", name, i, got, s.want)
			}
		}
	}
}

func TestIdleSensorsSwept(t *testing.T) {
	im := imageWith(t, set(pk, 1000, defClient))
	m := NewManager(Config{Samples: 2, WindowMs: 1000})
	for i := range sweepEvery {
		m.Record(im, pk, "u", string(rune('a'+i%26))+string(rune(i)), 1, 0)
	}
	if m.Sensors() == 0 {
		t.Fatal("no sensors kept")
	}
	for range sweepEvery {
		m.Record(im, pk, "u", "live", 1, 10_000)
	}
	if m.Sensors() != 1 {
		t.Fatalf("%d sensors after the idle ones expired, want 1", m.Sensors())
	}
}
