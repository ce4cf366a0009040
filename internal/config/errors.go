package config

import (
	"fmt"
	"slices"
	"strconv"
)

// Error reports a property that is unknown or has an invalid value. The API
// layer answers INVALID_CONFIG with Error() as the message; the server
// prints it and exits.
type Error struct {
	Key   string
	Value string
	// Reason completes "must be ..." for an invalid value, or holds the
	// explanation for an unknown key.
	Reason string
	// Unknown is true when no property of that name exists in the scope.
	Unknown bool
	// Origin says where the value came from ("server.properties:12",
	// "environment variable SKEIN_NUM_PARTITIONS", "flag"); may be empty.
	Origin string
}

func (e *Error) Error() string {
	var msg string
	if e.Unknown {
		msg = fmt.Sprintf("config: unknown property %q", e.Key)
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
	} else {
		value := strconv.Quote(e.Value)
		if sensitiveKey(e.Key) {
			value = "(hidden)"
		}
		msg = fmt.Sprintf("config: %s=%s: must be %s", e.Key, value, e.Reason)
	}
	if e.Origin != "" {
		msg += " (set in " + e.Origin + ")"
	}
	return msg
}

func invalid(key, value, reason string) *Error {
	return &Error{Key: key, Value: value, Reason: reason}
}

// sensitiveKey reports a key whose value must not be quoted, also when
// scoped to a listener.
func sensitiveKey(key string) bool {
	if _, prop, ok := listenerScoped(key); ok {
		key = prop
		if slices.Contains(jaasScoped(), prop) {
			return true
		}
	}
	p := theRegistry().byName[key]
	return p != nil && p.Sensitive
}
