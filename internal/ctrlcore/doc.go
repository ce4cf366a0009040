// Package ctrlcore is the active controller's runtime as a pure core: the
// decision queue (decide against the latest image, check the records
// apply, propose them as one metadata entry, answer once it is applied)
// and broker sessions (heartbeats, session expiry, fencing, unfencing and
// controlled shutdown).
//
// It holds no lock, reads no clock and starts no goroutine or timer:
// every event carries the time and the latest applied image, and what to
// do comes back as a Ready (an entry to propose, answers to complete,
// things to log). internal/node drives it under a mutex with a ticker and
// the quorum's blocking Propose on a goroutine; internal/sim drives it on
// its event queue. Backend adapts it to api.ControllerBackend for both, so
// the controller-only handlers of internal/api run unchanged in each.
//
// The decisions themselves come from internal/controller. What this
// package adds is when and against which image they are taken: every
// decision, a heartbeat's unfencing as much as a session's expiry, runs at
// its turn in one queue, against the image that holds every earlier
// decision's outcome.
package ctrlcore
