package docstore

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/keyenc"
)

// TestValidateReadsASnapshotWhileWritesGoOn pauses validate at its first
// document and makes, meanwhile, each kind of write that changes a
// collection's counts through the store (a replica set member's applies
// are TestValidatePinsOutsideAnApply's). Each must finish while validate waits (it held
// the collection's schema lock throughout before, and they waited for
// it), and validate must judge the collection as it was when it began:
// valid, with the records of then. A second validate sees the write.
func TestValidateReadsASnapshotWhileWritesGoOn(t *testing.T) {
	writes := []struct {
		name    string
		write   func(c *Collection) error
		records int64 // what the second validate finds
	}{
		{"insert", func(c *Collection) error {
			d, err := PrepareInsert(bson.D{{Key: "_id", Value: 10}, {Key: "n", Value: 10}})
			if err != nil {
				return err
			}
			return c.Insert(d, WriteOptions{})
		}, 7},
		{"update that grows a document", func(c *Collection) error {
			_, err := c.Modify(1, WriteOptions{}, setField("pad", string(make([]byte, 500))))
			return err
		}, 6},
		{"delete", func(c *Collection) error {
			_, err := c.Modify(2, WriteOptions{}, func(bson.D) (Change, error) { return Change{Kind: Remove}, nil })
			return err
		}, 5},
		{"transaction: two inserts and a delete", func(c *Collection) error {
			x := c.store.BeginTxn()
			for _, id := range []int{10, 11} {
				if err := x.Insert(c, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: id}}); err != nil {
					return err
				}
			}
			if _, err := x.Modify(c, 5, func(bson.D) (Change, error) { return Change{Kind: Remove}, nil }); err != nil {
				return err
			}
			return x.Commit(WriteOptions{})
		}, 7},
		{"TTL expiry", func(c *Collection) error {
			pass := c.BeginExpiry("t_1", c.store.clock.Now())
			for {
				res, err := pass.Next(1000)
				if err != nil || !res.More {
					return err
				}
			}
		}, 5},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			c := validColl(t)
			paused := false
			res, err := c.validate(context.Background(), func() {
				if paused {
					return
				}
				paused = true
				done := make(chan error, 1)
				go func() { done <- w.write(c) }()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("the write during validate: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the write waited for validate")
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Valid() || res.Records != 6 {
				t.Fatalf("validate during the write: valid %v, %d records (want 6), errors %v", res.Valid(), res.Records, res.Errors)
			}
			if after := mustValidate(t, c); !after.Valid() || after.Records != w.records {
				t.Fatalf("validate after the write: valid %v, %d records (want %d), errors %v", after.Valid(), after.Records, w.records, after.Errors)
			}
		})
	}
}

// TestValidatePinsOutsideAnApply holds a replica set member's apply open:
// its document is in storage and its count not yet published, as between
// an applied batch's commit and its counts. A validate started inside the
// span must judge the collection from after it.
func TestValidatePinsOutsideAnApply(t *testing.T) {
	s, _ := openStore(t)
	c, err := s.CreateCollection("db", "plain", CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		insert(t, c, bson.D{{Key: "_id", Value: i}})
	}
	raw, err := bson.Marshal(bson.D{{Key: "_id", Value: 3}})
	if err != nil {
		t.Fatal(err)
	}
	s.BeginApply()
	setKey(t, c, docKey(c.meta().ID, keyenc.AppendValue(nil, int32(3))), raw)
	type result struct {
		res *ValidateResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Validate(context.Background())
		done <- result{res, err}
	}()
	time.Sleep(30 * time.Millisecond) // validate's attempts meet the open span
	s.ApplyCounts(c.meta().ID, 1, int64(len(raw)))
	s.EndApply()
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if !got.res.Valid() || got.res.Records != 4 {
		t.Fatalf("valid %v, %d records (want 4), errors %v", got.res.Valid(), got.res.Records, got.res.Errors)
	}
}

// TestValidateStopsWaitingWithItsContext: a validate that cannot pin its
// view (an apply that never ends) ends with its context.
func TestValidateStopsWaitingWithItsContext(t *testing.T) {
	c := validColl(t)
	c.store.BeginApply()
	defer c.store.EndApply()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Validate(ctx); err == nil {
		t.Fatal("validate inside an apply that never ended returned no error")
	}
}

// TestStoredViewIsOneInstant: dbHash's view of several collections holds
// what they stored when it was taken, whatever is written to them while
// it reads one and then the other.
func TestStoredViewIsOneInstant(t *testing.T) {
	s, _ := openStore(t)
	var colls []*Collection
	for _, name := range []string{"a", "b"} {
		c, err := s.CreateCollection("db", name, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "before"}})
		colls = append(colls, c)
	}
	view := s.NewStoredView()
	defer view.Close()
	for _, c := range colls {
		insert(t, c, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: "after"}})
		if _, err := c.Modify(1, WriteOptions{}, setField("v", "after")); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range colls {
		var seen []string
		err := view.EachStored(c, func(raw []byte) error {
			seen = append(seen, bson.Raw(raw).Lookup("v").StringValue())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 || seen[0] != "before" {
			t.Fatalf("%s through the view: %v, want [before]", c.Namespace(), seen)
		}
		live := 0
		if err := c.EachStored(func([]byte) error { live++; return nil }); err != nil {
			t.Fatal(err)
		}
		if live != 2 {
			t.Fatalf("%s live: %d documents, want 2", c.Namespace(), live)
		}
	}
}
