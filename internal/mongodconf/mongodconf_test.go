package mongodconf

import (
	"strings"
	"testing"
)

// The file Debian's and Ubuntu's mongod packages install, with more.
const sample = `# mongod.conf
---
storage:
  dbPath: /var/lib/mongodb   # data
systemLog:
  destination: file
  logAppend: true
  path: "/var/log/mongodb/mongod.log"
net:
    port: 27018
    bindIp: '127.0.0.1'
security:
  authorization: enabled
replication:
  replSetName: "rs # 0"
setParameter:
  ttlMonitorSleepSecs: 5
  'quoted key': 'it''s'
processManagement:
  timeZoneInfo: /usr/share/zoneinfo
`

func TestParsesMongodShape(t *testing.T) {
	got, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"storage.dbPath": "/var/lib/mongodb", "systemLog.destination": "file", "systemLog.logAppend": "true",
		"systemLog.path": "/var/log/mongodb/mongod.log", "net.port": "27018", "net.bindIp": "127.0.0.1",
		"security.authorization": "enabled", "replication.replSetName": "rs # 0",
		"setParameter.ttlMonitorSleepSecs": "5", "setParameter.quoted key": "it's",
		"processManagement.timeZoneInfo": "/usr/share/zoneinfo",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k].Value != v {
			t.Errorf("%s = %q, want %q", k, got[k].Value, v)
		}
	}
	if got["net.port"].Line != 10 {
		t.Errorf("net.port line %d", got["net.port"].Line)
	}
	if p, err := got["net.port"].Int("net.port"); err != nil || p != 27018 {
		t.Errorf("Int: %d %v", p, err)
	}
	if b, err := got["systemLog.logAppend"].Bool("systemLog.logAppend"); err != nil || !b {
		t.Errorf("Bool: %v %v", b, err)
	}
}

func TestRefusesWhatItDoesNotRead(t *testing.T) {
	for text, want := range map[string]string{
		"net:\n  bindIp: [a, b]\n":      "line 2: bindIp: flow collections",
		"net:\n  - a\n":                 "line 2: lists are not supported",
		"net:\n\tport: 1\n":             "line 2: indentation must be spaces",
		"net:\n  port: 1\n port: 2\n":   "line 3: indentation does not match",
		"net:\n  port: 1\n  port: 2\n":  "line 3: net.port is set twice",
		"net:\nstorage:\n  dbPath: x\n": "line 2: section net is empty",
		"net:\n":                        "section net is empty",
		"net:\n  port: \"27017\n":       "line 2: port: unterminated quoted string",
		"net:\n  port:1\n":              "line 2: a space must follow the colon after port",
		"a: &anchor x\n":                `line 1: a: YAML "&" is not supported`,
		"a: |\n  text\n":                `line 1: a: YAML "|" is not supported`,
	} {
		_, err := Parse(strings.NewReader(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", text, err, want)
		}
	}
}
