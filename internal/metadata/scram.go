package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/skein-log/skein/internal/sasl"
)

// UserScramCredential sets one user's credential for one mechanism:
// Kafka's UserScramCredentialRecord. It holds what the server needs to
// check a proof (salt, stored key, server key, iterations), never the
// password. A second record for the same user and mechanism replaces the
// first, as Kafka's upsertion does.
type UserScramCredential struct {
	Name       string
	Mechanism  string
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// RemoveUserScramCredential deletes one user's credential for one
// mechanism: Kafka's RemoveUserScramCredentialRecord.
type RemoveUserScramCredential struct {
	Name      string
	Mechanism string
}

func (UserScramCredential) isRecord()       {}
func (RemoveUserScramCredential) isRecord() {}

type scramKey struct{ user, mechanism string }

// ScramCredential returns a user's credential for a mechanism.
func (im *Image) ScramCredential(mechanism, user string) (sasl.ScramCredential, bool) {
	r, ok := im.scram[scramKey{user, mechanism}]
	if !ok {
		return sasl.ScramCredential{}, false
	}
	return sasl.ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}, true
}

// ScramCredentials lists every credential, by user then mechanism.
func (im *Image) ScramCredentials() []UserScramCredential {
	list := slices.Collect(maps.Values(im.scram))
	slices.SortFunc(list, func(a, b UserScramCredential) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Mechanism, b.Mechanism))
	})
	return list
}

func (b *builder) writableScram() {
	if !b.scramCopied {
		b.img.scram = maps.Clone(b.img.scram)
		if b.img.scram == nil {
			b.img.scram = map[scramKey]UserScramCredential{}
		}
		b.scramCopied = true
	}
}

func (b *builder) setScram(r UserScramCredential) error {
	if r.Name == "" {
		return fmt.Errorf("scram credential without a user name")
	}
	if !sasl.IsScram(r.Mechanism) {
		return fmt.Errorf("scram credential for %s: unsupported mechanism %q", r.Name, r.Mechanism)
	}
	if r.Iterations < sasl.MinScramIterations || r.Iterations > sasl.MaxScramIterations {
		return fmt.Errorf("scram credential for %s: %d iterations outside [%d, %d]", r.Name, r.Iterations,
			sasl.MinScramIterations, sasl.MaxScramIterations)
	}
	if len(r.Salt) == 0 || len(r.StoredKey) == 0 || len(r.ServerKey) == 0 {
		return fmt.Errorf("scram credential for %s: empty salt or key", r.Name)
	}
	b.writableScram()
	b.img.scram[scramKey{r.Name, r.Mechanism}] = r
	return nil
}

func (b *builder) removeScram(r RemoveUserScramCredential) error {
	k := scramKey{r.Name, r.Mechanism}
	if _, ok := b.img.scram[k]; !ok {
		return fmt.Errorf("remove: no %s credential for user %s", r.Mechanism, r.Name)
	}
	b.writableScram()
	delete(b.img.scram, k)
	return nil
}

// scramImageRecords are the records that rebuild the image's credentials.
func scramImageRecords(im *Image) []Record {
	var recs []Record
	for _, c := range im.ScramCredentials() {
		recs = append(recs, c)
	}
	return recs
}
