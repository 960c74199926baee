package update

import (
	"strings"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// splitPath splits a dotted update path, rejecting empty components as
// MongoDB's fieldchecker::isUpdatable does.
func splitPath(path string) ([]string, error) { return appendPath(nil, path) }

// appendPath is splitPath appending the components to dst, so that a
// caller that keeps none of them can split into an array of its own.
func appendPath(dst []string, path string) ([]string, error) {
	if path == "" {
		return nil, errf(codeEmptyFieldName, "An empty update path is not valid.")
	}
	for rest := path; ; {
		p, after, more := strings.Cut(rest, ".")
		if p == "" {
			return nil, errf(codeEmptyFieldName,
				"The update path '%s' contains an empty field name, which is not allowed.", path)
		}
		dst = append(dst, p)
		if !more {
			return dst, nil
		}
		rest = after
	}
}

func isPositional(part string) bool { return part == "$" }

// isArrayFilter reports whether part has the form $[<identifier>].
func isArrayFilter(part string) bool {
	return len(part) >= 3 && part[0] == '$' && part[1] == '[' && part[len(part)-1] == ']'
}

// checkPositional enforces at most one '$' and not in the first position.
func checkPositional(parts []string, path string) error {
	count, first := 0, -1
	for i, p := range parts {
		if isPositional(p) {
			if count == 0 {
				first = i
			}
			count++
		}
	}
	if count > 1 {
		return errf(mongoerr.BadValue, "Too many positional (i.e. '$') elements found in path '%s'", path)
	}
	if first == 0 {
		return errf(mongoerr.BadValue,
			"Cannot have positional (i.e. '$') element in the first position in path '%s'", path)
	}
	return nil
}

func isDynamic(parts []string) bool {
	for _, p := range parts {
		if isPositional(p) || isArrayFilter(p) {
			return true
		}
	}
	return false
}

// isPrefix reports whether a is a prefix of (or equal to) b, by component.
func isPrefix(a, b []string) bool {
	if len(a) > len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// arrayIndex parses an array index the way MongoDB's update paths do: only
// ASCII digits, any number of them. Huge values saturate; they can only ever
// mean "past the end".
func arrayIndex(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = min(n*10+int(c-'0'), 1<<40)
	}
	return n, true
}

// comparePaths orders sibling field names as MongoDB 5.0+ applies them:
// plain strings byte-wise, but names that are unpadded numbers by value, so
// "a.2" is updated before "a.10".
func comparePaths(a, b string) int {
	if !numberLike(a) || !numberLike(b) {
		return strings.Compare(a, b)
	}
	if len(a) != len(b) {
		return cmpInt(len(a), len(b))
	}
	return strings.Compare(a, b)
}

// numberLike mirrors the cheap test MongoDB uses: a leading digit and no
// zero padding. Within equal lengths, byte order is numeric order for digit
// strings and a consistent order otherwise.
func numberLike(s string) bool {
	return s != "" && s[0] >= '0' && s[0] <= '9' && !(s[0] == '0' && len(s) > 1)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func joinPath(parts ...[]string) string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return strings.Join(all, ".")
}
