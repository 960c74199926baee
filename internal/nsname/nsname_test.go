package nsname

import (
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestValidateUserWrite follows mongod's userAllowedWriteNS: which system
// collections clients may write depends on the database for some.
func TestValidateUserWrite(t *testing.T) {
	for _, tc := range []struct {
		db, coll string
		want     string // "" allowed
	}{
		{"test", "c", ""},
		{"test", "system.js", ""},
		{"test", "system.users", ""},
		{"test", "system.buckets.m", ""},
		{"admin", "system.roles", ""},
		{"admin", "system.version", ""},
		{"config", "system.sessions", ""},
		{"local", "system.replset", ""},
		{"test", "system.profile", "cannot write to test.system.profile"},
		{"test", "system.views", "cannot write to test.system.views"},
		{"test", "system.roles", "Invalid system namespace: test.system.roles"},
		{"test", "system.sessions", "Invalid system namespace: test.system.sessions"},
		{"test", "system.buckets.", "Invalid system namespace: test.system.buckets."},
		{"test", "system.foo", "Invalid system namespace: test.system.foo"},
	} {
		err := ValidateUserWrite(tc.db, tc.coll)
		if tc.coll == "system.profile" {
			if err := ValidateUserCreate(tc.db, tc.coll); err != nil {
				t.Errorf("create %s.%s: %v", tc.db, tc.coll, err)
			}
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s.%s: %v", tc.db, tc.coll, err)
		case tc.want != "" && (err == nil || mongoerr.As(err).Code != mongoerr.InvalidNamespace || mongoerr.As(err).Msg != tc.want):
			t.Errorf("%s.%s: %v, want 73 %q", tc.db, tc.coll, err, tc.want)
		}
	}
}
