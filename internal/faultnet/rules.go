// Package faultnet is a fault-injecting TCP network for chaos tests: one
// proxy per destination listener forwards connections to the real
// listener, and a shared rule table decides, per link (source name,
// destination name), whether bytes pass, pass late, stop flowing while
// the sockets stay open (a blackhole, as when a switch drops packets and
// TCP keeps retransmitting), or the connections are closed.
//
// A proxy learns which node a connection comes from by its source address
// (a Namer maps it to a name): the chaos suite gives every node its own
// loopback address and has the nodes bind their outgoing connections to
// it. Everything here uses real sockets; the rule table is the only state
// and it is plain data behind a mutex.
package faultnet

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Fault is what a link does to the bytes sent over it.
type Fault int

const (
	// Pass forwards bytes as they come.
	Pass Fault = iota
	// Delay forwards every chunk of bytes Rule.Delay after it was read.
	Delay
	// Blackhole stops bytes both ways and keeps the connections open; new
	// connections are accepted and then hang. Healing resumes the flow,
	// bytes held included, as TCP retransmission would.
	Blackhole
	// Drop closes the link's connections and closes new ones at once.
	Drop
)

func (f Fault) String() string {
	switch f {
	case Pass:
		return "pass"
	case Delay:
		return "delay"
	case Blackhole:
		return "blackhole"
	case Drop:
		return "drop"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// MaxDelay bounds a Delay rule, so that a typo cannot stall a test for hours.
const MaxDelay = time.Minute

// Rule is the fault on one link.
type Rule struct {
	Fault Fault
	Delay time.Duration // for Delay
}

// Link is the direction a connection was opened in: From dialled To. A
// rule on a link covers the bytes flowing both ways over its connections;
// a symmetric partition sets both directions.
type Link struct {
	From, To string
}

func (l Link) String() string { return l.From + "->" + l.To }

// rules is the rule table: a link not in it passes.
type rules struct {
	mu      sync.Mutex
	table   map[Link]Rule
	changed chan struct{} // closed and replaced on every change
}

func newRules() *rules {
	return &rules{table: map[Link]Rule{}, changed: make(chan struct{})}
}

// get returns the link's rule and a channel closed at the next change.
func (r *rules) get(l Link) (Rule, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.table[l], r.changed
}

// set changes rules and wakes everyone waiting on the old ones.
func (r *rules) set(updates map[Link]Rule) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for l, rule := range updates {
		if rule.Fault == Pass {
			delete(r.table, l)
		} else {
			r.table[l] = rule
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// clear removes every rule and returns the links that had one.
func (r *rules) clear() []Link {
	r.mu.Lock()
	defer r.mu.Unlock()
	var had []Link
	for l := range r.table {
		had = append(had, l)
	}
	clear(r.table)
	close(r.changed)
	r.changed = make(chan struct{})
	return had
}

// String lists the faulty links, sorted, for logs.
func (r *rules) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for l, rule := range r.table {
		s := l.String() + " " + rule.Fault.String()
		if rule.Fault == Delay {
			s += " " + rule.Delay.String()
		}
		out = append(out, s)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "all links pass"
	}
	return strings.Join(out, ", ")
}

// Between returns the links both ways between every member of a and every
// member of b (a member present in both sides is skipped with itself).
func Between(a, b []string) []Link {
	var out []Link
	for _, x := range a {
		for _, y := range b {
			if x != y {
				out = append(out, Link{x, y}, Link{y, x})
			}
		}
	}
	return out
}
