package txnload

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mayflydb/mayfly/internal/txncheck"
)

// Collections the workloads use in MongoClient's database.
const (
	listsCollection    = "lists"
	accountsCollection = "accounts"
)

// MongoClient runs the workloads through the Go driver: each transaction
// in session.WithTransaction (which retries transient errors and unknown
// commit results), with read concern snapshot and write concern majority.
// A list is the document {_id: key, list: [...]}; an account is
// {_id: account, balance: n}.
type MongoClient struct {
	db *mongo.Database
}

// NewMongoClient runs the workloads in database db of client.
func NewMongoClient(client *mongo.Client, db string) *MongoClient {
	return &MongoClient{db: client.Database(db)}
}

// SetupListAppend starts the list-append workload from no lists. The
// collection exists before the first transaction, so no transaction has
// to create it.
func (m *MongoClient) SetupListAppend(ctx context.Context) error {
	if err := m.db.Collection(listsCollection).Drop(ctx); err != nil {
		return fmt.Errorf("txnload: drop %s: %w", listsCollection, err)
	}
	if err := m.db.CreateCollection(ctx, listsCollection); err != nil {
		return fmt.Errorf("txnload: create %s: %w", listsCollection, err)
	}
	return nil
}

// SetupBank starts the bank with total spread over accounts accounts.
func (m *MongoClient) SetupBank(ctx context.Context, accounts int, total int64) error {
	coll := m.db.Collection(accountsCollection)
	if err := coll.Drop(ctx); err != nil {
		return fmt.Errorf("txnload: drop %s: %w", accountsCollection, err)
	}
	docs := make([]any, accounts)
	for account := range accounts {
		balance := total / int64(accounts)
		if account == 0 {
			balance += total % int64(accounts)
		}
		docs[account] = bson.D{{Key: "_id", Value: account}, {Key: "balance", Value: balance}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("txnload: insert accounts: %w", err)
	}
	return nil
}

// transact runs body as one transaction and classifies the outcome: an
// error from the body of the last attempt means the driver aborted
// without committing (ErrAborted); an error after the body succeeded came
// from the commit, whose outcome is then unknown.
func (m *MongoClient) transact(ctx context.Context, body func(ctx context.Context) error) error {
	session, err := m.db.Client().StartSession()
	if err != nil {
		return fmt.Errorf("%w: start session: %w", ErrAborted, err)
	}
	defer session.EndSession(context.WithoutCancel(ctx))
	opts := options.Transaction().SetReadConcern(readconcern.Snapshot()).SetWriteConcern(writeconcern.Majority())
	bodyDone := false
	_, err = session.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		bodyDone = false
		if err := body(ctx); err != nil {
			return nil, err
		}
		bodyDone = true
		return nil, nil
	}, opts)
	if err != nil && !bodyDone {
		return fmt.Errorf("%w: %w", ErrAborted, err)
	}
	return err
}

// ListAppend runs the micro-ops as one transaction.
func (m *MongoClient) ListAppend(ctx context.Context, ops []txncheck.MicroOp) ([]txncheck.MicroOp, error) {
	var done []txncheck.MicroOp
	err := m.transact(ctx, func(ctx context.Context) error {
		done = append(done[:0], ops...) // a retried attempt reads afresh
		for i := range done {
			if err := m.runMicroOp(ctx, &done[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return done, err
}

func (m *MongoClient) runMicroOp(ctx context.Context, op *txncheck.MicroOp) error {
	coll := m.db.Collection(listsCollection)
	if op.Kind == txncheck.Append {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: op.Key}},
			bson.D{{Key: "$push", Value: bson.D{{Key: "list", Value: op.Value}}}}, options.UpdateOne().SetUpsert(true))
		return err
	}
	var doc struct {
		List []int `bson:"list"`
	}
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: op.Key}}).Decode(&doc)
	if errors.Is(err, mongo.ErrNoDocuments) {
		err = nil
	}
	op.List = doc.List
	return err
}

// Transfer moves amount between two accounts in one transaction.
func (m *MongoClient) Transfer(ctx context.Context, from, to int, amount int64) error {
	coll := m.db.Collection(accountsCollection)
	return m.transact(ctx, func(ctx context.Context) error {
		var source struct {
			Balance int64 `bson:"balance"`
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: from}}).Decode(&source); err != nil {
			return err
		}
		if source.Balance < amount {
			return ErrInsufficientFunds
		}
		moves := []struct {
			account int
			delta   int64
		}{{from, -amount}, {to, amount}}
		for _, move := range moves {
			_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: move.account}},
				bson.D{{Key: "$inc", Value: bson.D{{Key: "balance", Value: move.delta}}}})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadBalances reads every account in one snapshot.
func (m *MongoClient) ReadBalances(ctx context.Context) (map[int]int64, error) {
	var balances map[int]int64
	err := m.transact(ctx, func(ctx context.Context) error {
		cursor, err := m.db.Collection(accountsCollection).Find(ctx, bson.D{})
		if err != nil {
			return err
		}
		var accounts []struct {
			ID      int   `bson:"_id"`
			Balance int64 `bson:"balance"`
		}
		if err := cursor.All(ctx, &accounts); err != nil {
			return err
		}
		balances = make(map[int]int64, len(accounts))
		for _, a := range accounts {
			balances[a.ID] = a.Balance
		}
		return nil
	})
	return balances, err
}
