package vfs

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring ABI this file uses (include/uapi/linux/io_uring.h, the
// io_uring_setup(2), io_uring_enter(2) and io_uring_register(2) pages).
const (
	uringOffSQRing = 0
	uringOffCQRing = 0x8000000
	uringOffSQEs   = 0x10000000

	uringFeatSingleMmap = 1 << 0

	uringOpNop   = 0
	uringOpFsync = 3

	uringFsyncDatasync = 1 << 0

	uringEnterGetEvents = 1 << 0

	uringRegisterEventfd = 4

	uringSQESize = 64
	uringCQESize = 16

	// uringEntries is the submission queue's size. Submissions are made
	// one at a time under the ring's lock and the kernel takes each one
	// in the io_uring_enter call that submits it (no SQPOLL thread), so
	// the queue never holds more than one entry; the completion queue
	// (twice as large) bounds the fsyncs in flight.
	uringEntries = 32
)

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries    uint32
	cqEntries    uint32
	flags        uint32
	sqThreadCPU  uint32
	sqThreadIdle uint32
	features     uint32
	wqFd         uint32
	resv         [3]uint32
	sqOff        struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// uringSQE is struct io_uring_sqe, with only the fields an fsync or a
// nop sets named.
type uringSQE struct {
	opcode     uint8
	flags      uint8
	ioprio     uint16
	fd         int32
	off        uint64
	addr       uint64
	len        uint32
	opFlags    uint32 // fsync_flags for IORING_OP_FSYNC
	userData   uint64
	bufIndex   uint16
	personal   uint16
	spliceFdIn int32
	addr3      uint64
	pad2       uint64
}

// uringCQE is struct io_uring_cqe (without the big-CQE extension).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// The ABI's sizes; a mistake here would corrupt the rings.
var (
	_ [unsafe.Sizeof(uringParams{}) - 120]byte
	_ [120 - unsafe.Sizeof(uringParams{})]byte
	_ [unsafe.Sizeof(uringSQE{}) - uringSQESize]byte
	_ [uringSQESize - unsafe.Sizeof(uringSQE{})]byte
	_ [unsafe.Sizeof(uringCQE{}) - uringCQESize]byte
	_ [uringCQESize - unsafe.Sizeof(uringCQE{})]byte
)

// uringSetup is io_uring_setup(2); tests replace it to make the ring
// unavailable as a kernel without io_uring, a seccomp filter (Docker's
// default profile answers EPERM) or kernel.io_uring_disabled would.
var uringSetup = func(entries uint32, p *uringParams) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func uringEnter(fd int, toSubmit, minComplete, flags uint32) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), 0, 0)
	if errno != 0 {
		return int(n), errno
	}
	return int(n), nil
}

// FsyncRing submits fdatasync(2) through an io_uring instead of calling
// it: the kernel runs the fsync on its own worker thread, and the
// goroutine waiting for it parks as on a socket (the completion is
// signalled on an eventfd read through the runtime's netpoller). A
// goroutine blocked in fdatasync holds its thread and, until the
// runtime's sysmon takes it back after 20 µs or more, its P, so that
// whatever the append readied waits behind the disk.
//
// One ring serves any number of goroutines: submissions take a lock,
// completions are read by one goroutine and handed to each waiter by the
// user_data its submission carried. After Close, or if a submission
// fails, Datasync calls fdatasync(2) itself: the durability is the same
// either way, only the waiting differs.
type FsyncRing struct {
	fd     int
	sqRing []byte
	cqRing []byte // is sqRing if single
	single bool   // IORING_FEAT_SINGLE_MMAP: one mapping for both rings
	sqes   []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        unsafe.Pointer
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           unsafe.Pointer

	// event is the eventfd the kernel signals at each completion,
	// non-blocking so that its reads park in the netpoller.
	event *os.File
	// slots bounds the submissions in flight to the completion queue's
	// size, so that the kernel never has to hold completions back.
	slots chan struct{}

	mu       sync.Mutex
	closed   bool                  // guarded by mu
	nextID   uint64                // guarded by mu
	waiters  map[uint64]chan int32 // guarded by mu
	inflight sync.WaitGroup        // one per waiter
	reaped   chan struct{}         // closed when the reaper returns
	fallback atomic.Uint64         // submissions that fell back to fdatasync(2)
}

// OpenFsyncRing sets up a ring for fdatasync. It fails, and the caller
// keeps calling fdatasync(2), where io_uring is missing (ENOSYS), refused
// (EPERM: seccomp, kernel.io_uring_disabled) or short of memory; the
// ring is checked with one no-op round trip, eventfd signal included,
// before it is returned.
func OpenFsyncRing() (*FsyncRing, error) {
	var p uringParams
	fd, err := uringSetup(uringEntries, &p)
	if err != nil {
		return nil, fmt.Errorf("io_uring_setup: %w", err)
	}
	r := &FsyncRing{fd: fd, waiters: map[uint64]chan int32{}, reaped: make(chan struct{})}
	if err := r.mapRings(&p); err != nil {
		r.unmap()
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		r.unmap()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), uringRegisterEventfd, uintptr(unsafe.Pointer(&efd)), 1, 0, 0); errno != 0 {
		unix.Close(efd)
		r.unmap()
		return nil, fmt.Errorf("io_uring_register eventfd: %w", errno)
	}
	if err := r.selfTest(efd); err != nil {
		unix.Close(efd)
		r.unmap()
		return nil, err
	}
	// A non-blocking descriptor: os.NewFile registers it with the
	// netpoller, so a Read parks the goroutine instead of a thread.
	r.event = os.NewFile(uintptr(efd), "io_uring-eventfd")
	r.slots = make(chan struct{}, p.cqEntries)
	go r.reap()
	return r, nil
}

func (r *FsyncRing) mapRings(p *uringParams) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uringCQESize)
	r.single = p.features&uringFeatSingleMmap != 0
	if r.single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqRing, err = unix.Mmap(r.fd, uringOffSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap io_uring submission ring: %w", err)
	}
	if r.single {
		r.cqRing = r.sqRing
	} else if r.cqRing, err = unix.Mmap(r.fd, uringOffCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap io_uring completion ring: %w", err)
	}
	if r.sqes, err = unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries)*uringSQESize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fmt.Errorf("mmap io_uring submission entries: %w", err)
	}
	at := func(ring []byte, off uint32) unsafe.Pointer { return unsafe.Pointer(&ring[off]) }
	r.sqHead = (*uint32)(at(r.sqRing, p.sqOff.head))
	r.sqTail = (*uint32)(at(r.sqRing, p.sqOff.tail))
	r.sqMask = *(*uint32)(at(r.sqRing, p.sqOff.ringMask))
	r.sqArray = at(r.sqRing, p.sqOff.array)
	r.cqHead = (*uint32)(at(r.cqRing, p.cqOff.head))
	r.cqTail = (*uint32)(at(r.cqRing, p.cqOff.tail))
	r.cqMask = *(*uint32)(at(r.cqRing, p.cqOff.ringMask))
	r.cqes = at(r.cqRing, p.cqOff.cqes)
	return nil
}

// unmap releases the rings and the ring's descriptor.
func (r *FsyncRing) unmap() {
	if r.sqes != nil {
		unix.Munmap(r.sqes)
	}
	if r.cqRing != nil && !r.single {
		unix.Munmap(r.cqRing)
	}
	if r.sqRing != nil {
		unix.Munmap(r.sqRing)
	}
	r.sqes, r.cqRing, r.sqRing = nil, nil, nil
	unix.Close(r.fd)
}

// selfTest makes one no-op round trip and checks that it signalled the
// eventfd: a ring that cannot wake the reaper would leave every fsync
// waiting forever.
func (r *FsyncRing) selfTest(efd int) error {
	r.push(uringSQE{opcode: uringOpNop})
	for {
		pending := atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead)
		_, err := uringEnter(r.fd, pending, 1, uringEnterGetEvents)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("io_uring_enter: %w", err)
		}
		break
	}
	head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
	if head == tail {
		return errors.New("io_uring: no completion for a no-op")
	}
	if res := r.cqe(head).res; res < 0 {
		return fmt.Errorf("io_uring no-op: %w", syscall.Errno(-res))
	}
	atomic.StoreUint32(r.cqHead, tail)
	var buf [8]byte
	if _, err := unix.Read(efd, buf[:]); err != nil {
		return fmt.Errorf("io_uring: the eventfd was not signalled: %w", err)
	}
	return nil
}

// push writes an entry at the submission queue's tail and publishes it.
// Callers hold mu (or own the ring, as selfTest does); the kernel reads
// the entry only after the tail's store.
func (r *FsyncRing) push(e uringSQE) uint32 {
	tail := *r.sqTail // only this side writes the tail
	idx := tail & r.sqMask
	*(*uringSQE)(unsafe.Add(unsafe.Pointer(&r.sqes[0]), uintptr(idx)*uringSQESize)) = e
	*(*uint32)(unsafe.Add(r.sqArray, uintptr(idx)*4)) = idx
	// sync/atomic's store is at least a release: the entry and the array
	// slot are visible to the kernel before the new tail is.
	atomic.StoreUint32(r.sqTail, tail+1)
	return tail
}

func (r *FsyncRing) cqe(head uint32) *uringCQE {
	return (*uringCQE)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*uringCQESize))
}

// submit queues an fdatasync of fd and returns the channel its result
// arrives on; ok is false when the ring is closed or the kernel refused
// the submission, and the caller calls fdatasync(2) itself.
func (r *FsyncRing) submit(fd int) (ch chan int32, ok bool) {
	r.slots <- struct{}{}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		<-r.slots
		return nil, false
	}
	r.nextID++
	id := r.nextID
	tail := r.push(uringSQE{opcode: uringOpFsync, fd: int32(fd), opFlags: uringFsyncDatasync, userData: id})
	ch = make(chan int32, 1)
	r.waiters[id] = ch
	r.inflight.Add(1)
	for {
		// Submit without waiting: the kernel takes the entry (and the
		// file's reference) now and runs the fsync on its worker.
		n, err := uringEnter(r.fd, 1, 0, 0)
		if err == nil && n == 1 {
			return ch, true
		}
		if errors.Is(err, syscall.EINTR) && atomic.LoadUint32(r.sqHead) == tail {
			continue
		}
		if atomic.LoadUint32(r.sqHead) != tail {
			// Taken despite the error: its completion will come.
			return ch, true
		}
		// Not taken (EAGAIN, EBUSY, ...): withdraw it, so that a later
		// submission does not carry it along, and fall back.
		atomic.StoreUint32(r.sqTail, tail)
		delete(r.waiters, id)
		r.inflight.Done()
		<-r.slots
		r.fallback.Add(1)
		return nil, false
	}
}

// reap hands each completion to its waiter, until Close closes the
// eventfd.
func (r *FsyncRing) reap() {
	defer close(r.reaped)
	var buf [8]byte
	for {
		if _, err := r.event.Read(buf[:]); err != nil {
			// Only Close closes the eventfd, after the last waiter.
			return
		}
		// The kernel writes a completion, then moves the tail: the tail's
		// load (sync/atomic, at least an acquire) comes first.
		head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
		type done struct {
			id  uint64
			res int32
		}
		var got []done
		for ; head != tail; head++ {
			c := r.cqe(head)
			got = append(got, done{c.userData, c.res})
		}
		// The entries are copied: release them to the kernel.
		atomic.StoreUint32(r.cqHead, head)
		for _, d := range got {
			r.mu.Lock()
			ch, ok := r.waiters[d.id]
			delete(r.waiters, d.id)
			r.mu.Unlock()
			if !ok {
				continue
			}
			ch <- d.res
			<-r.slots
			r.inflight.Done()
		}
	}
}

// datasync runs fdatasync of fd through the ring; ok is false when the
// caller must call fdatasync(2) itself. It is called with fd held (inside
// RawConn.Control), so that the descriptor cannot be closed and reused
// before the kernel has taken the file.
func (r *FsyncRing) datasync(fd int) (ok bool, err error) {
	for {
		ch, ok := r.submit(fd)
		if !ok {
			return false, nil
		}
		res := <-ch
		if res == -int32(syscall.EINTR) {
			continue // retried, as fdatasync(2) is on EINTR
		}
		if res < 0 {
			return true, syscall.Errno(-res)
		}
		return true, nil
	}
}

// Fallbacks is how many fsyncs the kernel refused to take on the ring,
// each then run as fdatasync(2).
func (r *FsyncRing) Fallbacks() uint64 { return r.fallback.Load() }

// Close waits for the fsyncs in flight, then releases the ring. Later
// Datasync calls on files of its FS call fdatasync(2). It is safe to
// call more than once.
func (r *FsyncRing) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.reaped
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.inflight.Wait()
	err := r.event.Close()
	<-r.reaped
	r.unmap()
	return err
}
