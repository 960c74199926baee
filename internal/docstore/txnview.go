package docstore

import (
	"bytes"
	"slices"

	"github.com/mayflydb/mayfly/internal/storage"
)

// A transaction's view (docs/design/0015): its snapshot with its own
// writes laid over it. pebble's indexed batch overlays the database's
// current state, not a snapshot, so the merge is done here.

// writeSet is a transaction's buffered writes: key → value, or a
// tombstone, kept in key order.
type writeSet struct {
	keys [][]byte // sorted
	ops  map[string]wsOp
}

type wsOp struct {
	value   []byte
	deleted bool
}

func newWriteSet() *writeSet { return &writeSet{ops: map[string]wsOp{}} }

func (w *writeSet) put(key []byte, op wsOp) {
	if _, ok := w.ops[string(key)]; !ok {
		k := slices.Clone(key)
		i, _ := slices.BinarySearchFunc(w.keys, k, bytes.Compare)
		w.keys = slices.Insert(w.keys, i, k)
	}
	w.ops[string(key)] = op
}

// firstAtOrAfter is the index of the first key ≥ k.
func (w *writeSet) firstAtOrAfter(k []byte) int {
	i, _ := slices.BinarySearchFunc(w.keys, k, bytes.Compare)
	return i
}

// replay writes the set into b, in key order.
func (w *writeSet) replay(b storage.Batch) error {
	for _, k := range w.keys {
		op := w.ops[string(k)]
		var err error
		if op.deleted {
			err = b.Delete(k)
		} else {
			err = b.Set(k, op.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// overlay reads base with ws laid over it: a value in ws wins, a
// tombstone hides the base's.
type overlay struct {
	base storage.Reader
	ws   *writeSet
}

// Get implements storage.Reader.
func (o overlay) Get(key []byte) ([]byte, error) {
	if op, ok := o.ws.ops[string(key)]; ok {
		if op.deleted {
			return nil, storage.ErrNotFound
		}
		return slices.Clone(op.value), nil
	}
	return o.base.Get(key)
}

// NewIter implements storage.Reader.
func (o overlay) NewIter(lower, upper []byte) (storage.Iterator, error) {
	it, err := o.base.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	return &overlayIter{base: it, ws: o.ws, lo: lower, hi: upper}, nil
}

// overlayIter merges the base iterator with the write set's keys in its
// bounds. Forward, the base stands on the first key ≥ the position and
// wsAt on the first write-set key ≥ it; backward, on the last ≤ it.
type overlayIter struct {
	base     storage.Iterator
	ws       *writeSet
	lo, hi   []byte
	baseOK   bool
	wsAt     int
	reverse  bool
	key, val []byte
	valid    bool
}

func (o *overlayIter) inBounds(k []byte) bool {
	return (o.lo == nil || bytes.Compare(k, o.lo) >= 0) && (o.hi == nil || bytes.Compare(k, o.hi) < 0)
}

func (o *overlayIter) wsKey() ([]byte, bool) {
	if o.wsAt < 0 || o.wsAt >= len(o.ws.keys) {
		return nil, false
	}
	k := o.ws.keys[o.wsAt]
	return k, o.inBounds(k)
}

// First implements storage.Iterator.
func (o *overlayIter) First() bool {
	o.reverse = false
	o.baseOK = o.base.First()
	o.wsAt = 0
	if o.lo != nil {
		o.wsAt = o.ws.firstAtOrAfter(o.lo)
	}
	return o.settle()
}

// Last implements storage.Iterator.
func (o *overlayIter) Last() bool {
	o.reverse = true
	o.baseOK = o.base.Last()
	o.wsAt = len(o.ws.keys) - 1
	if o.hi != nil {
		o.wsAt = o.ws.firstAtOrAfter(o.hi) - 1
	}
	return o.settle()
}

// SeekGE implements storage.Iterator.
func (o *overlayIter) SeekGE(key []byte) bool {
	o.reverse = false
	o.baseOK = o.base.SeekGE(key)
	if o.lo != nil && bytes.Compare(key, o.lo) < 0 {
		key = o.lo
	}
	o.wsAt = o.ws.firstAtOrAfter(key)
	return o.settle()
}

// SeekLT implements storage.Iterator.
func (o *overlayIter) SeekLT(key []byte) bool {
	o.reverse = true
	o.baseOK = o.base.SeekLT(key)
	if o.hi != nil && bytes.Compare(key, o.hi) > 0 {
		key = o.hi
	}
	o.wsAt = o.ws.firstAtOrAfter(key) - 1
	return o.settle()
}

// Next implements storage.Iterator.
func (o *overlayIter) Next() bool {
	if !o.valid {
		return false
	}
	if o.reverse {
		return o.SeekGE(append(slices.Clone(o.key), 0))
	}
	o.step()
	return o.settle()
}

// Prev implements storage.Iterator.
func (o *overlayIter) Prev() bool {
	if !o.valid {
		return false
	}
	if !o.reverse {
		return o.SeekLT(slices.Clone(o.key))
	}
	o.step()
	return o.settle()
}

// step moves past the current key on whichever side holds it (both
// when they hold the same key).
func (o *overlayIter) step() {
	if wk, ok := o.wsKey(); ok && bytes.Equal(wk, o.key) {
		o.wsAt += o.delta()
	}
	if o.baseOK && bytes.Equal(o.base.Key(), o.key) {
		if o.reverse {
			o.baseOK = o.base.Prev()
		} else {
			o.baseOK = o.base.Next()
		}
	}
}

func (o *overlayIter) delta() int {
	if o.reverse {
		return -1
	}
	return 1
}

// settle makes the nearer of the two sides current, skipping the write
// set's tombstones and the base keys they hide.
func (o *overlayIter) settle() bool {
	for {
		wk, wok := o.wsKey()
		if !wok && !o.baseOK {
			o.valid = false
			return false
		}
		if !wok || (o.baseOK && o.before(o.base.Key(), wk)) {
			o.key, o.val, o.valid = o.base.Key(), o.base.Value(), true
			return true
		}
		op := o.ws.ops[string(wk)]
		o.key, o.valid = wk, true
		if !op.deleted {
			o.val = op.value
			return true
		}
		o.step()
	}
}

// before reports whether a comes before b in the iterator's direction.
func (o *overlayIter) before(a, b []byte) bool {
	c := bytes.Compare(a, b)
	if o.reverse {
		return c > 0
	}
	return c < 0
}

// Valid implements storage.Iterator.
func (o *overlayIter) Valid() bool { return o.valid }

// Key implements storage.Iterator.
func (o *overlayIter) Key() []byte { return o.key }

// Value implements storage.Iterator.
func (o *overlayIter) Value() []byte { return o.val }

// Error implements storage.Iterator.
func (o *overlayIter) Error() error { return o.base.Error() }

// Close implements storage.Iterator.
func (o *overlayIter) Close() error { return o.base.Close() }
