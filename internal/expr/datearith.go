package expr

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

func addDateArithOps(m map[string]compileFn) {
	m["$dateAdd"] = compileDateAdd(1)
	m["$dateSubtract"] = compileDateAdd(-1)
	m["$dateDiff"] = compileDateDiff
}

// timeUnits are the units of $dateAdd and $dateDiff.
var timeUnits = []string{"year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond"}

func compileDateAdd(sign int64) compileFn {
	return func(name string, arg any) (node, error) {
		if !isDocument(arg) {
			return nil, mongoerr.Newf(mongoerr.Location5166400, "%s only supports an object as its argument", name)
		}
		named, err := namedArgs(arg, []string{"startDate", "unit", "amount", "timezone"}, func(f string) error {
			return mongoerr.Newf(mongoerr.Location5166401, "Unrecognized argument to %s: %s", name, f)
		})
		if err != nil {
			return nil, err
		}
		if named["startDate"] == nil || named["unit"] == nil || named["amount"] == nil {
			return nil, mongoerr.Newf(mongoerr.Location5166402, "%s requires startDate, unit, and amount to be present", name)
		}
		return dateAddNode(name, sign, named), nil
	}
}

func dateAddNode(name string, sign int64, named map[string]node) node {
	return fn(func(c *ctx) (any, error) {
		vals, err := evalAll(c, []node{named["startDate"], named["unit"], named["amount"], orNull(named["timezone"])})
		if err != nil {
			return nil, err
		}
		for _, v := range vals[:3] {
			if nullish(v) {
				return nil, nil
			}
		}
		if named["timezone"] != nil && nullish(vals[3]) {
			return nil, nil
		}
		return dateAdd(name, sign, vals)
	})
}

func dateAdd(name string, sign int64, vals []any) (any, error) {
	start, err := coerceToDate(vals[0])
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.Location5166403, "%s requires startDate to be convertible to a date", name)
	}
	unit, err := timeUnitArg(name, vals[1])
	if err != nil {
		return nil, err
	}
	if !isNumber(vals[2]) || !isIntegral(vals[2]) {
		return nil, mongoerr.Newf(mongoerr.Location5166405, "%s expects integer amount of time units", name)
	}
	loc, err := zoneOf(name, vals[3])
	if err != nil {
		return nil, err
	}
	t := addUnits(start.In(loc), unit, sign*toInt64(vals[2]))
	return bson.NewDateTimeFromTime(t), nil
}

func zoneOf(name string, v any) (*time.Location, error) {
	if nullish(v) {
		return time.UTC, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, mongoerr.Newf(mongoerr.Location40517, "timezone must evaluate to a string, found %s", typeName(v))
	}
	return parseTimezone(s)
}

func timeUnitArg(name string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", mongoerr.Newf(mongoerr.Location5439013, "%s requires 'unit' to be a string, but got %s", name, typeName(v))
	}
	if !contains(timeUnits, s) {
		return "", mongoerr.Newf(mongoerr.FailedToParse, "unknown time unit value: %s", s)
	}
	return s, nil
}

// addUnits adds n units to t. Calendar units work on the wall clock of t's
// zone, and a day that does not exist in the target month is clamped to
// the month's last day (Jan 31 + 1 month = Feb 28/29), as MongoDB does.
func addUnits(t time.Time, unit string, n int64) time.Time {
	switch unit {
	case "year":
		return addMonths(t, n*12)
	case "quarter":
		return addMonths(t, n*3)
	case "month":
		return addMonths(t, n)
	case "week":
		return t.AddDate(0, 0, int(n*7))
	case "day":
		return t.AddDate(0, 0, int(n))
	}
	return t.Add(time.Duration(n) * unitDuration(unit))
}

func unitDuration(unit string) time.Duration {
	switch unit {
	case "hour":
		return time.Hour
	case "minute":
		return time.Minute
	case "second":
		return time.Second
	}
	return time.Millisecond
}

func addMonths(t time.Time, n int64) time.Time {
	total := int64(t.Year())*12 + int64(t.Month()) - 1 + n
	y, m := int(total/12), time.Month(total%12+1)
	if total%12 < 0 {
		y, m = int(total/12)-1, time.Month(total%12+13)
	}
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, t.Location()).Day()
	return time.Date(y, m, min(t.Day(), last), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
}

func compileDateDiff(name string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.New(mongoerr.Location5166301, "$dateDiff only supports an object as its argument")
	}
	keys := []string{"startDate", "endDate", "unit", "timezone", "startOfWeek"}
	named, err := namedArgs(arg, keys, func(f string) error {
		return mongoerr.Newf(mongoerr.Location5166302, "Unrecognized argument to $dateDiff: %s", f)
	})
	if err != nil {
		return nil, err
	}
	for i, k := range keys[:3] {
		if named[k] == nil {
			return nil, mongoerr.Newf([]mongoerr.Code{mongoerr.Location5166303, mongoerr.Location5166304, mongoerr.Location5166305}[i], "Missing '%s' parameter to $dateDiff", k)
		}
	}
	return dateDiffNode(name, named, keys), nil
}

func dateDiffNode(name string, named map[string]node, keys []string) node {
	return fn(func(c *ctx) (any, error) {
		vals := make([]any, len(keys))
		for i, k := range keys {
			v, err := evalOr(c, named[k], Missing)
			if err != nil {
				return nil, err
			}
			if named[k] != nil && nullish(v) {
				return nil, nil
			}
			vals[i] = v
		}
		return dateDiff(name, vals)
	})
}

func dateDiff(name string, vals []any) (any, error) {
	start, err := diffDate(vals[0], "startDate")
	if err != nil {
		return nil, err
	}
	end, err := diffDate(vals[1], "endDate")
	if err != nil {
		return nil, err
	}
	unit, err := timeUnitArg(name, vals[2])
	if err != nil {
		return nil, err
	}
	loc, err := zoneOf(name, vals[3])
	if err != nil {
		return nil, err
	}
	weekStart, err := startOfWeek(vals[4])
	if err != nil {
		return nil, err
	}
	return diffUnits(start.In(loc), end.In(loc), unit, weekStart), nil
}

func diffDate(v any, what string) (time.Time, error) {
	t, err := coerceToDate(v)
	if err != nil {
		return t, mongoerr.Newf(mongoerr.Location5166307, "$dateDiff requires '%s' to be a date, but got %s", what, typeName(v))
	}
	return t, nil
}

var weekdayNames = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

func startOfWeek(v any) (time.Weekday, error) {
	if IsMissing(v) {
		return time.Sunday, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, mongoerr.Newf(mongoerr.Location5439015, "$dateDiff requires 'startOfWeek' to be a string, but got %s", typeName(v))
	}
	d, ok := weekdayNames[strings.ToLower(s)]
	if !ok {
		return 0, mongoerr.Newf(mongoerr.Location5439016, "$dateDiff parameter 'startOfWeek' value cannot be recognized as a day of a week: %s", s)
	}
	return d, nil
}

// diffUnits counts the unit boundaries crossed between a and b in their
// zone, as $dateDiff does (so 23:59 to 00:01 is one day).
func diffUnits(a, b time.Time, unit string, weekStart time.Weekday) int64 {
	switch unit {
	case "year":
		return int64(b.Year() - a.Year())
	case "quarter":
		return quarterIndex(b) - quarterIndex(a)
	case "month":
		return monthIndex(b) - monthIndex(a)
	case "week":
		return (dayIndex(b) - weekOffset(b, weekStart) - dayIndex(a) + weekOffset(a, weekStart)) / 7
	case "day":
		return dayIndex(b) - dayIndex(a)
	case "millisecond":
		return b.UnixMilli() - a.UnixMilli()
	}
	u := int64(unitDuration(unit) / time.Millisecond)
	return floorDiv(localMillis(b), u) - floorDiv(localMillis(a), u)
}

func monthIndex(t time.Time) int64   { return int64(t.Year())*12 + int64(t.Month()) - 1 }
func quarterIndex(t time.Time) int64 { return int64(t.Year())*4 + int64(t.Month()-1)/3 }

// dayIndex numbers local calendar days.
func dayIndex(t time.Time) int64 {
	return floorDiv(time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).Unix(), 86400)
}

func weekOffset(t time.Time, start time.Weekday) int64 {
	return int64((int(t.Weekday()) - int(start) + 7) % 7)
}

func localMillis(t time.Time) int64 {
	_, off := t.Zone()
	return t.UnixMilli() + int64(off)*1000
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
