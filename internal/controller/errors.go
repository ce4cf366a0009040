package controller

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a rejected request: the Kafka error code to return to the client,
// a human-readable detail for the response's error message, and the
// underlying cause when there is one (for example a config validator's error).
//
// errors.Is(err, kerr.TopicAlreadyExists) and friends work on it, so callers
// can test for a code without unpacking the struct.
type Error struct {
	Code   *kerr.Error
	Detail string
	Cause  error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code.Message, e.Detail, e.Cause)
	}
	return e.Code.Message + ": " + e.Detail
}

// Unwrap exposes both the Kafka code and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Code, e.Cause}
	}
	return []error{e.Code}
}

func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Detail: fmt.Sprintf(format, args...)}
}

// ErrorCode maps an error from this package to the Kafka error code to send:
// 0 for nil, the carried code for *Error or *kerr.Error, and
// UNKNOWN_SERVER_ERROR for anything else.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Code.Code
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
