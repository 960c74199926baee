package storage

import "bytes"

// RunDeleter is a Batch that deletes a run of keys, every key storage
// holds from the run's first to its last, as one range deletion. It knows
// the keys, so what it keeps of them elsewhere (a cache) drops each one
// as a point deletion would.
type RunDeleter interface {
	DeleteRun(keys [][]byte) error
}

// DeleteRuns deletes keys, ascending and distinct, into b. Each run of at
// least minRun of them that holds every key storage has between the run's
// first and last, as it reads them (a range no narrower than the keys'),
// goes as one range deletion (b.DeleteRun); the others go one by
// one through del(i). A range deletion costs the engine one record where
// the run's point deletions cost one each in its memtable, its log, its
// flushes and every compaction that carries them down. Only a caller
// whose keys no other writer can join before b commits may use it: a key
// written inside a run meanwhile would go with the run.
func DeleteRuns(it Iterator, b RunDeleter, keys [][]byte, minRun int, del func(i int) error) error {
	if len(keys) < minRun {
		return deleteEach(0, len(keys), del)
	}
	flush := func(from, to int) error {
		if to-from < minRun {
			return deleteEach(from, to, del)
		}
		return b.DeleteRun(keys[from:to])
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
