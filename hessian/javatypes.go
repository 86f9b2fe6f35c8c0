package hessian

import (
	"math"
	"math/big"
	"strings"
)

// Locale is a java.util.Locale, kept as Java's toString form ("en_US").
// hessian-lite writes it as a com.alibaba.com.caucho.hessian.io.LocaleHandle
// object with one field, "value".
type Locale struct{ Value string }

// javaKind names the Java classes that decode to a dedicated Go type.
type javaKind uint8

const (
	kindPlain javaKind = iota
	kindBigDecimal
	kindBigInteger
	kindLocale
	kindLocalDate
	kindLocalTime
	kindLocalDateTime
	kindInstant
	kindDuration
	kindZoneOffset
	kindZoneID
	kindOffsetDateTime
	kindOffsetTime
	kindZonedDateTime
	kindYear
	kindYearMonth
	kindMonthDay
	kindPeriod
	// hessian-lite's opt-in "bit encoding" of java.time
	// (-Dcom.caucho.hessian.io.java.time.serializer.useBitEncoding=true).
	kindLocalDateBits
	kindLocalTimeBits
	kindLocalDateTimeBits
)

// Class names and field lists, in the order hessian-lite's serializer
// writes them (declaration order, primitives and java.lang fields first).
const (
	classBigDecimal    = "java.math.BigDecimal"
	classBigInteger    = "java.math.BigInteger"
	classLocaleHandle  = "com.alibaba.com.caucho.hessian.io.LocaleHandle"
	java8Handles       = "com.alibaba.com.caucho.hessian.io.java8."
	classLocalDate     = java8Handles + "LocalDateHandle"
	classLocalTime     = java8Handles + "LocalTimeHandle"
	classLocalDateTime = java8Handles + "LocalDateTimeHandle"
	classInstant       = java8Handles + "InstantHandle"
	classDuration      = java8Handles + "DurationHandle"
	classZoneOffset    = java8Handles + "ZoneOffsetHandle"
	classZoneID        = java8Handles + "ZoneIdHandle"
	classOffsetDT      = java8Handles + "OffsetDateTimeHandle"
	classOffsetTime    = java8Handles + "OffsetTimeHandle"
	classZonedDT       = java8Handles + "ZonedDateTimeHandle"
	classYear          = java8Handles + "YearHandle"
	classYearMonth     = java8Handles + "YearMonthHandle"
	classMonthDay      = java8Handles + "MonthDayHandle"
	classPeriod        = java8Handles + "PeriodHandle"
)

// Field lists written by the encoder. They are never modified.
var (
	fieldsValue          = []string{"value"}
	fieldsBigInteger     = []string{"signum", "mag"}
	fieldsLocalDate      = []string{"year", "month", "day"}
	fieldsLocalTime      = []string{"hour", "minute", "second", "nano"}
	fieldsLocalDateTime  = []string{"date", "time"}
	fieldsSecondsNanos   = []string{"seconds", "nanos"}
	fieldsZoneOffset     = []string{"seconds"}
	fieldsZoneID         = []string{"zoneId"}
	fieldsOffsetDateTime = []string{"dateTime", "offset"}
	fieldsOffsetTime     = []string{"localTime", "zoneOffset"}
	fieldsZonedDateTime  = []string{"zoneId", "dateTime", "offset"}
	fieldsYear           = []string{"year"}
	fieldsYearMonth      = []string{"year", "month"}
	fieldsMonthDay       = []string{"month", "day"}
	fieldsPeriod         = []string{"years", "months", "days"}
)

func javaKindOf(class string) javaKind {
	if !strings.HasPrefix(class, "java") && !strings.HasPrefix(class, "com.alibaba.com.caucho.") {
		return kindPlain
	}
	switch class {
	case classBigDecimal:
		return kindBigDecimal
	case classBigInteger:
		return kindBigInteger
	case classLocaleHandle:
		return kindLocale
	case classLocalDate:
		return kindLocalDate
	case classLocalTime:
		return kindLocalTime
	case classLocalDateTime:
		return kindLocalDateTime
	case classInstant:
		return kindInstant
	case classDuration:
		return kindDuration
	case classZoneOffset:
		return kindZoneOffset
	case classZoneID:
		return kindZoneID
	case classOffsetDT:
		return kindOffsetDateTime
	case classOffsetTime:
		return kindOffsetTime
	case classZonedDT:
		return kindZonedDateTime
	case classYear:
		return kindYear
	case classYearMonth:
		return kindYearMonth
	case classMonthDay:
		return kindMonthDay
	case classPeriod:
		return kindPeriod
	case "java.time.LocalDate":
		return kindLocalDateBits
	case "java.time.LocalTime":
		return kindLocalTimeBits
	case "java.time.LocalDateTime":
		return kindLocalDateTimeBits
	}
	return kindPlain
}

// fromJava turns an object of a class with a dedicated Go type into that
// type. It reports false, and the object stays an *Object, when the fields
// are not what the class writes.
func fromJava(k javaKind, o *Object) (any, bool) {
	switch k {
	case kindBigDecimal:
		return bigDecimalFrom(o)
	case kindBigInteger:
		return bigIntegerFrom(o)
	case kindLocale:
		if s, ok := fieldString(o, "value"); ok {
			return Locale{Value: s}, true
		}
	case kindLocalDate:
		return localDateFrom(o)
	case kindLocalTime:
		return localTimeFrom(o)
	case kindLocalDateTime, kindLocalDateTimeBits:
		d, ok1 := fieldAs[LocalDate](o, "date")
		t, ok2 := fieldAs[LocalTime](o, "time")
		if ok1 && ok2 {
			return LocalDateTime{Date: d, Time: t}, true
		}
	case kindInstant:
		s, ok1 := fieldInt64(o, "seconds")
		n, ok2 := fieldInt32(o, "nanos")
		if ok1 && ok2 {
			return Instant{Seconds: s, Nanos: n}, true
		}
	case kindDuration:
		s, ok1 := fieldInt64(o, "seconds")
		n, ok2 := fieldInt32(o, "nanos")
		if ok1 && ok2 {
			return Duration{Seconds: s, Nanos: n}, true
		}
	case kindZoneOffset:
		if s, ok := fieldInt32(o, "seconds"); ok {
			return ZoneOffset{Seconds: s}, true
		}
	case kindZoneID:
		if s, ok := fieldString(o, "zoneId"); ok {
			return ZoneID{ID: s}, true
		}
	case kindOffsetDateTime:
		dt, ok1 := fieldAs[LocalDateTime](o, "dateTime")
		off, ok2 := fieldAs[ZoneOffset](o, "offset")
		if ok1 && ok2 {
			return OffsetDateTime{DateTime: dt, Offset: off}, true
		}
	case kindOffsetTime:
		t, ok1 := fieldAs[LocalTime](o, "localTime")
		off, ok2 := fieldAs[ZoneOffset](o, "zoneOffset")
		if ok1 && ok2 {
			return OffsetTime{Time: t, Offset: off}, true
		}
	case kindZonedDateTime:
		dt, ok1 := fieldAs[LocalDateTime](o, "dateTime")
		off, ok2 := fieldAs[ZoneOffset](o, "offset")
		zone, ok3 := fieldString(o, "zoneId")
		if ok1 && ok2 && ok3 {
			return ZonedDateTime{DateTime: dt, Offset: off, Zone: zone}, true
		}
	case kindYear:
		if y, ok := fieldInt32(o, "year"); ok {
			return Year{Year: y}, true
		}
	case kindYearMonth:
		y, ok1 := fieldInt32(o, "year")
		m, ok2 := fieldInt32(o, "month")
		if ok1 && ok2 {
			return YearMonth{Year: y, Month: m}, true
		}
	case kindMonthDay:
		m, ok1 := fieldInt32(o, "month")
		d, ok2 := fieldInt32(o, "day")
		if ok1 && ok2 {
			return MonthDay{Month: m, Day: d}, true
		}
	case kindPeriod:
		y, ok1 := fieldInt32(o, "years")
		m, ok2 := fieldInt32(o, "months")
		d, ok3 := fieldInt32(o, "days")
		if ok1 && ok2 && ok3 {
			return Period{Years: y, Months: m, Days: d}, true
		}
	case kindLocalDateBits:
		// value = year<<9 | month<<5 | day
		if v, ok := fieldInt32(o, "value"); ok {
			return LocalDate{Year: v >> 9, Month: v >> 5 & 0xf, Day: v & 0x1f}, true
		}
	case kindLocalTimeBits:
		// value = hour<<47 | minute<<41 | second<<35 | nano
		if v, ok := fieldInt64(o, "value"); ok && v >= 0 {
			return LocalTime{Hour: int32(v >> 47), Minute: int32(v >> 41 & 0x3f),
				Second: int32(v >> 35 & 0x3f), Nano: int32(v & (1<<35 - 1))}, true
		}
	}
	return nil, false
}

func localDateFrom(o *Object) (any, bool) {
	y, ok1 := fieldInt32(o, "year")
	m, ok2 := fieldInt32(o, "month")
	d, ok3 := fieldInt32(o, "day")
	if ok1 && ok2 && ok3 {
		return LocalDate{Year: y, Month: m, Day: d}, true
	}
	return nil, false
}

func localTimeFrom(o *Object) (any, bool) {
	h, ok1 := fieldInt32(o, "hour")
	m, ok2 := fieldInt32(o, "minute")
	s, ok3 := fieldInt32(o, "second")
	n, ok4 := fieldInt32(o, "nano")
	if ok1 && ok2 && ok3 && ok4 {
		return LocalTime{Hour: h, Minute: m, Second: s, Nano: n}, true
	}
	return nil, false
}

func fieldAs[T any](o *Object, name string) (T, bool) {
	v, _ := o.Get(name)
	t, ok := v.(T)
	return t, ok
}

func fieldString(o *Object, name string) (string, bool) { return fieldAs[string](o, name) }

// fieldInt32 accepts an int, or a long that fits, as other writers than
// Java's may use either for an int field.
func fieldInt32(o *Object, name string) (int32, bool) {
	v, _ := o.Get(name)
	switch n := v.(type) {
	case int32:
		return n, true
	case int64:
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return int32(n), true
		}
	}
	return 0, false
}

func fieldInt64(o *Object, name string) (int64, bool) {
	v, _ := o.Get(name)
	switch n := v.(type) {
	case int64:
		return n, true
	case int32:
		return int64(n), true
	}
	return 0, false
}

// maxBigIntegerWords bounds the magnitude the decoder turns into decimal
// (8192 bits, about 2,500 digits); larger ones stay objects, so a hostile
// stream cannot spend quadratic time in base conversion.
const maxBigIntegerWords = 256

// bigDecimalFrom reads either form of java.math.BigDecimal: hessian-lite's
// (one String field "value", toString of the number) or Caucho's (the
// serializable fields "intVal", a BigInteger, and "scale"). Caucho drops the
// value of small numbers (kept in the transient intCompact field) and writes
// intVal null; such an object stays an *Object rather than become a wrong number.
func bigDecimalFrom(o *Object) (any, bool) {
	if s, ok := fieldString(o, "value"); ok {
		if validDecimal(s) {
			return BigDecimal{Value: s}, true
		}
		return nil, false
	}
	scale, ok := fieldInt32(o, "scale")
	if !ok {
		return nil, false
	}
	unscaled, ok := fieldAs[BigInteger](o, "intVal")
	if !ok {
		return nil, false
	}
	return BigDecimal{Value: javaDecimalString(unscaled.Value, scale)}, true
}

// javaDecimalString formats unscaled×10^-scale as BigDecimal.toString does.
func javaDecimalString(unscaled string, scale int32) string {
	neg := strings.HasPrefix(unscaled, "-")
	coeff := strings.TrimPrefix(unscaled, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	adjusted := -int64(scale) + int64(len(coeff)-1)
	if scale >= 0 && adjusted >= -6 {
		switch {
		case scale == 0:
			b.WriteString(coeff)
		case len(coeff) > int(scale):
			b.WriteString(coeff[:len(coeff)-int(scale)])
			b.WriteByte('.')
			b.WriteString(coeff[len(coeff)-int(scale):])
		default:
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", int(scale)-len(coeff)))
			b.WriteString(coeff)
		}
		return b.String()
	}
	b.WriteByte(coeff[0])
	if len(coeff) > 1 {
		b.WriteByte('.')
		b.WriteString(coeff[1:])
	}
	b.WriteByte('E')
	if adjusted >= 0 {
		b.WriteByte('+')
	}
	b.WriteString(big.NewInt(adjusted).String())
	return b.String()
}

// validDecimal reports whether s is a number java.math.BigDecimal(String)
// accepts: [sign] digits [. digits] [e|E [sign] digits], at least one digit
// in the significand, an exponent that fits in an int.
func validDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != 'e' && s[i] != 'E' {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	var exp int64
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		exp = exp*10 + int64(s[i]-'0')
		if exp > math.MaxInt32+1 {
			return false
		}
		i++
	}
	return i > start && i == len(s)
}

// bigIntegerFrom reads java.math.BigInteger as Java's field serializer
// writes it: "signum" (-1, 0, 1) and "mag", the big-endian magnitude in
// 32-bit words (an int[]); the cached bit counts are ignored.
func bigIntegerFrom(o *Object) (any, bool) {
	signum, ok := fieldInt32(o, "signum")
	if !ok || signum < -1 || signum > 1 {
		return nil, false
	}
	mag, ok := fieldAs[*List](o, "mag")
	if !ok || len(mag.Items) > maxBigIntegerWords {
		return nil, false
	}
	buf := make([]byte, 0, 4*len(mag.Items))
	for _, it := range mag.Items {
		w, ok := it.(int32)
		if !ok {
			return nil, false
		}
		buf = append(buf, byte(w>>24), byte(w>>16), byte(w>>8), byte(w))
	}
	n := new(big.Int).SetBytes(buf)
	if (n.Sign() == 0) != (signum == 0) {
		return nil, false
	}
	if signum < 0 {
		n.Neg(n)
	}
	return BigInteger{Value: n.String()}, true
}

// bigIntegerMag returns the signum and magnitude words of a decimal integer.
func bigIntegerMag(s string) (int32, []int32, bool) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return 0, nil, false
	}
	signum := int32(n.Sign())
	b := n.Abs(n).Bytes()
	words := make([]int32, (len(b)+3)/4)
	// Right-align the bytes into 32-bit words, most significant first.
	for i := range b {
		j := len(b) - 1 - i // byte index from the least significant end
		w := len(words) - 1 - j/4
		words[w] |= int32(b[i]) << (8 * uint(j%4))
	}
	return signum, words, true
}
