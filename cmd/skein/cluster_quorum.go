package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/config"
	"github.com/skein-log/skein/internal/metadata"
)

// `skein cluster quorum`, kafka-metadata-quorum.sh's commands: describe
// (--status, the default, or --replication), add-controller and
// remove-controller (KIP-853).

// quorumChangeTimeout is what add-controller gives the leader (AddRaftVoter's
// TimeoutMs): the new controller must catch up within it.
const quorumChangeTimeout = 60 * time.Second

func runClusterQuorum(ctx context.Context, args []string, s streams) error {
	return runSubcommand(ctx, args, s, "usage: skein cluster quorum describe|add-controller|remove-controller [flags]", map[string]clientRun{
		"describe":          runQuorumDescribe,
		"add-controller":    runQuorumAddController,
		"remove-controller": runQuorumRemoveController,
	})
}

// quorumClient parses the common flags and connects; the context ends
// after the timeout.
func quorumClient(ctx context.Context, fs *flag.FlagSet, args []string, bootstrap *clusterFlags, timeout *time.Duration) (*kgo.Client, context.Context, context.CancelFunc, error) {
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cl, err := newClient(bootstrap)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	return cl, ctx, func() { cancel(); cl.Close() }, nil
}

func runQuorumDescribe(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein cluster quorum describe", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	status := fs.Bool("status", false, "the quorum's leader, epoch, high watermark, voters and observers (the default)")
	replication := fs.Bool("replication", false, "one line per voter and observer: log end offset, lag, last fetch")
	cl, ctx, done, err := quorumClient(ctx, fs, args, bootstrap, timeout)
	if err != nil {
		return err
	}
	defer done()
	if *status && *replication {
		return errors.New("--status and --replication are exclusive")
	}
	q, err := describeQuorum(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe quorum from %s: %w", bootstrap, explainError(err))
	}
	if *replication {
		printQuorumReplication(s.out, q, time.Now())
		return nil
	}
	clusterID := "-"
	if md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err == nil && md.ClusterID != nil {
		clusterID = *md.ClusterID
	}
	printQuorumStatus(s.out, clusterID, q, time.Now())
	return nil
}

// quorumView is DescribeQuorum's answer for __cluster_metadata-0.
type quorumView struct {
	p     kmsg.DescribeQuorumResponseTopicPartition
	nodes map[int32][]string // voter id -> NAME://host:port
}

func describeQuorum(ctx context.Context, cl *kgo.Client) (quorumView, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{p}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{t}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return quorumView{}, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return quorumView{}, withMessage(err, resp.ErrorMessage)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return quorumView{}, errors.New("answer without the metadata partition")
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return quorumView{}, withMessage(err, rp.ErrorMessage)
	}
	v := quorumView{p: rp, nodes: map[int32][]string{}}
	for _, n := range resp.Nodes {
		for _, l := range n.Listeners {
			v.nodes[n.NodeID] = append(v.nodes[n.NodeID], l.Name+"://"+net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
		}
	}
	return v, nil
}

func withMessage(err error, msg *string) error {
	if msg == nil || *msg == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, *msg)
}

// directoryIDString prints a directory id as Kafka prints a Uuid.
func directoryIDString(id [16]byte) string { return metadata.TopicID(id).String() }

// maxFollowerLag is kafka-metadata-quorum's MaxFollowerLag and
// MaxFollowerLagTimeMs: the furthest a voter is behind the leader's log
// end, and how long since the least recently caught-up voter was.
func maxFollowerLag(q quorumView, now time.Time) (lag, lagMs int64) {
	leaderLEO := int64(-1)
	for _, v := range q.p.CurrentVoters {
		if v.ReplicaID == q.p.LeaderID {
			leaderLEO = v.LogEndOffset
		}
	}
	for _, v := range q.p.CurrentVoters {
		if v.ReplicaID == q.p.LeaderID {
			continue
		}
		if v.LogEndOffset >= 0 && leaderLEO >= 0 {
			lag = max(lag, leaderLEO-v.LogEndOffset)
		}
		if v.LastCaughtUpTimestamp >= 0 {
			lagMs = max(lagMs, now.UnixMilli()-v.LastCaughtUpTimestamp)
		}
	}
	return lag, lagMs
}

func printQuorumStatus(out io.Writer, clusterID string, q quorumView, now time.Time) {
	lag, lagMs := maxFollowerLag(q, now)
	type voterJSON struct {
		ID          int32    `json:"id"`
		DirectoryID string   `json:"directoryId,omitempty"`
		Endpoints   []string `json:"endpoints,omitempty"`
	}
	list := func(states []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, withEndpoints bool) string {
		out := []voterJSON{}
		for _, st := range states {
			v := voterJSON{ID: st.ReplicaID}
			if st.ReplicaDirectoryID != [16]byte{} {
				v.DirectoryID = directoryIDString(st.ReplicaDirectoryID)
			}
			if withEndpoints {
				v.Endpoints = q.nodes[st.ReplicaID]
			}
			out = append(out, v)
		}
		b, _ := json.Marshal(out)
		return string(b)
	}
	fmt.Fprintf(out, "ClusterId:              %s\n", clusterID)
	fmt.Fprintf(out, "LeaderId:               %d\n", q.p.LeaderID)
	fmt.Fprintf(out, "LeaderEpoch:            %d\n", q.p.LeaderEpoch)
	fmt.Fprintf(out, "HighWatermark:          %d\n", q.p.HighWatermark)
	fmt.Fprintf(out, "MaxFollowerLag:         %d\n", lag)
	fmt.Fprintf(out, "MaxFollowerLagTimeMs:   %d\n", lagMs)
	fmt.Fprintf(out, "CurrentVoters:          %s\n", list(q.p.CurrentVoters, true))
	fmt.Fprintf(out, "CurrentObservers:       %s\n", list(q.p.Observers, false))
}

func printQuorumReplication(out io.Writer, q quorumView, now time.Time) {
	leaderLEO := int64(-1)
	for _, v := range q.p.CurrentVoters {
		if v.ReplicaID == q.p.LeaderID {
			leaderLEO = v.LogEndOffset
		}
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NodeId\tDirectoryId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus")
	row := func(st kmsg.DescribeQuorumResponseTopicPartitionReplicaState, status string) {
		lag := "-"
		if st.LogEndOffset >= 0 && leaderLEO >= 0 {
			lag = strconv.FormatInt(max(leaderLEO-st.LogEndOffset, 0), 10)
		}
		fetch, caught := st.LastFetchTimestamp, st.LastCaughtUpTimestamp
		if st.ReplicaID == q.p.LeaderID && status == "Leader" {
			// The leader is always caught up with itself.
			fetch, caught = now.UnixMilli(), now.UnixMilli()
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%d\t%s\n", st.ReplicaID, directoryIDString(st.ReplicaDirectoryID), st.LogEndOffset, lag, fetch, caught, status)
	}
	for _, v := range q.p.CurrentVoters {
		status := "Follower"
		if v.ReplicaID == q.p.LeaderID {
			status = "Leader"
		}
		row(v, status)
	}
	for _, o := range q.p.Observers {
		row(o, "Observer")
	}
	tw.Flush()
}

// newControllerSpec is the controller add-controller adds: from its own
// server.properties (--config, as kafka-metadata-quorum's --command-config
// names the new controller's), or from flags.
type newControllerSpec struct {
	id        int32
	dir       [16]byte
	listeners []config.Listener
}

func runQuorumAddController(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein cluster quorum add-controller", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", quorumChangeTimeout+10*time.Second, "give up on the cluster after this long")
	props := fs.String("config", "", "the new controller's server.properties: its node.id, controller listener and, from its first log.dirs entry's meta.properties, its directory id")
	id := fs.Int("controller-id", -1, "the new controller's node.id (instead of --config)")
	dir := fs.String("controller-directory-id", "", "the new controller's metadata directory id, as its meta.properties has it (instead of --config)")
	listener := fs.String("controller-listener", "", "the new controller's controller endpoints, NAME://host:port[,...] (instead of --config)")
	cl, ctx, done, err := quorumClient(ctx, fs, args, bootstrap, timeout)
	if err != nil {
		return err
	}
	defer done()
	spec, err := controllerSpec(*props, *id, *dir, *listener)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.TimeoutMillis = int32(quorumChangeTimeout / time.Millisecond)
	req.VoterID, req.VoterDirectoryID = spec.id, spec.dir
	for _, l := range spec.listeners {
		rl := kmsg.NewAddRaftVoterRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
		req.Listeners = append(req.Listeners, rl)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("add controller %d through %s: %w", spec.id, bootstrap, explainError(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("add controller %d: %w", spec.id, explainError(withMessage(err, resp.ErrorMessage)))
	}
	fmt.Fprintf(s.out, "Added controller %d with directory id %s as a voter\n", spec.id, directoryIDString(spec.dir))
	return nil
}

func runQuorumRemoveController(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("skein cluster quorum remove-controller", s)
	bootstrap := clusterFlag(fs)
	timeout := fs.Duration("timeout", adminTimeout, "give up on the cluster after this long")
	id := fs.Int("controller-id", -1, "the voter's node id")
	dir := fs.String("controller-directory-id", "", "the voter's directory id (skein cluster quorum describe shows it)")
	cl, ctx, done, err := quorumClient(ctx, fs, args, bootstrap, timeout)
	if err != nil {
		return err
	}
	defer done()
	if *id < 0 || *dir == "" {
		return errors.New("--controller-id and --controller-directory-id are required")
	}
	dirID, err := metadata.ParseTopicID(*dir)
	if err != nil {
		return fmt.Errorf("--controller-directory-id: %w", err)
	}
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = int32(*id), dirID
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("remove controller %d through %s: %w", *id, bootstrap, explainError(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("remove controller %d: %w", *id, explainError(withMessage(err, resp.ErrorMessage)))
	}
	fmt.Fprintf(s.out, "Removed controller %d with directory id %s from the voters\n", *id, *dir)
	return nil
}

// controllerSpec reads the new controller from its properties or flags.
func controllerSpec(propsPath string, id int, dir, listeners string) (newControllerSpec, error) {
	if propsPath != "" {
		if id >= 0 || dir != "" || listeners != "" {
			return newControllerSpec{}, errors.New("--config or --controller-id/--controller-directory-id/--controller-listener, not both")
		}
		return controllerFromProperties(propsPath)
	}
	if id < 0 || dir == "" || listeners == "" {
		return newControllerSpec{}, errors.New("give --config, or all of --controller-id, --controller-directory-id and --controller-listener")
	}
	dirID, err := metadata.ParseTopicID(dir)
	if err != nil {
		return newControllerSpec{}, fmt.Errorf("--controller-directory-id: %w", err)
	}
	ls, err := config.ParseListeners(listeners)
	if err != nil {
		return newControllerSpec{}, fmt.Errorf("--controller-listener: %w", err)
	}
	return newControllerSpec{id: int32(id), dir: dirID, listeners: ls}, nil
}

// controllerFromProperties reads node.id and the controller listener from
// a server.properties, and the directory id from the meta.properties the
// node wrote into its first log directory on its first start.
func controllerFromProperties(path string) (newControllerSpec, error) {
	b, err := config.Load(path, nil, nil)
	if err != nil {
		return newControllerSpec{}, err
	}
	l, ok := b.ControllerListener()
	if !ok {
		return newControllerSpec{}, fmt.Errorf("%s: no controller listener: is it a controller?", path)
	}
	// The endpoint the controller records for itself: its entry in
	// advertised.listeners wins, as the node's own UpdateRaftVoter would
	// make it anyway.
	if i := slices.IndexFunc(b.AdvertisedListeners, func(a config.Listener) bool { return a.Name == l.Name }); i >= 0 {
		l = b.AdvertisedListeners[i]
	}
	if l.Port == 0 || l.Host == "" {
		return newControllerSpec{}, fmt.Errorf("%s: controller listener %s needs a host and a port others can dial", path, l)
	}
	metaPath := filepath.Join(b.LogDirs[0], "meta.properties")
	meta, err := os.ReadFile(metaPath)
	if err != nil {
		return newControllerSpec{}, fmt.Errorf("%w (start the new controller once, so it writes its directory id)", err)
	}
	for line := range strings.Lines(string(meta)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "directory.id="); ok {
			dirID, err := metadata.ParseTopicID(v)
			if err != nil {
				return newControllerSpec{}, fmt.Errorf("%s: %w", metaPath, err)
			}
			return newControllerSpec{id: b.NodeID, dir: dirID, listeners: []config.Listener{l}}, nil
		}
	}
	return newControllerSpec{}, fmt.Errorf("%s has no directory.id", metaPath)
}
