package metadata

import (
	"errors"
	"reflect"
	"testing"
)

func sampleScram(user, mech string, iterations int32) UserScramCredential {
	return UserScramCredential{Name: user, Mechanism: mech, Salt: []byte("salt-" + user), StoredKey: []byte("stored-" + user),
		ServerKey: []byte("server-" + user), Iterations: iterations}
}

func TestApplyScramCredentials(t *testing.T) {
	im, err := Empty("c").Apply(sampleScram("alice", "SCRAM-SHA-512", 8192), sampleScram("alice", "SCRAM-SHA-256", 4096),
		sampleScram("bob", "SCRAM-SHA-512", 4096))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := im.ScramCredential("SCRAM-SHA-512", "alice")
	if !ok || c.Iterations != 8192 || string(c.StoredKey) != "stored-alice" {
		t.Fatalf("alice's SHA-512 credential: %+v %v", c, ok)
	}
	// An upsertion replaces; the base image keeps the old one.
	up := sampleScram("alice", "SCRAM-SHA-512", 16384)
	up.StoredKey = []byte("new")
	im2, err := im.Apply(up, RemoveUserScramCredential{Name: "bob", Mechanism: "SCRAM-SHA-512"})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := im2.ScramCredential("SCRAM-SHA-512", "alice"); c.Iterations != 16384 || string(c.StoredKey) != "new" {
		t.Fatalf("upsertion: %+v", c)
	}
	if c, _ := im.ScramCredential("SCRAM-SHA-512", "alice"); c.Iterations != 8192 {
		t.Fatal("Apply changed the base image's credentials")
	}
	if _, ok := im2.ScramCredential("SCRAM-SHA-512", "bob"); ok {
		t.Fatal("removed credential still found")
	}
	if got := len(im2.ScramCredentials()); got != 2 {
		t.Fatalf("%d credentials left, want 2", got)
	}
	for name, rec := range map[string]Record{
		"unknown remove":  RemoveUserScramCredential{Name: "bob", Mechanism: "SCRAM-SHA-512"},
		"bad mechanism":   sampleScram("x", "PLAIN", 4096),
		"few iterations":  sampleScram("x", "SCRAM-SHA-256", 4095),
		"many iterations": sampleScram("x", "SCRAM-SHA-256", 16385),
		"no name":         sampleScram("", "SCRAM-SHA-256", 4096),
		"no key":          UserScramCredential{Name: "x", Mechanism: "SCRAM-SHA-256", Salt: []byte("s"), Iterations: 4096},
	} {
		if _, err := im2.Apply(rec); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestScramCredentialsSurviveSnapshot(t *testing.T) {
	im, err := Empty("c").Apply(sampleScram("alice", "SCRAM-SHA-512", 8192), sampleScram("bob", "SCRAM-SHA-256", 4096),
		sampleScram("carol", "SCRAM-SHA-256", 4096), RemoveUserScramCredential{Name: "carol", Mechanism: "SCRAM-SHA-256"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := EncodeSnapshot(im)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Empty("c").Apply(recs...)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.ScramCredentials(), im.ScramCredentials()) || len(back.ScramCredentials()) != 2 {
		t.Fatalf("snapshot lost credentials:\n got %+v\nwant %+v", back.ScramCredentials(), im.ScramCredentials())
	}
}
