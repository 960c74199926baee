package update

import (
	"testing"
	"time"

	"github.com/mayflydb/mayfly/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// testNow is the fixed clock of every test case.
var testNow = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// ej parses relaxed extended JSON: 1 is an int32, 1.0 a double,
// {"$numberLong": "1"} an int64.
func ej(t testing.TB, s string) bson.D {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return d
}

// caseSpec is one table row: an update applied to a document, expecting a
// result document or an error.
type caseSpec struct {
	name    string
	doc     string
	update  string
	filters []string
	insert  bool
	pos     *int
	want    string // expected document, if no error
	changed bool
	code    mongoerr.Code // expected error code, 0 for success
	msg     string        // expected error message, if not empty
}

func at(i int) *int { return &i }

func runCases(t *testing.T, cases []caseSpec) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, c) })
	}
}

func runCase(t *testing.T, c caseSpec) {
	var filters []bson.D
	for _, f := range c.filters {
		filters = append(filters, ej(t, f))
	}
	doc := ej(t, orEmpty(c.doc))
	before := bson.D(cloneValue(doc).(bson.D))
	got, changed, err := parseAndApply(ej(t, c.update), filters, doc, c.context())
	if !identicalDocs(doc, before) {
		t.Fatalf("input document was modified: %v", doc)
	}
	if c.code != 0 {
		checkErr(t, err, c.code, c.msg)
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	want := ej(t, c.want)
	if !identicalDocs(got, want) {
		t.Fatalf("got  %s\nwant %s", formatValue(got), formatValue(want))
	}
	if changed != c.changed {
		t.Fatalf("changed = %v, want %v", changed, c.changed)
	}
}

func orEmpty(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

func (c caseSpec) context() Context {
	ctx := Context{Now: testNow, IsInsert: c.insert, Positional: -1}
	if c.pos != nil {
		ctx.Positional = *c.pos
	}
	return ctx
}

func parseAndApply(u bson.D, filters []bson.D, doc bson.D, ctx Context) (bson.D, bool, error) {
	up, err := Parse(u, filters)
	if err != nil {
		return nil, false, err
	}
	return up.Apply(doc, ctx)
}

func checkErr(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected error %d, got success", code)
	}
	e := mongoerr.As(err)
	if e.Code != code {
		t.Fatalf("error code = %d, want %d (%s)", e.Code, code, e.Msg)
	}
	if msg != "" && e.Msg != msg {
		t.Fatalf("error message:\n got  %q\n want %q", e.Msg, msg)
	}
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case bson.D:
		out := make(bson.D, len(x))
		for i, e := range x {
			out[i] = bson.E{Key: e.Key, Value: cloneValue(e.Value)}
		}
		return out
	case bson.A:
		out := make(bson.A, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
