package group

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one __consumer_offsets record. A nil Value is a tombstone.
type Record struct {
	Key   []byte
	Value []byte
}

// Key versions in __consumer_offsets, as Kafka writes them: 0 and 1 are
// offset commits, 2 is group metadata. Later versions are record types of
// newer Kafka protocols (KIP-848, transactions' bookkeeping) that a classic
// coordinator skips.
const (
	offsetCommitKeyVersion  = 1
	groupMetadataKeyVersion = 2
	offsetCommitValueV      = 3 // adds the leader epoch
	groupMetadataValueV     = 3 // adds instance ids (KIP-345)
)

func offsetCommitKey(group string, tp TopicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = offsetCommitKeyVersion, group, tp.Topic, tp.Partition
	return k.AppendTo(nil)
}

func offsetCommitRecord(group string, tp TopicPartition, e offsetEntry) Record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueV
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = e.offset, e.leaderEpoch, e.metadata, e.commitTime
	return Record{Key: offsetCommitKey(group, tp), Value: v.AppendTo(nil)}
}

func offsetTombstone(group string, tp TopicPartition) Record {
	return Record{Key: offsetCommitKey(group, tp)}
}

func groupMetadataKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupMetadataKeyVersion, group
	return k.AppendTo(nil)
}

func groupTombstone(group string) Record {
	return Record{Key: groupMetadataKey(group)}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// groupMetadataRecord is g's metadata with the members' current
// assignments.
func groupMetadataRecord(g *Group) Record {
	return groupMetadataRecordWith(g, func(m *member) []byte { return m.assignment })
}

// groupMetadataRecordWith is g's metadata with the assignments assignment
// gives: a generation's new assignment is written before members take it.
func groupMetadataRecordWith(g *Group, assignment func(*member) []byte) Record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueV
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	v.Protocol = optional(g.protocolName)
	v.Leader = optional(g.leader)
	v.CurrentStateTimestamp = g.stateSince
	for _, m := range g.orderedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = optional(m.instanceID)
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeoutMs)
		vm.SessionTimeoutMillis = int32(m.sessionTimeoutMs)
		vm.Subscription = m.metadataFor(g.protocolName)
		vm.Assignment = assignment(m)
		v.Members = append(v.Members, vm)
	}
	return Record{Key: groupMetadataKey(g.id), Value: v.AppendTo(nil)}
}

// Apply loads one record of the partition, in offset order, into a
// coordinator that is not serving yet. now starts the loaded members'
// sessions. Unknown record types are skipped; undecodable ones are errors.
func (c *Coordinator) Apply(now int64, rec Record) error {
	if len(rec.Key) < 2 {
		return fmt.Errorf("group record: key of %d bytes has no version", len(rec.Key))
	}
	switch version := int16(binary.BigEndian.Uint16(rec.Key)); version {
	case 0, 1:
		return c.applyOffsetCommit(now, rec)
	case groupMetadataKeyVersion:
		return c.applyGroupMetadata(now, rec)
	default:
		return nil
	}
}

func (c *Coordinator) loadedGroup(id string, now int64) *Group {
	g := c.groups[id]
	if g == nil {
		g = newGroup(c, id, now)
		g.stateSince = -1 // unknown until group metadata says
		c.groups[id] = g
	}
	return g
}

func (c *Coordinator) applyOffsetCommit(now int64, rec Record) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(rec.Key); err != nil {
		return fmt.Errorf("group record: offset commit key: %w", err)
	}
	tp := TopicPartition{Topic: k.Topic, Partition: k.Partition}
	if rec.Value == nil {
		if g := c.groups[k.Group]; g != nil {
			delete(g.offsets, tp)
			c.changed(g)
		}
		return nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(rec.Value); err != nil {
		return fmt.Errorf("group record: offset commit of group %q %s-%d: %w", k.Group, k.Topic, k.Partition, err)
	}
	g := c.loadedGroup(k.Group, now)
	g.offsets[tp] = c.loadedOffset(v)
	c.changed(g)
	return nil
}

// loadedOffset is the entry of an offset commit value read from the log.
func (c *Coordinator) loadedOffset(v kmsg.OffsetCommitValue) offsetEntry {
	e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1, order: c.nextCommit()}
	if v.Version >= 3 {
		e.leaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		e.expireTime = v.ExpireTimestamp
	}
	return e
}

func (c *Coordinator) applyGroupMetadata(now int64, rec Record) error {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(rec.Key); err != nil {
		return fmt.Errorf("group record: group metadata key: %w", err)
	}
	var offsets map[TopicPartition]offsetEntry
	var txnOffsets map[int64]map[TopicPartition]offsetEntry
	if old := c.groups[k.Group]; old != nil {
		offsets, txnOffsets = old.offsets, old.txnOffsets
	}
	delete(c.groups, k.Group)
	if rec.Value == nil {
		// Offsets have tombstones of their own. Pending transactional
		// offsets went with the group, as removeGroup drops them.
		if len(offsets) > 0 {
			c.loadedGroup(k.Group, now).offsets = offsets
		}
		return nil
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(rec.Value); err != nil {
		return fmt.Errorf("group record: metadata of group %q: %w", k.Group, err)
	}
	g := c.loadedGroup(k.Group, now)
	if offsets != nil {
		g.offsets, g.txnOffsets = offsets, txnOffsets
	}
	g.persisted = true
	g.generation = v.Generation
	g.protocolType = v.ProtocolType
	if v.Protocol != nil {
		g.protocolName = *v.Protocol
	}
	g.stateSince = -1
	if v.Version >= 2 {
		g.stateSince = v.CurrentStateTimestamp
	}
	for _, vm := range v.Members {
		if _, dup := g.members[vm.MemberID]; dup || vm.MemberID == "" {
			return fmt.Errorf("group record: metadata of group %q: member id %q empty or repeated", k.Group, vm.MemberID)
		}
		req := JoinRequest{
			InstanceID:         derefOr(vm.InstanceID),
			ClientID:           vm.ClientID,
			ClientHost:         vm.ClientHost,
			SessionTimeoutMs:   vm.SessionTimeoutMillis,
			RebalanceTimeoutMs: vm.RebalanceTimeoutMillis,
			Protocols:          []Protocol{{Name: g.protocolName, Metadata: vm.Subscription}},
		}
		m := newMember(vm.MemberID, now, req)
		m.isNew = false
		m.assignment = vm.Assignment
		g.add(m, v.ProtocolType)
	}
	if v.Leader != nil && g.members[*v.Leader] != nil {
		g.leader = *v.Leader
	}
	if len(g.members) > 0 {
		// A group is persisted with members once its assignment is done.
		g.state = Stable
		g.computeSubscribed()
	}
	c.changed(g)
	return nil
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
