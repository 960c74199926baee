package expr

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// exprCase evaluates expr (the value of "e" in extended JSON) against doc.
// Exactly one of want (the value of "v"), missing, or code is expected.
type exprCase struct {
	doc     string
	expr    string
	want    string
	missing bool
	code    int
	msg     string // optional: substring of the error message
}

const sampleDoc = `{"_id": 1, "a": 5, "b": 2.5, "s": "Hello", "n": null, "arr": [1, 2, 3],
	"docs": [{"x": 1}, {"x": 2}, {"y": 3}, 7], "sub": {"x": {"y": 9}}, "l": {"$numberLong": "7"},
	"d": {"$date": "2021-03-04T05:06:07.089Z"}, "dec": {"$numberDecimal": "1.5"}, "t": true, "f": false}`

func runExprCases(t *testing.T, cases map[string]exprCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := sampleDoc
			if tc.doc != "" {
				doc = tc.doc
			}
			got, err := evalString(t, doc, tc.expr)
			checkResult(t, tc, got, err)
		})
	}
}

func evalString(t *testing.T, doc, expr string) (any, error) {
	t.Helper()
	e, err := Compile(field(t, `{"e": `+expr+`}`, "e"))
	if err != nil {
		return nil, err
	}
	vars := map[string]any{"NOW": bson.DateTime(1000), "uv": int32(42)}
	return e.Eval(ejson(t, doc), vars)
}

func checkResult(t *testing.T, tc exprCase, got any, err error) {
	t.Helper()
	switch {
	case tc.code != 0:
		if int(errCode(err)) != tc.code {
			t.Fatalf("want error %d, got %v (value %v)", tc.code, err, got)
		}
		if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
			t.Fatalf("error %q does not contain %q", err, tc.msg)
		}
	case err != nil:
		t.Fatalf("unexpected error: %v", err)
	case tc.missing:
		if !IsMissing(got) {
			t.Fatalf("want missing, got %#v", got)
		}
	default:
		want := field(t, `{"v": `+tc.want+`}`, "v")
		if !sameValue(got, want) {
			t.Fatalf("got %s (%T), want %s (%T)", formatValue(got), got, formatValue(want), want)
		}
	}
}

func TestLiteralsAndPaths(t *testing.T) {
	runExprCases(t, map[string]exprCase{
		"int literal":        {expr: `3`, want: `3`},
		"string literal":     {expr: `"x"`, want: `"x"`},
		"field":              {expr: `"$a"`, want: `5`},
		"nested field":       {expr: `"$sub.x.y"`, want: `9`},
		"absent field":       {expr: `"$nope"`, missing: true},
		"path through array": {expr: `"$docs.x"`, want: `[1, 2]`},
		"array index path":   {expr: `"$arr.0"`, want: `[]`},
		"ROOT":               {doc: `{"a": 1}`, expr: `"$$ROOT"`, want: `{"a": 1}`},
		"CURRENT path":       {expr: `"$$CURRENT.a"`, want: `5`},
		"REMOVE":             {expr: `"$$REMOVE"`, missing: true},
		"NOW":                {expr: `"$$NOW"`, want: `{"$date": {"$numberLong": "1000"}}`},
		"user var":           {expr: `"$$uv"`, want: `42`},
		"undefined var":      {expr: `"$$nope"`, code: 17276, msg: "Use of undefined variable: nope"},
		"bad var name":       {expr: `"$$1x"`, code: 16870},
		"lone dollar":        {expr: `"$"`, code: 16872},
		"empty component":    {expr: `"$a..b"`, code: 15998},
		"dollar component":   {expr: `"$a.$b"`, code: 16410},
		"trailing dot":       {expr: `"$a."`, code: 40353},
		"literal":            {expr: `{"$literal": "$a"}`, want: `"$a"`},
		"object expression":  {expr: `{"x": "$a", "y": "$nope", "z": {"$add": [1, 1]}}`, want: `{"x": 5, "z": 2}`},
		"array expression":   {expr: `["$a", "$nope"]`, want: `[5, null]`},
		"unknown operator":   {expr: `{"$foo": 1}`, code: 168, msg: "Unrecognized expression '$foo'"},
		"two operators":      {expr: `{"$add": [1], "$abs": 1}`, code: 15983},
		"dollar field name":  {expr: `{"a": 1, "$b": 2}`, code: 16410},
		"dotted field name":  {expr: `{"a.b": 1}`, code: 16412},
		"arity":              {expr: `{"$size": [[1], [2]]}`, code: 16020, msg: "Expression $size takes exactly 1 arguments. 2 were passed in."},
		"ranged arity":       {expr: `{"$round": [1, 2, 3]}`, code: 28667},
		"clustertime":        {expr: `"$$CLUSTER_TIME"`, code: 10071},
	})
}

func TestArithmetic(t *testing.T) {
	runExprCases(t, map[string]exprCase{
		"add ints":             {expr: `{"$add": [1, 2]}`, want: `3`},
		"add int overflow":     {expr: `{"$add": [2147483647, 1]}`, want: `{"$numberLong": "2147483648"}`},
		"add long":             {expr: `{"$add": ["$l", 1]}`, want: `{"$numberLong": "8"}`},
		"add double":           {expr: `{"$add": [1, 0.5]}`, want: `1.5`},
		"add decimal":          {expr: `{"$add": ["$dec", 1]}`, want: `{"$numberDecimal": "2.5"}`},
		"add null":             {expr: `{"$add": [1, "$n"]}`, want: `null`},
		"add missing":          {expr: `{"$add": [1, "$nope"]}`, want: `null`},
		"add string":           {expr: `{"$add": [1, "x"]}`, code: 16554, msg: "$add only supports numeric or date types, not string"},
		"add date":             {expr: `{"$add": ["$d", 1000]}`, want: `{"$date": "2021-03-04T05:06:08.089Z"}`},
		"add two dates":        {expr: `{"$add": ["$d", "$d"]}`, code: 16612},
		"subtract":             {expr: `{"$subtract": [5, 7]}`, want: `-2`},
		"subtract dates":       {expr: `{"$subtract": ["$d", {"$subtract": ["$d", 60000]}]}`, want: `{"$numberLong": "60000"}`},
		"subtract str":         {expr: `{"$subtract": ["x", 1]}`, code: 16556},
		"subtract from date":   {expr: `{"$subtract": ["$d", "x"]}`, code: 16613},
		"multiply":             {expr: `{"$multiply": [2, 3, 4]}`, want: `24`},
		"multiply long ovf":    {expr: `{"$multiply": [{"$numberLong": "9223372036854775807"}, 2]}`, want: `1.8446744073709552e19`},
		"multiply decimal":     {expr: `{"$multiply": ["$dec", 2]}`, want: `{"$numberDecimal": "3.0"}`},
		"multiply bad":         {expr: `{"$multiply": [2, true]}`, code: 16555},
		"divide":               {expr: `{"$divide": [7, 2]}`, want: `3.5`},
		"divide by zero":       {expr: `{"$divide": [7, 0]}`, code: 16608},
		"divide decimal":       {expr: `{"$divide": [{"$numberDecimal": "10"}, 4]}`, want: `{"$numberDecimal": "2.5"}`},
		"divide bad":           {expr: `{"$divide": ["a", 2]}`, code: 16609, msg: "$divide only supports numeric types, not string and int"},
		"mod":                  {expr: `{"$mod": [7, 3]}`, want: `1`},
		"mod long":             {expr: `{"$mod": ["$l", 4]}`, want: `{"$numberLong": "3"}`},
		"mod double":           {expr: `{"$mod": [7.5, 2]}`, want: `1.5`},
		"mod zero":             {expr: `{"$mod": [7, 0]}`, code: 16610},
		"abs":                  {expr: `{"$abs": -3}`, want: `3`},
		"abs null":             {expr: `{"$abs": null}`, want: `null`},
		"abs string":           {expr: `{"$abs": "x"}`, code: 28765},
		"abs int min":          {expr: `{"$abs": -2147483648}`, want: `{"$numberLong": "2147483648"}`},
		"ceil":                 {expr: `{"$ceil": 1.2}`, want: `2.0`},
		"floor":                {expr: `{"$floor": -1.2}`, want: `-2.0`},
		"floor int":            {expr: `{"$floor": 3}`, want: `3`},
		"round":                {expr: `{"$round": [2.675, 2]}`, want: `2.67`},
		"round half even":      {expr: `{"$round": 2.5}`, want: `2.0`},
		"round int neg prec":   {expr: `{"$round": [1234, -2]}`, want: `1200`},
		"round decimal":        {expr: `{"$round": [{"$numberDecimal": "1.25"}, 1]}`, want: `{"$numberDecimal": "1.2"}`},
		"round bad precision":  {expr: `{"$round": [1, 101]}`, code: 51083},
		"trunc":                {expr: `{"$trunc": [-2.77, 1]}`, want: `-2.7`},
		"sqrt":                 {expr: `{"$sqrt": 16}`, want: `4.0`},
		"sqrt negative":        {expr: `{"$sqrt": -1}`, code: 28714},
		"pow":                  {expr: `{"$pow": [2, 10]}`, want: `1024`},
		"pow overflow":         {expr: `{"$pow": [10, 30]}`, want: `1e30`},
		"pow zero negative":    {expr: `{"$pow": [0, -1]}`, code: 28764},
		"exp":                  {expr: `{"$exp": 0}`, want: `1.0`},
		"ln":                   {expr: `{"$ln": 1}`, want: `0.0`},
		"ln bad":               {expr: `{"$ln": 0}`, code: 28766},
		"log":                  {expr: `{"$log": [100, 10]}`, want: `2.0`},
		"log bad base":         {expr: `{"$log": [100, 1]}`, code: 28759},
		"log10":                {expr: `{"$log10": 1000}`, want: `3.0`},
		"sum expression array": {expr: `{"$sum": "$arr"}`, want: `6`},
		"sum expression args":  {expr: `{"$sum": [1, "x", 2.5]}`, want: `3.5`},
		"avg expression":       {expr: `{"$avg": "$arr"}`, want: `2.0`},
		"max expression":       {expr: `{"$max": [1, "$n", 3]}`, want: `3`},
		"min expression empty": {expr: `{"$min": []}`, want: `null`},
		"stdDevPop":            {expr: `{"$stdDevPop": [2, 4, 4, 4, 5, 5, 7, 9]}`, want: `2.0`},
	})
}

func TestComparisonAndLogic(t *testing.T) {
	runExprCases(t, map[string]exprCase{
		"eq numbers across types": {expr: `{"$eq": [5, 5.0]}`, want: `true`},
		"eq missing null":         {expr: `{"$eq": ["$nope", null]}`, want: `false`},
		"ne":                      {expr: `{"$ne": ["$a", 4]}`, want: `true`},
		"gt cross type":           {expr: `{"$gt": ["a", 1]}`, want: `true`},
		"lte":                     {expr: `{"$lte": [2, 2]}`, want: `true`},
		"cmp":                     {expr: `{"$cmp": ["$a", 9]}`, want: `-1`},
		"eq arity":                {expr: `{"$eq": [1]}`, code: 16020},
		"and":                     {expr: `{"$and": [1, "x", true]}`, want: `true`},
		"and short circuit":       {expr: `{"$and": [false, {"$divide": [1, 0]}]}`, want: `false`},
		"and empty":               {expr: `{"$and": []}`, want: `true`},
		"or":                      {expr: `{"$or": [0, null, "$nope"]}`, want: `false`},
		"or short circuit":        {expr: `{"$or": [1, {"$divide": [1, 0]}]}`, want: `true`},
		"not":                     {expr: `{"$not": [0]}`, want: `true`},
		"not decimal zero":        {expr: `{"$not": [{"$numberDecimal": "0.00"}]}`, want: `true`},
		"not string":              {expr: `{"$not": ["false"]}`, want: `false`},
		"cond array":              {expr: `{"$cond": [{"$gt": ["$a", 3]}, "big", "small"]}`, want: `"big"`},
		"cond doc":                {expr: `{"$cond": {"if": "$f", "then": 1, "else": 2}}`, want: `2`},
		"cond lazy":               {expr: `{"$cond": [true, 1, {"$divide": [1, 0]}]}`, want: `1`},
		"cond missing else":       {expr: `{"$cond": {"if": 1, "then": 2}}`, code: 17082},
		"cond unknown":            {expr: `{"$cond": {"if": 1, "then": 2, "else": 3, "x": 1}}`, code: 17083},
		"cond arity":              {expr: `{"$cond": [1, 2]}`, code: 16020},
		"ifNull":                  {expr: `{"$ifNull": ["$nope", "$n", "dflt"]}`, want: `"dflt"`},
		"ifNull first":            {expr: `{"$ifNull": ["$a", 0]}`, want: `5`},
		"ifNull arity":            {expr: `{"$ifNull": ["$a"]}`, code: 1257300},
		"switch":                  {expr: `{"$switch": {"branches": [{"case": {"$eq": ["$a", 1]}, "then": "one"}, {"case": {"$eq": ["$a", 5]}, "then": "five"}], "default": "other"}}`, want: `"five"`},
		"switch default":          {expr: `{"$switch": {"branches": [{"case": false, "then": 1}], "default": 2}}`, want: `2`},
		"switch no match":         {expr: `{"$switch": {"branches": [{"case": false, "then": 1}]}}`, code: 40066},
		"switch no branches":      {expr: `{"$switch": {"branches": []}}`, code: 40068},
		"switch bad branch":       {expr: `{"$switch": {"branches": [{"case": 1}]}}`, code: 40065},
	})
}

func TestStrings(t *testing.T) {
	runExprCases(t, map[string]exprCase{
		"concat":              {expr: `{"$concat": ["$s", " ", "world"]}`, want: `"Hello world"`},
		"concat null":         {expr: `{"$concat": ["$s", "$n"]}`, want: `null`},
		"concat bad":          {expr: `{"$concat": ["$s", 1]}`, code: 16702, msg: "$concat only supports strings, not int"},
		"toLower":             {expr: `{"$toLower": "$s"}`, want: `"hello"`},
		"toUpper number":      {expr: `{"$toUpper": 12}`, want: `"12"`},
		"toUpper null":        {expr: `{"$toUpper": null}`, want: `""`},
		"toUpper array":       {expr: `{"$toUpper": [[1]]}`, code: 16007},
		"substr":              {expr: `{"$substr": ["$s", 1, 3]}`, want: `"ell"`},
		"substrBytes rest":    {expr: `{"$substrBytes": ["$s", 2, -1]}`, want: `"llo"`},
		"substrBytes utf8":    {expr: `{"$substrBytes": ["é", 1, 1]}`, code: 28656},
		"substrCP":            {expr: `{"$substrCP": ["héllo", 1, 2]}`, want: `"él"`},
		"substrCP bad len":    {expr: `{"$substrCP": ["x", 0, -1]}`, code: 34454},
		"strLenBytes":         {expr: `{"$strLenBytes": "é"}`, want: `2`},
		"strLenCP":            {expr: `{"$strLenCP": "é"}`, want: `1`},
		"strLenCP bad":        {expr: `{"$strLenCP": 1}`, code: 34471},
		"split":               {expr: `{"$split": ["a,b,,c", ","]}`, want: `["a", "b", "", "c"]`},
		"split empty sep":     {expr: `{"$split": ["a", ""]}`, code: 40087},
		"trim":                {expr: `{"$trim": {"input": "  x  "}}`, want: `"x"`},
		"ltrim chars":         {expr: `{"$ltrim": {"input": "xxaxx", "chars": "x"}}`, want: `"axx"`},
		"rtrim":               {expr: `{"$rtrim": {"input": " a "}}`, want: `" a"`},
		"trim missing input":  {expr: `{"$trim": {"chars": "x"}}`, code: 50695},
		"indexOfBytes":        {expr: `{"$indexOfBytes": ["hello", "l"]}`, want: `2`},
		"indexOfBytes start":  {expr: `{"$indexOfBytes": ["hello", "l", 3]}`, want: `3`},
		"indexOfBytes absent": {expr: `{"$indexOfBytes": ["hello", "z"]}`, want: `-1`},
		"indexOfBytes neg":    {expr: `{"$indexOfBytes": ["hello", "l", -1]}`, code: 40097},
		"indexOfCP":           {expr: `{"$indexOfCP": ["héllo", "l"]}`, want: `2`},
		"strcasecmp":          {expr: `{"$strcasecmp": ["abc", "ABC"]}`, want: `0`},
		"strcasecmp lt":       {expr: `{"$strcasecmp": ["abc", "abd"]}`, want: `-1`},
		"regexMatch":          {expr: `{"$regexMatch": {"input": "$s", "regex": "^he", "options": "i"}}`, want: `true`},
		"regexMatch null":     {expr: `{"$regexMatch": {"input": "$n", "regex": "x"}}`, want: `false`},
		"regexMatch bad flag": {expr: `{"$regexMatch": {"input": "a", "regex": "a", "options": "q"}}`, code: 51108},
		"regexMatch bad re":   {expr: `{"$regexMatch": {"input": "a", "regex": "("}}`, code: 51111},
		"regexFind":           {expr: `{"$regexFind": {"input": "xaby", "regex": "a(b)"}}`, want: `{"match": "ab", "idx": 1, "captures": ["b"]}`},
		"regexFindAll":        {expr: `{"$regexFindAll": {"input": "a1a2", "regex": "a\\d"}}`, want: `[{"match": "a1", "idx": 0, "captures": []}, {"match": "a2", "idx": 2, "captures": []}]`},
	})
}

func TestArrays(t *testing.T) {
	runExprCases(t, map[string]exprCase{
		"size":                {expr: `{"$size": "$arr"}`, want: `3`},
		"size not array":      {expr: `{"$size": "$a"}`, code: 17124},
		"arrayElemAt":         {expr: `{"$arrayElemAt": ["$arr", 1]}`, want: `2`},
		"arrayElemAt neg":     {expr: `{"$arrayElemAt": ["$arr", -1]}`, want: `3`},
		"arrayElemAt out":     {expr: `{"$arrayElemAt": ["$arr", 5]}`, missing: true},
		"arrayElemAt frac":    {expr: `{"$arrayElemAt": ["$arr", 1.5]}`, code: 28691},
		"first":               {expr: `{"$first": "$arr"}`, want: `1`},
		"last":                {expr: `{"$last": "$arr"}`, want: `3`},
		"first empty":         {expr: `{"$first": [[]]}`, missing: true},
		"first bad":           {expr: `{"$first": "$a"}`, code: 28689, msg: "$first's argument must be an array, but is int"},
		"in":                  {expr: `{"$in": [2, "$arr"]}`, want: `true`},
		"in bad":              {expr: `{"$in": [2, "$a"]}`, code: 40081},
		"slice count":         {expr: `{"$slice": ["$arr", 2]}`, want: `[1, 2]`},
		"slice negative":      {expr: `{"$slice": ["$arr", -2]}`, want: `[2, 3]`},
		"slice position":      {expr: `{"$slice": ["$arr", 1, 5]}`, want: `[2, 3]`},
		"slice bad count":     {expr: `{"$slice": ["$arr", 1, 0]}`, code: 28729},
		"concatArrays":        {expr: `{"$concatArrays": ["$arr", [4]]}`, want: `[1, 2, 3, 4]`},
		"concatArrays null":   {expr: `{"$concatArrays": ["$arr", "$nope"]}`, want: `null`},
		"isArray":             {expr: `{"$isArray": ["$arr"]}`, want: `true`},
		"reverseArray":        {expr: `{"$reverseArray": "$arr"}`, want: `[3, 2, 1]`},
		"range":               {expr: `{"$range": [0, 10, 3]}`, want: `[0, 3, 6, 9]`},
		"range down":          {expr: `{"$range": [3, 0, -1]}`, want: `[3, 2, 1]`},
		"range zero step":     {expr: `{"$range": [0, 1, 0]}`, code: 34449},
		"range huge":          {expr: `{"$range": [0, 2000000000]}`, code: 5489600},
		"indexOfArray":        {expr: `{"$indexOfArray": ["$arr", 3]}`, want: `2`},
		"indexOfArray none":   {expr: `{"$indexOfArray": ["$arr", 9]}`, want: `-1`},
		"filter":              {expr: `{"$filter": {"input": "$arr", "cond": {"$gte": ["$$this", 2]}}}`, want: `[2, 3]`},
		"filter as":           {expr: `{"$filter": {"input": "$arr", "as": "x", "cond": {"$eq": ["$$x", 1]}}}`, want: `[1]`},
		"filter limit":        {expr: `{"$filter": {"input": "$arr", "cond": true, "limit": 2}}`, want: `[1, 2]`},
		"filter bad input":    {expr: `{"$filter": {"input": "$a", "cond": true}}`, code: 28651},
		"filter bad as":       {expr: `{"$filter": {"input": "$arr", "as": "X", "cond": true}}`, code: 16867},
		"filter no cond":      {expr: `{"$filter": {"input": "$arr"}}`, code: 28650},
		"map":                 {expr: `{"$map": {"input": "$arr", "as": "v", "in": {"$multiply": ["$$v", 10]}}}`, want: `[10, 20, 30]`},
		"map outer vars":      {expr: `{"$map": {"input": "$arr", "in": {"$add": ["$$this", "$a"]}}}`, want: `[6, 7, 8]`},
		"map null":            {expr: `{"$map": {"input": "$n", "in": 1}}`, want: `null`},
		"reduce":              {expr: `{"$reduce": {"input": "$arr", "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}`, want: `6`},
		"reduce missing in":   {expr: `{"$reduce": {"input": "$arr", "initialValue": 0}}`, code: 40079},
		"arrayToObject kv":    {expr: `{"$arrayToObject": [[{"k": "a", "v": 1}, {"k": "b", "v": 2}]]}`, want: `{"a": 1, "b": 2}`},
		"arrayToObject pairs": {expr: `{"$arrayToObject": [[["a", 1], ["a", 2]]]}`, want: `{"a": 2}`},
		"arrayToObject bad":   {expr: `{"$arrayToObject": [[1]]}`, code: 40398},
		"objectToArray":       {expr: `{"$objectToArray": {"a": 1}}`, want: `[{"k": "a", "v": 1}]`},
		"objectToArray bad":   {expr: `{"$objectToArray": 1}`, code: 40390},
	})
}

func TestObjectsTypesSets(t *testing.T) {
	runExprCases(t, map[string]exprCase{
		"mergeObjects":        {expr: `{"$mergeObjects": [{"a": 1, "b": 1}, null, {"b": 2, "c": 3}]}`, want: `{"a": 1, "b": 2, "c": 3}`},
		"mergeObjects bad":    {expr: `{"$mergeObjects": [{"a": 1}, 1]}`, code: 40400},
		"getField":            {doc: `{"a.b": 1}`, expr: `{"$getField": "a.b"}`, want: `1`},
		"getField input":      {expr: `{"$getField": {"field": "x", "input": {"x": 2}}}`, want: `2`},
		"getField absent":     {expr: `{"$getField": {"field": "x", "input": {}}}`, missing: true},
		"getField bad":        {expr: `{"$getField": {"field": 1, "input": {}}}`, code: 3041704},
		"type":                {expr: `{"$type": "$l"}`, want: `"long"`},
		"type missing":        {expr: `{"$type": "$nope"}`, want: `"missing"`},
		"isNumber":            {expr: `{"$isNumber": "$dec"}`, want: `true`},
		"toString int":        {expr: `{"$toString": 5}`, want: `"5"`},
		"toString double":     {expr: `{"$toString": 2.5}`, want: `"2.5"`},
		"toString date":       {expr: `{"$toString": "$d"}`, want: `"2021-03-04T05:06:07.089Z"`},
		"toString null":       {expr: `{"$toString": null}`, want: `null`},
		"toInt string":        {expr: `{"$toInt": "42"}`, want: `42`},
		"toInt bad string":    {expr: `{"$toInt": "4x"}`, code: 241},
		"toInt double":        {expr: `{"$toInt": 4.9}`, want: `4`},
		"toInt overflow":      {expr: `{"$toInt": 1e12}`, code: 241},
		"toLong":              {expr: `{"$toLong": "$d"}`, want: `{"$numberLong": "1614834367089"}`},
		"toDouble bool":       {expr: `{"$toDouble": true}`, want: `1.0`},
		"toDecimal":           {expr: `{"$toDecimal": 0.1}`, want: `{"$numberDecimal": "0.100000000000000"}`},
		"toBool zero":         {expr: `{"$toBool": 0}`, want: `false`},
		"toBool string":       {expr: `{"$toBool": ""}`, want: `true`},
		"toDate string":       {expr: `{"$toDate": "2021-03-04T05:06:07.089Z"}`, want: `{"$date": "2021-03-04T05:06:07.089Z"}`},
		"toObjectId":          {expr: `{"$toObjectId": "5ab9cbfa31c2ab715d42129e"}`, want: `{"$oid": "5ab9cbfa31c2ab715d42129e"}`},
		"toObjectId bad":      {expr: `{"$toObjectId": "x"}`, code: 241},
		"to alias arity":      {expr: `{"$toInt": [1, 2]}`, code: 50723},
		"convert onError":     {expr: `{"$convert": {"input": "x", "to": "int", "onError": -1}}`, want: `-1`},
		"convert onNull":      {expr: `{"$convert": {"input": "$nope", "to": "int", "onNull": 0}}`, want: `0`},
		"convert numeric to":  {expr: `{"$convert": {"input": "7", "to": 16}}`, want: `7`},
		"convert unsupported": {expr: `{"$convert": {"input": {"a": 1}, "to": "int"}}`, code: 241, msg: "Unsupported conversion from object to int"},
		"convert bad to":      {expr: `{"$convert": {"input": 1, "to": "foo"}}`, code: 2},
		"convert no to":       {expr: `{"$convert": {"input": 1}}`, code: 9},
		"setUnion":            {expr: `{"$setUnion": [[3, 1, 1], [2, 1]]}`, want: `[1, 2, 3]`},
		"setIntersection":     {expr: `{"$setIntersection": [[1, 2, 3], [3, 2, 5]]}`, want: `[2, 3]`},
		"setDifference":       {expr: `{"$setDifference": [[1, 2, 2, 3], [3]]}`, want: `[1, 2]`},
		"setEquals":           {expr: `{"$setEquals": [[1, 2], [2, 1, 1]]}`, want: `true`},
		"setEquals arity":     {expr: `{"$setEquals": [[1]]}`, code: 17045},
		"setIsSubset":         {expr: `{"$setIsSubset": [[1], [1, 2]]}`, want: `true`},
		"setUnion bad":        {expr: `{"$setUnion": [[1], 1]}`, code: 17043},
		"anyElementTrue":      {expr: `{"$anyElementTrue": [[0, null, 1]]}`, want: `true`},
		"allElementsTrue":     {expr: `{"$allElementsTrue": [[1, 0]]}`, want: `false`},
		"allElementsTrue bad": {expr: `{"$allElementsTrue": [null]}`, code: 17040},
		"let":                 {expr: `{"$let": {"vars": {"x": 2, "y": "$a"}, "in": {"$multiply": ["$$x", "$$y"]}}}`, want: `10`},
		"let nested shadow":   {expr: `{"$let": {"vars": {"x": 1}, "in": {"$let": {"vars": {"x": 2}, "in": "$$x"}}}}`, want: `2`},
		"let bad name":        {expr: `{"$let": {"vars": {"X": 1}, "in": 1}}`, code: 16867},
		"let missing in":      {expr: `{"$let": {"vars": {}}}`, code: 16877},
	})
}

func TestDates(t *testing.T) {
	runExprCases(t, map[string]exprCase{
		"year":                {expr: `{"$year": "$d"}`, want: `2021`},
		"month":               {expr: `{"$month": "$d"}`, want: `3`},
		"dayOfMonth":          {expr: `{"$dayOfMonth": "$d"}`, want: `4`},
		"hour tz":             {expr: `{"$hour": {"date": "$d", "timezone": "+05:30"}}`, want: `10`},
		"hour olson":          {expr: `{"$hour": {"date": "$d", "timezone": "America/New_York"}}`, want: `0`},
		"minute":              {expr: `{"$minute": "$d"}`, want: `6`},
		"second":              {expr: `{"$second": "$d"}`, want: `7`},
		"millisecond":         {expr: `{"$millisecond": "$d"}`, want: `89`},
		"dayOfWeek":           {expr: `{"$dayOfWeek": "$d"}`, want: `5`},
		"dayOfYear":           {expr: `{"$dayOfYear": "$d"}`, want: `63`},
		"week":                {expr: `{"$week": "$d"}`, want: `9`},
		"isoWeek":             {expr: `{"$isoWeek": "$d"}`, want: `9`},
		"isoDayOfWeek":        {expr: `{"$isoDayOfWeek": "$d"}`, want: `4`},
		"year null":           {expr: `{"$year": "$nope"}`, want: `null`},
		"year bad":            {expr: `{"$year": "x"}`, code: 16006},
		"year bad tz":         {expr: `{"$year": {"date": "$d", "timezone": "Mars/Base"}}`, code: 40485},
		"year array arg":      {expr: `{"$year": ["$d", 1]}`, code: 40536},
		"year unknown opt":    {expr: `{"$year": {"date": "$d", "x": 1}}`, code: 40535},
		"dateToString":        {expr: `{"$dateToString": {"date": "$d", "format": "%Y/%m/%d %H:%M:%S.%L %j %w %u"}}`, want: `"2021/03/04 05:06:07.089 063 5 4"`},
		"dateToString def":    {expr: `{"$dateToString": {"date": "$d"}}`, want: `"2021-03-04T05:06:07.089Z"`},
		"dateToString tz":     {expr: `{"$dateToString": {"date": "$d", "format": "%H:%M %z %Z", "timezone": "-02:00"}}`, want: `"03:06 -0200 -120"`},
		"dateToString null":   {expr: `{"$dateToString": {"date": "$nope", "onNull": "none"}}`, want: `"none"`},
		"dateToString bad":    {expr: `{"$dateToString": {"date": "$d", "format": "%Q"}}`, code: 18536},
		"dateToString end":    {expr: `{"$dateToString": {"date": "$d", "format": "%"}}`, code: 18535},
		"dateToString nodate": {expr: `{"$dateToString": {"format": "%Y"}}`, code: 18628},
		"dateAdd month clamp": {doc: `{"d": {"$date": "2021-01-31T10:00:00Z"}}`, expr: `{"$dateAdd": {"startDate": "$d", "unit": "month", "amount": 1}}`, want: `{"$date": "2021-02-28T10:00:00Z"}`},
		"dateAdd hours":       {expr: `{"$dateAdd": {"startDate": "$d", "unit": "hour", "amount": 2}}`, want: `{"$date": "2021-03-04T07:06:07.089Z"}`},
		"dateSubtract days":   {expr: `{"$dateSubtract": {"startDate": "$d", "unit": "day", "amount": 4}}`, want: `{"$date": "2021-02-28T05:06:07.089Z"}`},
		"dateAdd bad unit":    {expr: `{"$dateAdd": {"startDate": "$d", "unit": "fortnight", "amount": 1}}`, code: 9},
		"dateAdd frac":        {expr: `{"$dateAdd": {"startDate": "$d", "unit": "day", "amount": 1.5}}`, code: 5166405},
		"dateAdd missing":     {expr: `{"$dateAdd": {"startDate": "$d", "unit": "day"}}`, code: 5166402},
		"dateDiff days":       {doc: `{"a": {"$date": "2021-01-01T23:59:00Z"}, "b": {"$date": "2021-01-02T00:01:00Z"}}`, expr: `{"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "day"}}`, want: `{"$numberLong": "1"}`},
		"dateDiff months":     {doc: `{"a": {"$date": "2020-11-30T00:00:00Z"}, "b": {"$date": "2021-02-01T00:00:00Z"}}`, expr: `{"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "month"}}`, want: `{"$numberLong": "3"}`},
		"dateDiff weeks":      {doc: `{"a": {"$date": "2021-03-06T00:00:00Z"}, "b": {"$date": "2021-03-08T00:00:00Z"}}`, expr: `{"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "week", "startOfWeek": "monday"}}`, want: `{"$numberLong": "1"}`},
		"dateDiff hours neg":  {doc: `{"a": {"$date": "2021-01-01T05:30:00Z"}, "b": {"$date": "2021-01-01T03:10:00Z"}}`, expr: `{"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "hour"}}`, want: `{"$numberLong": "-2"}`},
		"dateDiff missing":    {expr: `{"$dateDiff": {"startDate": "$d", "unit": "day"}}`, code: 5166304},
		"dateDiff null":       {expr: `{"$dateDiff": {"startDate": "$d", "endDate": "$n", "unit": "day"}}`, want: `null`},
	})
}

func TestTruthy(t *testing.T) {
	falsy := []any{false, nil, Missing, bson.Undefined{}, int32(0), int64(0), 0.0, bson.Null{}}
	for _, v := range falsy {
		if Truthy(v) {
			t.Errorf("Truthy(%#v) = true", v)
		}
	}
	truthy := []any{true, "", bson.A{}, bson.D{}, int32(1), -0.5, bson.DateTime(0)}
	for _, v := range truthy {
		if !Truthy(v) {
			t.Errorf("Truthy(%#v) = false", v)
		}
	}
}

func TestNowDefaultsToClock(t *testing.T) {
	e, err := Compile("$$NOW")
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.Eval(bson.D{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(bson.DateTime).Time()
	if d := time.Since(got); d < 0 || d > time.Minute {
		t.Fatalf("$$NOW = %v, not near the wall clock", got)
	}
}

func TestAccumulators(t *testing.T) {
	cases := []struct {
		op   string
		in   []any
		want any
	}{
		{"$sum", []any{int32(1), "x", int64(2)}, int64(3)},
		{"$sum", nil, int32(0)},
		{"$avg", []any{int32(1), int32(2)}, 1.5},
		{"$avg", []any{"x"}, nil},
		{"$min", []any{nil, int32(3), "a"}, int32(3)},
		{"$max", []any{nil, int32(3), "a"}, "a"},
		{"$first", []any{Missing, int32(2)}, nil},
		{"$last", []any{int32(1), int32(2)}, int32(2)},
		{"$push", []any{int32(1), Missing, nil}, bson.A{int32(1), nil}},
		{"$addToSet", []any{int32(1), 1.0, int32(2)}, bson.A{int32(1), int32(2)}},
		{"$mergeObjects", []any{bson.D{{Key: "a", Value: int32(1)}}, nil}, bson.D{{Key: "a", Value: int32(1)}}},
		{"$stdDevSamp", []any{int32(1)}, nil},
	}
	for _, tc := range cases {
		acc, ok := NewAccumulator(tc.op)
		if !ok {
			t.Fatalf("no accumulator %s", tc.op)
		}
		for _, v := range tc.in {
			if err := acc.Add(v); err != nil {
				t.Fatalf("%s: %v", tc.op, err)
			}
		}
		if got := acc.Result(); !sameValue(got, tc.want) {
			t.Errorf("%s(%v) = %#v, want %#v", tc.op, tc.in, got, tc.want)
		}
	}
	if _, ok := NewAccumulator("$nope"); ok {
		t.Error("NewAccumulator accepted $nope")
	}
}

// TestAccumulatorNamesListsEveryAccumulator probes every accumulator name
// mongod 8.0 knows: NewAccumulator must accept exactly the listed ones,
// so an accumulator added without its name in AccumulatorNames fails.
func TestAccumulatorNamesListsEveryAccumulator(t *testing.T) {
	mongod := []string{"$accumulator", "$addToSet", "$avg", "$bottom", "$bottomN", "$concatArrays",
		"$count", "$first", "$firstN", "$last", "$lastN", "$max", "$maxN", "$median", "$mergeObjects",
		"$min", "$minN", "$percentile", "$push", "$setUnion", "$stdDevPop", "$stdDevSamp", "$sum",
		"$top", "$topN"}
	listed := AccumulatorNames()
	for _, op := range mongod {
		_, accepted := NewAccumulator(op)
		if accepted != slices.Contains(listed, op) {
			t.Errorf("%s: NewAccumulator accepts it: %v; AccumulatorNames lists it: %v", op, accepted, !accepted)
		}
	}
	if !slices.IsSorted(listed) {
		t.Errorf("AccumulatorNames is not sorted: %v", listed)
	}
}
