package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
)

// Client quota entity types and keys, as Kafka names them.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"

	QuotaProducerByteRate  = "producer_byte_rate"
	QuotaConsumerByteRate  = "consumer_byte_rate"
	QuotaRequestPercentage = "request_percentage"
)

// QuotaEntityPart is one component of a client quota entity, as in Kafka's
// ClientQuotaRecord: a type ("user" or "client-id") and a name, nil for
// the type's default.
type QuotaEntityPart struct {
	Type string
	Name *string `json:",omitempty"`
}

// ClientQuota sets (Remove false) or removes one quota value of one
// entity. It has the shape of Kafka's ClientQuotaRecord.
type ClientQuota struct {
	Entity []QuotaEntityPart
	Key    string
	Value  float64 `json:",omitempty"`
	Remove bool    `json:",omitempty"`
}

func (ClientQuota) isRecord() {}

// QuotaName is one side (user or client id) of a quota entity.
type QuotaName struct {
	// Set says the entity has this component at all.
	Set bool
	// Default is the type's default entity (<default> in kafka-configs).
	Default bool
	Name    string
}

// QuotaEntity is a client quota entity in comparable form: which of user
// and client id it names, and how.
type QuotaEntity struct {
	User     QuotaName
	ClientID QuotaName
}

// Parts returns the entity in record form, user first.
func (e QuotaEntity) Parts() []QuotaEntityPart {
	var out []QuotaEntityPart
	add := func(typ string, n QuotaName) {
		if !n.Set {
			return
		}
		p := QuotaEntityPart{Type: typ}
		if !n.Default {
			name := n.Name
			p.Name = &name
		}
		out = append(out, p)
	}
	add(QuotaEntityUser, e.User)
	add(QuotaEntityClientID, e.ClientID)
	return out
}

// QuotaEntityOf checks a record's entity and returns it in comparable
// form: one or two components, each "user" or "client-id", no type twice.
func QuotaEntityOf(parts []QuotaEntityPart) (QuotaEntity, error) {
	var e QuotaEntity
	if len(parts) == 0 {
		return e, fmt.Errorf("empty client quota entity")
	}
	for _, p := range parts {
		var n *QuotaName
		switch p.Type {
		case QuotaEntityUser:
			n = &e.User
		case QuotaEntityClientID:
			n = &e.ClientID
		default:
			return e, fmt.Errorf("unhandled client quota entity type %q", p.Type)
		}
		if n.Set {
			return e, fmt.Errorf("client quota entity type %q given twice", p.Type)
		}
		n.Set = true
		if p.Name == nil {
			n.Default = true
		} else {
			n.Name = *p.Name
		}
	}
	return e, nil
}

// MaxQuotaEntities bounds the quota entities one image holds, so a hostile
// stream of records cannot make every broker allocate without bound.
const MaxQuotaEntities = 100_000

// ClientQuotas returns every quota entity with its values, sorted by
// user then client id. The maps are shared: do not modify them.
func (im *Image) ClientQuotas() []QuotaEntry {
	out := make([]QuotaEntry, 0, len(im.quotas))
	for e, v := range im.quotas {
		out = append(out, QuotaEntry{Entity: e, Values: v})
	}
	slices.SortFunc(out, func(a, b QuotaEntry) int {
		return cmp.Or(compareQuotaName(a.Entity.User, b.Entity.User), compareQuotaName(a.Entity.ClientID, b.Entity.ClientID))
	})
	return out
}

// ClientQuota returns one entity's quota values (shared: do not modify).
func (im *Image) ClientQuota(e QuotaEntity) (map[string]float64, bool) {
	v, ok := im.quotas[e]
	return v, ok
}

// HasClientQuotas reports whether any quota is set, so brokers skip quota
// accounting entirely in the common case of none.
func (im *Image) HasClientQuotas() bool { return len(im.quotas) > 0 }

// QuotaEntry is one entity and its quota values.
type QuotaEntry struct {
	Entity QuotaEntity
	Values map[string]float64
}

func compareQuotaName(a, b QuotaName) int {
	rank := func(n QuotaName) int {
		switch {
		case !n.Set:
			return 0
		case n.Default:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Name, b.Name))
}

func (b *builder) applyClientQuota(r ClientQuota) error {
	e, err := QuotaEntityOf(r.Entity)
	if err != nil {
		return fmt.Errorf("client quota: %w", err)
	}
	if e.User.Set && len(e.User.Name) > MaxConfigKeyLen || e.ClientID.Set && len(e.ClientID.Name) > MaxConfigValueLen {
		return fmt.Errorf("client quota: entity name too long")
	}
	if r.Key == "" || len(r.Key) > MaxConfigKeyLen {
		return fmt.Errorf("client quota: bad key %q", r.Key)
	}
	if !r.Remove && (math.IsNaN(r.Value) || math.IsInf(r.Value, 0)) {
		return fmt.Errorf("client quota %s: value %v is not a number", r.Key, r.Value)
	}
	var value *float64
	if !r.Remove {
		value = &r.Value
	}
	quotas, err := withValue(b.img.quotas, e, r.Key, value, MaxQuotaEntities)
	if err != nil {
		return fmt.Errorf("client quota: %w", err)
	}
	b.img.quotas = quotas
	return nil
}

// withValue returns a copy of m with value set (or, when nil, deleted)
// under key in the map of owner; an owner left with no values is dropped.
// m and its inner maps may be shared with the previous image, so only
// copies are written. At most MaxConfigsPerTopic keys per owner and
// maxOwners owners.
func withValue[K comparable, V any](m map[K]map[string]V, owner K, key string, value *V, maxOwners int) (map[K]map[string]V, error) {
	out := maps.Clone(m)
	if out == nil {
		out = map[K]map[string]V{}
	}
	values := maps.Clone(out[owner])
	if value == nil {
		delete(values, key)
	} else {
		if values == nil {
			values = map[string]V{}
		}
		values[key] = *value
		if len(values) > MaxConfigsPerTopic {
			return nil, fmt.Errorf("more than %d keys on %v", MaxConfigsPerTopic, owner)
		}
	}
	if len(values) == 0 {
		delete(out, owner)
	} else {
		out[owner] = values
	}
	if len(out) > maxOwners {
		return nil, fmt.Errorf("more than %d entities", maxOwners)
	}
	return out, nil
}

// clientQuotaRecords rebuild the image's client quotas (for snapshots).
func clientQuotaRecords(im *Image) []Record {
	var recs []Record
	for _, q := range im.ClientQuotas() {
		for _, k := range slices.Sorted(maps.Keys(q.Values)) {
			recs = append(recs, ClientQuota{Entity: q.Entity.Parts(), Key: k, Value: q.Values[k]})
		}
	}
	return recs
}
