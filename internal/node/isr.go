package node

import (
	"github.com/skein-log/skein/internal/controller"
	"github.com/skein-log/skein/internal/replication"
)

// isActiveController reports whether this node decides metadata changes.
// A single broker is its own controller.
func (b *Broker) isActiveController() bool { return true }

// proposeISRChange asks the controller to commit an ISR change the
// partition's replication state proposed (Kafka's AlterPartition). The
// controller validates it against the partition epoch, so a proposal
// computed from stale state is refused rather than applied.
func (b *Broker) proposeISRChange(p *partition, change replication.ISRChange) {
	recs, err := controller.AlterPartition(b.Image(), p.id, p.index, change.LeaderEpoch, change.PartitionEpoch, change.NewISR)
	if err == nil {
		err = b.commit(recs)
	}
	if err != nil {
		b.log.Warn("ISR change refused", "partition", p.name(), "new_isr", change.NewISR, "err", err)
		p.onISRChangeRejected(change, err)
	}
}
