package expiryflight

import (
	"errors"
	"testing"
)

// TestSetFollowsBatchesUntilApplied: a document is in flight from its
// batch's Add to its Finish; Pending names each batch once; Wait
// returns the batch's outcome.
func TestSetFollowsBatchesUntilApplied(t *testing.T) {
	var s Set
	if s.Pending() != nil || s.BatchOf([]byte("a")) != nil || s.Len() != 0 {
		t.Fatal("an empty set has something in flight")
	}
	one, two := NewBatch(), NewBatch()
	s.Add([][]byte{[]byte("a"), []byte("b")}, one)
	s.Add([][]byte{[]byte("c")}, two)
	if s.Len() != 3 || s.BatchOf([]byte("b")) != one || s.BatchOf([]byte("c")) != two {
		t.Fatalf("after two adds: %d in flight, b in %p, c in %p", s.Len(), s.BatchOf([]byte("b")), s.BatchOf([]byte("c")))
	}
	if p := s.Pending(); len(p) != 2 {
		t.Fatalf("pending %d batches, want 2", len(p))
	}
	failed := errors.New("lost its primacy")
	s.Finish([][]byte{[]byte("a"), []byte("b")}, one, failed)
	if err := one.Wait(); !errors.Is(err, failed) {
		t.Fatalf("wait: %v, want the batch's failure", err)
	}
	if s.BatchOf([]byte("a")) != nil || s.Len() != 1 {
		t.Fatalf("after the first batch: %d in flight", s.Len())
	}
	select {
	case <-two.Done():
		t.Fatal("the second batch is done before its finish")
	default:
	}
	s.Finish([][]byte{[]byte("c")}, two, nil)
	if err := two.Wait(); err != nil || s.Pending() != nil {
		t.Fatalf("after both: wait %v, pending %v", err, s.Pending())
	}
}
