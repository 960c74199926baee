package txncheck

// Anomaly names one kind of anomaly the checker reports.
type Anomaly string

// The anomalies, by the names Adya and Elle give them.
const (
	// G0 is a cycle of write-write dependencies (dirty write).
	G0 Anomaly = "G0"
	// G1a is an aborted read: a committed read observes an append of an
	// aborted transaction.
	G1a Anomaly = "G1a"
	// G1b is an intermediate read: a read ends in a value that was not its
	// writer's last append to that key.
	G1b Anomaly = "G1b"
	// G1c is a cycle of write-write and write-read dependencies with at
	// least one write-read edge (cyclic information flow).
	G1c Anomaly = "G1c"
	// GSingle is a cycle with exactly one read-write (anti-)dependency:
	// read skew.
	GSingle Anomaly = "G-single"
	// G2Item is a cycle with two or more anti-dependencies: write skew,
	// which snapshot isolation allows.
	G2Item Anomaly = "G2-item"
	// LostUpdate is two committed transactions that read the same version
	// of a key and both appended to it.
	LostUpdate Anomaly = "lost-update"
	// DuplicateAppend is a value that appears twice in one read.
	DuplicateAppend Anomaly = "duplicate-append"
	// Internal is a transaction whose read does not reflect its own
	// earlier reads and appends of the key.
	Internal Anomaly = "internal"
	// IncompatibleOrder is a read that is not a prefix of the key's
	// longest read, so no single version order explains both.
	IncompatibleOrder Anomaly = "incompatible-order"
	// GarbageRead is a read of a value no transaction appended.
	GarbageRead Anomaly = "garbage-read"
)

// Anomalies lists every anomaly the checker knows, in report order.
func Anomalies() []Anomaly {
	return []Anomaly{G0, G1a, G1b, G1c, GSingle, G2Item, LostUpdate,
		DuplicateAppend, Internal, IncompatibleOrder, GarbageRead}
}

// Forbidden reports whether snapshot isolation rules the anomaly out.
// G2-item is the one it allows; the checker reports it as information.
func (a Anomaly) Forbidden() bool { return a != G2Item && a.Meaning() != "" }

// Meaning is the anomaly's one-phrase definition ("" for an unknown name).
func (a Anomaly) Meaning() string {
	switch a {
	case G0:
		return "dirty write: a cycle of write-write dependencies"
	case G1a:
		return "aborted read: a read observed an aborted transaction's append"
	case G1b:
		return "intermediate read: a read observed a value its writer later overwrote"
	case G1c:
		return "cyclic information flow: a cycle of write-write and write-read dependencies"
	case GSingle:
		return "read skew: a cycle with exactly one anti-dependency"
	case G2Item:
		return "write skew: a cycle with two or more anti-dependencies (allowed under snapshot isolation)"
	case LostUpdate:
		return "lost update: two committed transactions read the same version of a key and both appended to it"
	case DuplicateAppend:
		return "duplicated append: a value appears twice in one read"
	case Internal:
		return "internal inconsistency: a read does not reflect its transaction's own earlier operations"
	case IncompatibleOrder:
		return "incompatible order: a read is not a prefix of the key's longest read"
	case GarbageRead:
		return "garbage read: a read observed a value no transaction appended"
	}
	return ""
}
