package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// fmtN formats a count or rate with thousands separators: 27,312.
func fmtN(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtMs formats milliseconds with two significant decimals when small.
func fmtMs(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return fmtN(v)
}

func fmtRatio(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func fmtMiB(b int64) string { return fmt.Sprintf("%d MiB", (b+1<<19)>>20) }
