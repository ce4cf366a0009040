package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupListing is one ListGroups entry.
type GroupListing struct {
	GroupID      string
	ProtocolType string
	State        State
}

// ListGroups lists groups sorted by id, only those in one of states when
// states is not empty (KIP-518).
func (c *Coordinator) ListGroups(states []State) []GroupListing {
	var out []GroupListing
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		if len(states) > 0 && !slices.Contains(states, g.state) {
			continue
		}
		out = append(out, GroupListing{GroupID: id, ProtocolType: g.protocolType, State: g.state})
	}
	return out
}

// GroupDescription is one DescribeGroups entry. Generation is ours (Kafka's
// answer has no field for it). An unknown group is Dead with no members.
type GroupDescription struct {
	GroupID      string
	State        State
	ProtocolType string
	Protocol     string // only while Stable, as in Kafka
	Generation   int32
	Leader       string
	Members      []MemberDescription
}

// MemberDescription is one member; Metadata and Assignment only while the
// group is Stable.
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// DescribeGroup handles one group of DescribeGroups.
func (c *Coordinator) DescribeGroup(groupID string) GroupDescription {
	g := c.groups[groupID]
	if g == nil {
		return GroupDescription{GroupID: groupID, State: Dead}
	}
	d := GroupDescription{
		GroupID:      groupID,
		State:        g.state,
		ProtocolType: g.protocolType,
		Generation:   g.generation,
		Leader:       g.leader,
	}
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocolName
	}
	for _, m := range g.orderedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata, md.Assignment = m.metadataFor(g.protocolName), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// DeleteGroups handles DeleteGroups: only empty groups can go; their
// offsets and metadata get tombstones. Errors are in request order.
func (c *Coordinator) DeleteGroups(groupIDs []string) ([]error, Output) {
	var out Output
	errs := make([]error, len(groupIDs))
	for i, id := range groupIDs {
		g := c.groups[id]
		switch {
		case g == nil:
			errs[i] = kerr.GroupIDNotFound
		case g.state != Empty:
			errs[i] = kerr.NonEmptyGroup
		default:
			c.removeGroup(g, &out)
		}
	}
	return errs, out
}

// removeGroup forgets an empty group and writes the tombstones that remove
// it from the compacted log. Members given an id by MEMBER_ID_REQUIRED that
// rejoin later get UNKNOWN_MEMBER_ID and start over.
func (c *Coordinator) removeGroup(g *Group, out *Output) {
	tps := make([]TopicPartition, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTopicPartition)
	for _, tp := range tps {
		out.Records = append(out.Records, offsetTombstone(g.id, tp))
	}
	// A group with pending transactional offsets gets a tombstone even if
	// its metadata was never written: the replay drops them at it.
	if g.persisted || len(g.txnOffsets) > 0 {
		out.Records = append(out.Records, groupTombstone(g.id))
	}
	g.state = Dead
	delete(c.groups, g.id)
}

func (c *Coordinator) sortedGroupIDs() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
