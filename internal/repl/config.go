package repl

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// SetConfig is a replica set config document, as replSetGetConfig shows
// it and replSetInitiate / replSetReconfig take it.
type SetConfig struct {
	ID       string
	Version  int64
	Term     int64
	Members  []Member
	Settings bson.D
	// ConfigServer is configsvr: true, the mark of a sharded cluster's
	// config server replica set.
	ConfigServer bool
}

// Member is one entry of a config's members array.
type Member struct {
	ID       int64
	Host     string
	Votes    int64
	Priority float64
	Hidden   bool
	Tags     bson.D
	// SecondaryDelaySecs is accepted and reported; Mayfly applies entries
	// as they commit.
	SecondaryDelaySecs int64
}

// RaftID is the member's raft node ID (raft reserves 0).
func (m Member) RaftID() uint64 { return uint64(m.ID) + 1 }

// ConfigError is a config replSetInitiate or replSetReconfig refuses
// (InvalidReplicaSetConfig).
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// ParseConfig reads a config document.
func ParseConfig(doc bson.D) (*SetConfig, error) {
	c := &SetConfig{Version: 1}
	for _, e := range doc {
		if err := c.setField(e); err != nil {
			return nil, err
		}
	}
	if c.ID == "" {
		return nil, configErrorf("Missing expected field \"_id\"")
	}
	if len(c.Members) == 0 {
		return nil, configErrorf("Replica set configuration must contain at least one member")
	}
	return c, c.validate()
}

func (c *SetConfig) setField(e bson.E) error {
	var err error
	switch e.Key {
	case "_id":
		s, ok := e.Value.(string)
		if !ok {
			return configErrorf("_id field must be a string")
		}
		c.ID = s
	case "version":
		c.Version, err = configInt(e)
	case "term":
		c.Term, err = configInt(e)
	case "protocolVersion":
		var v int64
		if v, err = configInt(e); err == nil && v != 1 {
			err = configErrorf("Only protocolVersion 1 is supported")
		}
	case "members":
		c.Members, err = parseMembers(e.Value)
	case "settings":
		s, ok := e.Value.(bson.D)
		if !ok {
			return configErrorf("settings field must be an object")
		}
		c.Settings = s
	case "configsvr":
		c.ConfigServer, _ = e.Value.(bool)
	case "writeConcernMajorityJournalDefault":
	default:
		return configErrorf("Unexpected field %s in replica set configuration", e.Key)
	}
	return err
}

func configInt(e bson.E) (int64, error) {
	switch v := e.Value.(type) {
	case int32:
		return int64(v), nil
	case int64:
		return v, nil
	case float64:
		if v == float64(int64(v)) {
			return int64(v), nil
		}
	}
	return 0, configErrorf("%s field must be a number", e.Key)
}

func parseMembers(v any) ([]Member, error) {
	arr, ok := v.(bson.A)
	if !ok {
		return nil, configErrorf("members field must be an array")
	}
	out := make([]Member, 0, len(arr))
	for i, item := range arr {
		d, ok := item.(bson.D)
		if !ok {
			return nil, configErrorf("members.%d must be an object", i)
		}
		m, err := parseMember(d)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func parseMember(d bson.D) (Member, error) {
	m := Member{Votes: 1, Priority: 1, ID: -1}
	var err error
	for _, e := range d {
		switch e.Key {
		case "_id":
			m.ID, err = configInt(e)
		case "host":
			s, ok := e.Value.(string)
			if !ok {
				return m, configErrorf("host field must be a string")
			}
			m.Host = strings.ToLower(s)
		case "votes":
			m.Votes, err = configInt(e)
		case "priority":
			var p int64
			if f, ok := e.Value.(float64); ok {
				m.Priority = f
			} else if p, err = configInt(e); err == nil {
				m.Priority = float64(p)
			}
		case "hidden":
			m.Hidden, _ = e.Value.(bool)
		case "tags":
			m.Tags, _ = e.Value.(bson.D)
		case "secondaryDelaySecs":
			m.SecondaryDelaySecs, err = configInt(e)
		case "arbiterOnly":
			if b, _ := e.Value.(bool); b {
				return m, configErrorf("arbiters are not supported: every Mayfly member holds data")
			}
		case "buildIndexes", "newlyAdded":
		default:
			return m, configErrorf("Unexpected field %s in member configuration", e.Key)
		}
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

func (c *SetConfig) validate() error {
	if c.Version < 1 || c.Version > 1<<31-1 {
		return configErrorf("version field value of %d is out of range", c.Version)
	}
	ids, hosts := map[int64]bool{}, map[string]bool{}
	voters := 0
	for _, m := range c.Members {
		if err := m.validate(); err != nil {
			return err
		}
		if ids[m.ID] {
			return configErrorf("Found two member configurations with same _id field, members._id == %d", m.ID)
		}
		if hosts[m.Host] {
			return configErrorf("Found two member configurations with same host field, members.host == %s", m.Host)
		}
		ids[m.ID], hosts[m.Host] = true, true
		if m.Votes > 0 {
			voters++
		}
	}
	if len(c.Members) > 50 {
		return configErrorf("Replica set configuration contains %d members, but must have at most 50 members", len(c.Members))
	}
	if voters == 0 || voters > 7 {
		return configErrorf("Replica set configuration contains %d voting members, but must be at least 1 and no more than 7", voters)
	}
	return nil
}

func (m Member) validate() error {
	if m.ID < 0 || m.ID > 255 {
		return configErrorf("_id field value of %d is out of range", m.ID)
	}
	host, port, err := net.SplitHostPort(m.Host)
	if err != nil || host == "" {
		return configErrorf("members.host %q is not a valid host:port", m.Host)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return configErrorf("members.host %q has no valid port", m.Host)
	}
	if m.Votes != 0 && m.Votes != 1 {
		return configErrorf("votes field value is %d but must be 0 or 1", m.Votes)
	}
	if m.Priority < 0 || m.Priority > 1000 {
		return configErrorf("priority field value of %g is out of range", m.Priority)
	}
	if m.Votes == 0 && m.Priority != 0 {
		return configErrorf("priority must be 0 when non-voting (votes:0)")
	}
	return nil
}

// Doc is the config as replSetGetConfig shows it.
func (c *SetConfig) Doc() bson.D {
	members := bson.A{}
	for _, m := range c.Members {
		members = append(members, m.doc())
	}
	settings := c.Settings
	if settings == nil {
		settings = bson.D{}
	}
	doc := bson.D{
		{Key: "_id", Value: c.ID}, {Key: "version", Value: int32(c.Version)}, {Key: "term", Value: c.Term},
		{Key: "members", Value: members},
	}
	if c.ConfigServer {
		doc = append(doc, bson.E{Key: "configsvr", Value: true})
	}
	return append(doc, bson.E{Key: "protocolVersion", Value: int64(1)},
		bson.E{Key: "writeConcernMajorityJournalDefault", Value: true},
		bson.E{Key: "settings", Value: withDefaultSettings(settings)})
}

func (m Member) doc() bson.D {
	tags := m.Tags
	if tags == nil {
		tags = bson.D{}
	}
	return bson.D{
		{Key: "_id", Value: int32(m.ID)}, {Key: "host", Value: m.Host}, {Key: "arbiterOnly", Value: false},
		{Key: "buildIndexes", Value: true}, {Key: "hidden", Value: m.Hidden}, {Key: "priority", Value: m.Priority},
		{Key: "tags", Value: tags}, {Key: "secondaryDelaySecs", Value: m.SecondaryDelaySecs}, {Key: "votes", Value: int32(m.Votes)},
	}
}

func withDefaultSettings(s bson.D) bson.D {
	out := append(bson.D{}, s...)
	for _, def := range []bson.E{
		{Key: "chainingAllowed", Value: true}, {Key: "heartbeatIntervalMillis", Value: int32(2000)},
		{Key: "heartbeatTimeoutSecs", Value: int32(10)}, {Key: "electionTimeoutMillis", Value: int32(10000)},
		{Key: "catchUpTimeoutMillis", Value: int32(-1)}, {Key: "catchUpTakeoverDelayMillis", Value: int32(30000)},
		{Key: "getLastErrorModes", Value: bson.D{}},
		{Key: "getLastErrorDefaults", Value: bson.D{{Key: "w", Value: int32(1)}, {Key: "wtimeout", Value: int32(0)}}},
	} {
		if !hasKey(out, def.Key) {
			out = append(out, def)
		}
	}
	return out
}

func hasKey(d bson.D, k string) bool {
	for _, e := range d {
		if e.Key == k {
			return true
		}
	}
	return false
}

// member returns the member with raft ID id.
func (c *SetConfig) member(id uint64) (Member, bool) {
	for _, m := range c.Members {
		if m.RaftID() == id {
			return m, true
		}
	}
	return Member{}, false
}

// memberByHost returns the member whose host is host.
func (c *SetConfig) memberByHost(host string) (Member, bool) {
	for _, m := range c.Members {
		if m.Host == strings.ToLower(host) {
			return m, true
		}
	}
	return Member{}, false
}

// majority is how many voting members make a majority.
func (c *SetConfig) majority() int {
	n := 0
	for _, m := range c.Members {
		if m.Votes > 0 {
			n++
		}
	}
	return n/2 + 1
}
