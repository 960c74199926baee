package mongoerr

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCodeNamesAsMongod(t *testing.T) {
	for code, want := range map[Code]string{
		MaxTimeMSExpired:   "MaxTimeMSExpired",
		InvalidIDField:     "InvalidIdField",
		Location40415:      "Location40415",
		Location17276:      "Location17276",
		DuplicateKey:       "DuplicateKey",
		NotWritablePrimary: "NotWritablePrimary",
	} {
		if got := code.Name(); got != want {
			t.Errorf("%d: %s, want %s", code, got, want)
		}
	}
}

// literalRe finds an error code written as a number where a name from
// the table belongs.
var literalRe = regexp.MustCompile(`mongoerr\.(New|Newf)\([0-9]|mongoerr\.Code\([0-9]|mongoerr\.Code\{[0-9]|mongoerr\.Code = [0-9]`)

func TestNoNumericCodesOutsideTheTable(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := literalRe.FindIndex(text); loc != nil {
			line := 1 + strings.Count(string(text[:loc[0]]), "\n")
			t.Errorf("%s:%d: numeric error code; use a name from internal/mongoerr", path, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
