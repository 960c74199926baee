// Package exprtest classifies the expression operators by how their work
// grows with their input, with an input for each that grows: expr's unit
// tests and the integration tests hold tables over every operator against
// it (expr.OperatorNames), so a new operator fails both until it is
// classified here.
package exprtest

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Inputs is the document the looping operators read, each field of
// length n: a is 1..n, z is n zeros, s is n letters, csv n comma-separated
// parts, o a document of n fields, kv n {k, v} pairs.
func Inputs(n int) bson.D {
	a, z, kv := make(bson.A, n), make(bson.A, n), make(bson.A, n)
	o := make(bson.D, n)
	for i := range n {
		a[i], z[i] = int32(i+1), int32(0)
		k := "f" + strconv.Itoa(i)
		o[i] = bson.E{Key: k, Value: int32(i)}
		kv[i] = bson.D{{Key: "k", Value: k}, {Key: "v", Value: int32(i)}}
	}
	return bson.D{
		{Key: "a", Value: a}, {Key: "z", Value: z}, {Key: "kv", Value: kv}, {Key: "o", Value: o},
		{Key: "s", Value: strings.Repeat("x", n)},
		{Key: "csv", Value: strings.Repeat("x,", n-1) + "x"},
	}
}

// Looping is an operator whose work grows with its input.
type Looping struct {
	// Spec applies the operator to Inputs' fields.
	Spec bson.D
	// PerElement says the loop is Mayfly's own and counts a step per
	// element; otherwise its work is one pass of Go's library over one
	// value (a copy, a search, a comparison), which a value's 16 MiB
	// bound keeps to milliseconds, counted as one step per evaluation.
	PerElement bool
}

func op(name string, arg any) bson.D { return bson.D{{Key: name, Value: arg}} }

// LoopingOperators maps each looping operator to its row, over Inputs(n).
func LoopingOperators(n int) map[string]Looping {
	return map[string]Looping{
		"$in":              {op("$in", bson.A{-1, "$a"}), true},
		"$indexOfArray":    {op("$indexOfArray", bson.A{"$a", -1}), true},
		"$reverseArray":    {op("$reverseArray", "$a"), true},
		"$range":           {op("$range", bson.A{0, n}), true},
		"$map":             {op("$map", bson.D{{Key: "input", Value: "$a"}, {Key: "in", Value: "$$this"}}), true},
		"$filter":          {op("$filter", bson.D{{Key: "input", Value: "$a"}, {Key: "cond", Value: true}}), true},
		"$reduce":          {op("$reduce", bson.D{{Key: "input", Value: "$a"}, {Key: "initialValue", Value: 0}, {Key: "in", Value: "$$this"}}), true},
		"$setUnion":        {op("$setUnion", bson.A{"$a", "$z"}), true},
		"$setIntersection": {op("$setIntersection", bson.A{"$a", "$a"}), true},
		"$setDifference":   {op("$setDifference", bson.A{"$a", "$z"}), true},
		"$setEquals":       {op("$setEquals", bson.A{"$a", "$a"}), true},
		"$setIsSubset":     {op("$setIsSubset", bson.A{"$a", "$a"}), true},
		"$anyElementTrue":  {op("$anyElementTrue", bson.A{"$z"}), true},
		"$allElementsTrue": {op("$allElementsTrue", bson.A{"$a"}), true},
		"$sum":             {op("$sum", "$a"), true},
		"$avg":             {op("$avg", "$a"), true},
		"$min":             {op("$min", "$a"), true},
		"$max":             {op("$max", "$a"), true},
		"$stdDevPop":       {op("$stdDevPop", "$a"), true},
		"$stdDevSamp":      {op("$stdDevSamp", "$a"), true},
		"$mergeObjects":    {op("$mergeObjects", bson.A{"$o", "$o"}), true},
		"$objectToArray":   {op("$objectToArray", "$o"), true},
		"$arrayToObject":   {op("$arrayToObject", "$kv"), true},
		"$zip":             {op("$zip", bson.D{{Key: "inputs", Value: bson.A{"$a", "$z"}}}), true},
		"$sortArray":       {op("$sortArray", bson.D{{Key: "input", Value: "$a"}, {Key: "sortBy", Value: -1}}), true},
		"$regexFindAll":    {op("$regexFindAll", bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: ""}}), true},
		"$split":           {op("$split", bson.A{"$csv", ","}), true},
		"$concatArrays":    {op("$concatArrays", bson.A{"$a", "$z"}), false},
		"$slice":           {op("$slice", bson.A{"$a", n}), false},
		"$eq":              {op("$eq", bson.A{"$a", "$a"}), false},
		"$ne":              {op("$ne", bson.A{"$a", "$a"}), false},
		"$gt":              {op("$gt", bson.A{"$a", "$a"}), false},
		"$gte":             {op("$gte", bson.A{"$a", "$a"}), false},
		"$lt":              {op("$lt", bson.A{"$a", "$a"}), false},
		"$lte":             {op("$lte", bson.A{"$a", "$a"}), false},
		"$cmp":             {op("$cmp", bson.A{"$a", "$a"}), false},
		"$concat":          {op("$concat", bson.A{"$s", "$s"}), false},
		"$toLower":         {op("$toLower", "$s"), false},
		"$toUpper":         {op("$toUpper", "$s"), false},
		"$strcasecmp":      {op("$strcasecmp", bson.A{"$s", "$s"}), false},
		"$substr":          {op("$substr", bson.A{"$s", 0, n}), false},
		"$substrBytes":     {op("$substrBytes", bson.A{"$s", 0, n}), false},
		"$substrCP":        {op("$substrCP", bson.A{"$s", 0, n}), false},
		"$strLenCP":        {op("$strLenCP", "$s"), false},
		"$indexOfBytes":    {op("$indexOfBytes", bson.A{"$s", "y"}), false},
		"$indexOfCP":       {op("$indexOfCP", bson.A{"$s", "y"}), false},
		"$trim":            {op("$trim", bson.D{{Key: "input", Value: "$s"}, {Key: "chars", Value: "y"}}), false},
		"$ltrim":           {op("$ltrim", bson.D{{Key: "input", Value: "$s"}, {Key: "chars", Value: "y"}}), false},
		"$rtrim":           {op("$rtrim", bson.D{{Key: "input", Value: "$s"}, {Key: "chars", Value: "y"}}), false},
		"$regexMatch":      {op("$regexMatch", bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "y"}}), false},
		"$regexFind":       {op("$regexFind", bson.D{{Key: "input", Value: "$s"}, {Key: "regex", Value: "y"}}), false},
		"$getField":        {op("$getField", bson.D{{Key: "field", Value: "absent"}, {Key: "input", Value: "$o"}}), false},
		"$setField":        {op("$setField", bson.D{{Key: "field", Value: "new"}, {Key: "input", Value: "$o"}, {Key: "value", Value: 1}}), false},
		"$unsetField":      {op("$unsetField", bson.D{{Key: "field", Value: "f0"}, {Key: "input", Value: "$o"}}), false},
	}
}

// ConstantOperators maps each operator whose work cannot grow with the
// data to the reason; each evaluation still counts one step.
func ConstantOperators() map[string]string {
	return map[string]string{
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
}
