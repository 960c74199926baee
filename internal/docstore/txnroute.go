package docstore

import "go.mongodb.org/mongo-driver/v2/bson"

// The write path's group entry points inside a transaction: each
// document is one statement of the transaction, in order, as the group
// would apply them one by one.

// insertGroup is InsertGroup inside the transaction.
func (x *Txn) insertGroup(c *Collection, docs []GroupDoc, ordered bool) (errs []error, attempted int) {
	errs = make([]error, len(docs))
	for i, d := range docs {
		errs[i] = x.insert(c, d.Doc, d.Opt)
		if errs[i] != nil && ordered {
			return errs, i + 1
		}
	}
	return errs, len(docs)
}

// modifyEach is ModifyEach inside the transaction.
func (x *Txn) modifyEach(c *Collection, ids []any, opt WriteOptions, fn func(i int, doc bson.D) (Change, error)) (done int, err error) {
	for i, id := range ids {
		if _, err := x.modify(c, id, opt, func(doc bson.D) (Change, error) { return fn(i, doc) }); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// Within makes the scan read the transaction's view when x is set: its
// snapshot under its own writes.
func (d *DocIter) Within(x *Txn) *DocIter {
	if x != nil {
		d.reader = x.view()
	}
	return d
}
