package config

import (
	"slices"
	"strings"
	"sync"
)

// registry indexes every property by its broker and by its topic name.
type registry struct {
	all     []*Property
	byName  map[string]*Property // broker names
	byTopic map[string]*Property // topic names
}

// theRegistry is built once; registry_test.go checks the tables have no
// duplicate names, so the maps below lose nothing.
var theRegistry = sync.OnceValue(func() *registry {
	r := &registry{byName: map[string]*Property{}, byTopic: map[string]*Property{}}
	for _, table := range [][]Property{brokerProperties, securityProperties, saslProperties, oauthProperties, topicProperties, compatProperties} {
		for i := range table {
			p := &table[i]
			r.all = append(r.all, p)
			if p.Name != "" {
				r.byName[p.Name] = p
			}
			if p.TopicName != "" {
				r.byTopic[p.TopicName] = p
			}
		}
	}
	return r
})

// Properties returns every property definition, sorted by broker name (topic
// name for topic-only ones). The returned values are copies.
func Properties() []Property {
	out := make([]Property, 0, len(theRegistry().all))
	for _, p := range theRegistry().all {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Property) int { return strings.Compare(a.sortKey(), b.sortKey()) })
	return out
}

func (p *Property) sortKey() string {
	if p.Name != "" {
		return p.Name
	}
	return p.TopicName
}

// LookupBroker finds a property by its broker (server.properties) name.
func LookupBroker(name string) (Property, bool) {
	p, ok := theRegistry().byName[name]
	if !ok {
		return Property{}, false
	}
	return *p, true
}

// LookupTopic finds a property by its topic-level name.
func LookupTopic(name string) (Property, bool) {
	p, ok := theRegistry().byTopic[name]
	if !ok {
		return Property{}, false
	}
	return *p, true
}

// TopicPropertyNames lists every topic-level name, sorted.
func TopicPropertyNames() []string {
	names := make([]string, 0, len(theRegistry().byTopic))
	for name := range theRegistry().byTopic {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// unknownBrokerKey builds the error for a key that is not a broker property,
// with the most useful hint available.
func unknownBrokerKey(key string) *Error {
	e := &Error{Key: key, Unknown: true}
	if hint, ok := replacedKafkaProperties[key]; ok {
		e.Reason = hint
	} else if p, ok := theRegistry().byTopic[key]; ok && p.Name != key {
		e.Reason = "that is a topic property; its broker-wide default is " + p.Name
	} else if near := nearestName(key, theRegistry().byName); near != "" {
		e.Reason = "did you mean " + near + "?"
	}
	return e
}

// unknownTopicKey builds the error for a key that is not a topic property.
func unknownTopicKey(key string) *Error {
	e := &Error{Key: key, Unknown: true}
	if p, ok := theRegistry().byName[key]; ok {
		if p.TopicName != "" {
			e.Reason = "that is the broker-wide name; the topic property is " + p.TopicName
		} else {
			e.Reason = "that is a broker property, not settable per topic"
		}
	} else if near := nearestName(key, theRegistry().byTopic); near != "" {
		e.Reason = "did you mean " + near + "?"
	}
	return e
}

// nearestName returns the name within edit distance 2 of key, if there is
// exactly one best; typos are the usual cause of an unknown key.
func nearestName(key string, names map[string]*Property) string {
	const maxDistance = 2
	best, bestDist, ties := "", maxDistance+1, 0
	for name := range names {
		d := editDistance(key, name, maxDistance+1)
		switch {
		case d < bestDist:
			best, bestDist, ties = name, d, 0
		case d == bestDist:
			ties++
		}
	}
	if bestDist > maxDistance || ties > 0 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, capped at limit
// (anything further is reported as limit) to keep long inputs cheap.
func editDistance(a, b string, limit int) int {
	if len(a) > 256 || len(b) > 256 {
		return limit
	}
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
