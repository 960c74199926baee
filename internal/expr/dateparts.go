package expr

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mayflydb/mayfly/internal/mongoerr"
)

// This file holds $dateFromParts, $dateToParts and $dateTrunc.

func addDatePartsOps(m map[string]compileFn) {
	m["$dateFromParts"] = compileDateFromParts
	m["$dateToParts"] = compileDateToParts
	m["$dateTrunc"] = compileDateTrunc
}

var (
	calendarParts = []string{"year", "month", "day"}
	isoParts      = []string{"isoWeekYear", "isoWeek", "isoDayOfWeek"}
	timeParts     = []string{"hour", "minute", "second", "millisecond"}
)

// Date parts other than the year must lie in this range, as in MongoDB.
const minDatePart, maxDatePart = -32768, 32767

func compileDateFromParts(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.New(mongoerr.Location40519, "$dateFromParts only supports an object as its argument")
	}
	known := append(append(append([]string{"timezone"}, calendarParts...), isoParts...), timeParts...)
	named, err := namedArgs(arg, known, func(f string) error {
		return mongoerr.Newf(mongoerr.Location40518, "Unrecognized argument to $dateFromParts: %s", f)
	})
	if err != nil {
		return nil, err
	}
	iso := named["isoWeekYear"] != nil
	switch {
	case named["year"] == nil && !iso:
		return nil, mongoerr.New(mongoerr.Location40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
	case named["year"] != nil && anyOf(named, isoParts):
		return nil, mongoerr.New(mongoerr.Location40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
	case iso && anyOf(named, calendarParts):
		return nil, mongoerr.New(mongoerr.Location40525, "$dateFromParts does not allow mixing ISO dates with natural dates")
	}
	return fn(func(c *ctx) (any, error) { return dateFromParts(c, named, iso) }), nil
}

func anyOf(named map[string]node, keys []string) bool {
	for _, k := range keys {
		if named[k] != nil {
			return true
		}
	}
	return false
}

// dateFromParts evaluates the parts (defaults: year 1970, month and day 1,
// times 0); out-of-range months, days... carry over as in MongoDB.
func dateFromParts(c *ctx, named map[string]node, iso bool) (any, error) {
	keys := append(append([]string{}, calendarParts...), timeParts...)
	defaults := []int64{1970, 1, 1, 0, 0, 0, 0}
	if iso {
		keys = append(append([]string{}, isoParts...), timeParts...)
	}
	vals := make([]int64, len(keys))
	for i, k := range keys {
		v, isNull, err := datePart(c, k, named[k], defaults[i], i > 0 && i < 5)
		if err != nil || isNull {
			return nil, err
		}
		vals[i] = v
	}
	loc, err := timezoneArg(c, "$dateFromParts", named["timezone"])
	if err != nil || loc == nil {
		return nil, err
	}
	return buildDate(vals, iso, loc)
}

func datePart(c *ctx, name string, n node, def int64, bounded bool) (int64, bool, error) {
	v, err := evalOr(c, n, def)
	if err != nil || nullish(v) {
		return 0, err == nil, err
	}
	if !isNumber(v) || !isIntegral(v) {
		return 0, false, mongoerr.Newf(mongoerr.Location40515, "'%s' must evaluate to an integer, found %s with value %s",
			name, typeName(v), formatValue(v))
	}
	i := toInt64(v)
	if bounded && (i < minDatePart || i > maxDatePart) {
		return 0, false, mongoerr.Newf(mongoerr.Location31034, "'%s' must evaluate to a value in the range [%d, %d]; value %d is not in range",
			name, minDatePart, maxDatePart, i)
	}
	return i, false, nil
}

func buildDate(v []int64, iso bool, loc *time.Location) (any, error) {
	if v[0] < 0 || v[0] > 9999 {
		name, code := "year", mongoerr.Location40523
		if iso {
			name, code = "isoWeekYear", mongoerr.Location31095
		}
		return nil, mongoerr.Newf(code, "'%s' must evaluate to an integer in the range 0 to 9999, found %d", name, v[0])
	}
	ms := time.Duration(v[6]) * time.Millisecond
	if iso {
		// ISO week 1 contains January 4th; its Monday starts the ISO year.
		jan4 := time.Date(int(v[0]), 1, 4, 0, 0, 0, 0, loc)
		monday := jan4.AddDate(0, 0, -(isoDayOfWeek(jan4) - 1))
		t := time.Date(monday.Year(), monday.Month(), monday.Day()+int((v[1]-1)*7+v[2]-1),
			int(v[3]), int(v[4]), int(v[5]), 0, loc)
		return bson.NewDateTimeFromTime(t.Add(ms)), nil
	}
	t := time.Date(int(v[0]), time.Month(v[1]), int(v[2]), int(v[3]), int(v[4]), int(v[5]), 0, loc)
	return bson.NewDateTimeFromTime(t.Add(ms)), nil
}

func compileDateToParts(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.New(mongoerr.Location40524, "$dateToParts only supports an object as its argument")
	}
	named, err := namedArgs(arg, []string{"date", "timezone", "iso8601"}, func(f string) error {
		return mongoerr.Newf(mongoerr.Location40520, "Unrecognized argument to $dateToParts: %s", f)
	})
	if err != nil {
		return nil, err
	}
	if named["date"] == nil {
		return nil, mongoerr.New(mongoerr.Location40522, "Missing 'date' parameter to $dateToParts")
	}
	return fn(func(c *ctx) (any, error) {
		iso, err := evalOr(c, named["iso8601"], false)
		if err != nil || nullish(iso) {
			return nil, err
		}
		if _, ok := iso.(bool); !ok {
			return nil, mongoerr.Newf(mongoerr.Location40521, "iso8601 must evaluate to a bool, found %s", typeName(iso))
		}
		t, ok, err := evalDateInZone(c, "$dateToParts", named["date"], named["timezone"])
		if err != nil || !ok {
			return nil, err
		}
		return dateParts(t, iso.(bool)), nil
	}), nil
}

func dateParts(t time.Time, iso bool) bson.D {
	clock := bson.D{
		{Key: "hour", Value: int32(t.Hour())}, {Key: "minute", Value: int32(t.Minute())},
		{Key: "second", Value: int32(t.Second())}, {Key: "millisecond", Value: int32(t.Nanosecond() / 1e6)},
	}
	if iso {
		y, w := t.ISOWeek()
		return append(bson.D{{Key: "isoWeekYear", Value: int32(y)}, {Key: "isoWeek", Value: int32(w)},
			{Key: "isoDayOfWeek", Value: int32(isoDayOfWeek(t))}}, clock...)
	}
	return append(bson.D{{Key: "year", Value: int32(t.Year())}, {Key: "month", Value: int32(t.Month())},
		{Key: "day", Value: int32(t.Day())}}, clock...)
}

func compileDateTrunc(_ string, arg any) (node, error) {
	if !isDocument(arg) {
		return nil, mongoerr.New(mongoerr.Location5439007, "$dateTrunc only supports an object as its argument")
	}
	keys := []string{"date", "unit", "binSize", "timezone", "startOfWeek"}
	named, err := namedArgs(arg, keys, func(f string) error {
		return mongoerr.Newf(mongoerr.Location5439008, "Unrecognized argument to $dateTrunc: %s", f)
	})
	if err != nil {
		return nil, err
	}
	if named["date"] == nil {
		return nil, mongoerr.New(mongoerr.Location5439009, "Missing 'date' parameter to $dateTrunc")
	}
	if named["unit"] == nil {
		return nil, mongoerr.New(mongoerr.Location5439010, "Missing 'unit' parameter to $dateTrunc")
	}
	return fn(func(c *ctx) (any, error) {
		vals := make([]any, len(keys))
		for i, k := range keys {
			v, err := evalOr(c, named[k], Missing)
			if err != nil || (named[k] != nil && nullish(v)) {
				return nil, err
			}
			vals[i] = v
		}
		return dateTrunc(vals)
	}), nil
}

func dateTrunc(vals []any) (any, error) {
	t, err := coerceToDate(vals[0])
	if err != nil {
		return nil, mongoerr.Newf(mongoerr.Location5439012, "$dateTrunc requires 'date' to be a date, but got %s", typeName(vals[0]))
	}
	unit, err := timeUnitArg("$dateTrunc", vals[1])
	if err != nil {
		return nil, err
	}
	bin, err := binSizeArg(vals[2])
	if err != nil {
		return nil, err
	}
	loc, err := zoneOf("$dateTrunc", vals[3])
	if err != nil {
		return nil, err
	}
	weekStart, err := startOfWeek(vals[4])
	if err != nil {
		return nil, err
	}
	return bson.NewDateTimeFromTime(truncate(t.In(loc), unit, bin, weekStart)), nil
}

func binSizeArg(v any) (int64, error) {
	if IsMissing(v) {
		return 1, nil
	}
	if !isNumber(v) || !isIntegral(v) {
		return 0, mongoerr.Newf(mongoerr.Location5439017, "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '%s' of type %s",
			formatValue(v), typeName(v))
	}
	if n := toInt64(v); n > 0 {
		return n, nil
	}
	return 0, mongoerr.Newf(mongoerr.Location5439018, "$dateTrunc requires 'binSize' to be greater than 0, but got value %s", formatValue(v))
}

// truncate floors t to a bin of bin units, bins being counted from the
// reference date 2000-01-01 in t's zone, as $dateTrunc does.
func truncate(t time.Time, unit string, bin int64, weekStart time.Weekday) time.Time {
	loc := t.Location()
	ref := time.Date(2000, 1, 1, 0, 0, 0, 0, loc)
	switch unit {
	case "year", "quarter", "month":
		size := bin * map[string]int64{"year": 12, "quarter": 3, "month": 1}[unit]
		m := floorDiv(monthIndex(t)-monthIndex(ref), size) * size
		return time.Date(2000, time.Month(1+m), 1, 0, 0, 0, 0, loc)
	case "week":
		ref = ref.AddDate(0, 0, (int(weekStart)-int(time.Saturday)+7)%7)
		d := floorDiv(dayIndex(t)-dayIndex(ref), 7*bin) * 7 * bin
		return ref.AddDate(0, 0, int(d))
	case "day":
		d := floorDiv(dayIndex(t)-dayIndex(ref), bin) * bin
		return ref.AddDate(0, 0, int(d))
	}
	size := bin * int64(unitDuration(unit)/time.Millisecond)
	local := localMillis(t) - localMillis(ref)
	return ref.Add(time.Duration(floorDiv(local, size)*size) * time.Millisecond)
}
