package auth

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The SASL mechanisms Mayfly offers.
const (
	MechSHA1   = "SCRAM-SHA-1"
	MechSHA256 = "SCRAM-SHA-256"
)

// mongod's scramIterationCount and scramSHA256IterationCount defaults.
const (
	IterationsSHA1   = 10000
	IterationsSHA256 = 15000
)

// Salt lengths mongod generates: the hash size less four bytes.
const (
	saltLenSHA1   = 16
	saltLenSHA256 = 28
)

// Secret is one mechanism's stored credential: what the server keeps to
// check a client's proof without ever knowing the password.
type Secret struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// Credentials are a user's secrets by mechanism name.
type Credentials map[string]*Secret

// mechanisms lists what Mayfly supports, in the order replies list them.
var mechanisms = [...]string{MechSHA1, MechSHA256}

// externalKey marks the credentials of a $external user: someone else (the
// TLS layer, for MONGODB-X509) vouches for it, so there is no secret.
const externalKey = "external"

// ExternalCredentials are those of a user in $external.
func ExternalCredentials() Credentials { return Credentials{externalKey: &Secret{}} }

func hashFor(mech string) (scram.HashGeneratorFcn, bool) {
	switch mech {
	case MechSHA1:
		return scram.SHA1, true
	case MechSHA256:
		return scram.SHA256, true
	}
	return nil, false
}

// DigestSHA1 is the "password" SCRAM-SHA-1 uses on MongoDB:
// hex(md5(user + ":mongo:" + password)).
func DigestSHA1(user, password string) string {
	sum := md5.Sum([]byte(user + ":mongo:" + password))
	return hex.EncodeToString(sum[:])
}

// NewCredentials derives the stored keys of the given mechanisms (nil: all)
// from a clear password, with fresh random salts. digested says the
// password is already DigestSHA1's form (digestPassword: false).
func NewCredentials(user, password string, mechs []string, digested bool) (Credentials, error) {
	if len(mechs) == 0 {
		mechs = mechanisms[:]
	}
	creds := Credentials{}
	for _, m := range mechs {
		s, err := deriveSecret(m, user, password, digested)
		if err != nil {
			return nil, err
		}
		creds[m] = s
	}
	return creds, nil
}

func deriveSecret(mech, user, password string, digested bool) (*Secret, error) {
	var (
		iters int
		salt  []byte
	)
	switch mech {
	case MechSHA1:
		iters, salt = IterationsSHA1, make([]byte, saltLenSHA1)
	case MechSHA256:
		iters, salt = IterationsSHA256, make([]byte, saltLenSHA256)
	default:
		return nil, fmt.Errorf("auth: unknown mechanism %q", mech)
	}
	client, err := passwordClient(mech, user, password, digested)
	if err != nil {
		return nil, fmt.Errorf("auth: prepare password: %w", err)
	}
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("auth: salt: %w", err)
	}
	sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return nil, fmt.Errorf("auth: derive keys: %w", err)
	}
	return &Secret{Iterations: iters, Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// passwordClient prepares password as mech hashes it: SCRAM-SHA-1 over
// DigestSHA1's form (unless it is digested already), SCRAM-SHA-256 over
// the SASLprep'd password.
func passwordClient(mech, user, password string, digested bool) (*scram.Client, error) {
	if mech == MechSHA1 {
		if !digested {
			password = DigestSHA1(user, password)
		}
		return scram.SHA1.NewClientUnprepped(user, password, "")
	}
	return scram.SHA256.NewClient(user, password, "")
}

func (s *Secret) stored() scram.StoredCredentials {
	return scram.StoredCredentials{
		KeyFactors: scram.KeyFactors{Salt: string(s.Salt), Iters: s.Iterations},
		StoredKey:  s.StoredKey, ServerKey: s.ServerKey,
	}
}

// Mechanisms lists the mechanisms c has secrets for, in mongod's order.
func (c Credentials) Mechanisms() []string {
	if c[externalKey] != nil {
		return []string{externalKey}
	}
	var out []string
	for _, m := range mechanisms {
		if c[m] != nil {
			out = append(out, m)
		}
	}
	return out
}

// Document is the credentials field of a system.users document.
func (c Credentials) Document() bson.D {
	if c[externalKey] != nil {
		return bson.D{{Key: externalKey, Value: true}}
	}
	var d bson.D
	for _, m := range c.Mechanisms() {
		s := c[m]
		b64 := base64.StdEncoding.EncodeToString
		d = append(d, bson.E{Key: m, Value: bson.D{
			{Key: "iterationCount", Value: int32(s.Iterations)},
			{Key: "salt", Value: b64(s.Salt)},
			{Key: "storedKey", Value: b64(s.StoredKey)},
			{Key: "serverKey", Value: b64(s.ServerKey)},
		}})
	}
	return d
}

// parseCredentials reads the credentials field of a system.users document.
func parseCredentials(d bson.D) (Credentials, error) {
	c := Credentials{}
	for _, e := range d {
		if e.Key == externalKey && e.Value == true {
			return ExternalCredentials(), nil
		}
		if _, ok := hashFor(e.Key); !ok {
			continue
		}
		sub, ok := e.Value.(bson.D)
		if !ok {
			return nil, fmt.Errorf("auth: credentials.%s is not a document", e.Key)
		}
		s, err := parseSecret(sub)
		if err != nil {
			return nil, fmt.Errorf("auth: credentials.%s: %w", e.Key, err)
		}
		c[e.Key] = s
	}
	return c, nil
}

func parseSecret(d bson.D) (*Secret, error) {
	s := &Secret{}
	for _, e := range d {
		var err error
		switch e.Key {
		case "iterationCount":
			s.Iterations, err = intValue(e.Value)
		case "salt":
			s.Salt, err = base64Value(e.Value)
		case "storedKey":
			s.StoredKey, err = base64Value(e.Value)
		case "serverKey":
			s.ServerKey, err = base64Value(e.Value)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Key, err)
		}
	}
	if s.Iterations <= 0 || len(s.Salt) == 0 || len(s.StoredKey) == 0 || len(s.ServerKey) == 0 {
		return nil, fmt.Errorf("incomplete secret")
	}
	return s, nil
}

func base64Value(v any) ([]byte, error) {
	str, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("not a string")
	}
	return base64.StdEncoding.DecodeString(str)
}

func intValue(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int32:
		return int(n), nil
	case int64:
		return int(n), nil
	case float64:
		return int(n), nil
	}
	return 0, fmt.Errorf("not a number")
}
