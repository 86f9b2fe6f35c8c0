package jsonbridge

import (
	"time"

	"github.com/dubbogw/dubbogw/hessian"
)

// Date and time text, in the ISO 8601 forms JSON APIs use.

// parseDate reads a java.util.Date: RFC 3339 with an offset (fractional
// seconds optional), or a calendar date alone, taken as midnight UTC.
func parseDate(s string) (time.Time, bool) {
	if len(s) == 10 {
		d, ok := parseLocalDate(s)
		if !ok {
			return time.Time{}, false
		}
		return time.Date(int(d.Year), time.Month(d.Month), int(d.Day), 0, 0, 0, 0, time.UTC), true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// parseLocalDate reads "2006-01-02".
func parseLocalDate(s string) (hessian.LocalDate, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return hessian.LocalDate{}, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return hessian.LocalDate{}, false
	}
	return hessian.LocalDate{Year: int32(y), Month: int32(m), Day: int32(d)}, true
}

// parseLocalTime reads "15:04", "15:04:05" or "15:04:05.123456789" (one to
// nine fraction digits), as java.time.LocalTime.parse does.
func parseLocalTime(s string) (hessian.LocalTime, bool) {
	if len(s) < 5 || s[2] != ':' {
		return hessian.LocalTime{}, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return hessian.LocalTime{}, false
	}
	t := hessian.LocalTime{Hour: int32(h), Minute: int32(m)}
	rest := s[5:]
	if rest == "" {
		return t, true
	}
	if len(rest) < 3 || rest[0] != ':' {
		return hessian.LocalTime{}, false
	}
	sec, ok := digits(rest[1:3])
	if !ok || sec > 59 {
		return hessian.LocalTime{}, false
	}
	t.Second = int32(sec)
	rest = rest[3:]
	if rest == "" {
		return t, true
	}
	if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
		return hessian.LocalTime{}, false
	}
	frac, ok := digits(rest[1:])
	if !ok {
		return hessian.LocalTime{}, false
	}
	for i := len(rest) - 1; i < 9; i++ {
		frac *= 10
	}
	t.Nano = int32(frac)
	return t, true
}

// parseLocalDateTime reads "2006-01-02T15:04:05" (time as in
// parseLocalTime); a space may stand for the 'T', as in Dubbo's
// "yyyy-MM-dd HH:mm:ss".
func parseLocalDateTime(s string) (hessian.LocalDateTime, bool) {
	if len(s) < 16 || (s[10] != 'T' && s[10] != ' ') {
		return hessian.LocalDateTime{}, false
	}
	d, ok := parseLocalDate(s[:10])
	if !ok {
		return hessian.LocalDateTime{}, false
	}
	t, ok := parseLocalTime(s[11:])
	if !ok {
		return hessian.LocalDateTime{}, false
	}
	return hessian.LocalDateTime{Date: d, Time: t}, true
}

// digits parses a short run of ASCII digits.
func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
