package repl

import "sync"

// applyInbox is the applier's queue of raft's MsgStorageApplys and
// barriers. Handing work to it never waits: the raft loop goes on
// persisting, sending and acknowledging while the applier works through
// a long entry (an expiry batch of thousands of deletions), so a member
// applying one does not hold the set's commits. What may wait in it is
// bounded by raft (maxApplying): raft hands out no more committed
// entries once that many bytes are unapplied, the last one handed out
// crossing it at most.
type applyInbox struct {
	mu     sync.Mutex
	reqs   []applyReq
	closed bool
	ready  chan struct{} // one token: something was queued, or the inbox closed
}

func newApplyInbox() *applyInbox {
	return &applyInbox{ready: make(chan struct{}, 1)}
}

// push queues r behind everything queued before it.
func (q *applyInbox) push(r applyReq) {
	q.mu.Lock()
	q.reqs = append(q.reqs, r)
	q.mu.Unlock()
	q.signal()
}

// close ends the inbox once its senders have stopped; what is queued is
// still taken.
func (q *applyInbox) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *applyInbox) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take waits for queued requests and moves them all into buf, in order;
// false once the inbox is closed and empty.
func (q *applyInbox) take(buf []applyReq) ([]applyReq, bool) {
	for {
		q.mu.Lock()
		if len(q.reqs) > 0 {
			buf = append(buf, q.reqs...)
			clear(q.reqs)
			q.reqs = q.reqs[:0]
			q.mu.Unlock()
			return buf, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return buf, false
		}
		<-q.ready
	}
}
