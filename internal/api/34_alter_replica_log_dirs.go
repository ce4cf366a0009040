package api

// AlterReplicaLogDirs: versions 0-2. Moves this broker's replicas of the
// named partitions to another of its log directories (KIP-113; clients
// send each broker its own part, as kafka-reassign-partitions and kadm
// do): the backend starts a move that copies the replica into a future
// log in the destination and swaps it in while the partition stays
// online (internal/logmove decides, internal/node runs it). Each
// partition is answered on its own: LOG_DIR_NOT_FOUND for a directory
// that is not one of this broker's log.dirs, KAFKA_STORAGE_ERROR for an
// offline one, UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does
// not have, REPLICA_NOT_AVAILABLE for one this broker does not host yet
// (the directory is remembered for when it is created, as Kafka does).
// The request needs ALTER on the cluster.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skein-log/skein/internal/authz"
	"github.com/skein-log/skein/internal/logmove"
)

func init() {
	register(Spec{Key: 34, MinVersion: 0, MaxVersion: 2, Handle: handleAlterReplicaLogDirs})
}

// maxAlterLogDirPartitions bounds the partitions one request may name.
const maxAlterLogDirPartitions = 10_000

func handleAlterReplicaLogDirs(s *Server, r *Request, respond Respond) {
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	allowed := s.allowedCluster(r, authz.OpAlter)
	topics := map[string]int{}
	n := 0
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			ti, ok := topics[t.Topic]
			if !ok {
				ti = len(resp.Topics)
				topics[t.Topic] = ti
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = p
				n++
				switch {
				case !allowed:
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				case n > maxAlterLogDirPartitions:
					rp.ErrorCode = kerr.PolicyViolation.Code
				default:
					rp.ErrorCode = ErrorCode(s.Backend.AlterReplicaLogDir(t.Topic, p, d.Dir))
				}
				resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
			}
		}
	}
	respond(resp)
}

// LogMoveError is the partition's error for a refused logmove.Decide
// outcome (nil when it was accepted), for every backend alike.
func LogMoveError(o logmove.Outcome, name, dir string, broker int32) error {
	switch o.Err {
	case logmove.ErrNone:
		return nil
	case logmove.ErrLogDirNotFound:
		return fmt.Errorf("%w: %s is not a log directory of broker %d", kerr.LogDirNotFound, dir, broker)
	case logmove.ErrStorage:
		return fmt.Errorf("%w: %s: log directory offline", kerr.KafkaStorageError, name)
	case logmove.ErrUnknownTopicOrPartition:
		return fmt.Errorf("%w: %s", kerr.UnknownTopicOrPartition, name)
	case logmove.ErrReplicaNotAvailable:
		return fmt.Errorf("%w: broker %d does not host %s; it will be created in %s", kerr.ReplicaNotAvailable, broker, name, o.Dir)
	}
	return fmt.Errorf("%w: %s: unknown outcome %d", kerr.UnknownServerError, name, o.Err)
}
