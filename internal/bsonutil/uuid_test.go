package bsonutil

import "testing"

// TestFormatUUID: 16 bytes print as mongod's 8-4-4-4-12 groups, any other
// length as plain hex.
func TestFormatUUID(t *testing.T) {
	id := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	if got := FormatUUID(id); got != "00010203-0405-0607-0809-0a0b0c0d0e0f" {
		t.Fatalf("16 bytes: %s", got)
	}
	if got := FormatUUID(id[:3]); got != "000102" {
		t.Fatalf("3 bytes: %s", got)
	}
}
