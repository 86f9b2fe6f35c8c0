package hessian

import "fmt"

// writeBigDecimal writes a java.math.BigDecimal as hessian-lite does: an
// object with one String field "value".
func (e *Encoder) writeBigDecimal(d BigDecimal) error {
	if !validDecimal(d.Value) {
		return fmt.Errorf("hessian: cannot encode BigDecimal %q: not a decimal number", d.Value)
	}
	e.objectStart(classBigDecimal, fieldsValue, false)
	e.WriteString(d.Value)
	return nil
}

// writeBigInteger writes a java.math.BigInteger as Java's field serializer
// does, with its serialized state "signum" and "mag" (the magnitude as an
// int[]); the receiver recomputes the cached bit counts.
func (e *Encoder) writeBigInteger(n BigInteger) error {
	signum, words, ok := bigIntegerMag(n.Value)
	if !ok {
		return fmt.Errorf("hessian: cannot encode BigInteger %q: not a decimal integer", n.Value)
	}
	e.objectStart(classBigInteger, fieldsBigInteger, false)
	e.WriteInt(signum)
	e.WriteListStart("[int", len(words))
	for _, w := range words {
		e.WriteInt(w)
	}
	return nil
}

// encodeJavaValue writes the Go types that stand for hessian-lite's
// java.time handles and Locale. It reports false for any other type.
func (e *Encoder) encodeJavaValue(v any) bool {
	switch x := v.(type) {
	case Locale:
		e.objectStart(classLocaleHandle, fieldsValue, false)
		e.WriteString(x.Value)
	case LocalDate:
		e.writeLocalDate(x)
	case LocalTime:
		e.writeLocalTime(x)
	case LocalDateTime:
		e.writeLocalDateTime(x)
	case Instant:
		e.objectStart(classInstant, fieldsSecondsNanos, false)
		e.WriteLong(x.Seconds)
		e.WriteInt(x.Nanos)
	case Duration:
		e.objectStart(classDuration, fieldsSecondsNanos, false)
		e.WriteLong(x.Seconds)
		e.WriteInt(x.Nanos)
	case ZoneOffset:
		e.writeZoneOffset(x)
	case ZoneID:
		e.objectStart(classZoneID, fieldsZoneID, false)
		e.WriteString(x.ID)
	case OffsetDateTime:
		e.objectStart(classOffsetDT, fieldsOffsetDateTime, false)
		e.writeLocalDateTime(x.DateTime)
		e.writeZoneOffset(x.Offset)
	case OffsetTime:
		e.objectStart(classOffsetTime, fieldsOffsetTime, false)
		e.writeLocalTime(x.Time)
		e.writeZoneOffset(x.Offset)
	case ZonedDateTime:
		e.objectStart(classZonedDT, fieldsZonedDateTime, false)
		zone := x.Zone
		if zone == "" {
			zone = x.Offset.String() // a zone that is its offset has the offset's ID
		}
		e.WriteString(zone)
		e.writeLocalDateTime(x.DateTime)
		e.writeZoneOffset(x.Offset)
	case Year:
		e.objectStart(classYear, fieldsYear, false)
		e.WriteInt(x.Year)
	case YearMonth:
		e.objectStart(classYearMonth, fieldsYearMonth, false)
		e.WriteInt(x.Year)
		e.WriteInt(x.Month)
	case MonthDay:
		e.objectStart(classMonthDay, fieldsMonthDay, false)
		e.WriteInt(x.Month)
		e.WriteInt(x.Day)
	case Period:
		e.objectStart(classPeriod, fieldsPeriod, false)
		e.WriteInt(x.Years)
		e.WriteInt(x.Months)
		e.WriteInt(x.Days)
	default:
		return false
	}
	return true
}

func (e *Encoder) writeLocalDate(d LocalDate) {
	e.objectStart(classLocalDate, fieldsLocalDate, false)
	e.WriteInt(d.Year)
	e.WriteInt(d.Month)
	e.WriteInt(d.Day)
}

func (e *Encoder) writeLocalTime(t LocalTime) {
	e.objectStart(classLocalTime, fieldsLocalTime, false)
	e.WriteInt(t.Hour)
	e.WriteInt(t.Minute)
	e.WriteInt(t.Second)
	e.WriteInt(t.Nano)
}

func (e *Encoder) writeLocalDateTime(dt LocalDateTime) {
	e.objectStart(classLocalDateTime, fieldsLocalDateTime, false)
	e.writeLocalDate(dt.Date)
	e.writeLocalTime(dt.Time)
}

func (e *Encoder) writeZoneOffset(o ZoneOffset) {
	e.objectStart(classZoneOffset, fieldsZoneOffset, false)
	e.WriteInt(o.Seconds)
}
