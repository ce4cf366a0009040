package faultnet

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"sync"
	"time"
)

// Limits of one proxy.
const (
	// MaxConnsPerProxy bounds the connections a proxy forwards at once;
	// more are closed on accept.
	MaxConnsPerProxy = 1024
	// dialTimeout bounds the proxy's connection attempt to its target.
	dialTimeout = 2 * time.Second
	// chunkBytes is the most a pump reads before forwarding.
	chunkBytes = 32 << 10
)

// Namer names the source of a connection from its remote address; an
// address it does not know gets a name too (say "other") and is subject to
// that name's rules.
type Namer func(remote net.Addr) string

// Net is a set of proxies sharing one rule table.
type Net struct {
	rules *rules
	namer Namer

	mu      sync.Mutex
	proxies []*Proxy
	seen    map[Link]int // connections accepted per link
}

// New returns a network whose proxies name sources with namer.
func New(namer Namer) *Net {
	return &Net{rules: newRules(), namer: namer, seen: map[Link]int{}}
}

// Set puts rule on every link given (Pass removes their faults). Drop
// closes the links' open connections at once; Blackhole freezes them.
func (n *Net) Set(rule Rule, links ...Link) error {
	if rule.Fault == Delay && (rule.Delay <= 0 || rule.Delay > MaxDelay) {
		return fmt.Errorf("faultnet: delay %v: want more than 0 and at most %v", rule.Delay, MaxDelay)
	}
	updates := make(map[Link]Rule, len(links))
	for _, l := range links {
		updates[l] = rule
	}
	n.rules.set(updates)
	if rule.Fault == Drop {
		n.closeLinks(links)
	}
	return nil
}

// HealAll removes every fault; held bytes flow again.
func (n *Net) HealAll() {
	n.rules.clear()
}

// Faults describes the faulty links, for logs.
func (n *Net) Faults() string { return n.rules.String() }

// Seen counts the connections accepted so far on each link: it shows
// which sources the proxies told apart.
func (n *Net) Seen() map[Link]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.seen)
}

func (n *Net) saw(l Link) {
	n.mu.Lock()
	n.seen[l]++
	n.mu.Unlock()
}

// Listen starts a proxy on addr (host:port; port 0 picks one) that
// forwards to target and names its destination to.
func (n *Net) Listen(addr, to, target string) (*Proxy, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultnet: proxy for %s: %w", to, err)
	}
	p := &Proxy{net: n, ln: l, to: to, target: target, conns: map[*pair]struct{}{}, done: make(chan struct{})}
	n.mu.Lock()
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	p.wg.Go(p.accept)
	return p, nil
}

// Close stops every proxy and closes their connections.
func (n *Net) Close() error {
	n.mu.Lock()
	proxies := n.proxies
	n.proxies = nil
	n.mu.Unlock()
	var errs []error
	for _, p := range proxies {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

func (n *Net) closeLinks(links []Link) {
	want := make(map[Link]bool, len(links))
	for _, l := range links {
		want[l] = true
	}
	n.mu.Lock()
	proxies := append([]*Proxy(nil), n.proxies...)
	n.mu.Unlock()
	for _, p := range proxies {
		p.abortWhere(func(pr *pair) bool { return want[pr.link] })
	}
}

// Proxy forwards the connections made to one listener to its target,
// subject to the rules of each connection's link.
type Proxy struct {
	net    *Net
	ln     net.Listener
	to     string
	target string

	mu     sync.Mutex
	conns  map[*pair]struct{}
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	err := p.ln.Close()
	p.abortWhere(func(*pair) bool { return true })
	p.wg.Wait()
	return err
}

func (p *Proxy) abortWhere(match func(*pair) bool) {
	p.mu.Lock()
	var victims []*pair
	for pr := range p.conns {
		if match(pr) {
			victims = append(victims, pr)
		}
	}
	p.mu.Unlock()
	for _, pr := range victims {
		pr.abort()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		pr := newPair(c, Link{From: p.net.namer(c.RemoteAddr()), To: p.to})
		p.net.saw(pr.link)
		if !p.track(pr) {
			c.Close()
			continue
		}
		p.wg.Go(func() { p.serve(pr) })
	}
}

// track registers a connection, unless the proxy is closed or full.
func (p *Proxy) track(pr *pair) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.conns) >= MaxConnsPerProxy {
		return false
	}
	p.conns[pr] = struct{}{}
	return true
}

func (p *Proxy) untrack(pr *pair) {
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
	pr.close()
}

// serve connects an accepted connection to the target once its link lets
// it, then pumps bytes both ways until either side ends.
func (p *Proxy) serve(pr *pair) {
	defer p.untrack(pr)
	if !p.wait(pr, time.Time{}) {
		pr.abort()
		return
	}
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.Dial("tcp", p.target)
	if err != nil {
		pr.abort() // the target is down: the client sees its connection reset
		return
	}
	if !pr.setServer(server) {
		server.Close()
		return
	}
	var pumps sync.WaitGroup
	pumps.Go(func() { p.pump(pr, pr.client, server) })
	pumps.Go(func() { p.pump(pr, server, pr.client) })
	pumps.Wait()
}

// pump copies src to dst chunk by chunk, each chunk passing the link's
// rule first. At the end of src it half-closes dst, so each side sees the
// other's close in order; an error closes the pair.
func (p *Proxy) pump(pr *pair, src, dst net.Conn) {
	buf := make([]byte, chunkBytes)
	for {
		n, err := src.Read(buf)
		readAt := time.Now()
		if n > 0 {
			if !p.wait(pr, readAt) {
				pr.abort()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				pr.abort()
				return
			}
		}
		if err != nil {
			// The end of src, too, passes the link's rule: a close does not
			// cross a blackhole either.
			if n == 0 && !p.wait(pr, readAt) {
				pr.abort()
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				tc.CloseWrite()
				return
			}
			pr.abort() // src broke: so does dst
			return
		}
	}
}

// wait holds what was read at readAt until the link lets it through:
// false when the link drops it or the pair or proxy closed meanwhile.
func (p *Proxy) wait(pr *pair, readAt time.Time) bool {
	for {
		rule, changed := p.net.rules.get(pr.link)
		switch rule.Fault {
		case Pass:
			return !pr.isClosed()
		case Drop:
			return false
		case Delay:
			if readAt.IsZero() {
				return !pr.isClosed() // connecting is not delayed, bytes are
			}
			left := time.Until(readAt.Add(rule.Delay))
			if left <= 0 {
				return !pr.isClosed()
			}
			t := time.NewTimer(left)
			select {
			case <-t.C:
				return !pr.isClosed()
			case <-changed:
				t.Stop() // the rule changed: look again
			case <-pr.done:
				t.Stop()
				return false
			case <-p.done:
				t.Stop()
				return false
			}
		case Blackhole:
			select {
			case <-changed:
			case <-pr.done:
				return false
			case <-p.done:
				return false
			}
		}
	}
}
