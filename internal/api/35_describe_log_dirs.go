package api

// DescribeLogDirs: versions 0-4. Each broker describes its own log
// directories (clients ask every broker): per directory the partitions it
// holds with their size on disk and offset lag (the high watermark minus
// the log end, 0 for a leader or a caught-up follower), an offline
// directory answered with KAFKA_STORAGE_ERROR, and v4+ the volume's total
// and usable bytes. A null topic list means every partition; v3+ has a
// top-level error code. A replica being moved to another directory
// (AlterReplicaLogDirs) is listed there too, with IsFuture set. Skein has
// no cordoned directories (v5, KIP-1066), so v5 is not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
)

func init() {
	register(Spec{Key: 35, MinVersion: 0, MaxVersion: 4, Handle: handleDescribeLogDirs})
}

// LogDirDescription is one log directory of this broker.
type LogDirDescription struct {
	Dir         string
	Err         error // KAFKA_STORAGE_ERROR when the directory is offline
	TotalBytes  int64 // of the volume; -1 if unknown
	UsableBytes int64 // of the volume; -1 if unknown
	Partitions  []LogDirPartition
}

// LogDirPartition is one partition replica in a log directory.
type LogDirPartition struct {
	Topic     string
	Partition int32
	Size      int64
	OffsetLag int64
	// IsFuture: the future log of a move to this directory under way
	// (AlterReplicaLogDirs); OffsetLag is then how far its copy is behind.
	IsFuture bool
}

func handleDescribeLogDirs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !s.allowedCluster(r, authz.OpDescribe) {
		// v3+ says so at the top; earlier versions with no directories.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(resp)
		return
	}
	var wanted map[string]map[int32]bool // nil: every partition
	if req.Topics != nil {
		wanted = make(map[string]map[int32]bool, len(req.Topics))
		for _, t := range req.Topics {
			if wanted[t.Topic] == nil {
				wanted[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				wanted[t.Topic][p] = true
			}
		}
	}
	for _, d := range s.Backend.DescribeLogDirs() {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir, rd.ErrorCode = d.Dir, ErrorCode(d.Err)
		rd.TotalBytes, rd.UsableBytes = d.TotalBytes, d.UsableBytes
		topics := map[string]int{}
		for _, p := range d.Partitions {
			if wanted != nil && !wanted[p.Topic][p.Partition] {
				continue
			}
			ti, ok := topics[p.Topic]
			if !ok {
				ti = len(rd.Topics)
				topics[p.Topic] = ti
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = p.Topic
				rd.Topics = append(rd.Topics, t)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size, rp.OffsetLag, rp.IsFuture = p.Partition, p.Size, p.OffsetLag, p.IsFuture
			rd.Topics[ti].Partitions = append(rd.Topics[ti].Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	respond(resp)
}
