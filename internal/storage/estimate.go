package storage

// SizeEstimator is implemented by engines that can tell how many bytes of
// their files on disk hold a key range (collStats' storageSize). Data
// not yet flushed from memory is not counted.
type SizeEstimator interface {
	EstimateDiskUsage(lower, upper []byte) (uint64, error)
}

// Checkpointer is implemented by engines that can write a consistent copy
// of themselves, while writes go on, to a directory that must not exist.
type Checkpointer interface {
	Checkpoint(dir string) error
}
