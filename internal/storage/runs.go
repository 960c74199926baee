package storage

import "bytes"

// RunDeleter is a Batch that deletes a run of keys, every key storage
// holds from the run's first to its last, as one range deletion. It knows
// the keys, so what it keeps of them elsewhere (a cache) drops each one
// as a point deletion would. expiredAt, when not 0, is an instant (Unix
// ns) by which every key's value had expired: such a deletion needs no
// lookup of the value, as with ExpiredDeleter.
type RunDeleter interface {
	DeleteRun(keys [][]byte, expiredAt int64) error
}

// RunKeys are the keys DeleteRuns deletes, ascending and distinct.
type RunKeys struct {
	Keys [][]byte
	// ExpiredAt is when key i's value expired (Unix ns; 0: not known).
	ExpiredAt func(i int) int64
	// Consecutive says the caller read the keys one step of an iterator
	// apart, each right after the one before: storage holds nothing
	// between any two, so they are one run without reading them again.
	Consecutive bool
}

// DeleteRuns deletes ks's keys into b. Each run of at least minRun of
// them that holds every key storage has between the run's first and
// last, as it reads them (a range no narrower than the keys'), goes as
// one range deletion (b.DeleteRun, at the latest of its keys' ExpiredAt,
// or 0 when one is not known); the others go one by one through del(i).
// A range deletion costs the engine one record where the run's point
// deletions cost one each in its memtable, its log, its flushes and
// every compaction that carries them down. Only a caller whose keys no
// other writer can join before b commits may use it: a key written
// inside a run meanwhile would go with the run.
func DeleteRuns(it Iterator, b RunDeleter, ks RunKeys, minRun int, del func(i int) error) error {
	keys := ks.Keys
	flush := func(from, to int) error {
		if to-from < minRun {
			return deleteEach(from, to, del)
		}
		return b.DeleteRun(keys[from:to], runExpiry(from, to, ks.ExpiredAt))
	}
	if len(keys) < minRun || ks.Consecutive {
		return flush(0, len(keys))
	}
	start := 0
	it.SeekGE(keys[0])
	for i, k := range keys {
		if it.Valid() && bytes.Compare(it.Key(), k) < 0 {
			// A key the run does not delete lies before k: the run ends.
			if err := flush(start, i); err != nil {
				return err
			}
			start = i
			it.SeekGE(k)
		}
		if it.Valid() && bytes.Equal(it.Key(), k) {
			it.Next()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return flush(start, len(keys))
}

// runExpiry is the latest expiredAt(i) of keys from..to, or 0 when one
// is 0 (not known).
func runExpiry(from, to int, expiredAt func(i int) int64) int64 {
	var latest int64
	for i := from; i < to; i++ {
		at := expiredAt(i)
		if at == 0 {
			return 0
		}
		latest = max(latest, at)
	}
	return latest
}

func deleteEach(from, to int, del func(i int) error) error {
	for i := from; i < to; i++ {
		if err := del(i); err != nil {
			return err
		}
	}
	return nil
}

// Successor is the least key above k.
func Successor(k []byte) []byte {
	return append(append(make([]byte, 0, len(k)+1), k...), 0)
}
