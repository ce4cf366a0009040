package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errTimeout is what a caller sees when no answer came in time: the
// request or the answer was lost, the far end is down, partitioned or
// paused.
var errTimeout = errors.New("sim: request timed out")

// call sends a Kafka request from endpoint from to node to and calls cb
// exactly once, with the answer or errTimeout. Requests and answers cross
// the network encoded, as on a socket, so no buffer is ever shared between
// two simulated processes.
func (c *Cluster) call(from, to int32, req kmsg.Request, timeout time.Duration, cb func(kmsg.Response, error)) {
	key, version := req.Key(), req.GetVersion()
	body := req.AppendTo(nil)
	done := false
	finish := func(r kmsg.Response, err error) {
		if done {
			return
		}
		done = true
		cb(r, err)
	}
	c.s.after(timeout, func() { finish(nil, errTimeout) })
	target := c.nodes[to]
	c.net.send(from, to, func() {
		target.deliver(func() {
			decoded := kmsg.RequestForKey(key)
			decoded.SetVersion(version)
			if err := decoded.ReadFrom(body); err != nil {
				panic(fmt.Sprintf("sim: decode %s: %v", kmsg.NameForKey(key), err))
			}
			if oc, ok := decoded.(*kmsg.OffsetCommitRequest); ok {
				c.check.groupCommitDelivered(oc)
			}
			target.handle(from, decoded, func(resp kmsg.Response) {
				if resp == nil {
					return // acks=0: nothing goes back
				}
				rbody := resp.AppendTo(nil)
				c.net.send(to, from, func() {
					answer := decoded.ResponseKind()
					answer.SetVersion(version)
					if err := answer.ReadFrom(rbody); err != nil {
						panic(fmt.Sprintf("sim: decode %s response: %v", kmsg.NameForKey(key), err))
					}
					finish(answer, nil)
				})
			})
		})
	})
}
