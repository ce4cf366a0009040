package e2e

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skein-log/skein/internal/metadata"
	"github.com/skein-log/skein/internal/node"
)

// awaitImage polls a node's own metadata image until cond holds for it.
func awaitImage(ctx context.Context, t *testing.T, b *node.Broker, what string, cond func(*metadata.Image) bool) *metadata.Image {
	t.Helper()
	for {
		im := b.Image()
		if cond(im) {
			return im
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the image never showed %s", what)
		case <-time.After(externalPollInterval):
		}
	}
}

func imagePartition(t *testing.T, im *metadata.Image, topic string) metadata.Partition {
	t.Helper()
	tp, ok := im.Topic(topic)
	if !ok {
		t.Fatalf("no topic %s in the image", topic)
	}
	p, _ := tp.Partition(0)
	return p
}

// TestClusterELRMemberWithWipedLogDirDoesNotLead: the last ISR member of a
// partition goes down and so enters the ELR; its log directory is replaced
// by an empty one while it is down, and it comes back first. It must not
// be elected from the ELR (its empty log would silently drop every
// acknowledged record): its new directory id takes it out of the ELR at
// registration, and the partition stays leaderless until unclean election
// is enabled.
func TestClusterELRMemberWithWipedLogDirDoesNotLead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startRolesCluster(t, []string{controllerOnly, brokerOnly, brokerOnly}, nil, node.Options{})
	ctrl := c.brokers[0]
	const topic = "elr-wiped"
	const last, other int32 = 2, 3
	createAssignedTopic(ctx, t, newSeededClient(t, c.addrs()), topic, [][]int32{{last, other}})
	awaitImage(ctx, t, ctrl, "a full ISR led by broker 2", func(im *metadata.Image) bool {
		tp, ok := im.Topic(topic)
		return ok && tp.Partitions[0].Leader == last && len(tp.Partitions[0].ISR) == 2
	})
	prod := idempotentProducer(t, c.addrs())
	acked := newAckedRecords()
	produceNumbered(ctx, t, prod, acked, topic, 1, 0, 50)

	// Broker 3 dies: broker 2 is the only ISR member and alone holds what
	// is acknowledged next.
	c.kill(int(other) - 1)
	awaitImage(ctx, t, ctrl, "broker 2 as the only ISR member", func(im *metadata.Image) bool {
		return slices.Equal(imagePartition(t, im, topic).ISR, []int32{last})
	})
	produceNumbered(ctx, t, prod, acked, topic, 1, 50, 100)

	c.kill(int(last) - 1)
	im := awaitImage(ctx, t, ctrl, "broker 2 moved to the ELR", func(im *metadata.Image) bool {
		return slices.Equal(imagePartition(t, im, topic).ELR, []int32{last})
	})
	oldBroker, _ := im.Broker(last)
	oldEpoch := oldBroker.Epoch

	// A new, empty disk replaces broker 2's log directory.
	if err := os.RemoveAll(c.props[last-1]["log.dirs"]); err != nil {
		t.Fatal(err)
	}
	c.start(int(last) - 1)
	// Once the controller unfenced the new incarnation, both moments that
	// elect leaders for it (registration, unfencing) have passed.
	im = awaitImage(ctx, t, ctrl, "broker 2 registered again and unfenced", func(im *metadata.Image) bool {
		b, ok := im.Broker(last)
		return ok && b.Epoch > oldEpoch && !b.Fenced
	})
	if p := imagePartition(t, im, topic); p.Leader != metadata.NoLeader || slices.Contains(p.ELR, last) {
		t.Fatalf("broker 2 restarted with an empty log dir and the partition is %+v; want leaderless, broker 2 out of the ELR", p)
	}

	// Only an operator's unclean election brings the partition back.
	enable := "true"
	resp, err := kadm.NewClient(newSeededClient(t, c.addrs())).AlterTopicConfigs(ctx,
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: &enable}}, topic)
	if err == nil {
		err = resp[0].Err
	}
	if err != nil {
		t.Fatalf("enable unclean election: %v", err)
	}
	awaitImage(ctx, t, ctrl, "broker 2 elected uncleanly", func(im *metadata.Image) bool {
		return imagePartition(t, im, topic).Leader == last
	})
}
