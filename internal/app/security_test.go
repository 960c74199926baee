package app

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
)

func TestWarnIfOpen(t *testing.T) {
	cases := []struct {
		ip       string
		sec      Security
		want     string
		wantLoud bool
	}{
		{"127.0.0.1", Security{}, "Access control is not enabled", false},
		{"10.0.0.7", Security{}, "non-loopback address", true},
		{"10.0.0.7", Security{Auth: true}, "", false},
		{"10.0.0.7", Security{KeyFile: "/k"}, "", false},
	}
	for _, c := range cases {
		var buf bytes.Buffer
		warnIfOpen(slog.New(slog.NewTextHandler(&buf, nil)), &net.TCPAddr{IP: net.ParseIP(c.ip), Port: 27017}, c.sec)
		out := buf.String()
		if c.want == "" {
			if out != "" {
				t.Errorf("%s %+v: unexpected warning %s", c.ip, c.sec, out)
			}
			continue
		}
		if !strings.Contains(out, c.want) || strings.Contains(out, "level=ERROR") != c.wantLoud {
			t.Errorf("%s %+v: got %s", c.ip, c.sec, out)
		}
	}
}
