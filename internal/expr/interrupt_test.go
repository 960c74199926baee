package expr

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// interruptN is the size of every input below: large enough that a loop
// which looks at its guard once per element is told from one that looks
// once per call.
const interruptN = 2000

// interruptDoc holds the inputs the rows read: a is 1..n, z is n zeros,
// s is n letters, csv n comma-separated parts, o a document of n fields,
// kv n {k, v} pairs.
func interruptDoc() bson.D {
	a, z, kv := make(bson.A, interruptN), make(bson.A, interruptN), make(bson.A, interruptN)
	o := make(bson.D, interruptN)
	for i := range interruptN {
		a[i], z[i] = int32(i+1), int32(0)
		k := "f" + strconv.Itoa(i)
		o[i] = bson.E{Key: k, Value: int32(i)}
		kv[i] = bson.D{{Key: "k", Value: k}, {Key: "v", Value: int32(i)}}
	}
	return bson.D{
		{Key: "a", Value: a}, {Key: "z", Value: z}, {Key: "kv", Value: kv}, {Key: "o", Value: o},
		{Key: "s", Value: strings.Repeat("x", interruptN)},
		{Key: "csv", Value: strings.Repeat("x,", interruptN-1) + "x"},
	}
}

func op(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }

// loopingOperators are the operators whose work grows with their input:
// each row's evaluation must count at least minSteps steps on its Guard,
// minSteps being the input's length for a loop of Mayfly's own, and 1 for
// a single pass of Go's library over one value (a copy, a search, a
// comparison), which a value's 16 MiB bound keeps to milliseconds.
var loopingOperators = map[string]struct {
	spec     any
	minSteps uint64
}{
	"$in":              {op("$in", bson.A{-1, "$a"}), interruptN},
	"$indexOfArray":    {op("$indexOfArray", bson.A{"$a", -1}), interruptN},
	"$reverseArray":    {op("$reverseArray", "$a"), interruptN},
	"$range":           {op("$range", bson.A{0, interruptN}), interruptN},
	"$map":             {op("$map", bson.D{{Key: "input", Value: "$a"}, {Key: "in", Value: "$$this"}}), interruptN},
	"$filter":          {op("$filter", bson.D{{Key: "input", Value: "$a"}, {Key: "cond", Value: true}}), interruptN},
	"$reduce":          {op("$reduce", bson.D{{Key: "input", Value: "$a"}, {Key: "initialValue", Value: 0}, {Key: "in", Value: "$$this"}}), interruptN},
	"$setUnion":        {op("$setUnion", bson.A{"$a", "$z"}), interruptN},
	"$setIntersection": {op("$setIntersection", bson.A{"$a", "$a"}), interruptN},
	"$setDifference":   {op("$setDifference", bson.A{"$a", "$z"}), interruptN},
	"$setEquals":       {op("$setEquals", bson.A{"$a", "$a"}), interruptN},
	"$setIsSubset":     {op("$setIsSubset", bson.A{"$a", "$a"}), interruptN},
	"$anyElementTrue":  {op("$anyElementTrue", bson.A{"$z"}), interruptN},
	"$allElementsTrue": {op("$allElementsTrue", bson.A{"$a"}), interruptN},
	"$sum":             {op("$sum", "$a"), interruptN},
	"$avg":             {op("$avg", "$a"), interruptN},
	"$min":             {op("$min", "$a"), interruptN},
	"$max":             {op("$max", "$a"), interruptN},
	"$stdDevPop":       {op("$stdDevPop", "$a"), interruptN},
	"$stdDevSamp":      {op("$stdDevSamp", "$a"), interruptN},
	"$mergeObjects":    {op("$mergeObjects", bson.A{"$o", "$o"}), 2 * interruptN},
	"$objectToArray":   {op("$objectToArray", "$o"), interruptN},
	"$arrayToObject":   {op("$arrayToObject", "$kv"), interruptN},
	"$zip":             {op("$zip", bson.D{{Key: "inputs", Value: bson.A{"$a", "$z"}}}), interruptN},
	"$sortArray":       {op("$sortArray", bson.D{{Key: "input", Value: "$a"}, {Key: "sortBy", Value: -1}}), interruptN},
	"$regexFindAll":    {op("$regexFindAll", bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: ""}}), interruptN},
	"$split":           {op("$split", bson.A{"$csv", ","}), interruptN},
	"$concatArrays":    {op("$concatArrays", bson.A{"$a", "$z"}), 1},
	"$slice":           {op("$slice", bson.A{"$a", interruptN}), 1},
	"$eq":              {op("$eq", bson.A{"$a", "$a"}), 1},
	"$ne":              {op("$ne", bson.A{"$a", "$a"}), 1},
	"$gt":              {op("$gt", bson.A{"$a", "$a"}), 1},
	"$gte":             {op("$gte", bson.A{"$a", "$a"}), 1},
	"$lt":              {op("$lt", bson.A{"$a", "$a"}), 1},
	"$lte":             {op("$lte", bson.A{"$a", "$a"}), 1},
	"$cmp":             {op("$cmp", bson.A{"$a", "$a"}), 1},
	"$concat":          {op("$concat", bson.A{"$s", "$s"}), 1},
	"$toLower":         {op("$toLower", "$s"), 1},
	"$toUpper":         {op("$toUpper", "$s"), 1},
	"$strcasecmp":      {op("$strcasecmp", bson.A{"$s", "$s"}), 1},
	"$substr":          {op("$substr", bson.A{"$s", 0, interruptN}), 1},
	"$substrBytes":     {op("$substrBytes", bson.A{"$s", 0, interruptN}), 1},
	"$substrCP":        {op("$substrCP", bson.A{"$s", 0, interruptN}), 1},
	"$strLenCP":        {op("$strLenCP", "$s"), 1},
	"$indexOfBytes":    {op("$indexOfBytes", bson.A{"$s", "y"}), 1},
	"$indexOfCP":       {op("$indexOfCP", bson.A{"$s", "y"}), 1},
	"$trim":            {op("$trim", bson.D{{Key: "input", Value: "$s"}, {Key: "chars", Value: "y"}}), 1},
	"$ltrim":           {op("$ltrim", bson.D{{Key: "input", Value: "$s"}, {Key: "chars", Value: "y"}}), 1},
	"$rtrim":           {op("$rtrim", bson.D{{Key: "input", Value: "$s"}, {Key: "chars", Value: "y"}}), 1},
	"$regexMatch":      {op("$regexMatch", bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "y"}}), 1},
	"$regexFind":       {op("$regexFind", bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "y"}}), 1},
	"$getField":        {op("$getField", bson.D{{Key: "field", Value: "absent"}, {Key: "input", Value: "$o"}}), 1},
	"$setField":        {op("$setField", bson.D{{Key: "field", Value: "new"}, {Key: "input", Value: "$o"}, {Key: "value", Value: 1}}), 1},
	"$unsetField":      {op("$unsetField", bson.D{{Key: "field", Value: "f0"}, {Key: "input", Value: "$o"}}), 1},
}

// constantOperators are the operators whose work cannot grow with the
// data, each with the reason; each evaluation still counts one step.
var constantOperators = map[string]string{
	"$abs": "one number", "$ceil": "one number", "$floor": "one number", "$sqrt": "one number",
	"$exp": "one number", "$ln": "one number", "$log10": "one number", "$log": "two numbers",
	"$pow": "two numbers", "$round": "one number", "$trunc": "one number", "$subtract": "two numbers or dates",
	"$divide": "two numbers", "$mod": "two numbers",
	"$add":      "its arguments, whose number the expression fixes",
	"$multiply": "its arguments, whose number the expression fixes",
	"$and":      "its arguments, whose number the expression fixes",
	"$or":       "its arguments, whose number the expression fixes",
	"$not":      "one value's truth", "$cond": "one branch", "$ifNull": "its arguments, whose number the expression fixes",
	"$switch":  "its branches, whose number the expression fixes",
	"$let":     "binds variables; its body's operators count their own steps",
	"$literal": "a constant", "$const": "a constant",
	"$size": "an array's length", "$arrayElemAt": "one index", "$first": "one index", "$last": "one index",
	"$isArray": "a type test", "$type": "a type test", "$isNumber": "a type test", "$rand": "one number",
	"$strLenBytes": "a string's length",
	"$convert":     "one scalar conversion", "$toString": "one scalar conversion", "$toInt": "one scalar conversion",
	"$toLong": "one scalar conversion", "$toDouble": "one scalar conversion", "$toDecimal": "one scalar conversion",
	"$toBool": "one scalar conversion", "$toDate": "one scalar conversion", "$toObjectId": "one scalar conversion",
	"$dateToString": "one date, a format the expression fixes", "$dateAdd": "one date", "$dateSubtract": "one date",
	"$dateDiff": "two dates", "$dateFromParts": "one date", "$dateToParts": "one date", "$dateTrunc": "one date",
	"$year": "one date", "$month": "one date", "$dayOfMonth": "one date", "$hour": "one date", "$minute": "one date",
	"$second": "one date", "$millisecond": "one date", "$dayOfYear": "one date", "$dayOfWeek": "one date",
	"$week": "one date", "$isoWeek": "one date", "$isoWeekYear": "one date", "$isoDayOfWeek": "one date",
}

// TestEveryOperatorIsClassified: each registered operator is either a
// row of loopingOperators or has its reason in constantOperators, so a
// new operator fails here until someone decides which.
func TestEveryOperatorIsClassified(t *testing.T) {
	registered := map[string]bool{}
	for _, name := range OperatorNames() {
		registered[name] = true
		_, loops := loopingOperators[name]
		_, constant := constantOperators[name]
		if loops == constant {
			t.Errorf("%s: in loopingOperators %v, in constantOperators %v; it must be in exactly one", name, loops, constant)
		}
	}
	for name := range loopingOperators {
		if !registered[name] {
			t.Errorf("loopingOperators has %s, which is not an operator", name)
		}
	}
	for name := range constantOperators {
		if !registered[name] {
			t.Errorf("constantOperators has %s, which is not an operator", name)
		}
	}
}

// TestLoopingOperatorsLookAtTheGuard: every looping operator counts its
// steps on the Guard (at least one per element where the loop is
// Mayfly's), and a Guard whose operation has ended stops it with the
// operation's error.
func TestLoopingOperatorsLookAtTheGuard(t *testing.T) {
	doc := interruptDoc()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for name, row := range loopingOperators {
		t.Run(name, func(t *testing.T) {
			e := mustCompile(t, row.spec)
			g := NewGuard(context.Background())
			if _, err := e.Eval(doc, WithGuard(nil, g)); err != nil {
				t.Fatalf("uninterrupted: %v", err)
			}
			if g.Steps() < row.minSteps {
				t.Errorf("counted %d steps over %d elements, want at least %d", g.Steps(), interruptN, row.minSteps)
			}
			if _, err := e.Eval(doc, WithGuard(nil, NewGuard(ended))); codeOf(err) != mongoerr.Interrupted {
				t.Errorf("with its operation ended: %v, want Interrupted", err)
			}
		})
	}
}
