package node

import (
	"context"
	"time"

	"github.com/skein-log/skein/internal/metadata"
)

// Suspects: a follower whose replication connection to a leader broke
// reports that leader's partitions unavailable until the controller rules
// on it (fences it, or sees it heartbeat), so clients do not keep
// producing to a dead leader for the length of a session timeout.

// suspectFor bounds how long a broker is reported unavailable on the word
// of a broken replication connection alone: long enough for the controller
// to fence a dead broker, short enough that a live one behind a blip is not
// shunned for long.
const suspectFor = 3 * time.Second

func (b *Broker) suspect(id int32) {
	if _, known := b.suspects.Load(id); !known {
		b.log.Info("lost the replication connection to a leader; reporting its partitions unavailable until the controller decides", "broker", id)
	}
	b.suspects.Store(id, time.Now().Add(suspectFor))
}

func (b *Broker) clearSuspect(id int32) { b.suspects.Delete(id) }

func (b *Broker) isSuspect(id int32) bool {
	v, ok := b.suspects.Load(id)
	if !ok {
		return false
	}
	if time.Now().After(v.(time.Time)) {
		b.suspects.Delete(id)
		return false
	}
	if br, ok := b.Image().Broker(id); ok && br.Fenced {
		return false // the controller decided; the image speaks for itself
	}
	return true
}

// settleWait bounds how long a Metadata answer waits for the controller to
// rule on a suspect broker: enough for a raft election plus a fencing
// commit when the controller itself died.
const settleWait = 2 * time.Second

// settleSuspects waits until no broker is suspect (each was fenced, came
// back, or its suspicion expired), or settleWait passes.
func (b *Broker) settleSuspects() {
	b.fetchers.checkLeaderConns()
	anySuspect := func(*metadata.Image) bool {
		found := false
		b.suspects.Range(func(k, _ any) bool {
			if b.isSuspect(k.(int32)) {
				found = true
				return false
			}
			return true
		})
		return found
	}
	if !anySuspect(nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleWait)
	defer cancel()
	b.waitImage(ctx, func(im *metadata.Image) bool { return !anySuspect(im) })
}
