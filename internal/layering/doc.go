// Package layering keeps docs/design/0000's package map true: its test
// holds the map's layers as a table and fails when a package under
// internal/ or cmd/ is missing from the map or the table, or when a
// package's code imports a package of a higher layer; and when a
// package's non-test code outgrows its size bound (size_test.go), so that
// a package is split while that is still easy. It holds no other code.
package layering
