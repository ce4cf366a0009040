package connlimit

import (
	"testing"
	"time"
)

type step struct {
	release  bool // release instead of admit
	listener string
	ip       string
	at       time.Duration // since t0
	want     Decision
}

func TestAdmit(t *testing.T) {
	accept := Decision{Accept: true}
	base := Config{
		Max: 3, PerIP: Unlimited,
		Protected: map[string]bool{"REPL": true, "CONTROLLER": true},
		Unmetered: map[string]bool{"CONTROLLER": true},
	}
	with := func(f func(*Config)) Config {
		c := base
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"broker-wide max refuses clients and frees on release", base, []step{
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "b", want: accept},
			{listener: "PLAINTEXT", ip: "c", want: Decision{Refuse: ReasonBrokerMax}},
			{release: true, listener: "PLAINTEXT", ip: "a"},
			{listener: "PLAINTEXT", ip: "c", want: accept},
		}},
		{"protected listeners are never held to the broker-wide max", base, []step{
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "REPL", ip: "b", want: accept},
			{listener: "CONTROLLER", ip: "b", want: accept},
			{listener: "PLAINTEXT", ip: "z", want: Decision{Refuse: ReasonBrokerMax}},
		}},
		{"per-IP limit leaves room for other addresses", with(func(c *Config) { c.Max = 100; c.PerIP = 2 }), []step{
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: Decision{Refuse: ReasonPerIP}},
			{listener: "PLAINTEXT", ip: "b", want: accept},
			// Even the protected inter-broker listener counts per IP, as in Kafka.
			{listener: "REPL", ip: "a", want: Decision{Refuse: ReasonPerIP}},
			// The controller listener is not metered per IP.
			{listener: "CONTROLLER", ip: "a", want: accept},
			{release: true, listener: "PLAINTEXT", ip: "a"},
			{listener: "PLAINTEXT", ip: "a", want: accept},
		}},
		{"overrides raise, lower and block", with(func(c *Config) {
			c.Max = 100
			c.PerIP = 1
			c.PerIPOverrides = map[string]int{"big": 3, "blocked": 0}
		}), []step{
			{listener: "PLAINTEXT", ip: "big", want: accept},
			{listener: "PLAINTEXT", ip: "big", want: accept},
			{listener: "PLAINTEXT", ip: "big", want: accept},
			{listener: "PLAINTEXT", ip: "big", want: Decision{Refuse: ReasonPerIP}},
			{listener: "PLAINTEXT", ip: "blocked", want: Decision{Refuse: ReasonPerIP}},
			{listener: "PLAINTEXT", ip: "small", want: accept},
			{listener: "PLAINTEXT", ip: "small", want: Decision{Refuse: ReasonPerIP}},
		}},
		{"a listener's own max applies to protected listeners too", with(func(c *Config) {
			c.Listeners = map[string]ListenerLimits{"REPL": {Max: 1}, "PLAINTEXT": {Max: 2}}
		}), []step{
			{listener: "REPL", ip: "a", want: accept},
			{listener: "REPL", ip: "b", want: Decision{Refuse: ReasonListenerMax}},
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: Decision{Refuse: ReasonListenerMax}},
			{release: true, listener: "REPL", ip: "a"},
			{listener: "REPL", ip: "b", want: accept},
		}},
		{"creation rate: a burst of one second, then waits", with(func(c *Config) { c.Max = 100; c.CreationRate = 2 }), []step{
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: accept},
			{listener: "PLAINTEXT", ip: "a", want: Decision{Wait: 500 * time.Millisecond}},
			{listener: "PLAINTEXT", ip: "a", at: 250 * time.Millisecond, want: Decision{Wait: 250 * time.Millisecond}},
			{listener: "PLAINTEXT", ip: "a", at: 500 * time.Millisecond, want: accept},
			// The inter-broker listener is not held to the broker-wide rate.
			{listener: "REPL", ip: "b", at: 500 * time.Millisecond, want: accept},
			{listener: "PLAINTEXT", ip: "a", at: 3 * time.Second, want: accept},
			{listener: "PLAINTEXT", ip: "a", at: 3 * time.Second, want: accept},
			{listener: "PLAINTEXT", ip: "a", at: 3 * time.Second, want: Decision{Wait: 500 * time.Millisecond}},
		}},
		{"listener creation rate", with(func(c *Config) {
			c.Max = 100
			c.Listeners = map[string]ListenerLimits{"REPL": {CreationRate: 1}}
		}), []step{
			{listener: "REPL", ip: "a", want: accept},
			{listener: "REPL", ip: "a", at: 100 * time.Millisecond, want: Decision{Wait: 900 * time.Millisecond}},
			{listener: "PLAINTEXT", ip: "a", at: 100 * time.Millisecond, want: accept},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			l := New(tc.cfg)
			for i, s := range tc.steps {
				if s.release {
					l.Release(s.listener, s.ip)
					continue
				}
				if got := l.Admit(s.listener, s.ip, t0.Add(s.at)); got != s.want {
					t.Fatalf("step %d (%s from %s at %v): got %+v, want %+v", i, s.listener, s.ip, s.at, got, s.want)
				}
			}
		})
	}
}
