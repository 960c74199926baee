// Package mongodconf reads configuration files in the shape of mongod's
// (a YAML file of nested sections, such as net.port and storage.dbPath).
// It reads the part of YAML those files use: maps nested by indentation,
// plain, single- and double-quoted scalars, comments and a leading
// document marker. Lists, anchors, multi-line scalars and flow maps are
// refused with the line they are on, never guessed at.
package mongodconf

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Setting is one scalar of the file, under its dotted name.
type Setting struct {
	Value string
	Line  int
}

// Bool reads the setting as YAML's true or false.
func (s Setting) Bool(name string) (bool, error) {
	switch strings.ToLower(s.Value) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("line %d: %s must be true or false, not %q", s.Line, name, s.Value)
}

// Int reads the setting as an integer.
func (s Setting) Int(name string) (int, error) {
	n, err := strconv.Atoi(s.Value)
	if err != nil {
		return 0, fmt.Errorf("line %d: %s must be an integer, not %q", s.Line, name, s.Value)
	}
	return n, nil
}

// frame is an open section: the indentation of its keys and its name.
type frame struct {
	indent int
	prefix string
}

// Parse reads a file into its settings by dotted name ("net.port").
func Parse(r io.Reader) (map[string]Setting, error) {
	out := map[string]Setting{}
	stack := []frame{{indent: 0}}
	pending := "" // the prefix of a section just opened, whose keys come next
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line, err := stripComment(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if strings.TrimSpace(line) == "" || strings.TrimSpace(line) == "---" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if strings.HasPrefix(line[indent:], "\t") {
			return nil, fmt.Errorf("line %d: indentation must be spaces, not tabs", n)
		}
		if pending != "" {
			if indent <= stack[len(stack)-1].indent {
				return nil, fmt.Errorf("line %d: section %s is empty", n, strings.TrimSuffix(pending, "."))
			}
			stack = append(stack, frame{indent: indent, prefix: pending})
			pending = ""
		}
		for len(stack) > 1 && indent < stack[len(stack)-1].indent {
			stack = stack[:len(stack)-1]
		}
		if indent != stack[len(stack)-1].indent {
			return nil, fmt.Errorf("line %d: indentation does not match any open section", n)
		}
		key, value, err := splitEntry(line[indent:])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		name := stack[len(stack)-1].prefix + key
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("line %d: %s is set twice", n, name)
		}
		if value == nil {
			pending = name + "."
			continue
		}
		out[name] = Setting{Value: *value, Line: n}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending != "" {
		return nil, fmt.Errorf("section %s is empty", strings.TrimSuffix(pending, "."))
	}
	return out, nil
}

// splitEntry reads `key: value` or `key:` (a section; value is nil).
func splitEntry(s string) (string, *string, error) {
	if strings.HasPrefix(s, "- ") || s == "-" {
		return "", nil, fmt.Errorf("lists are not supported")
	}
	key, rest, ok := strings.Cut(s, ":")
	if !ok {
		return "", nil, fmt.Errorf("want key: value, got %q", s)
	}
	key = strings.TrimSpace(key)
	if k, err := unquote(key); err == nil && k != key {
		key = k
	}
	if key == "" {
		return "", nil, fmt.Errorf("empty key")
	}
	if rest != "" && rest[0] != ' ' {
		return "", nil, fmt.Errorf("a space must follow the colon after %s", key)
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return key, nil, nil
	}
	v, err := scalar(rest)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", key, err)
	}
	return key, &v, nil
}

// scalar reads a plain or quoted scalar.
func scalar(s string) (string, error) {
	switch s[0] {
	case '"', '\'':
		return unquote(s)
	case '[', '{':
		return "", fmt.Errorf("flow collections (%c...) are not supported", s[0])
	case '&', '*', '!', '|', '>':
		return "", fmt.Errorf("YAML %q is not supported", s[:1])
	}
	return s, nil
}

func unquote(s string) (string, error) {
	if len(s) < 2 || s[len(s)-1] != s[0] {
		if s != "" && (s[0] == '"' || s[0] == '\'') {
			return "", fmt.Errorf("unterminated quoted string %s", s)
		}
		return s, nil
	}
	body := s[1 : len(s)-1]
	if s[0] == '\'' {
		return strings.ReplaceAll(body, "''", "'"), nil
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(body) {
			return "", fmt.Errorf("dangling backslash in %s", s)
		}
		switch body[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '"', '\\', '/':
			b.WriteByte(body[i])
		default:
			return "", fmt.Errorf(`unsupported escape \%c in %s`, body[i], s)
		}
	}
	return b.String(), nil
}

// stripComment removes a comment: # at the start or after a space, outside
// quotes.
func stripComment(line string) (string, error) {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			if i == 0 || line[i-1] == ' ' || line[i-1] == ':' {
				quote = c
			}
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return strings.TrimRight(line[:i], " "), nil
		}
	}
	return strings.TrimRight(line, " "), nil
}
