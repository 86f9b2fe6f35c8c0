package hessian

import (
	"strconv"
	"time"
)

// The java.time values hessian-lite writes as objects of its
// com.alibaba.com.caucho.hessian.io.java8.*Handle classes decode to these
// types and encode back to the same handles. Each String method prints what
// the Java class's toString prints (ISO-8601).

// LocalDate is a java.time.LocalDate.
type LocalDate struct{ Year, Month, Day int32 }

// LocalTime is a java.time.LocalTime.
type LocalTime struct{ Hour, Minute, Second, Nano int32 }

// LocalDateTime is a java.time.LocalDateTime.
type LocalDateTime struct {
	Date LocalDate
	Time LocalTime
}

// Instant is a java.time.Instant: seconds since the Unix epoch plus
// nanoseconds (0-999,999,999).
type Instant struct {
	Seconds int64
	Nanos   int32
}

// Duration is a java.time.Duration: seconds plus nanoseconds (0-999,999,999).
type Duration struct {
	Seconds int64
	Nanos   int32
}

// ZoneOffset is a java.time.ZoneOffset, in seconds east of UTC.
type ZoneOffset struct{ Seconds int32 }

// ZoneID is a java.time.ZoneId such as "Europe/Paris".
type ZoneID struct{ ID string }

// OffsetDateTime is a java.time.OffsetDateTime.
type OffsetDateTime struct {
	DateTime LocalDateTime
	Offset   ZoneOffset
}

// OffsetTime is a java.time.OffsetTime.
type OffsetTime struct {
	Time   LocalTime
	Offset ZoneOffset
}

// ZonedDateTime is a java.time.ZonedDateTime.
type ZonedDateTime struct {
	DateTime LocalDateTime
	Offset   ZoneOffset
	Zone     string
}

// Year is a java.time.Year.
type Year struct{ Year int32 }

// YearMonth is a java.time.YearMonth.
type YearMonth struct{ Year, Month int32 }

// MonthDay is a java.time.MonthDay.
type MonthDay struct{ Month, Day int32 }

// Period is a java.time.Period.
type Period struct{ Years, Months, Days int32 }

// InstantOf returns the Instant of t.
func InstantOf(t time.Time) Instant {
	return Instant{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
}

// Time returns the instant as a UTC time.Time.
func (i Instant) Time() time.Time { return time.Unix(i.Seconds, int64(i.Nanos)).UTC() }

// Time returns the date-time in a fixed zone of its offset.
func (o OffsetDateTime) Time() time.Time {
	return o.DateTime.in(time.FixedZone(o.Offset.String(), int(o.Offset.Seconds)))
}

// Time returns the date-time in a fixed zone named after the zone ID with
// the value's offset (the offset in effect at that instant).
func (z ZonedDateTime) Time() time.Time {
	return z.DateTime.in(time.FixedZone(z.Zone, int(z.Offset.Seconds)))
}

func (dt LocalDateTime) in(loc *time.Location) time.Time {
	return time.Date(int(dt.Date.Year), time.Month(dt.Date.Month), int(dt.Date.Day),
		int(dt.Time.Hour), int(dt.Time.Minute), int(dt.Time.Second), int(dt.Time.Nano), loc)
}

func (d LocalDate) String() string { return string(d.appendTo(nil)) }

func (d LocalDate) appendTo(b []byte) []byte {
	b = appendJavaYear(b, d.Year, true)
	b = append2(append(b, '-'), d.Month)
	return append2(append(b, '-'), d.Day)
}

// appendJavaYear writes a year as LocalDate.toString does: at least four
// digits, and a '+' before years past 9999 when plus is set.
func appendJavaYear(b []byte, year int32, plus bool) []byte {
	y := int64(year)
	switch {
	case y < 0 && y > -1000:
		b = append(b, '-')
		return appendPadded(b, -y, 4)
	case y >= 0 && y < 1000:
		return appendPadded(b, y, 4)
	case y > 9999 && plus:
		b = append(b, '+')
	}
	return strconv.AppendInt(b, y, 10)
}

func appendPadded(b []byte, v int64, width int) []byte {
	s := strconv.AppendInt(nil, v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func append2(b []byte, v int32) []byte {
	if v >= 0 && v < 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, int64(v), 10)
}

func (t LocalTime) String() string { return string(t.appendTo(nil)) }

func (t LocalTime) appendTo(b []byte) []byte {
	b = append2(b, t.Hour)
	b = append2(append(b, ':'), t.Minute)
	if t.Second > 0 || t.Nano > 0 {
		b = append2(append(b, ':'), t.Second)
		b = appendNanos(b, t.Nano)
	}
	return b
}

// appendNanos writes a fraction of a second in groups of three digits, as
// java.time prints it; nothing for zero.
func appendNanos(b []byte, nano int32) []byte {
	if nano <= 0 {
		return b
	}
	b = append(b, '.')
	switch {
	case nano%1000000 == 0:
		return appendPadded(b, int64(nano/1000000), 3)
	case nano%1000 == 0:
		return appendPadded(b, int64(nano/1000), 6)
	}
	return appendPadded(b, int64(nano), 9)
}

func (dt LocalDateTime) String() string { return string(dt.appendTo(nil)) }

func (dt LocalDateTime) appendTo(b []byte) []byte {
	b = dt.Date.appendTo(b)
	return dt.Time.appendTo(append(b, 'T'))
}

// String prints the instant as Instant.toString does, for example
// "2024-01-02T03:04:05.120Z".
func (i Instant) String() string {
	days := i.Seconds / 86400
	secs := i.Seconds % 86400
	if secs < 0 {
		secs += 86400
		days--
	}
	t := time.Unix(days*86400, 0).UTC()
	b := appendJavaYear(nil, int32(t.Year()), true)
	b = append2(append(b, '-'), int32(t.Month()))
	b = append2(append(b, '-'), int32(t.Day()))
	b = append2(append(b, 'T'), int32(secs/3600))
	b = append2(append(b, ':'), int32(secs/60%60))
	b = append2(append(b, ':'), int32(secs%60))
	b = appendNanos(b, i.Nanos)
	return string(append(b, 'Z'))
}

// String prints the duration as Duration.toString does, for example "PT1H2M3.5S".
func (d Duration) String() string {
	if d.Seconds == 0 && d.Nanos == 0 {
		return "PT0S"
	}
	total := d.Seconds
	if d.Seconds < 0 && d.Nanos > 0 {
		total++
	}
	hours := total / 3600
	minutes := total % 3600 / 60
	secs := total % 60
	b := []byte("PT")
	if hours != 0 {
		b = append(strconv.AppendInt(b, hours, 10), 'H')
	}
	if minutes != 0 {
		b = append(strconv.AppendInt(b, minutes, 10), 'M')
	}
	if secs == 0 && d.Nanos == 0 && len(b) > 2 {
		return string(b)
	}
	if d.Seconds < 0 && d.Nanos > 0 && secs == 0 {
		b = append(b, "-0"...)
	} else {
		b = strconv.AppendInt(b, secs, 10)
	}
	if d.Nanos > 0 {
		var frac int64
		if d.Seconds < 0 {
			frac = 2*1000000000 - int64(d.Nanos)
		} else {
			frac = int64(d.Nanos) + 1000000000
		}
		digits := strconv.AppendInt(nil, frac, 10)
		for len(digits) > 0 && digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
		}
		b = append(b, '.')
		b = append(b, digits[1:]...)
	}
	return string(append(b, 'S'))
}

// String prints the offset's ID: "Z", "+05:30", "-08:00", "+01:02:03".
func (o ZoneOffset) String() string {
	if o.Seconds == 0 {
		return "Z"
	}
	abs := int64(o.Seconds)
	b := []byte{'+'}
	if abs < 0 {
		b[0] = '-'
		abs = -abs
	}
	b = append2(b, int32(abs/3600))
	b = append2(append(b, ':'), int32(abs/60%60))
	if s := abs % 60; s != 0 {
		b = append2(append(b, ':'), int32(s))
	}
	return string(b)
}

func (z ZoneID) String() string { return z.ID }

func (o OffsetDateTime) String() string {
	return string(o.DateTime.appendTo(nil)) + o.Offset.String()
}

func (o OffsetTime) String() string { return string(o.Time.appendTo(nil)) + o.Offset.String() }

func (z ZonedDateTime) String() string {
	s := string(z.DateTime.appendTo(nil)) + z.Offset.String()
	if z.Zone != "" && z.Zone != z.Offset.String() {
		s += "[" + z.Zone + "]"
	}
	return s
}

func (y Year) String() string { return strconv.FormatInt(int64(y.Year), 10) }

func (ym YearMonth) String() string {
	b := appendJavaYear(nil, ym.Year, false)
	return string(append2(append(b, '-'), ym.Month))
}

func (md MonthDay) String() string {
	b := append2([]byte("--"), md.Month)
	return string(append2(append(b, '-'), md.Day))
}

// String prints the period as Period.toString does, for example "P1Y2M3D".
func (p Period) String() string {
	if p.Years == 0 && p.Months == 0 && p.Days == 0 {
		return "P0D"
	}
	b := []byte{'P'}
	if p.Years != 0 {
		b = append(strconv.AppendInt(b, int64(p.Years), 10), 'Y')
	}
	if p.Months != 0 {
		b = append(strconv.AppendInt(b, int64(p.Months), 10), 'M')
	}
	if p.Days != 0 {
		b = append(strconv.AppendInt(b, int64(p.Days), 10), 'D')
	}
	return string(b)
}
