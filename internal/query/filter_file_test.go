package query

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMatchFiles runs testdata/match/*.txt: one case per line,
// "filter | document | true|false", in mongo shell syntax, "#" comments.
func TestMatchFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/match/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			for _, c := range readCases(t, file, 3) {
				checkMatch(t, c)
			}
		})
	}
}

// caseLine is one line of a case file, split into its "|" columns.
type caseLine struct {
	where string // file:line, for messages
	cols  []string
}

// readCases reads the non-comment lines of a case file; each must have n
// columns. Columns are split at "|" outside strings, regexes and brackets.
func readCases(t *testing.T, file string, n int) []caseLine {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []caseLine
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(stripComment(sc.Text()))
		if text == "" {
			continue
		}
		cols := splitColumns(text)
		where := file + ":" + strconv.Itoa(line)
		if len(cols) != n {
			t.Fatalf("%s: %d columns, want %d", where, len(cols), n)
		}
		out = append(out, caseLine{where: where, cols: cols})
	}
	return out
}

func checkMatch(t *testing.T, c caseLine) {
	t.Helper()
	f, err := NewFilter(doc(c.cols[0]))
	if err != nil {
		t.Errorf("%s: NewFilter: %v", c.where, err)
		return
	}
	want := c.cols[2] == "true"
	if got := f.Match(doc(c.cols[1])); got != want {
		t.Errorf("%s: %s on %s = %v, want %v", c.where, c.cols[0], c.cols[1], got, want)
	}
}

// stripComment drops a trailing "# ..." that is outside quotes and regexes.
func stripComment(s string) string {
	if i := topLevelIndex(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}

func splitColumns(s string) []string {
	var cols []string
	for {
		i := topLevelIndex(s, '|')
		if i < 0 {
			return append(cols, strings.TrimSpace(s))
		}
		cols = append(cols, strings.TrimSpace(s[:i]))
		s = s[i+1:]
	}
}

// topLevelIndex finds c outside quoted strings and /regexes/.
func topLevelIndex(s string, c byte) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case quote != 0 && ch == '\\':
			i++
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
		case ch == '"' || ch == '\'' || ch == '/':
			quote = ch
		case ch == c:
			return i
		}
	}
	return -1
}
