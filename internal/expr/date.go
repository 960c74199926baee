package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // Olson time zone names must resolve the same on every machine.

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addDateOps(m map[string]compileFn) {
	parts := map[string]func(t time.Time) int{
		"$year":         func(t time.Time) int { return t.Year() },
		"$month":        func(t time.Time) int { return int(t.Month()) },
		"$dayOfMonth":   func(t time.Time) int { return t.Day() },
		"$hour":         func(t time.Time) int { return t.Hour() },
		"$minute":       func(t time.Time) int { return t.Minute() },
		"$second":       func(t time.Time) int { return t.Second() },
		"$millisecond":  func(t time.Time) int { return t.Nanosecond() / 1e6 },
		"$dayOfYear":    func(t time.Time) int { return t.YearDay() },
		"$dayOfWeek":    func(t time.Time) int { return int(t.Weekday()) + 1 },
		"$week":         sundayWeek,
		"$isoWeek":      func(t time.Time) int { _, w := t.ISOWeek(); return w },
		"$isoWeekYear":  func(t time.Time) int { y, _ := t.ISOWeek(); return y },
		"$isoDayOfWeek": isoDayOfWeek,
	}
	for name, part := range parts {
		m[name] = datePartOp(part)
	}
	m["$dateToString"] = compileDateToString
	addDateArithOps(m)
}

// sundayWeek is strftime's %U: weeks start on Sunday and the days before
// the year's first Sunday are week 0.
func sundayWeek(t time.Time) int { return (t.YearDay() + 6 - int(t.Weekday())) / 7 }

func isoDayOfWeek(t time.Time) int {
	if t.Weekday() == time.Sunday {
		return 7
	}
	return int(t.Weekday())
}

// coerceToDate accepts what MongoDB's date operators accept: dates,
// timestamps and ObjectIds (their creation time).
func coerceToDate(v any) (time.Time, error) {
	switch x := v.(type) {
	case bson.DateTime:
		return x.Time().UTC(), nil
	case bson.Timestamp:
		return time.Unix(int64(x.T), 0).UTC(), nil
	case bson.ObjectID:
		return x.Timestamp().UTC(), nil
	}
	return time.Time{}, mongoerr.Newf(mongoerr.Location16006, "can't convert from BSON type %s to Date", typeName(v))
}

// parseTimezone accepts Olson names ("Europe/Paris"), "UTC"/"GMT" and
// fixed offsets ("+05:30", "+0530", "+05", "-08:00").
func parseTimezone(s string) (*time.Location, error) {
	if loc, ok := parseOffset(s); ok {
		return loc, nil
	}
	if s != "" && s != "Local" {
		if loc, err := time.LoadLocation(s); err == nil {
			return loc, nil
		}
	}
	return nil, mongoerr.Newf(mongoerr.Location40485, "unrecognized time zone identifier: \"%s\"", s)
}

func parseOffset(s string) (*time.Location, bool) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return nil, false
	}
	digits := strings.Replace(s[1:], ":", "", 1)
	if len(digits) != 2 && len(digits) != 4 {
		return nil, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return nil, false
	}
	h, m := n, 0
	if len(digits) == 4 {
		h, m = n/100, n%100
	}
	secs := h*3600 + m*60
	if s[0] == '-' {
		secs = -secs
	}
	return time.FixedZone(s, secs), true
}

// timezoneArg evaluates an optional timezone argument; nil location with
// nil error means the timezone was nullish (the result is then null).
func timezoneArg(c *ctx, name string, tz node) (*time.Location, error) {
	if tz == nil {
		return time.UTC, nil
	}
	v, err := tz.eval(c)
	if err != nil || nullish(v) {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40533, "%s requires a string for the timezone argument, but was given a %s (%s)",
			name, typeName(v), formatValue(v))
	}
	return parseTimezone(s)
}

// datePartOp builds $year, $month...: the argument is a date expression,
// [date], or {date, timezone}.
func datePartOp(part func(time.Time) int) compileFn {
	return func(name string, arg any) (node, error) {
		date, tz, err := parseDateArg(name, arg)
		if err != nil {
			return nil, err
		}
		return fn(func(c *ctx) (any, error) {
			t, ok, err := evalDateInZone(c, name, date, tz)
			if err != nil || !ok {
				return nil, err
			}
			return int32(part(t)), nil
		}), nil
	}
}

func parseDateArg(name string, arg any) (node, node, error) {
	if a, ok := asArray(arg); ok {
		if len(a) != 1 {
			return nil, nil, mongoerr.Newf(mongoerr.Location40536,
				"%s accepts exactly one argument if given an array, but was given %d", name, len(a))
		}
		n, err := compile(a[0])
		return n, nil, err
	}
	d := asDocument(arg)
	if !isDocument(arg) || (len(d) > 0 && strings.HasPrefix(d[0].Key, "$")) {
		n, err := compile(arg)
		return n, nil, err
	}
	named, err := namedArgs(arg, []string{"date", "timezone"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location40535, "unrecognized option to %s: \"%s\"", name, f)
	})
	if err == nil && named["date"] == nil {
		err = mongoerr.Newf(mongoerr.Location40539, "missing 'date' argument to %s, provided: %s", name, formatValue(arg))
	}
	return named["date"], named["timezone"], err
}

// evalDateInZone evaluates a date and timezone pair; ok is false when
// either is nullish.
func evalDateInZone(c *ctx, name string, date, tz node) (time.Time, bool, error) {
	v, err := date.eval(c)
	if err != nil || nullish(v) {
		return time.Time{}, false, err
	}
	t, err := coerceToDate(v)
	if err != nil {
		return time.Time{}, false, err
	}
	loc, err := timezoneArg(c, name, tz)
	if err != nil || loc == nil {
		return time.Time{}, false, err
	}
	return t.In(loc), true, nil
}

// defaultDateFormat is MongoDB's ISO-8601 format for $dateToString.
const defaultDateFormat = "%Y-%m-%dT%H:%M:%S.%LZ"

func compileDateToString(name string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.New(mongoerr.Location18629, "$dateToString only supports an object as its argument")
	}
	named, err := namedArgs(arg, []string{"format", "date", "timezone", "onNull"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location18534, "Unrecognized argument to $dateToString: %s", f)
	})
	if err != nil {
		return nil, err
	}
	if named["date"] == nil {
		return nil, mongoerr.New(mongoerr.Location18628, "Missing 'date' parameter to $dateToString")
	}
	return dateToStringNode(name, named), nil
}

func dateToStringNode(name string, named map[string]node) node {
	return fn(func(c *ctx) (any, error) {
		format, fmtNull, err := dateFormatArg(c, named["format"])
		if err != nil {
			return nil, err
		}
		loc, err := timezoneArg(c, name, named["timezone"])
		if err != nil {
			return nil, err
		}
		v, err := named["date"].eval(c)
		if err != nil || nullish(v) {
			return evalOnNull(c, named["onNull"], err)
		}
		if loc == nil || fmtNull {
			return nil, nil
		}
		t, err := coerceToDate(v)
		if err != nil {
			return nil, err
		}
		return formatDate(format, t.In(loc))
	})
}

func evalOnNull(c *ctx, onNull node, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return evalOr(c, onNull, nil)
}

func dateFormatArg(c *ctx, format node) (string, bool, error) {
	if format == nil {
		return defaultDateFormat, false, nil
	}
	v, err := format.eval(c)
	if err != nil || nullish(v) {
		return "", err == nil, err
	}
	s, ok := v.(string)
	if !ok {
		return "", false, mongoerr.Newf(mongoerr.Location18533, "$dateToString requires that 'format' be a string, found: %s with value %s",
			typeName(v), formatValue(v))
	}
	return s, false, validateDateFormat(s)
}

func validateDateFormat(f string) error {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 == len(f) {
			return mongoerr.New(mongoerr.Location18535, "Unmatched '%' at end of format string")
		}
		i++
		if !strings.ContainsRune("dGHjLmMSuUVwYzZ%", rune(f[i])) {
			return mongoerr.Newf(mongoerr.Location18536, "Invalid format character '%%%c' in format string", f[i])
		}
	}
	return nil
}

func formatDate(f string, t time.Time) (any, error) {
	if t.Year() < 0 || t.Year() > 9999 {
		return nil, mongoerr.Newf(mongoerr.Location18537, "$dateToString is only defined on year 0 to 9999")
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		i++
		b.WriteString(formatSpec(f[i], t))
	}
	return b.String(), nil
}

func formatSpec(spec byte, t time.Time) string {
	isoYear, isoWeek := t.ISOWeek()
	switch spec {
	case 'd':
		return fmt.Sprintf("%02d", t.Day())
	case 'G':
		return fmt.Sprintf("%04d", isoYear)
	case 'H':
		return fmt.Sprintf("%02d", t.Hour())
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay())
	case 'L':
		return fmt.Sprintf("%03d", t.Nanosecond()/1e6)
	case 'm':
		return fmt.Sprintf("%02d", int(t.Month()))
	case 'M':
		return fmt.Sprintf("%02d", t.Minute())
	case 'S':
		return fmt.Sprintf("%02d", t.Second())
	case 'u':
		return strconv.Itoa(isoDayOfWeek(t))
	case 'U':
		return fmt.Sprintf("%02d", sundayWeek(t))
	case 'V':
		return fmt.Sprintf("%02d", isoWeek)
	case 'w':
		return strconv.Itoa(int(t.Weekday()) + 1)
	case 'Y':
		return fmt.Sprintf("%04d", t.Year())
	case 'z':
		return t.Format("-0700")
	case 'Z':
		return offsetMinutes(t)
	}
	return "%"
}

func offsetMinutes(t time.Time) string {
	_, secs := t.Zone()
	sign := "+"
	if secs < 0 {
		sign, secs = "-", -secs
	}
	return fmt.Sprintf("%s%03d", sign, secs/60)
}
