package query

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestProjectionFile runs testdata/projection.txt: "projection | document
// | result", compared exactly (field order and numeric types included).
func TestProjectionFile(t *testing.T) {
	for _, c := range readCases(t, "testdata/projection.txt", 3) {
		p, err := NewProjection(doc(c.cols[0]))
		if err != nil {
			t.Errorf("%s: NewProjection(%s): %v", c.where, c.cols[0], err)
			continue
		}
		got, err := p.Apply(doc(c.cols[1]), -1)
		if err != nil {
			t.Errorf("%s: Apply: %v", c.where, err)
			continue
		}
		if want := doc(c.cols[2]); !sameBSON(got, want) {
			t.Errorf("%s: %s on %s = %s, want %s", c.where, c.cols[0], c.cols[1], shell(got), shell(want))
		}
	}
}

func TestProjectionErrorFile(t *testing.T) {
	for _, c := range readCases(t, "testdata/projection_errors.txt", 3) {
		_, err := NewProjection(doc(c.cols[0]))
		code, _ := strconv.Atoi(c.cols[1])
		if err == nil {
			t.Errorf("%s: NewProjection(%s) succeeded, want code %d", c.where, c.cols[0], code)
			continue
		}
		wantCode(t, err, mongoerr.Code(code), mustShell(c.cols[2]).(string))
	}
}

// sameBSON compares values exactly: types, order and all.
func sameBSON(x, y any) bool {
	return fmt.Sprintf("%#v", x) == fmt.Sprintf("%#v", y)
}

func TestProjectionPositional(t *testing.T) {
	tests := []struct {
		filter, proj, doc, want string
		code                    mongoerr.Code
	}{
		{`{a: 2}`, `{"a.$": 1}`, `{_id: 1, a: [1, 2, 3], b: 1}`, `{_id: 1, a: [2]}`, 0},
		{`{a: {$gt: 1}}`, `{"a.$": 1, b: 1}`, `{_id: 1, a: [1, 2, 3], b: 1}`, `{_id: 1, b: 1, a: [2]}`, 0},
		{`{"a.b": 5}`, `{"a.$": 1}`, `{_id: 1, a: [{b: 1}, {b: 5}]}`, `{_id: 1, a: [{b: 5}]}`, 0},
		{`{"x.a": 2}`, `{"x.a.$": 1}`, `{_id: 1, x: {a: [1, 2], b: 0}}`, `{_id: 1, x: {a: [2]}}`, 0},
		{`{arr: 2}`, `{"s.$": 1}`, `{_id: 1, s: 5, arr: [1, 2]}`, `{_id: 1, s: 5}`, 0},
		{`{arr: 2}`, `{"s.$": 1}`, `{_id: 1, arr: [1, 2]}`, `{_id: 1}`, 0},
		{`{_id: 1}`, `{"a.$": 1}`, `{_id: 1, a: [1, 2]}`, ``, 51246},
		{`{arr: 9}`, `{"a.$": 1}`, `{_id: 1, a: [1, 2], arr: [0, 0, 9]}`, ``, 51246},
		{`{"a.b": 1}`, `{"a.b.$": 1}`, `{_id: 1, a: [{b: [1]}]}`, ``, 51247},
	}
	for _, tc := range tests {
		f, err := NewFilter(doc(tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewProjection(doc(tc.proj))
		if err != nil {
			t.Fatal(err)
		}
		d := doc(tc.doc)
		ok, pos := f.MatchPositional(d)
		if !ok {
			t.Fatalf("%s does not match %s", tc.filter, tc.doc)
		}
		got, err := p.Apply(d, pos)
		if tc.code != 0 {
			wantCode(t, err, tc.code, "")
			continue
		}
		if err != nil || !sameBSON(got, doc(tc.want)) {
			t.Errorf("%s with %s on %s = %s, %v; want %s", tc.proj, tc.filter, tc.doc, shell(got), err, tc.want)
		}
	}
}

func TestProjectionApplyErrors(t *testing.T) {
	p, err := NewProjection(doc(`{a: {$slice: [1, 0]}}`)) // the aggregation $slice, as in MongoDB
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(doc(`{a: [1, 2]}`), -1); err == nil {
		t.Error("aggregation $slice of a number: no error")
	}
	p, err = NewProjection(doc(`{a: {$slice: ["$b", 1]}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Apply(doc(`{_id: 1, a: 0, b: [7, 8]}`), -1)
	if err != nil || !sameBSON(got, doc(`{_id: 1, a: [7]}`)) {
		t.Errorf("aggregation $slice = %s, %v", shell(got), err)
	}
}

func TestProjectionIsInclusion(t *testing.T) {
	for spec, want := range map[string]bool{
		`{}`: false, `{a: 1}`: true, `{a: 0}`: false, `{_id: 0}`: false, `{_id: 1}`: true,
		`{a: {$slice: 1}}`: false, `{_id: 1, a: {$slice: 1}}`: true, `{a: {$elemMatch: {b: 1}}}`: true,
		`{a: "x"}`: true,
	} {
		p, err := NewProjection(doc(spec))
		if err != nil {
			t.Fatal(err)
		}
		if p.IsInclusion() != want {
			t.Errorf("%s: IsInclusion = %v", spec, !want)
		}
	}
}
