package query

import (
	"fmt"
	"regexp"
	"strings"
)

// Character classes PCRE has and RE2 lacks, spelled for use inside [...].
const (
	pcreHSpace = `\t \x{A0}\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}`
	pcreVSpace = `\n\x0B\f\r\x{85}\x{2028}\x{2029}`
)

// translator rewrites a PCRE pattern into Go regexp syntax. Besides
// rejecting what RE2 cannot do, it fixes the constructs that parse in both
// dialects but mean different things:
//
//   - `$` and `\Z` also match before a final newline in PCRE; matches are
//     only tested, never extracted, so consuming that newline is harmless;
//   - `\v` and `\h` are whitespace classes in PCRE (RE2: vertical tab, none);
//   - PCRE's extended mode (option x) has no RE2 counterpart, so whitespace
//     and #-comments are stripped here;
//   - `(?#...)` comments and `(?'name'...)` groups have no RE2 spelling.
type translator struct {
	src      string
	extended bool
	i        int
	out      strings.Builder
	inClass  bool
	classAt  int  // index of the first character inside the current class
	quant    bool // the last token was a quantifier
}

func (t *translator) run() (string, error) {
	for t.i < len(t.src) {
		if err := t.step(); err != nil {
			return "", err
		}
	}
	return t.out.String(), nil
}

func (t *translator) step() error {
	c := t.src[t.i]
	if t.inClass {
		return t.classChar(c)
	}
	if t.extended && t.skipExtended(c) {
		return nil
	}
	switch c {
	case '\\':
		return t.escape()
	case '[':
		t.openClass()
		return nil
	case '(':
		return t.group()
	case '$':
		t.emit(`(?:$|\n\z)`, 1)
		return nil
	case '*', '+', '?':
		return t.quantifier(c)
	case '{':
		t.brace()
		return nil
	}
	t.emit(t.src[t.i:t.i+1], 1) // bytes, not runes: UTF-8 passes through
	return nil
}

// emit writes s for the next n source bytes; it is not a quantifier.
func (t *translator) emit(s string, n int) {
	t.out.WriteString(s)
	t.i += n
	t.quant = false
}

// skipExtended drops whitespace and comments in extended mode.
func (t *translator) skipExtended(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v':
		t.i++
		return true
	case '#':
		end := strings.IndexByte(t.src[t.i:], '\n')
		if end < 0 {
			t.i = len(t.src)
		} else {
			t.i += end + 1
		}
		return true
	}
	return false
}

func (t *translator) quantifier(c byte) error {
	if t.quant && c == '+' {
		return unsupportedRegex("a possessive quantifier")
	}
	lazy := t.quant && c == '?'
	t.out.WriteByte(c)
	t.i++
	t.quant = !lazy
	return nil
}

// repeatRE matches a counted repetition at the start of the rest of a
// pattern; any other '{' is a literal in PCRE.
var repeatRE = regexp.MustCompile(`^\{[0-9]+(,[0-9]*)?\}`)

func (t *translator) brace() {
	if m := repeatRE.FindString(t.src[t.i:]); m != "" {
		t.out.WriteString(m)
		t.i += len(m)
		t.quant = true
		return
	}
	t.emit(`\{`, 1)
}

func (t *translator) openClass() {
	t.out.WriteByte('[')
	t.i++
	if t.i < len(t.src) && t.src[t.i] == '^' {
		t.out.WriteByte('^')
		t.i++
	}
	t.inClass = true
	t.classAt = t.i
	t.quant = false
}

func (t *translator) classChar(c byte) error {
	switch {
	case c == '\\':
		return t.classEscape()
	case c == ']' && t.i == t.classAt:
		t.emit(`\]`, 1) // a leading ']' is a literal in PCRE
	case c == ']':
		t.inClass = false
		t.emit("]", 1)
	case c == '[' && strings.HasPrefix(t.src[t.i:], "[:"):
		end := strings.Index(t.src[t.i:], ":]")
		if end < 0 {
			t.emit(`\[`, 1)
			return nil
		}
		t.emit(t.src[t.i:t.i+end+2], end+2)
	case c == '[':
		t.emit(`\[`, 1)
	default:
		t.emit(t.src[t.i:t.i+1], 1)
	}
	return nil
}

// escape translates a backslash sequence outside character classes.
func (t *translator) escape() error {
	if t.i+1 >= len(t.src) {
		t.emit(`\`, 1) // Go reports the trailing backslash
		return nil
	}
	n := t.src[t.i+1]
	if s, ok := outsideClassEscapes[n]; ok {
		t.emit(s, 2)
		return nil
	}
	if what, ok := unsupportedEscapes[n]; ok {
		return unsupportedRegex(what)
	}
	return t.commonEscape(n)
}

// classEscape translates a backslash sequence inside a character class.
func (t *translator) classEscape() error {
	if t.i+1 >= len(t.src) {
		t.emit(`\`, 1)
		return nil
	}
	n := t.src[t.i+1]
	switch n {
	case 'h':
		t.emit(pcreHSpace, 2)
	case 'v':
		t.emit(pcreVSpace, 2)
	case 'b':
		t.emit(`\x08`, 2) // backspace inside a class
	case 'H', 'V':
		return unsupportedRegex(`\H or \V inside a character class`)
	default:
		return t.commonEscape(n)
	}
	return nil
}

// commonEscape handles escapes that mean the same inside and outside
// classes, copying through the braces of \p{..}, \x{..} and \o{..}.
func (t *translator) commonEscape(n byte) error {
	switch n {
	case 'Q':
		t.quoted()
		return nil
	case 'E':
		t.emit("", 2) // a stray \E is ignored
		return nil
	case 'e':
		t.emit(`\x1B`, 2)
		return nil
	case 'c':
		return t.control()
	case 'o':
		return t.octal()
	}
	if (n == 'p' || n == 'P' || n == 'x') && strings.HasPrefix(t.src[t.i+2:], "{") {
		end := strings.IndexByte(t.src[t.i:], '}')
		if end > 0 {
			t.emit(t.src[t.i:t.i+end+1], end+1)
			return nil
		}
	}
	t.emit(t.src[t.i:t.i+2], 2)
	return nil
}

// quoted copies \Q...\E as escaped literal text.
func (t *translator) quoted() {
	body := t.src[t.i+2:]
	end := strings.Index(body, `\E`)
	consumed := len(body)
	if end >= 0 {
		body, consumed = body[:end], end+2
	}
	t.emit(regexp.QuoteMeta(body), 2+consumed)
}

// control translates \cX, the control character X^0x40.
func (t *translator) control() error {
	if t.i+2 >= len(t.src) || t.src[t.i+2] > 0x7E {
		return unsupportedRegex(`a malformed \c escape`)
	}
	x := t.src[t.i+2]
	if x >= 'a' && x <= 'z' {
		x -= 'a' - 'A'
	}
	t.emit(fmt.Sprintf(`\x{%X}`, x^0x40), 3)
	return nil
}

// octal translates \o{...}.
func (t *translator) octal() error {
	rest := t.src[t.i+2:]
	end := strings.IndexByte(rest, '}')
	if !strings.HasPrefix(rest, "{") || end < 0 {
		return unsupportedRegex(`a malformed \o escape`)
	}
	var v int
	if _, err := fmt.Sscanf(rest[1:end], "%o", &v); err != nil {
		return unsupportedRegex(`a malformed \o escape`)
	}
	t.emit(fmt.Sprintf(`\x{%X}`, v), 2+end+1)
	return nil
}

// outsideClassEscapes are rewritten PCRE escapes valid outside classes.
var outsideClassEscapes = map[byte]string{
	'Z': `(?:\n?\z)`,
	'R': `(?:\r\n|[` + pcreVSpace + `])`,
	'h': `[` + pcreHSpace + `]`,
	'H': `[^` + pcreHSpace + `]`,
	'v': `[` + pcreVSpace + `]`,
	'V': `[^` + pcreVSpace + `]`,
	'N': `[^\n]`,
}

// unsupportedEscapes are PCRE escapes RE2 cannot express.
var unsupportedEscapes = map[byte]string{
	'1': "a backreference", '2': "a backreference", '3': "a backreference",
	'4': "a backreference", '5': "a backreference", '6': "a backreference",
	'7': "a backreference", '8': "a backreference", '9': "a backreference",
	'g': "a backreference or subroutine call (\\g)", 'k': "a named backreference (\\k)",
	'G': `\G`, 'K': `\K`, 'X': `\X`, 'C': `\C`,
}

// group translates the opening of a parenthesised group.
func (t *translator) group() error {
	rest := t.src[t.i+1:]
	if strings.HasPrefix(rest, "*") {
		return unsupportedRegex("a backtracking control verb")
	}
	if !strings.HasPrefix(rest, "?") {
		t.emit("(", 1)
		return nil
	}
	rest = rest[1:]
	for _, g := range unsupportedGroups {
		if strings.HasPrefix(rest, g.prefix) {
			return unsupportedRegex(g.what)
		}
	}
	return t.specialGroup(rest)
}

// specialGroup handles "(?" groups RE2 can express in some spelling.
func (t *translator) specialGroup(rest string) error {
	switch {
	case strings.HasPrefix(rest, "#"):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return compileError(fmt.Errorf("missing ) after (?# comment"))
		}
		t.emit("", 2+end+1)
	case strings.HasPrefix(rest, "P<"):
		t.emit("(?P<", 4)
	case strings.HasPrefix(rest, "<"):
		t.emit("(?P<", 3)
	case strings.HasPrefix(rest, "'"):
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return compileError(fmt.Errorf("syntax error in subpattern name (missing terminator?)"))
		}
		t.emit("(?P<"+rest[1:1+end]+">", 2+1+end+1)
	default:
		return t.flagGroup(rest)
	}
	return nil
}

// flagGroup copies "(?flags)" and "(?flags:", allowing only the flags RE2
// shares with PCRE.
func (t *translator) flagGroup(rest string) error {
	end := strings.IndexAny(rest, ":)")
	if end < 0 {
		t.emit("(?", 2) // Go reports the malformed group
		return nil
	}
	for _, f := range rest[:end] {
		switch f {
		case 'i', 'm', 's', 'U', '-':
		case 'x':
			return unsupportedRegex("the inline (?x) flag")
		default:
			return unsupportedRegex(fmt.Sprintf("the inline (?%c) flag", f))
		}
	}
	t.emit("(?"+rest[:end+1], 2+end+1)
	return nil
}

// unsupportedGroups lists "(?" openings RE2 cannot express.
var unsupportedGroups = []struct{ prefix, what string }{
	{"=", "a lookahead assertion"},
	{"!", "a lookahead assertion"},
	{"<=", "a lookbehind assertion"},
	{"<!", "a lookbehind assertion"},
	{">", "an atomic group"},
	{"|", "a branch reset group"},
	{"(", "a conditional group"},
	{"R", "recursion"},
	{"&", "a subroutine call"},
	{"P>", "a subroutine call"},
	{"P=", "a named backreference"},
	{"+", "a subroutine call"},
	{"C", "a callout"},
	{"0", "recursion"}, {"1", "a subroutine call"}, {"2", "a subroutine call"},
	{"3", "a subroutine call"}, {"4", "a subroutine call"}, {"5", "a subroutine call"},
	{"6", "a subroutine call"}, {"7", "a subroutine call"}, {"8", "a subroutine call"},
	{"9", "a subroutine call"}, {"-1", "a subroutine call"}, {"-2", "a subroutine call"},
	{"-3", "a subroutine call"}, {"-4", "a subroutine call"}, {"-5", "a subroutine call"},
	{"-6", "a subroutine call"}, {"-7", "a subroutine call"}, {"-8", "a subroutine call"},
	{"-9", "a subroutine call"},
}
