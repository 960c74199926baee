package expr

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// Mayfly's regular expressions are Go's RE2, not PCRE: patterns using
// backreferences or lookaround fail to compile (error 51111) rather than
// matching differently.

func addRegexOps(m map[string]compileFn) {
	m["$regexMatch"] = regexOp(func(re *regexp.Regexp, s string, ok bool) any {
		return ok && re.MatchString(s)
	})
	m["$regexFind"] = regexOp(func(re *regexp.Regexp, s string, ok bool) any {
		if !ok {
			return nil
		}
		if m := re.FindStringSubmatchIndex(s); m != nil {
			return regexMatchDoc(s, m)
		}
		return nil
	})
	m["$regexFindAll"] = regexLoop(findAll)
}

// findAll is $regexFindAll's result, a document per match. Go's regexp
// finds all matches in one call; building their documents, the larger
// part of the work, counts a step each.
func findAll(m meter, re *regexp.Regexp, s string, ok bool) (any, error) {
	out := bson.A{}
	if !ok {
		return out, nil
	}
	// idx counts code points; counting from the previous match, not from
	// the start, keeps the whole search linear.
	at, runes := 0, 0
	for _, match := range re.FindAllStringSubmatchIndex(s, maxFindAllMatches+1) {
		if err := m.step(); err != nil {
			return nil, err
		}
		runes += utf8.RuneCountInString(s[at:match[0]])
		at = match[0]
		out = append(out, regexMatchDocAt(s, match, runes))
	}
	return out, nil
}

// maxFindAllMatches bounds $regexFindAll's result: each match is a
// document of at least 40 bytes, so more could not fit the largest
// document; checkArraySize then refuses the result with mongod's error.
const maxFindAllMatches = maxArrayBytes / 40

// regexMatchDoc builds {match, idx, captures}; idx counts code points.
func regexMatchDoc(s string, m []int) bson.D {
	return regexMatchDocAt(s, m, utf8.RuneCountInString(s[:m[0]]))
}

// regexMatchDocAt is regexMatchDoc with idx already counted.
func regexMatchDocAt(s string, m []int, idx int) bson.D {
	caps := bson.A{}
	for i := 2; i+1 < len(m); i += 2 {
		if m[i] < 0 {
			caps = append(caps, nil)
		} else {
			caps = append(caps, s[m[i]:m[i+1]])
		}
	}
	return bson.D{
		{Key: "match", Value: s[m[0]:m[1]]},
		{Key: "idx", Value: int32(idx)},
		{Key: "captures", Value: caps},
	}
}

// regexOp compiles {input, regex, options}; result receives the compiled
// pattern, the input, and whether both were present (not nullish).
func regexOp(result func(re *regexp.Regexp, s string, ok bool) any) compileFn {
	return regexLoop(func(_ meter, re *regexp.Regexp, s string, ok bool) (any, error) { return result(re, s, ok), nil })
}

// regexLoop is regexOp for a result whose work grows with its matches.
func regexLoop(result func(m meter, re *regexp.Regexp, s string, ok bool) (any, error)) compileFn {
	return func(name string, arg any) (node, error) {
		if !isDocument(arg) {
			return nil, mongoerr.Newf(mongoerr.Location51103, "%s expects an object of named arguments but found: %s", name, typeName(arg))
		}
		named, err := namedArgs(arg, []string{"input", "regex", "options"}, func(f string) error {
			return mongoerr.Newf(mongoerr.Location31024, "%s found an unknown argument: %s", name, f)
		})
		switch {
		case err != nil:
			return nil, err
		case named["input"] == nil:
			return nil, mongoerr.Newf(mongoerr.Location31022, "%s requires 'input' parameter", name)
		case named["regex"] == nil:
			return nil, mongoerr.Newf(mongoerr.Location31023, "%s requires 'regex' parameter", name)
		}
		return fn(func(c *ctx) (any, error) {
			re, s, ok, err := evalRegexArgs(c, name, named)
			if err != nil {
				return nil, err
			}
			v, err := result(c.meter(), re, s, ok)
			if err != nil {
				return nil, err
			}
			if a, isArray := v.(bson.A); isArray {
				return v, checkArraySize(a)
			}
			return v, nil
		}), nil
	}
}

func evalRegexArgs(c *ctx, name string, named map[string]node) (*regexp.Regexp, string, bool, error) {
	vals, err := evalAll(c, []node{named["input"], named["regex"], orNull(named["options"])})
	if err != nil {
		return nil, "", false, err
	}
	in, pat, opts := vals[0], vals[1], vals[2]
	s, isStr := in.(string)
	if !isStr && !nullish(in) {
		return nil, "", false, mongoerr.Newf(mongoerr.Location51104, "%s needs 'input' to be of type string", name)
	}
	pattern, flags, err := regexPattern(name, pat, opts)
	if err != nil || nullish(pat) {
		return nil, "", false, err
	}
	re, err := compileRegex(name, pattern, flags)
	return re, s, isStr && err == nil, err
}

func orNull(n node) node {
	if n == nil {
		return constNode{nil}
	}
	return n
}

func regexPattern(name string, pat, opts any) (string, string, error) {
	if !nullish(opts) {
		if _, ok := opts.(string); !ok {
			return "", "", mongoerr.Newf(mongoerr.Location51106, "%s needs 'options' to be of type string", name)
		}
	}
	optStr, _ := opts.(string)
	switch p := pat.(type) {
	case string:
		return p, optStr, nil
	case bson.Regex:
		if p.Options != "" && !nullish(opts) {
			return "", "", mongoerr.Newf(mongoerr.Location51107,
				"%s: found regex option(s) specified in both 'regex' and 'option' fields", name)
		}
		return p.Pattern, p.Options + optStr, nil
	}
	if nullish(pat) {
		return "", optStr, nil
	}
	return "", "", mongoerr.Newf(mongoerr.Location51105, "%s needs 'regex' to be of type string or regex", name)
}

// compileRegex translates PCRE flags to RE2 ones; 'x' (extended) is done
// by removing unescaped whitespace and # comments from the pattern.
func compileRegex(name, pattern, flags string) (*regexp.Regexp, error) {
	var goFlags strings.Builder
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			goFlags.WriteRune(f)
		case 'x':
			pattern = stripExtended(pattern)
		default:
			return nil, mongoerr.Newf(mongoerr.Location51108, "%s invalid flag in regex options: %c", name, f)
		}
	}
	if goFlags.Len() > 0 {
		pattern = "(?" + goFlags.String() + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.Location51111, "Invalid Regex in %s: %s", name, err.Error())
	}
	return re, nil
}

func stripExtended(p string) string {
	var b strings.Builder
	escaped, comment := false, false
	for _, r := range p {
		switch {
		case comment:
			comment = r != '\n'
		case escaped:
			b.WriteRune(r)
			escaped = false
		case r == '\\':
			b.WriteRune(r)
			escaped = true
		case r == '#':
			comment = true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
