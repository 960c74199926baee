package failpoint

// IndexBuildHangAfterInsertion holds an index build after each batch of
// the documents it reads while the point is on, as mongod's point of that
// name holds its collection scan: a test then writes, drops or kills
// while the build is under way.
const IndexBuildHangAfterInsertion = "hangIndexBuildDuringCollectionScanPhaseAfterInsertion"
