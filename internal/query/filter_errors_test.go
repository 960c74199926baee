package query

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// TestFilterErrorFile runs testdata/filter_errors.txt: "filter | code |
// message", where an empty message accepts any text.
func TestFilterErrorFile(t *testing.T) {
	for _, c := range readCases(t, "testdata/filter_errors.txt", 3) {
		_, err := NewFilter(doc(c.cols[0]))
		code, _ := strconv.Atoi(c.cols[1])
		if err == nil {
			t.Errorf("%s: NewFilter(%s) succeeded, want code %d", c.where, c.cols[0], code)
			continue
		}
		wantCode(t, err, mongoerr.Code(code), mustShell(c.cols[2]).(string))
	}
}

// Cases whose values do not fit on a line of the case file.
func TestFilterRegexLimits(t *testing.T) {
	tests := []struct {
		pattern, msg string
	}{
		{"a\x00", "Regular expression cannot contain an embedded null byte"},
		{strings.Repeat("a", 32765), "Regular expression is too long"},
	}
	for _, tc := range tests {
		filter := bson.D{{Key: "a", Value: bson.Regex{Pattern: tc.pattern}}}
		_, err := NewFilter(filter)
		wantCode(t, err, mongoerr.BadValue, tc.msg)
	}
	ok := bson.D{{Key: "a", Value: bson.Regex{Pattern: strings.Repeat("a", 32764)}}}
	if _, err := NewFilter(ok); err != nil {
		t.Errorf("32764-byte pattern: %v", err)
	}
}

func wantCode(t *testing.T, err error, code mongoerr.Code, msg string) {
	t.Helper()
	var me *mongoerr.Error
	if !errors.As(err, &me) {
		t.Errorf("error %v is not a *mongoerr.Error (want %d %q)", err, code, msg)
		return
	}
	if me.Code != code || (msg != "" && me.Msg != msg) {
		t.Errorf("error = %d %q; want %d %q", me.Code, me.Msg, code, msg)
	}
}
