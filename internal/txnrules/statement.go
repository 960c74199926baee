// Package txnrules holds mongod 8.0's rules for the statements of
// multi-document transactions and of retryable writes, as the command
// layer applies them: what a statement's lsid, txnNumber, stmtIds,
// autocommit, startTransaction and readConcern say; which commands and
// stages a transaction runs; the error labels drivers act on
// (TransientTransactionError, UnknownTransactionCommitResult,
// RetryableWriteError); and how currentOp and serverStatus report
// transactions. The transactions' state is internal/session's.
package txnrules

import (
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/cmdargs"
	"github.com/mayflydb/mayfly/internal/mongoerr"
	"github.com/mayflydb/mayfly/internal/session"
)

// commands are the commands mongod runs inside a transaction (besides
// count, refused with its own message); the others are refused with
// OperationNotSupportedInTransaction.
var commands = []string{
	"find", "getMore", "killCursors", "aggregate", "distinct",
	"insert", "update", "delete", "findAndModify", "bulkWrite",
	"create", "createIndexes",
	"commitTransaction", "abortTransaction",
}

// Commands are the commands run inside a transaction, for tests that
// must cover each of them.
func Commands() []string { return slices.Clone(commands) }

// IsStatement reports whether a command carries autocommit, which only
// a transaction's statements do.
func IsStatement(body bson.D) bool {
	_, ok := bsonutil.Field(body, "autocommit")
	return ok
}

// Statement reads a transaction statement's autocommit, txnNumber,
// startTransaction and read concern, and refuses a command or a
// pipeline stage mongod does not run inside a transaction.
func Statement(c cmdargs.Call) (session.TxnStatement, error) {
	st, err := statementFields(c)
	if err != nil {
		return st, err
	}
	if err := Allowed(c.Name); err != nil {
		return st, err
	}
	return st, checkPipeline(c)
}

func statementFields(c cmdargs.Call) (session.TxnStatement, error) {
	var st session.TxnStatement
	if v, _ := bsonutil.Field(c.Body, "autocommit"); v != false {
		return st, mongoerr.New(mongoerr.InvalidOptions, "autocommit must be false")
	}
	number, ok, err := TxnNumber(c)
	if err != nil {
		return st, err
	}
	if !ok {
		return st, mongoerr.New(mongoerr.InvalidOptions, "txnNumber must be provided for multi-document transactions")
	}
	st = session.TxnStatement{LSID: number.LSID, Label: number.Label, Number: number.Txn}
	if start, ok := bsonutil.Field(c.Body, "startTransaction"); ok {
		if start != true {
			return st, mongoerr.New(mongoerr.InvalidOptions, "startTransaction must be true")
		}
		st.Start = true
	}
	st.ReadConcern, err = readConcern(c, st.Start)
	return st, err
}

// readConcern is the read concern level a statement gives: only the
// first may give one, and only local, majority or snapshot.
func readConcern(c cmdargs.Call, start bool) (string, error) {
	d, err := c.OptDoc("readConcern")
	if err != nil || d == nil {
		return "", err
	}
	if !start {
		return "", mongoerr.New(mongoerr.InvalidOptions, "Only the first command in a transaction may specify a readConcern")
	}
	level, _ := bsonutil.Field(d, "level")
	switch level {
	case nil, "local", "majority", "snapshot":
		s, _ := level.(string)
		return s, nil
	}
	return "", mongoerr.New(mongoerr.InvalidOptions, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
}

// Allowed refuses the commands mongod refuses inside a transaction.
func Allowed(name string) error {
	if slices.Contains(commands, name) {
		return nil
	}
	if name == "count" {
		return mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run 'count' in a multi-document transaction. Please see http://dochub.mongodb.org/core/transaction-count for a recommended alternative.")
	}
	return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Cannot run '%s' in a multi-document transaction.", name)
}

// stagesOutsideTransactions are the aggregation stages mongod refuses
// inside a transaction: they write, or read beyond one snapshot.
var stagesOutsideTransactions = []string{"$out", "$merge", "$changeStream"}

// checkPipeline refuses an aggregate whose pipeline holds one of them,
// with the text of mongod's check before the pipeline is parsed.
func checkPipeline(c cmdargs.Call) error {
	if c.Name != "aggregate" {
		return nil
	}
	v, _ := bsonutil.Field(c.Body, "pipeline")
	stages, _ := v.(bson.A)
	for _, s := range stages {
		d, _ := s.(bson.D)
		if len(d) > 0 && slices.Contains(stagesOutsideTransactions, d[0].Key) {
			return mongoerr.Newf(mongoerr.OperationNotSupportedInTransaction, "Stage not supported inside of a multi-document transaction: %s", d[0].Key)
		}
	}
	return nil
}

// Number is a statement's txnNumber and the session it belongs to.
type Number struct {
	Txn int64
	// LSID is lsid.id, followed by lsid.uid when present.
	LSID []byte
	// Label is how errors name the session.
	Label string
}

// TxnNumber reads txnNumber (ok: present) and the session it belongs
// to.
func TxnNumber(c cmdargs.Call) (n Number, ok bool, err error) {
	v, ok := bsonutil.Field(c.Body, "txnNumber")
	if !ok {
		return Number{}, false, nil
	}
	txn, isInt := v.(int64)
	if !isInt {
		return Number{}, true, mongoerr.WrongType(c.Name, "txnNumber", v, "long")
	}
	lsid, label, err := sessionKey(c.Body)
	return Number{Txn: txn, LSID: lsid, Label: label}, true, err
}

// sessionKey reads lsid.id (and lsid.uid when present), and how errors
// name the session.
func sessionKey(body bson.D) ([]byte, string, error) {
	v, ok := bsonutil.Field(body, "lsid")
	d, isDoc := v.(bson.D)
	if !ok || !isDoc {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "Must specify an lsid with txnNumber")
	}
	idValue, _ := bsonutil.Field(d, "id")
	bin, isBin := idValue.(bson.Binary)
	if !isBin {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "lsid.id must be a UUID")
	}
	id := append([]byte(nil), bin.Data...)
	if uid, ok := bsonutil.Field(d, "uid"); ok {
		if b, isBin := uid.(bson.Binary); isBin {
			id = append(id, b.Data...)
		}
	}
	if len(id) > session.MaxLSID {
		return nil, "", mongoerr.New(mongoerr.InvalidOptions, "lsid is too long")
	}
	return id, fmt.Sprintf("%x", bin.Data), nil
}

// StmtIDs reads a retryable write's stmtIds, nil when it gives none.
func StmtIDs(c cmdargs.Call) ([]int32, error) {
	v, ok := bsonutil.Field(c.Body, "stmtIds")
	if !ok {
		return nil, nil
	}
	arr, isArr := v.(bson.A)
	if !isArr {
		return nil, mongoerr.WrongType(c.Name, "stmtIds", v, "array")
	}
	out := make([]int32, len(arr))
	for i, x := range arr {
		n, err := cmdargs.Int64(c.Name, "stmtIds", x)
		if err != nil {
			return nil, err
		}
		out[i] = int32(n)
	}
	return out, nil
}
