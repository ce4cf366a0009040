package fetchsession

import "github.com/twmb/franz-go/pkg/kmsg"

// FillRequest writes a Builder's Next into a Fetch request that names
// topics (v7-v12): the session id and epoch, the partitions to send and
// the forgotten ones, grouped by topic in the order they come.
func FillRequest(req *kmsg.FetchRequest, n Next) {
	req.SessionID, req.SessionEpoch = n.SessionID, n.Epoch
	topics := map[string]int{}
	for _, p := range n.Send {
		ti, ok := topics[p.Name]
		if !ok {
			ti = len(req.Topics)
			topics[p.Name] = ti
			t := kmsg.NewFetchRequestTopic()
			t.Topic = p.Name
			req.Topics = append(req.Topics, t)
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.CurrentLeaderEpoch, fp.FetchOffset = p.Partition, p.CurrentLeaderEpoch, p.FetchOffset
		fp.LogStartOffset, fp.PartitionMaxBytes, fp.LastFetchedEpoch = p.LogStartOffset, p.MaxBytes, p.LastFetchedEpoch
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, fp)
	}
	forgotten := map[string]int{}
	for _, k := range n.Forget {
		fi, ok := forgotten[k.Name]
		if !ok {
			fi = len(req.ForgottenTopics)
			forgotten[k.Name] = fi
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = k.Name
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		req.ForgottenTopics[fi].Partitions = append(req.ForgottenTopics[fi].Partitions, k.Partition)
	}
}
