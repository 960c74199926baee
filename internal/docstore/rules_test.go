package docstore

import (
	"bytes"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// collectionRule is one rule of a collection, set by its options, with the
// error a document breaking it gets.
type collectionRule struct {
	name       string
	options    bson.D
	code       mongoerr.Code
	bypassable bool // bypassDocumentValidation skips it
	newOnly    bool // it holds for new documents only
}

var collectionRules = []collectionRule{
	{name: "validator", options: bson.D{{Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 0}}}}}}, code: mongoerr.DocumentValidationFailure, bypassable: true},
	{name: "timeseries", options: bson.D{{Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}}, code: mongoerr.BadValue},
	{name: "collated _id", options: bson.D{{Key: "collation", Value: bson.D{{Key: "locale", Value: "fr"}}}}, code: mongoerr.BadValue, newOnly: true},
}

// writeEntry is one way into the docstore write path, and the commands
// that take it. kind says what it does with the document it is given:
// "insert" (a new document, _id "new"), "replace" (over the live _id 1) or
// "remove".
type writeEntry struct {
	method, users, kind string
	write               func(c *Collection, doc bson.D, opt WriteOptions) error
}

func replaceWith(doc bson.D, whole bool) func(bson.D) (Change, error) {
	return func(bson.D) (Change, error) { return Change{Kind: Replace, Doc: doc, Whole: whole}, nil }
}

var writeEntries = []writeEntry{
	{method: "Insert", users: "insert, applyOps insert, an update's upsert", kind: "insert",
		write: func(c *Collection, doc bson.D, opt WriteOptions) error { return c.Insert(doc, opt) }},
	{method: "InsertGroup", users: "insert, bulkWrite, $out", kind: "insert",
		write: func(c *Collection, doc bson.D, opt WriteOptions) error {
			errs, _ := c.InsertGroup([]GroupDoc{{Doc: doc, Opt: opt}}, true)
			return errs[0]
		}},
	{method: "Modify", users: "update with operators, findAndModify, applyOps update", kind: "replace",
		write: func(c *Collection, doc bson.D, opt WriteOptions) error {
			_, err := c.Modify(1, opt, replaceWith(doc, false))
			return err
		}},
	{method: "Modify", users: "replacement, findAndModify replace, $merge by _id", kind: "replace",
		write: func(c *Collection, doc bson.D, opt WriteOptions) error {
			_, err := c.Modify(1, opt, replaceWith(doc, true))
			return err
		}},
	{method: "ModifyGroup", users: "updateMany, $merge whenMatched", kind: "replace",
		write: func(c *Collection, doc bson.D, opt WriteOptions) error {
			_, err := c.ModifyGroup([]any{1}, opt, func(_ int, cur bson.D) (Change, error) { return replaceWith(doc, true)(cur) })
			return err
		}},
	{method: "ModifyGroup", users: "$merge whenNotMatched insert, upserts in groups", kind: "insert",
		write: func(c *Collection, doc bson.D, opt WriteOptions) error {
			_, err := c.ModifyGroup([]any{"new"}, opt, func(int, bson.D) (Change, error) { return Change{Kind: Insert, Doc: doc}, nil })
			return err
		}},
	{method: "ModifyEach", users: "update and bulkWrite statements in groups", kind: "replace",
		write: func(c *Collection, doc bson.D, opt WriteOptions) error {
			_, err := c.ModifyEach([]any{1}, opt, nil, func(_ int, cur bson.D) (Change, error) { return replaceWith(doc, false)(cur) })
			return err
		}},
	{method: "RemoveGroup", users: "delete, applyOps delete", kind: "remove",
		write: func(c *Collection, _ bson.D, opt WriteOptions) error {
			_, err := c.RemoveGroup([]any{1}, opt, func(bson.D) (bool, error) { return true, nil })
			return err
		}},
}

// TestEveryWritePathKeepsTheCollectionRules writes a document breaking
// each rule through each entry point, with no validation option set, and
// with BypassValidation: no write path needs to remember the rules.
func TestEveryWritePathKeepsTheCollectionRules(t *testing.T) {
	s, clk := openStore(t)
	for ri, rule := range collectionRules {
		for ei, entry := range writeEntries {
			for _, bypass := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s(%s)/bypass=%v", rule.name, entry.method, entry.users, bypass)
				c, err := s.CreateCollection("db", fmt.Sprintf("c%d_%d_%v", ri, ei, bypass), CreateOptions{Raw: rule.options})
				if err != nil {
					t.Fatal(err)
				}
				insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "t", Value: date(clk.Now())}})
				bad := bson.D{{Key: "_id", Value: any("new")}, {Key: "a", Value: -1}}
				if entry.kind == "replace" {
					bad[0].Value = 1
				}
				err = entry.write(c, bad, WriteOptions{BypassValidation: bypass})
				want := rule.code
				if entry.kind == "remove" || (rule.newOnly && entry.kind != "insert") || (bypass && rule.bypassable) {
					want = 0
				}
				if got := codeOf(err); got != want {
					t.Errorf("%s: code %d (%v), want %d", name, got, err, want)
				}
			}
		}
	}
}

func codeOf(err error) mongoerr.Code {
	if err == nil {
		return 0
	}
	return mongoerr.As(err).Code
}

// TestWriteEntriesCoverTheWritePath fails when a write method joins
// Collection without a row in writeEntries.
func TestWriteEntriesCoverTheWritePath(t *testing.T) {
	optType, groupType := reflect.TypeOf(WriteOptions{}), reflect.TypeOf([]GroupDoc{})
	typ := reflect.TypeOf(&Collection{})
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		writes := false
		for j := range m.Type.NumIn() {
			writes = writes || m.Type.In(j) == optType || m.Type.In(j) == groupType
		}
		has := slices.ContainsFunc(writeEntries, func(e writeEntry) bool { return e.method == m.Name })
		if writes && !has {
			t.Errorf("Collection.%s writes documents but has no row in writeEntries", m.Name)
		}
	}
}

// TestValidatorCompiledOncePerCatalogVersion checks that writes reuse the
// compiled validator and that collMod's new options replace it.
func TestValidatorCompiledOncePerCatalogVersion(t *testing.T) {
	s, _ := openStore(t)
	gt := func(n int) bson.D {
		return bson.D{{Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: n}}}}}}
	}
	c, err := s.CreateCollection("db", "v", CreateOptions{Raw: gt(0)})
	if err != nil {
		t.Fatal(err)
	}
	first := c.state.Load().validator
	if first == nil {
		t.Fatal("no validator compiled at create")
	}
	for i := range 5 {
		// An array field makes the index below multikey: a catalog change
		// that leaves the options, and so the validator, as they were.
		insert(t, c, bson.D{{Key: "_id", Value: i}, {Key: "a", Value: 5}, {Key: "tags", Value: bson.A{i, i + 1}}})
		if i == 0 {
			mustIndex(t, c, bson.D{{Key: "key", Value: bson.D{{Key: "tags", Value: 1}}}, {Key: "name", Value: "tags_1"}})
			first = c.state.Load().validator
		}
	}
	if got := c.state.Load().validator; got != first {
		t.Fatal("a write compiled the validator again")
	}
	e := c.Edit()
	e.SetOptions(gt(10))
	if err := e.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if c.state.Load().validator == first {
		t.Fatal("collMod kept the old compiled validator")
	}
	err = c.Insert(bson.D{{Key: "_id", Value: 9}, {Key: "a", Value: 5}}, WriteOptions{})
	if codeOf(err) != mongoerr.DocumentValidationFailure {
		t.Fatalf("after collMod to a > 10, a: 5 gave %v, want 121", err)
	}
}

// TestValidationActionWarnLogs checks that action warn stores the document
// and logs it, with no document content in the line.
func TestValidationActionWarnLogs(t *testing.T) {
	s, _ := openStore(t)
	var buf bytes.Buffer
	s.logger = slog.New(slog.NewTextHandler(&buf, nil))
	opts := bson.D{{Key: "validator", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "validationAction", Value: "warn"}}
	c, err := s.CreateCollection("db", "w", CreateOptions{Raw: opts})
	if err != nil {
		t.Fatal(err)
	}
	insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "secret"}})
	if !strings.Contains(buf.String(), "Document would fail validation") || strings.Contains(buf.String(), "secret") {
		t.Fatalf("log: %q", buf.String())
	}
}
