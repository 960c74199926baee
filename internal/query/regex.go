package query

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// MongoDB's limit on regular expression source length.
const maxRegexLength = 32764

// Error codes MongoDB uses for regular expressions.
const (
	codeRegexInvalid     = mongoerr.Location51091
	codeRegexFlag        = mongoerr.Location51108
	codeOptionsBothRegex = mongoerr.Location51074
	codeOptionsBothOpts  = mongoerr.Location51075
)

// regexOp matches strings (and symbols) against a PCRE pattern translated
// to Go's RE2 syntax, and regex values by exact pattern and flags.
type regexOp struct {
	re      *regexp.Regexp
	pattern string
	flags   string
}

func (o *regexOp) atPath(doc bson.D, path []string, c *matchCtx) bool {
	return leafAt(doc, path, true, c, o)
}

func (o *regexOp) single(v any, _ *matchCtx) bool {
	switch x := v.(type) {
	case string:
		return o.re.MatchString(x)
	case bson.Symbol:
		return o.re.MatchString(string(x))
	case bson.Regex:
		return x.Pattern == o.pattern && x.Options == o.flags
	}
	return false
}

// newRegexOp validates and compiles a pattern as MongoDB's
// RegexMatchExpression does.
func newRegexOp(pattern, flags string) (*regexOp, error) {
	if len(pattern) > maxRegexLength {
		return nil, mongoerr.New(mongoerr.BadValue, "Regular expression is too long")
	}
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Regular expression cannot contain an embedded null byte")
	}
	if strings.IndexByte(flags, 0) >= 0 {
		return nil, mongoerr.New(mongoerr.BadValue,
			"Regular expression options string cannot contain an embedded null byte")
	}
	re, err := compilePCRE(pattern, flags)
	if err != nil {
		return nil, err
	}
	return &regexOp{re: re, pattern: pattern, flags: flags}, nil
}

// compilePCRE translates a PCRE pattern with MongoDB's option letters into
// Go syntax and compiles it. Constructs RE2 cannot express (backreferences,
// lookaround, atomic groups, possessive quantifiers, recursion...) are
// rejected with NotImplemented rather than silently matching differently.
func compilePCRE(pattern, flags string) (*regexp.Regexp, error) {
	prefix, extended, err := regexFlags(flags)
	if err != nil {
		return nil, err
	}
	t := translator{src: pattern, extended: extended}
	translated, err := t.run()
	if err != nil {
		return nil, err
	}
	re, cerr := regexp.Compile(prefix + translated)
	if cerr != nil {
		return nil, compileError(cerr)
	}
	return re, nil
}

// regexFlags maps MongoDB's option letters to a Go flag group. MongoDB
// accepts i, m, s, u (always on) and x; anything else is error 51108, whose
// message starts with a space because MongoDB leaves the operator name
// empty there.
func regexFlags(flags string) (prefix string, extended bool, err error) {
	var goFlags strings.Builder
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			goFlags.WriteRune(f)
		case 'x':
			extended = true
		case 'u':
		default:
			return "", false, mongoerr.Newf(codeRegexFlag, " invalid flag in regex options: %c", f)
		}
	}
	if goFlags.Len() == 0 {
		return "", extended, nil
	}
	return "(?" + goFlags.String() + ")", extended, nil
}

// compileError turns a Go regexp error on a pattern the translator passed
// into MongoDB's "invalid regex" error, with PCRE2's wording where the
// mistake is the same in both dialects.
func compileError(err error) error {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return mongoerr.Newf(codeRegexInvalid, "Regular expression is invalid: %v", err)
	}
	switch se.Code {
	case syntax.ErrInvalidRepeatSize, syntax.ErrLarge, syntax.ErrNestingDepth:
		return mongoerr.Newf(mongoerr.NotImplemented,
			"Regular expression is not supported by Mayfly: %v", se)
	}
	if msg, ok := pcreMessages[se.Code]; ok {
		return mongoerr.Newf(codeRegexInvalid, "Regular expression is invalid: %s", msg)
	}
	return mongoerr.Newf(codeRegexInvalid, "Regular expression is invalid: %s", se.Code.String())
}

// pcreMessages gives PCRE2's text for syntax errors both engines detect.
var pcreMessages = map[syntax.ErrorCode]string{
	syntax.ErrMissingParen:          "missing closing parenthesis",
	syntax.ErrUnexpectedParen:       "unmatched closing parenthesis",
	syntax.ErrMissingBracket:        "missing terminating ] for character class",
	syntax.ErrMissingRepeatArgument: "quantifier does not follow a repeatable item",
	syntax.ErrInvalidRepeatOp:       "quantifier does not follow a repeatable item",
	syntax.ErrTrailingBackslash:     "\\ at end of pattern",
	syntax.ErrInvalidCharRange:      "range out of order in character class",
	syntax.ErrInvalidEscape:         "unrecognized character follows \\",
	syntax.ErrInvalidUTF8:           "UTF-8 error: invalid UTF-8 string",
}

func unsupportedRegex(construct string) error {
	return mongoerr.Newf(mongoerr.NotImplemented,
		"Regular expression uses %s, which Mayfly does not support", construct)
}
