package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/sasl"
)

func upsert(name, mech string, iterations int32) ScramUpsertion {
	return ScramUpsertion{Name: name, Mechanism: mech, Iterations: iterations, Salt: []byte("salt"), SaltedPassword: []byte("salted")}
}

func TestAlterScramCredentials(t *testing.T) {
	const s256, s512 = sasl.MechanismScramSHA256, sasl.MechanismScramSHA512
	im, err := metadata.Empty("c").Apply(metadata.UserScramCredential{Name: "old", Mechanism: s256, Salt: []byte("s"),
		StoredKey: []byte("k"), ServerKey: []byte("k"), Iterations: 4096})
	if err != nil {
		t.Fatal(err)
	}
	dels := []ScramDeletion{{Name: "old", Mechanism: s256}, {Name: "ghost", Mechanism: s512}, {Name: "odd", Mechanism: ""}}
	ups := []ScramUpsertion{
		upsert("alice", s512, 8192),
		upsert("alice", s256, 4096),
		upsert("few", s512, 4095),
		upsert("many", s512, 16385),
		upsert("twice", s512, 4096), upsert("twice", s512, 8192),
		// One bad alteration keeps the user's good one out too.
		upsert("mixed", s256, 4096), upsert("mixed", s512, 1),
		{Name: "nosalt", Mechanism: s256, Iterations: 4096, SaltedPassword: []byte("x")},
		upsert("", s256, 4096),
	}
	recs, results := AlterScramCredentials(im, dels, ups)
	want := map[string]*kerr.Error{
		"old": nil, "ghost": kerr.ResourceNotFound, "odd": kerr.UnsupportedSaslMechanism,
		"alice": nil, "few": kerr.UnacceptableCredential, "many": kerr.UnacceptableCredential,
		"twice": kerr.DuplicateResource, "mixed": kerr.UnacceptableCredential, "nosalt": kerr.UnacceptableCredential,
		"": kerr.UnacceptableCredential,
	}
	order := []string{"old", "ghost", "odd", "alice", "few", "many", "twice", "mixed", "nosalt", ""}
	if len(results) != len(order) {
		t.Fatalf("%d results, want one per user: %+v", len(results), results)
	}
	for i, res := range results {
		if res.User != order[i] {
			t.Errorf("result %d is for %q, want %q", i, res.User, order[i])
		}
		var code int16
		if w := want[res.User]; w != nil {
			code = w.Code
		}
		if got := ErrorCode(res.Err); got != code {
			t.Errorf("user %q: code %d (%v), want %d", res.User, got, res.Err, code)
		}
	}
	next, err := im.Apply(recs...)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range next.ScramCredentials() {
		names = append(names, c.Name+"/"+c.Mechanism)
	}
	if len(names) != 2 || names[0] != "alice/"+s256 || names[1] != "alice/"+s512 {
		t.Fatalf("credentials after: %v", names)
	}
	// The record holds the keys derived from the salted password, never it.
	c, _ := next.ScramCredential(s512, "alice")
	wantCred, _ := sasl.NewScramCredential(s512, []byte("salt"), []byte("salted"), 8192)
	if string(c.StoredKey) != string(wantCred.StoredKey) || string(c.ServerKey) != string(wantCred.ServerKey) || c.Iterations != 8192 {
		t.Fatalf("stored credential %+v, want %+v", c, wantCred)
	}
}
