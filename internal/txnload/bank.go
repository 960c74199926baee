package txnload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/mayflydb/mayfly/internal/txncheck"
)

// ErrInsufficientFunds is a transfer refused because the source account
// holds less than the amount; the client wraps it in ErrAborted.
var ErrInsufficientFunds = errors.New("txnload: insufficient funds")

// BankClient runs the bank workload's two transactions over accounts
// 0..n-1.
type BankClient interface {
	// Transfer moves amount from one account to another in one
	// transaction, refusing (ErrAborted, ErrInsufficientFunds) to take an
	// account below zero.
	Transfer(ctx context.Context, from, to int, amount int64) error
	// ReadBalances reads every account in one snapshot.
	ReadBalances(ctx context.Context) (map[int]int64, error)
}

// BankKind is a bank operation's kind.
type BankKind uint8

const (
	// Transfer moves money between two accounts.
	Transfer BankKind = iota + 1
	// ReadBalances reads all accounts.
	ReadBalances
)

// BankOp is one bank transaction; Balances is filled in by a read that
// committed.
type BankOp struct {
	Kind     BankKind
	From, To int
	Amount   int64
	Balances map[int]int64
}

// BankConfig is a bank load: half the transactions transfer 1..MaxTransfer
// between two random accounts of Accounts, half read every balance.
type BankConfig struct {
	Load
	Accounts    int
	MaxTransfer int64
}

// RunBank runs the load through client and records it in rec.
func RunBank(ctx context.Context, cfg BankConfig, client BankClient, rec *Recorder[BankOp]) error {
	if cfg.Accounts < 2 || cfg.MaxTransfer < 1 {
		return fmt.Errorf("txnload: the bank needs two accounts and a positive transfer, got %d and %d",
			cfg.Accounts, cfg.MaxTransfer)
	}
	return runLoad(ctx, cfg.Load, rec, workload[BankOp]{
		generate: func(rng *rand.Rand) BankOp { return generateBankOp(rng, cfg) },
		run: func(ctx context.Context, op BankOp) (BankOp, error) {
			if op.Kind == Transfer {
				return op, client.Transfer(ctx, op.From, op.To, op.Amount)
			}
			balances, err := client.ReadBalances(ctx)
			op.Balances = balances
			return op, err
		},
	})
}

func generateBankOp(rng *rand.Rand, cfg BankConfig) BankOp {
	if rng.IntN(2) == 0 {
		return BankOp{Kind: ReadBalances}
	}
	from := rng.IntN(cfg.Accounts)
	to := (from + 1 + rng.IntN(cfg.Accounts-1)) % cfg.Accounts
	return BankOp{Kind: Transfer, From: from, To: to, Amount: 1 + rng.Int64N(cfg.MaxTransfer)}
}

// BankResult is what CheckBank found: the operations by outcome, and the
// committed reads that broke the invariant, with up to maxBankExamples
// of them described.
type BankResult struct {
	Reads, Transfers, Failed, Indeterminate int
	WrongReads                              int
	Examples                                []string
}

const maxBankExamples = 8

// Valid reports whether every committed read saw every account, none
// below zero, summing to the total.
func (r BankResult) Valid() bool { return r.WrongReads == 0 }

// CheckBank checks a bank history against its invariant: every committed
// read of all balances, taken in one snapshot, sums to total, holds every
// account, and no balance is negative.
func CheckBank(events []Event[BankOp], accounts int, total int64) (BankResult, error) {
	pairs, err := Pair(events)
	if err != nil {
		return BankResult{}, err
	}
	var result BankResult
	for _, p := range pairs {
		switch {
		case p.Status == txncheck.Aborted:
			result.Failed++
		case p.Status == txncheck.Indeterminate:
			result.Indeterminate++
		case p.Op.Kind == Transfer:
			result.Transfers++
		default:
			result.Reads++
			result.checkRead(p, accounts, total)
		}
	}
	return result, nil
}

func (r *BankResult) checkRead(p Completed[BankOp], accounts int, total int64) {
	problem := balanceProblem(p.Op.Balances, accounts, total)
	if problem == "" {
		return
	}
	r.WrongReads++
	if len(r.Examples) < maxBankExamples {
		r.Examples = append(r.Examples, fmt.Sprintf("transaction %d (process %d) read %v: %s",
			p.Invocation.Txn, p.Invocation.Process, p.Op.Balances, problem))
	}
}

// balanceProblem says what is wrong with one snapshot of the balances, or
// "" when nothing is.
func balanceProblem(balances map[int]int64, accounts int, total int64) string {
	var sum int64
	for account := range accounts {
		balance, ok := balances[account]
		if !ok {
			return fmt.Sprintf("account %d is missing", account)
		}
		if balance < 0 {
			return fmt.Sprintf("account %d is negative", account)
		}
		sum += balance
	}
	if len(balances) != accounts {
		return fmt.Sprintf("%d accounts, want %d", len(balances), accounts)
	}
	if sum != total {
		return fmt.Sprintf("the balances sum to %d, want %d", sum, total)
	}
	return ""
}
