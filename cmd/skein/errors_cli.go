package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors answered by the cluster are shown to people as the Kafka error
// name followed by a one-line explanation, the form operators search for
// in Kafka's documentation:
//
//	TOPIC_ALREADY_EXISTS: Topic with this name already exists.
//
// When the broker sent its own message and it says more than the generic
// explanation, it follows in parentheses.

// brokerError is an error code the cluster answered for one resource
// (a topic, a partition, a config), with the broker's own message.
type brokerError struct {
	err     error  // usually a *kerr.Error
	message string // the broker's error message; may be empty
}

func (e *brokerError) Error() string { return kafkaErrorLine(e.err, e.message) }
func (e *brokerError) Unwrap() error { return e.err }

// withBrokerMessage pairs an error code answer with the broker's message;
// nil stays nil so callers can wrap unconditionally.
func withBrokerMessage(err error, message string) error {
	if err == nil {
		return nil
	}
	return &brokerError{err: err, message: message}
}

// explainError rewrites the error form kadm returns for a request that
// failed as a whole (ErrAndMessage puts the broker's message where the
// explanation would be) into the name + explanation form. Only an
// unwrapped ErrAndMessage is rewritten, so no context is dropped; other
// errors are returned unchanged.
//
// A request kadm sent to several brokers fails with one error per broker
// that failed (kadm.ShardErrors, "request X has N separate shard
// errors"); it is told as which brokers answered what.
func explainError(err error) error {
	switch e := err.(type) {
	case *kadm.ErrAndMessage:
		return withBrokerMessage(e.Err, e.ErrMessage)
	case *kadm.ShardErrors:
		return explainShardErrors(e)
	}
	return err
}

// maxShardErrorsShown bounds the brokers one message lists.
const maxShardErrorsShown = 3

func explainShardErrors(se *kadm.ShardErrors) error {
	if len(se.Errs) == 0 {
		return se
	}
	var parts []string
	for _, e := range se.Errs[:min(len(se.Errs), maxShardErrorsShown)] {
		who := "a broker"
		if e.Broker.NodeID >= 0 {
			who = fmt.Sprintf("broker %d", e.Broker.NodeID)
		}
		if e.Broker.Host != "" {
			who += fmt.Sprintf(" at %s", net.JoinHostPort(e.Broker.Host, strconv.Itoa(int(e.Broker.Port))))
		}
		parts = append(parts, who+" answered "+kafkaErrorLine(e.Err, ""))
	}
	if more := len(se.Errs) - maxShardErrorsShown; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	what := fmt.Sprintf("%d of the brokers asked failed", len(se.Errs))
	if se.AllFailed {
		what = "every broker asked failed"
	}
	return inWords(se, "%s: %s", what, strings.Join(parts, "; "))
}

// wordedError says what happened in the project's words while keeping
// the error it explains for errors.Is and errors.As.
type wordedError struct {
	msg string
	err error
}

func (e *wordedError) Error() string { return e.msg }
func (e *wordedError) Unwrap() error { return e.err }

// inWords explains err with a message of its own.
func inWords(err error, format string, args ...any) error {
	return &wordedError{msg: fmt.Sprintf(format, args...), err: err}
}

// kafkaErrorLine renders err as "NAME: explanation (broker: message)" when
// it is a Kafka error, and as its own text otherwise.
func kafkaErrorLine(err error, brokerMessage string) string {
	ke, ok := errors.AsType[*kerr.Error](err)
	if !ok {
		if brokerMessage != "" {
			return err.Error() + " (broker: " + brokerMessage + ")"
		}
		return err.Error()
	}
	line := ke.Message + ": " + ke.Description
	// Brokers often repeat the error name at the start of their message.
	m := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(brokerMessage), ke.Message+":"))
	if m != "" && m != ke.Description && m != ke.Message {
		line += " (broker: " + m + ")"
	}
	return line
}

// errorName is the Kafka name of err ("UNKNOWN_TOPIC_OR_PARTITION"), or
// "ERROR" when it is not a Kafka error; for compact table cells.
func errorName(err error) string {
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		return ke.Message
	}
	return "ERROR"
}
