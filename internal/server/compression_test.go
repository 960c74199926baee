package server

import (
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/wire"
)

// helloWith negotiates compression the way drivers do and returns the
// server's accepted list.
func helloWith(t *testing.T, c *rawClient, names ...string) []string {
	t.Helper()
	list := bson.A{}
	for _, n := range names {
		list = append(list, n)
	}
	r := c.roundTrip(c.msg(0, bson.D{{Key: "hello", Value: 1}, {Key: "compression", Value: list}, {Key: "$db", Value: "admin"}}))
	if r.compressor != "" {
		t.Fatalf("hello reply compressed with %s", r.compressor)
	}
	wantOK(t, r.doc)
	var kept []string
	if v, ok := bsonutil.Field(r.doc, "compression"); ok {
		for _, n := range v.(bson.A) {
			kept = append(kept, n.(string))
		}
	}
	return kept
}

func TestCompressionNegotiated(t *testing.T) {
	for _, id := range []wire.CompressorID{wire.CompressorSnappy, wire.CompressorZlib, wire.CompressorZstd} {
		t.Run(id.String(), func(t *testing.T) {
			h := newFakeHandler()
			s := startServer(t, Config{}, h)
			c := dial(t, s)
			// Before negotiation replies are plain even to compressed requests.
			req, err := c.codec.Compress(nil, c.msg(0, ping()), id)
			if err != nil {
				t.Fatal(err)
			}
			if r := c.roundTrip(req); r.compressor != "" {
				t.Fatalf("reply compressed before negotiation: %s", r.compressor)
			}
			if kept := helloWith(t, c, "bogus", id.String()); !reflect.DeepEqual(kept, []string{id.String()}) {
				t.Fatalf("negotiated %v", kept)
			}
			req, err = c.codec.Compress(nil, c.msg(0, ping()), id)
			if err != nil {
				t.Fatal(err)
			}
			r := c.roundTrip(req)
			wantOK(t, r.doc)
			if r.compressor != id.String() {
				t.Fatalf("reply compressor %q, want %s", r.compressor, id)
			}
			// Uncompressed requests get compressed replies too.
			if r := c.roundTrip(c.msg(0, ping())); r.compressor != id.String() {
				t.Fatalf("reply to plain request compressed with %q", r.compressor)
			}
			// hello and auth commands are never compressed.
			for _, name := range []string{"hello", "isMaster", "saslStart", "saslContinue", "createUser"} {
				r := c.roundTrip(c.msg(0, bson.D{{Key: name, Value: 1}, {Key: "$db", Value: "admin"}}))
				if r.compressor != "" {
					t.Fatalf("%s reply compressed with %s", name, r.compressor)
				}
			}
			pings := h.named("ping")
			if len(pings) != 3 || pings[0].Compressor != id.String() || pings[2].Compressor != "" {
				t.Fatalf("handler saw pings %+v", pings)
			}
		})
	}
}

func TestCompressionOrderAndRestriction(t *testing.T) {
	s := startServer(t, Config{Compressors: []string{"zstd", "zlib", "lz4"}}, newFakeHandler())
	c := dial(t, s)
	// Client order wins; unaccepted and duplicate names are dropped.
	if kept := helloWith(t, c, "snappy", "zlib", "zstd", "zlib"); !reflect.DeepEqual(kept, []string{"zlib", "zstd"}) {
		t.Fatalf("negotiated %v", kept)
	}
	if r := c.roundTrip(c.msg(0, ping())); r.compressor != "zlib" {
		t.Fatalf("reply compressed with %q, want the client's first choice zlib", r.compressor)
	}
	// A compressor the server does not accept is a protocol violation.
	req, err := c.codec.Compress(nil, c.msg(0, ping()), wire.CompressorSnappy)
	if err != nil {
		t.Fatal(err)
	}
	c.send(req)
	wantError(t, c.read().doc, 17)
	c.expectClosed(5e9)
}

func TestCompressionDisabled(t *testing.T) {
	s := startServer(t, Config{Compressors: []string{}}, newFakeHandler())
	c := dial(t, s)
	if kept := helloWith(t, c, "snappy", "zlib", "zstd"); kept != nil {
		t.Fatalf("negotiated %v with compression disabled", kept)
	}
	if r := c.roundTrip(c.msg(0, ping())); r.compressor != "" {
		t.Fatalf("reply compressed with %q", r.compressor)
	}
}

// Renegotiating with no common compressor turns compression off.
func TestCompressionRenegotiatedOff(t *testing.T) {
	s := startServer(t, Config{}, newFakeHandler())
	c := dial(t, s)
	helloWith(t, c, "snappy")
	if kept := helloWith(t, c); kept != nil {
		t.Fatalf("negotiated %v", kept)
	}
	if r := c.roundTrip(c.msg(0, ping())); r.compressor != "" {
		t.Fatalf("reply compressed with %q", r.compressor)
	}
}
