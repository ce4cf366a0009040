package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/sasl"
)

// ScramDeletion is one deletion of an AlterUserScramCredentials request.
type ScramDeletion struct {
	Name      string
	Mechanism string // "" for a mechanism code Skein does not know
}

// ScramUpsertion is one upsertion: the client computed the salted
// password, so the password itself never reaches the broker.
type ScramUpsertion struct {
	Name           string
	Mechanism      string
	Iterations     int32
	Salt           []byte
	SaltedPassword []byte
}

// UserResult is the outcome for one user of the request.
type UserResult struct {
	User string
	Err  error
}

// AlterScramCredentials decides an AlterUserScramCredentials request as
// Kafka's ScramControlManager does: one result per user, in order of first
// appearance; a user whose any alteration is invalid gets that error and
// none of its alterations is applied; the same credential (user and
// mechanism) altered twice fails that user with DUPLICATE_RESOURCE.
func AlterScramCredentials(im *metadata.Image, dels []ScramDeletion, ups []ScramUpsertion) ([]metadata.Record, []UserResult) {
	type key struct{ user, mech string }
	var order []string
	errs := map[string]error{}
	seenUser := map[string]bool{}
	seen := map[key]bool{}
	note := func(user string) {
		if !seenUser[user] {
			seenUser[user] = true
			order = append(order, user)
		}
	}
	fail := func(user string, err error) {
		if errs[user] == nil {
			errs[user] = err
		}
	}
	dup := func(user, mech string) bool {
		if mech == "" {
			return false
		}
		k := key{user, mech}
		if seen[k] {
			fail(user, errorf(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request"))
			return true
		}
		seen[k] = true
		return false
	}
	for _, d := range dels {
		note(d.Name)
		switch {
		case d.Name == "":
			fail(d.Name, errorf(kerr.UnacceptableCredential, "Username must not be empty"))
		case d.Mechanism == "":
			fail(d.Name, errorf(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"))
		case dup(d.Name, d.Mechanism):
		default:
			if _, ok := im.ScramCredential(d.Mechanism, d.Name); !ok {
				fail(d.Name, errorf(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"))
			}
		}
	}
	creds := make([]sasl.ScramCredential, len(ups))
	for i, u := range ups {
		note(u.Name)
		switch {
		case u.Name == "":
			fail(u.Name, errorf(kerr.UnacceptableCredential, "Username must not be empty"))
		case u.Mechanism == "":
			fail(u.Name, errorf(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism"))
		case dup(u.Name, u.Mechanism):
		case u.Iterations < sasl.MinScramIterations:
			fail(u.Name, errorf(kerr.UnacceptableCredential, "Too few iterations: %d < %d", u.Iterations, sasl.MinScramIterations))
		case u.Iterations > sasl.MaxScramIterations:
			fail(u.Name, errorf(kerr.UnacceptableCredential, "Too many iterations: %d > %d", u.Iterations, sasl.MaxScramIterations))
		case len(u.Salt) == 0:
			fail(u.Name, errorf(kerr.UnacceptableCredential, "Salt must not be empty"))
		case len(u.SaltedPassword) == 0:
			fail(u.Name, errorf(kerr.UnacceptableCredential, "Salted password must not be empty"))
		default:
			c, err := sasl.NewScramCredential(u.Mechanism, u.Salt, u.SaltedPassword, u.Iterations)
			if err != nil {
				fail(u.Name, errorf(kerr.UnsupportedSaslMechanism, "%v", err))
			}
			creds[i] = c
		}
	}
	// Records only once every alteration is judged: a user with one bad
	// alteration keeps all its credentials as they were.
	var recs []metadata.Record
	for _, d := range dels {
		if errs[d.Name] == nil {
			recs = append(recs, metadata.RemoveUserScramCredential{Name: d.Name, Mechanism: d.Mechanism})
		}
	}
	for i, u := range ups {
		if errs[u.Name] == nil {
			c := creds[i]
			recs = append(recs, metadata.UserScramCredential{Name: u.Name, Mechanism: u.Mechanism, Salt: c.Salt,
				StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
		}
	}
	results := make([]UserResult, len(order))
	for i, u := range order {
		results[i] = UserResult{User: u, Err: errs[u]}
	}
	return recs, results
}
