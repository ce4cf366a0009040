package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skein-log/skein/internal/metadata"
)

// Registration is what a broker says about itself when it (re)registers.
type Registration struct {
	ID        int32
	Rack      string
	Endpoints []metadata.Endpoint
	// LogDirs are the ids of the broker's log directories (KIP-858), each
	// created when its directory was first formatted. Nil if the broker
	// did not say.
	LogDirs []metadata.DirectoryID
	// PreviousBrokerEpoch is the broker epoch its previous process shut
	// down cleanly with (every log closed and synced), -1 if that shutdown
	// was not clean or there was none.
	PreviousBrokerEpoch int64
	// ReplicaCapacity is how many replicas the broker can keep open (its
	// open-files limit), 0 if not limited (metadata.Broker.ReplicaCapacity).
	ReplicaCapacity int32
	// OpenFilesLimit is the limit ReplicaCapacity comes from (0: not said).
	OpenFilesLimit int32
}

// elrLoss says which ELRs a re-registering broker may no longer belong to.
type elrLoss int

const (
	// keepELRs: it still holds every committed record it held.
	keepELRs elrLoss = iota
	// leaveWriteCachingELRs: its process stopped uncleanly. With
	// write.caching a record is acknowledged before it is fsynced, so what
	// the broker held in its page cache may be gone; by default records are
	// fsynced before acknowledgement and nothing committed was lost.
	leaveWriteCachingELRs
	// leaveAllELRs: a log directory was replaced (a new, empty disk), so
	// it may have lost records of any topic.
	leaveAllELRs
)

// restartLoss decides what a broker's previous registration old (nil if
// none) and its new one imply about the records it still holds. ELR
// membership means "holds every committed record"; electing a broker from
// an ELR it no longer deserves would silently lose acknowledged records.
//
// Unlike Kafka, which removes every uncleanly restarted broker from every
// ELR, an unclean restart costs only write.caching topics their ELR: Skein
// fsyncs before acknowledging by default, and stripping ELRs there would
// leave every partition leaderless after a whole-cluster power loss that
// lost nothing.
func restartLoss(old *metadata.Broker, reg Registration) elrLoss {
	if old == nil {
		return leaveWriteCachingELRs // nothing known of the previous process
	}
	// Both sets must be known: a broker that does not send directory ids
	// (or registered before they existed) cannot be judged by them.
	if len(old.LogDirs) > 0 && len(reg.LogDirs) > 0 && !sameMembers(old.LogDirs, reg.LogDirs) {
		return leaveAllELRs
	}
	// The vouched epoch must be of the registration the controller knows:
	// an older epoch means a later process of the broker ran and stopped
	// without vouching for what it wrote. One older epoch is as good: the
	// one the last registering process itself vouched for. A process
	// learns its epoch only from the registration's answer, so one that
	// dies between the controller committing its registration and that
	// answer arriving leaves its state file vouching for the epoch it
	// started from, and its successor sends that again. The successor can
	// vouch for it at all only if no reboot came since the state file was
	// written, before the dead process started, so what that process
	// wrote is still there too.
	switch {
	case reg.PreviousBrokerEpoch < 0:
		return leaveWriteCachingELRs
	case reg.PreviousBrokerEpoch == old.Epoch:
		return keepELRs
	case old.VouchedEpoch > 0 && reg.PreviousBrokerEpoch == old.VouchedEpoch:
		return keepELRs
	}
	return leaveWriteCachingELRs
}

// RegisterBroker decides a broker's (re)registration: if its previous
// registration is still unfenced it is fenced first (FenceBroker: every
// partition it led gets a new leader epoch, and its replicas rejoin ISRs only
// after catching up, so a restarted process never resumes an old epoch). Then
// it leaves the ELRs restartLoss says it may no longer belong to, before the
// RegisterBroker record makes it electable, and leaderless partitions get
// leaders (ElectLeaderless with unclean). writeCaching(topic) is the topic's
// write.caching (nil: no topic has it). It returns the records and the new
// broker epoch.
func RegisterBroker(im *metadata.Image, reg Registration, writeCaching, unclean func(*metadata.Topic) bool) ([]metadata.Record, int64, error) {
	br := metadata.Broker{ID: reg.ID, Rack: reg.Rack, Epoch: im.Version() + 1,
		Endpoints: slices.Clone(reg.Endpoints), LogDirs: slices.Clone(reg.LogDirs),
		VouchedEpoch: reg.PreviousBrokerEpoch, ReplicaCapacity: max(reg.ReplicaCapacity, 0),
		OpenFilesLimit: max(reg.OpenFilesLimit, 0)}
	var recs []metadata.Record
	next := im
	old, known := im.Broker(reg.ID) // old is nil when !known
	if known {
		br.Epoch = max(br.Epoch, old.Epoch+1)
		if !old.Fenced {
			fence, err := FenceBroker(im, reg.ID)
			if err != nil {
				return nil, -1, err
			}
			recs = append(recs, fence...)
			if next, err = im.Apply(fence...); err != nil {
				return nil, -1, errorf(kerr.UnknownServerError, "fence broker %d: %v", reg.ID, err)
			}
		}
	}
	var leave []metadata.Record
	switch restartLoss(old, reg) {
	case leaveAllELRs:
		leave = leaveELRs(next, reg.ID, nil)
	case leaveWriteCachingELRs:
		if writeCaching != nil {
			leave = leaveELRs(next, reg.ID, writeCaching)
		}
	}
	recs = append(recs, leave...)
	rec := metadata.RegisterBroker{Broker: br}
	recs = append(recs, rec)
	next, err := next.Apply(append(leave, rec)...)
	if err != nil {
		return nil, -1, errorf(kerr.InvalidRequest, "register broker %d: %v", reg.ID, err)
	}
	return append(recs, ElectLeaderless(next, unclean)...), br.Epoch, nil
}

// leaveELRs removes id from the ELR of every partition of the topics for
// which only(topic) holds (every topic when only is nil).
func leaveELRs(im *metadata.Image, id int32, only func(*metadata.Topic) bool) []metadata.Record {
	var recs []metadata.Record
	for _, t := range im.Topics() {
		if only != nil && !only(t) {
			continue
		}
		for _, p := range t.Partitions {
			if !slices.Contains(p.ELR, id) {
				continue
			}
			next := p
			next.ELR = without(p.ELR, id)
			recs = append(recs, changeRecord(t.ID, p, next))
		}
	}
	return recs
}
