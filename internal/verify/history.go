// Package verify checks the history of a run of producers and consumers
// against a cluster, Jepsen-style: every send, acknowledgement, failure,
// read, poll and fault is an Event; Check finds lost, unseen, duplicated,
// reordered and inconsistent records in it; the result renders as a short
// verdict, and the history as JSON and as an HTML timeline.
//
// The package is pure: no clock, no network, no files. Time enters as the
// Event.At of each event, measured by whoever recorded it.
package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// EventType names what happened.
type EventType string

const (
	// EventSend: producer Producer handed Value (its Seq-th value) to its
	// client for Partition.
	EventSend EventType = "send"
	// EventAck: the send of Value was acknowledged at Partition/Offset
	// (Offset -1 when the acknowledgement carries none, as with acks=0).
	EventAck EventType = "ack"
	// EventFail: the send of Value was reported failed with Err.
	// Definite means the record was certainly not written; otherwise the
	// outcome is unknown (a timeout, a closed client, a lost answer).
	EventFail EventType = "fail"
	// EventPoll: consumer Consumer's poll number Poll returned; the reads
	// with the same Consumer and Poll follow it. Err is the poll's error,
	// if any.
	EventPoll EventType = "poll"
	// EventRead: consumer Consumer read Value at Partition/Offset in poll
	// Poll.
	EventRead EventType = "read"
	// EventFaultStart and EventFaultEnd bracket fault number Fault (Note
	// says what it was, Broker whom it hit).
	EventFaultStart EventType = "fault-start"
	EventFaultEnd   EventType = "fault-end"
	// EventPhase marks the start of a phase of the run (Note: "faults",
	// "heal", "drain", ...).
	EventPhase EventType = "phase"

	// Group members (events with Group set) poll and read like assigned
	// consumers, and also:

	// EventAssign: group member Consumer was given Partitions by a
	// rebalance (only the new ones: cooperative rebalancing keeps the
	// rest where they are).
	EventAssign EventType = "assign"
	// EventRevoke: group member Consumer gave up Partitions (Note
	// "revoked" in a rebalance, "lost" when the group moved on without it).
	EventRevoke EventType = "revoke"
	// EventCommit: group member Consumer is about to commit Offset (the
	// next offset to read) for Partition. Recorded before the request is
	// sent, so every commit that may have reached the coordinator is in
	// the history before anything that could have seen it.
	EventCommit EventType = "commit"
	// EventCommitDone: that commit was answered; Err is empty when the
	// coordinator accepted it.
	EventCommitDone EventType = "commit-done"

	// In the txn workload (Meta.Workload "txn"), sends, acks and fails
	// also carry Txn, the transaction the record was produced in, and:

	// EventTxnEnd: producer Producer ended transaction Txn. Note is what
	// it asked for, "commit" or "abort"; Err is empty when the coordinator
	// confirmed it. A commit that errored has an unknown outcome; an abort
	// (or a transaction never asked to commit) cannot have committed.
	EventTxnEnd EventType = "txn-end"

	// The txn workload's consume-transform-produce chain (Meta.Transformers
	// > 0): transformers (Consumer numbers them, Group is Meta.ChainGroup)
	// read the input topic read_committed in one group and, in each
	// transaction Txn ("x1.t7": transformer 1's seventh), write one output
	// record per input record to Meta.OutputTopic and commit their group's
	// offsets. Output values are ChainValue(txn, input partition, input
	// offset, input value).

	// EventChainInit: transformer Consumer's client was given ProducerID
	// and Epoch for its transactional id (an InitProducerId answer): every
	// older epoch of that id is fenced from then on.
	EventChainInit EventType = "chain-init"
	// EventChainRead: transformer Consumer read Value at Partition/Offset
	// of the input topic into transaction Txn.
	EventChainRead EventType = "chain-read"
	// EventChainWrite: transformer Consumer produced output Value to
	// Partition of the output topic in transaction Txn (recorded before
	// the record is handed to the client); EventChainWritten is its
	// answer: Offset, or Err.
	EventChainWrite   EventType = "chain-write"
	EventChainWritten EventType = "chain-written"
	// EventChainOffset: transaction Txn carries the group's offset Offset
	// (the next to read) for input Partition.
	EventChainOffset EventType = "chain-offset"
	// EventChainEnd: transformer Consumer ended Txn. Note is the outcome
	// as the client knows it: "commit" (confirmed), "abort" (confirmed
	// not committed: asked to abort, or aborted because the group
	// rebalanced) or "unknown" (a commit that errored; Err says how).
	// ProducerID and Epoch are the producer's when it sent the end
	// (ProducerID -1: unknown); Latency is since it was sent.
	EventChainEnd EventType = "chain-end"
	// EventChainCommitted: after the transformers stopped, the group's
	// committed offset for input Partition was Offset (-1: none).
	EventChainCommitted EventType = "chain-committed"
	// EventChainOutput: consumer Consumer (read_committed, assigned every
	// output partition from the start) read output Value at
	// Partition/Offset of the output topic.
	EventChainOutput EventType = "chain-output"
)

// Event is one entry of a history. Only the fields its Type uses are set;
// in JSON, zero fields are left out (a missing partition or offset is 0).
// Producers, consumers, polls, faults and brokers are numbered from 1, so
// that 0 means "not applicable".
type Event struct {
	At        time.Duration `json:"at"` // since the run began, in nanoseconds
	Type      EventType     `json:"type"`
	Producer  int           `json:"producer,omitempty"`
	Seq       int64         `json:"seq,omitempty"`
	Consumer  int           `json:"consumer,omitempty"`
	Poll      int64         `json:"poll,omitempty"`
	Partition int32         `json:"partition,omitempty"`
	Offset    int64         `json:"offset,omitempty"`
	Value     string        `json:"value,omitempty"`
	Latency   time.Duration `json:"latency,omitempty"` // ack and fail: since the send
	Err       string        `json:"err,omitempty"`
	Definite  bool          `json:"definite,omitempty"`
	Fault     int           `json:"fault,omitempty"`
	Broker    int           `json:"broker,omitempty"`
	Note      string        `json:"note,omitempty"`
	// Group is the consumer group of a group member's events.
	Group      string  `json:"group,omitempty"`
	Partitions []int32 `json:"partitions,omitempty"` // assign and revoke
	// Txn names the transaction of a send, ack, fail or txn-end in the
	// txn workload ("p1.t7": producer 1's seventh).
	Txn string `json:"txn,omitempty"`
	// ProducerID and Epoch: a chain-init's answer, a chain-end's sender.
	ProducerID int64 `json:"producer_id,omitempty"`
	Epoch      int16 `json:"epoch,omitempty"`
}

// WorkloadTxn is Meta.Workload for transactional producers and
// read_committed consumers, judged by CheckTxn.
const WorkloadTxn = "txn"

// Acks is the producers' acknowledgement setting.
type Acks string

const (
	AcksAll    Acks = "all"
	AcksLeader Acks = "1"
	AcksNone   Acks = "0"
)

// Meta describes the run that produced a history: what the checker may
// expect (acks, idempotence) and what a reader needs to reproduce it.
type Meta struct {
	// Workload is "" for plain producers (judged by Check) or
	// WorkloadTxn.
	Workload   string `json:"workload,omitempty"`
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	Producers  int    `json:"producers"`
	Consumers  int    `json:"consumers"`
	// GroupMembers consume as one group, Group, numbered after the
	// assigned consumers (Consumers+1 on).
	GroupMembers int           `json:"group_members,omitempty"`
	Group        string        `json:"group,omitempty"`
	Acks         Acks          `json:"acks"`
	Idempotent   bool          `json:"idempotent"`
	Seed         int64         `json:"seed"`
	Nemesis      string        `json:"nemesis"`
	Duration     time.Duration `json:"duration"`
	Started      time.Time     `json:"started"`
	Cluster      string        `json:"cluster"` // where it ran: "local 3 brokers" or the bootstrap list
	// DrainComplete is false when the consumers did not reach the end
	// offsets before the drain phase timed out; unseen records are then
	// expected and the note in the verdict says so.
	DrainComplete bool   `json:"drain_complete"`
	DrainNote     string `json:"drain_note,omitempty"`
	// Connections counts, per link ("p1->n2": producer 1 dialled broker
	// 2), the connections the fault proxies forwarded; it shows that
	// every node and client went through them and was told apart.
	Connections map[string]int `json:"connections,omitempty"`
	// Transformers of the txn workload's consume-transform-produce chain
	// (0: no chain), their group, and the topic they write to.
	// ChainDrainComplete is false when the output consumers did not reach
	// the output's end offsets (ChainDrainNote says where they stopped);
	// ChainCaughtUp is false when the chain had not committed every
	// committed input record when it was stopped (fine: the checks hold
	// below its committed offsets).
	Transformers       int    `json:"transformers,omitempty"`
	ChainGroup         string `json:"chain_group,omitempty"`
	OutputTopic        string `json:"output_topic,omitempty"`
	ChainCaughtUp      bool   `json:"chain_caught_up,omitempty"`
	ChainDrainComplete bool   `json:"chain_drain_complete,omitempty"`
	ChainDrainNote     string `json:"chain_drain_note,omitempty"`
}

// History is a run's metadata and every event, in the order recorded.
type History struct {
	Meta   Meta    `json:"meta"`
	Events []Event `json:"events"`
}

// MaxHistoryBytes bounds ReadJSON: a history larger than this is refused
// rather than read into memory.
const MaxHistoryBytes = 2 << 30

// WriteJSON writes h as JSON: the meta object, then one event per line, so
// that a large history can be read with line tools as well as decoded
// whole.
func WriteJSON(w io.Writer, h *History) error {
	meta, err := json.Marshal(h.Meta)
	if err != nil {
		return fmt.Errorf("encode history meta: %w", err)
	}
	if _, err := fmt.Fprintf(w, "{\"meta\":%s,\n\"events\":[\n", meta); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	for i := range h.Events {
		line, err := json.Marshal(&h.Events[i])
		if err != nil {
			return fmt.Errorf("encode event %d: %w", i, err)
		}
		sep := ",\n"
		if i == len(h.Events)-1 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(w, "%s%s", line, sep); err != nil {
			return fmt.Errorf("write history: %w", err)
		}
	}
	if _, err := io.WriteString(w, "]}\n"); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// ReadJSON decodes a history written by WriteJSON (or any JSON of the
// same shape), refusing input over MaxHistoryBytes.
func ReadJSON(r io.Reader) (*History, error) {
	lr := &io.LimitedReader{R: r, N: MaxHistoryBytes + 1}
	var h History
	if err := json.NewDecoder(lr).Decode(&h); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("history is larger than %d bytes", int64(MaxHistoryBytes))
		}
		return nil, fmt.Errorf("decode history: %w", err)
	}
	if lr.N <= 0 {
		return nil, errors.New("history is larger than the limit")
	}
	return &h, nil
}
