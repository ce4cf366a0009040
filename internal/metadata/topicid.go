package metadata

import (
	"encoding/base64"
	"fmt"
)

// TopicID is a topic's 128-bit UUID. It tells a re-created topic apart from an
// older topic of the same name, which is why fetchers and deletions use it.
type TopicID [16]byte

// String renders the ID the way Kafka does: URL-safe base64 without padding.
func (id TopicID) String() string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// IsZero reports whether the ID is all zeros, which Kafka reserves for "no ID".
func (id TopicID) IsZero() bool {
	return id == TopicID{}
}

// ParseTopicID parses Kafka's URL-safe, unpadded base64 form.
func ParseTopicID(s string) (TopicID, error) {
	var id TopicID
	// 16 bytes always encode to 22 characters; checking first bounds the decode.
	if len(s) != base64.RawURLEncoding.EncodedLen(len(id)) {
		return TopicID{}, fmt.Errorf("topic id %q: want %d characters", s, base64.RawURLEncoding.EncodedLen(len(id)))
	}
	n, err := base64.RawURLEncoding.Strict().Decode(id[:], []byte(s))
	if err != nil {
		return TopicID{}, fmt.Errorf("topic id %q: %w", s, err)
	}
	if n != len(id) {
		return TopicID{}, fmt.Errorf("topic id %q: decoded %d bytes, want %d", s, n, len(id))
	}
	return id, nil
}

// MarshalText makes JSON (and other text encoders) use the Kafka string form.
func (id TopicID) MarshalText() ([]byte, error) {
	return []byte(id.String()), nil
}

// UnmarshalText parses the Kafka string form.
func (id *TopicID) UnmarshalText(b []byte) error {
	parsed, err := ParseTopicID(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}
