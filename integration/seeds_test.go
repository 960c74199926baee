package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/app"
)

// TestSeeds runs the commands of every seed document as written, in
// mongosh (and pymongo where the seed uses it), each against a fresh
// database, and checks that documents go when the seed says they should.
func TestSeeds(t *testing.T) {
	s := startServer(t, app.Config{})
	seeds := []string{"000_lru_drafts", "001_carts", "002_expire_data_zh", "003_tokenlog", "004_expire_data_ko"}
	for _, name := range seeds {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _ := mongosh(t, dbURI(s, "seed"+name[:3]),
				"--file", filepath.Join(clientsDir(t), "legacy-shell.js"),
				"--file", scriptPath(t, "seeds/lib.js"),
				"--file", scriptPath(t, "seeds/"+name+".js"))
			if !strings.Contains(out, "seed "+name[:3]+" ok") {
				t.Fatalf("output:\n%s", out)
			}
		})
	}
	t.Run("004_pymongo", func(t *testing.T) {
		t.Parallel()
		py := ensurePymongo(t)
		out, _ := run(t, "", 2*time.Minute, py, scriptPath(t, "seeds/004_expire_data_ko.py"), s.uri)
		if !strings.Contains(out, "seed 004 pymongo ok") {
			t.Fatalf("output:\n%s", out)
		}
	})
}
