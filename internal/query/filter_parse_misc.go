package query

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/bsonutil"
	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// typeAliases maps $type names to BSON type numbers.
var typeAliases = map[string]int{
	"double": 1, "string": 2, "object": 3, "array": 4, "binData": 5,
	"undefined": 6, "objectId": 7, "bool": 8, "date": 9, "null": 10,
	"regex": 11, "dbPointer": 12, "javascript": 13, "symbol": 14,
	"javascriptWithScope": 15, "int": 16, "timestamp": 17, "long": 18,
	"decimal": 19, "minKey": -1, "maxKey": 127,
}

func parseType(a opArgs) (fieldOp, error) {
	op := &typeOp{}
	arr, isArr := asArray(a.e.Value)
	if !isArr {
		arr = bson.A{a.e.Value}
	}
	for _, v := range arr {
		if err := op.add(v); err != nil {
			return nil, err
		}
	}
	if len(op.codes) == 0 && !op.number {
		return nil, mongoerr.Newf(mongoerr.FailedToParse, "%s must match at least one type", a.name)
	}
	return op, nil
}

// add parses one type, as MongoDB's parseSingleType.
func (o *typeOp) add(v any) error {
	if s, ok := v.(string); ok {
		return o.addAlias(s)
	}
	if !bsonutil.IsNumber(v) {
		return mongoerr.New(mongoerr.TypeMismatch, "type must be represented as a number or a string")
	}
	code, err := parseInteger("", v)
	invalid := err != nil || code < -1 || code > 127 || (code > 19 && code < 127)
	if !invalid && code == 0 {
		return mongoerr.Newf(mongoerr.BadValue,
			"Invalid numerical type code: %s. Instead use {$exists:false}.", formatNumber(v))
	}
	if invalid {
		return mongoerr.Newf(mongoerr.BadValue, "Invalid numerical type code: %s", formatNumber(v))
	}
	o.codes = append(o.codes, int(code))
	return nil
}

func (o *typeOp) addAlias(s string) error {
	if s == "number" {
		o.number = true
		return nil
	}
	code, ok := typeAliases[s]
	if !ok {
		return mongoerr.Newf(mongoerr.BadValue, "Unknown type name alias: %s", s)
	}
	o.codes = append(o.codes, code)
	return nil
}

// parseRegexOperator parses $regex together with its sibling $options;
// $options alone contributes nothing once a $regex sibling exists.
func parseRegexOperator(a opArgs) (fieldOp, error) {
	if a.e.Key == "$options" {
		if _, ok := bsonutil.Lookup(a.ctx, "$regex"); ok {
			return nil, nil
		}
		return nil, mongoerr.New(mongoerr.BadValue, "$options needs a $regex")
	}
	pattern, flags, err := regexArgs(a.ctx)
	if err != nil {
		return nil, err
	}
	return newRegexOp(pattern, flags)
}

// regexArgs collects $regex and $options in document order, which decides
// the code of the "options set in both" error.
func regexArgs(ctx bson.D) (pattern, flags string, err error) {
	for _, e := range ctx {
		switch e.Key {
		case "$regex":
			switch v := e.Value.(type) {
			case string:
				pattern = v
			case bson.Regex:
				pattern = v.Pattern
				if v.Options != "" && flags != "" {
					return "", "", mongoerr.New(codeOptionsBothRegex, "options set in both $regex and $options")
				}
				if v.Options != "" {
					flags = v.Options
				}
			default:
				return "", "", mongoerr.New(mongoerr.BadValue, "$regex has to be a string")
			}
		case "$options":
			s, ok := e.Value.(string)
			if !ok {
				return "", "", mongoerr.New(mongoerr.BadValue, "$options has to be a string")
			}
			if flags != "" {
				return "", "", mongoerr.New(codeOptionsBothOpts, "options set in both $regex and $options")
			}
			flags = s
		}
	}
	return pattern, flags, nil
}
