package node

import "sync"

// flushWorkers is how many fsyncs may run at once. fsync of different
// files proceeds in parallel on most devices; a few workers keep one slow
// partition from delaying the others without flooding the disk.
const flushWorkers = 4

// flusher group-commits fsyncs. A partition that appended data is queued
// once; while its fsync runs, further appends re-queue it, so one fsync
// covers every batch that arrived before it started and no batch waits for
// more than two.
type flusher struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*partition
	queued  map[*partition]bool
	stopped bool
	wg      sync.WaitGroup
}

func newFlusher() *flusher {
	f := &flusher{queued: map[*partition]bool{}}
	f.cond = sync.NewCond(&f.mu)
	for i := 0; i < flushWorkers; i++ {
		f.wg.Add(1)
		go f.work()
	}
	return f
}

// schedule asks for an fsync of p soon.
func (f *flusher) schedule(p *partition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped || f.queued[p] {
		return
	}
	f.queued[p] = true
	f.queue = append(f.queue, p)
	f.cond.Signal()
}

func (f *flusher) work() {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		for len(f.queue) == 0 && !f.stopped {
			f.cond.Wait()
		}
		if len(f.queue) == 0 && f.stopped {
			f.mu.Unlock()
			return
		}
		p := f.queue[0]
		f.queue[0] = nil
		f.queue = f.queue[1:]
		// Unmark before syncing: an append that lands during the fsync
		// must queue the partition again.
		delete(f.queued, p)
		f.mu.Unlock()
		p.sync()
	}
}

// stop finishes queued fsyncs and ends the workers.
func (f *flusher) stop() {
	f.mu.Lock()
	f.stopped = true
	f.cond.Broadcast()
	f.mu.Unlock()
	f.wg.Wait()
}
