package controller

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// ValidateTopicName applies Kafka's rules for topic names: 1 to 249 characters
// from [a-zA-Z0-9._-], and not "." or "..", which would be confused with
// directory entries because each partition is a directory named after its topic.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return errorf(kerr.InvalidTopicException, "topic name is empty")
	case name == "." || name == "..":
		return errorf(kerr.InvalidTopicException, "topic name cannot be %q", name)
	case len(name) > metadata.MaxTopicNameLen:
		return errorf(kerr.InvalidTopicException, "topic name is %d characters, the limit is %d", len(name), metadata.MaxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !legalTopicByte(name[i]) {
			return errorf(kerr.InvalidTopicException, "topic name %q contains illegal character %q; legal are [a-zA-Z0-9._-]", name, name[i])
		}
	}
	return nil
}

func legalTopicByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// collidingTopic returns an existing topic whose name differs from name only
// by '.' versus '_'. Kafka rejects such pairs because metric names replace
// '.' with '_', so the two topics' metrics would be indistinguishable.
func collidingTopic(im *metadata.Image, name string) (string, bool) {
	if !strings.ContainsAny(name, "._") {
		return "", false // only an exact match could collide; checked separately
	}
	want := metricName(name)
	for _, t := range im.Topics() {
		if t.Name != name && metricName(t.Name) == want {
			return t.Name, true
		}
	}
	return "", false
}

func metricName(topic string) string {
	return strings.ReplaceAll(topic, ".", "_")
}
