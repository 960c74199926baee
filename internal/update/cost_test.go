package update

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/fuzzlimit"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// costCase is an update whose cost must follow the size of its input and
// output: applied to fanOutDoc, it must finish within costBudget of CPU
// time with the result or error given.
type costCase struct {
	update  bson.D
	filters []bson.D
	code    mongoerr.Code // 0: success
}

// fanOutLen is the length of fanOutDoc's arrays: big enough that a cost
// per element times the length of an argument (or a copy of a large value
// per element) takes seconds, small enough to build in milliseconds.
const fanOutLen = 20000

// costBudget is far above what each case costs (tens of milliseconds) and
// far below what the quadratic or unbounded versions cost (seconds to
// minutes), in CPU time so that a loaded machine does not matter.
const costBudget = time.Second

// fanOutDoc has an array of fanOutLen distinct numbers, an array of as many
// empty arrays, and many empty arrays to pad.
func fanOutDoc() bson.D {
	nums, arrs := make(bson.A, fanOutLen), make(bson.A, fanOutLen)
	for i := range nums {
		nums[i], arrs[i] = int32(i), bson.A{}
	}
	d := bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: nums}, {Key: "arrs", Value: arrs}}
	for i := range 20 {
		d = append(d, bson.E{Key: fmt.Sprintf("p%d", i), Value: bson.A{}})
	}
	return d
}

// numbers returns n int32 values from start.
func numbers(start, n int) bson.A {
	a := make(bson.A, n)
	for i := range a {
		a[i] = int32(start + i)
	}
	return a
}

// costCases has a row for every update operator: each fans out over a
// large array, or takes a large argument, or both, where the operator
// allows it.
func costCases() map[string]costCase {
	each := func(v any) bson.D { return bson.D{{Key: "$each", Value: v}} }
	op := func(name, path string, v any) bson.D {
		return bson.D{{Key: name, Value: bson.D{{Key: path, Value: v}}}}
	}
	pads := bson.D{}
	for i := range 20 {
		pads = append(pads, bson.E{Key: fmt.Sprintf("p%d.1400000", i), Value: 1})
	}
	bigString := strings.Repeat("x", 10000)
	return map[string]costCase{
		// A copy of 10 kB per element is 200 MB of result: refused as
		// MongoDB refuses it, without building it.
		"$set":         {update: op("$set", "n.$[]", bigString), code: mongoerr.Location17419},
		"$setOnInsert": {update: op("$setOnInsert", "n.$[]", bigString), code: mongoerr.Location17419},
		"$unset":       {update: op("$unset", "n.$[]", 1)},
		"$min":         {update: op("$min", "n.$[]", 0)},
		"$max":         {update: op("$max", "n.$[x]", bigString), filters: []bson.D{{{Key: "x", Value: bson.D{{Key: "$gte", Value: 0}}}}}, code: mongoerr.Location17419},
		"$inc":         {update: op("$inc", "n.$[]", 1)},
		"$mul":         {update: op("$mul", "n.$[]", 2)},
		"$pop":         {update: op("$pop", "arrs.$[]", 1)},
		"$bit":         {update: op("$bit", "n.$[]", bson.D{{Key: "or", Value: 1}})},
		"$currentDate": {update: op("$currentDate", "n.$[]", true)},
		// 20 × 1400000 nulls of padding is 200 MB.
		"$rename": {update: bson.D{{Key: "$rename", Value: bson.D{{Key: "n", Value: "m"}}}, {Key: "$set", Value: pads}}, code: mongoerr.Location17419},
		// Each push puts 20000 values in each of 20000 arrays.
		"$push":     {update: op("$push", "arrs.$[]", each(numbers(0, fanOutLen))), code: mongoerr.Location17419},
		"$addToSet": {update: op("$addToSet", "n", each(numbers(fanOutLen/2, fanOutLen)))},
		"$pull":     {update: op("$pull", "n", bson.D{{Key: "$in", Value: numbers(fanOutLen/2, fanOutLen)}})},
		"$pullAll":  {update: op("$pullAll", "n", numbers(fanOutLen/2, fanOutLen))},
	}
}

func TestUpdateCostFollowsInputAndOutput(t *testing.T) {
	cases := costCases()
	checkCoversOperators(t, cases)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := Parse(c.update, c.filters)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			doc := fanOutDoc()
			start := fuzzlimit.ProcessCPU()
			_, _, err = u.Apply(doc, Context{Now: testNow, IsInsert: name == "$setOnInsert"})
			spent := fuzzlimit.ProcessCPU() - start
			if got := codeOf(err); got != c.code {
				t.Fatalf("error %v, want code %d", err, c.code)
			}
			t.Logf("spent %v of CPU", spent)
			if spent > costBudget {
				t.Fatalf("spent %v of CPU, budget %v", spent, costBudget)
			}
		})
	}
}

func codeOf(err error) mongoerr.Code {
	if err == nil {
		return 0
	}
	return mongoerr.As(err).Code
}

// checkCoversOperators compares the table with the operators parse.go
// recognizes (the cases of its operator switches and $rename), so that an
// operator added there without a row here fails.
func checkCoversOperators(t *testing.T, cases map[string]costCase) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "parse.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, _ := strconv.Unquote(lit.Value); isOperatorName(s) && operatorKnown(s) {
				names = append(names, s)
			}
		}
		return true
	})
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		if _, ok := cases[name]; !ok {
			t.Errorf("operator %s has no cost case", name)
		}
	}
	if len(names) != len(cases) {
		t.Errorf("parse.go names %d operators %v, the table %d", len(names), names, len(cases))
	}
}

func isOperatorName(s string) bool {
	return len(s) > 1 && s[0] == '$' && !strings.ContainsAny(s, ". ")
}

// operatorKnown reports whether Parse accepts name as an update operator.
func operatorKnown(name string) bool {
	_, err := Parse(bson.D{{Key: name, Value: bson.D{}}}, nil)
	return err == nil
}
