package auth

import (
	"fmt"
	"os"
	"strings"
)

// Key length bounds mongod enforces on a keyFile's content.
const (
	minKeyLen = 6
	maxKeyLen = 1024
)

// systemUser is the internal user replica set members authenticate as.
var systemUser = UserName{User: "__system", DB: "local"}

// KeyFile is a replica set's shared secret. Members prove they hold it by
// authenticating as __system@local with SCRAM, the key being the
// password; the key itself never crosses the wire.
type KeyFile struct {
	key  string
	user *User
}

// LoadKeyFile reads and checks a keyFile as mongod does: whitespace is
// ignored, what remains must be 6 to 1024 base64 characters, and the file
// must not be readable by group or others.
func LoadKeyFile(path string) (*KeyFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("error getting file %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("permissions on %s are too open", path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading file %s: %w", path, err)
	}
	return ParseKey(path, string(raw))
}

// ParseKey checks a key's content; name is used in error messages.
func ParseKey(name, content string) (*KeyFile, error) {
	key := strings.Map(func(r rune) rune {
		if strings.ContainsRune(" \t\r\n\v\f", r) {
			return -1
		}
		return r
	}, content)
	if len(key) == 0 {
		return nil, fmt.Errorf("security key in %s has length 0", name)
	}
	for _, r := range key {
		if !isBase64Char(r) {
			return nil, fmt.Errorf("invalid char in key file %s: %c", name, r)
		}
	}
	if len(key) < minKeyLen || len(key) > maxKeyLen {
		return nil, fmt.Errorf("security key in %s has length %d, must be between %d and %d chars",
			name, len(key), minKeyLen, maxKeyLen)
	}
	creds, err := NewCredentials(systemUser.User, key, nil, false)
	if err != nil {
		return nil, err
	}
	user := &User{Name: systemUser, Roles: []RoleName{{Role: "__system", DB: adminDB}}, Credentials: creds}
	return &KeyFile{key: key, user: user}, nil
}

func isBase64Char(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '='
}

// Credential is what a member presents to another: __system@local and
// the key as the password.
func (k *KeyFile) Credential() Credential {
	return Credential{User: systemUser.User, DB: systemUser.DB, Password: k.key, Mechanism: MechSHA256}
}

// String never shows the key.
func (k *KeyFile) String() string { return "keyFile(redacted)" }
