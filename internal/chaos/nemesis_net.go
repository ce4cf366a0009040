package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/skein-log/skein/internal/faultnet"
)

// lookupTimeout bounds the nemesis's look-up of a leader or the active
// controller before a fault; a cluster that cannot answer in time gets
// the fault on a broker drawn by the schedule instead.
const lookupTimeout = 3 * time.Second

// networkFault cuts or slows links through the proxies for s.hold, then
// restores them. Whom it hits (a partition's leader, the active
// controller) is looked up now, so the fault meets the cluster as it is.
func (n *nemesis) networkFault(ctx context.Context, s FaultStep) error {
	if n.vn == nil {
		return nil
	}
	rule, mode := faultnet.Rule{Fault: faultnet.Blackhole}, "blackhole"
	if s.drop {
		rule, mode = faultnet.Rule{Fault: faultnet.Drop}, "drop"
	}
	target := s.broker
	var links []faultnet.Link
	var note string
	switch s.kind {
	case FaultIsolateLeader:
		partition := s.partition % int32(n.parts)
		target = n.leaderOr(ctx, partition, s.broker)
		links = faultnet.Between([]string{nodeName(target)}, n.vn.others(nodeName(target)))
		note = fmt.Sprintf("isolate broker %d, leader of partition %d, from the other brokers (%s)", target+1, partition, mode)
	case FaultIsolateController:
		target = n.controllerOr(ctx, s.broker)
		links = faultnet.Between([]string{nodeName(target)}, n.vn.others(nodeName(target)))
		note = fmt.Sprintf("isolate broker %d, the active controller, from the other brokers (%s)", target+1, mode)
	case FaultIsolateMinority:
		var minority []string
		for k := range max(1, (n.c.Brokers()-1)/2) {
			minority = append(minority, nodeName((s.broker+k)%n.c.Brokers()))
		}
		links = faultnet.Between(minority, n.vn.others(minority...))
		note = fmt.Sprintf("isolate the minority %s from the majority %s (%s)", strings.Join(minority, ","), strings.Join(n.vn.others(minority...), ","), mode)
	case FaultCutClients:
		partition := s.partition % int32(n.parts)
		target = n.leaderOr(ctx, partition, s.broker)
		links = clientLinks(n.producers, n.consumers, n.transformers, nodeName(target))
		note = fmt.Sprintf("cut producers, consumers and transformers off broker %d, leader of partition %d (%s)", target+1, partition, mode)
	case FaultSlow:
		rule = faultnet.Rule{Fault: faultnet.Delay, Delay: s.delay}
		links = faultnet.Between(n.vn.nodes, n.vn.nodes)
		note = fmt.Sprintf("delay every link between brokers by %v", s.delay)
	default:
		return fmt.Errorf("not a network fault: %s", s.kind)
	}
	id := n.begin(target, s.kind, note)
	if err := n.vn.net.Set(rule, links...); err != nil {
		return err
	}
	if !sleepCtx(ctx, s.hold) {
		return nil
	}
	if err := n.vn.net.Set(faultnet.Rule{Fault: faultnet.Pass}, links...); err != nil {
		return err
	}
	n.end(id, "healed: "+note)
	return nil
}

// leaderOr returns the 0-based broker leading partition, or fallback when
// the cluster does not say within lookupTimeout.
func (n *nemesis) leaderOr(ctx context.Context, partition int32, fallback int) int {
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	leader, _, _, err := n.c.PartitionState(lctx, n.topic, partition)
	if err != nil || leader < 1 || int(leader) > n.c.Brokers() {
		fmt.Fprintf(n.log, "nemesis: no leader of partition %d known (%v); hitting broker %d\n", partition, err, fallback+1)
		return fallback
	}
	return int(leader) - 1
}

// controllerOr returns the 0-based active controller, or fallback when the
// cluster does not say within lookupTimeout.
func (n *nemesis) controllerOr(ctx context.Context, fallback int) int {
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	cl, err := n.c.Client()
	if err == nil {
		defer cl.Close()
		var md kadm.Metadata
		if md, err = kadm.NewClient(cl).BrokerMetadata(lctx); err == nil && md.Controller >= 1 && int(md.Controller) <= n.c.Brokers() {
			return int(md.Controller) - 1
		}
	}
	fmt.Fprintf(n.log, "nemesis: no active controller known (%v); hitting broker %d\n", err, fallback+1)
	return fallback
}

// chainTargetOr picks the broker a kill or pause hits. With the txn
// workload's chain, two in three hit what the chain leans on, looked up
// now: the coordinator of its group, or of one transformer's
// transactions. The rest, and any the cluster cannot name within
// lookupTimeout, hit the broker the schedule drew. why says what the
// target is to the chain ("" for a drawn one).
func (n *nemesis) chainTargetOr(ctx context.Context, s FaultStep) (int, string) {
	if n.chainGroup == "" || n.transformers < 1 {
		return s.broker, ""
	}
	var key, why string
	var find func(*kadm.Client, context.Context, ...string) kadm.FindCoordinatorResponses
	switch s.partition % 3 {
	case 1:
		key, why, find = n.chainGroup, ", coordinator of the chain's group", (*kadm.Client).FindGroupCoordinators
	case 2:
		x := int(s.partition/3)%n.transformers + 1
		key, why, find = transformerTxnID(n.topic, x), fmt.Sprintf(", transaction coordinator of transformer %d", x), (*kadm.Client).FindTxnCoordinators
	default:
		return s.broker, ""
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	cl, err := n.c.Client()
	if err == nil {
		defer cl.Close()
		r, ok := find(kadm.NewClient(cl), lctx, key)[key]
		switch {
		case !ok:
			err = fmt.Errorf("no answer for %s", key)
		case r.Err != nil:
			err = r.Err
		case r.NodeID < 1 || int(r.NodeID) > n.c.Brokers():
			err = fmt.Errorf("coordinator %d", r.NodeID)
		default:
			return int(r.NodeID) - 1, why
		}
	}
	fmt.Fprintf(n.log, "nemesis: no coordinator for %s known (%v); hitting broker %d\n", key, err, s.broker+1)
	return s.broker, ""
}
