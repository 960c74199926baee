package integration

import (
	"os"
	"path"
	"strings"
	"testing"
)

// TestReadmeListsEverySkip: the README's compatibility section names the
// spec file of every skip-list line, and no file the list no longer
// has, so the manual tells what fails as the list stands.
func TestReadmeListsEverySkip(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	if i := strings.Index(section, "### Driver specification tests"); i >= 0 {
		section = section[i:]
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	listed := map[string]bool{}
	for _, s := range readSkips(t, unifiedSkipsFile) {
		file := skipFile(s.pattern)
		listed[file] = true
		if !strings.Contains(section, file) {
			t.Errorf("the README's compatibility section does not name %s (skip list line %d)", file, s.line)
		}
	}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		if !listed[path.Base(cell)] {
			t.Errorf("the README lists %s, which the skip list does not", cell)
		}
	}
}

// skipFile is the spec file a skip-list pattern names.
func skipFile(pattern string) string {
	for _, part := range strings.Split(pattern, "/") {
		if strings.HasSuffix(part, ".json") {
			return part
		}
	}
	return pattern
}
