// Package hessian is a Hessian 2.0 encoder and decoder with the Java type
// conventions Apache Dubbo's hessian-lite uses, written for the gateway's hot
// path: no reflection, bounded decoding, a value model that keeps Java types.
//
// # Value model
//
// Decode returns, and Encode accepts, these Go types:
//
//	hessian            Go
//	null               nil
//	boolean            bool
//	int                int32
//	long               int64
//	double             float64
//	date               time.Time (UTC, millisecond precision)
//	string             string
//	binary             []byte
//	list               *List   (Type keeps the type string: "", "java.util.ArrayList", "[int", "[string", ...)
//	map                *Map    (Type keeps the type string: "" for an untyped map, "java.util.HashMap", ...)
//	object             *Object (Class plus fields in declaration order)
//
// Java classes that hessian-lite writes in a special form decode to
// dedicated types, and those types encode back to the same form:
//
//	java.math.BigDecimal    BigDecimal (hessian-lite's {value} and Caucho's {intVal, scale})
//	java.math.BigInteger    BigInteger
//	java.util.Locale        Locale (hessian-lite's LocaleHandle)
//	java.time.*             LocalDate, LocalTime, LocalDateTime, Instant, Duration,
//	                        ZoneOffset, ZoneID, OffsetDateTime, OffsetTime,
//	                        ZonedDateTime, Year, YearMonth, MonthDay, Period
//	                        (hessian-lite's java8 *Handle objects)
//
// Enums, exceptions and java.sql dates stay *Object: EnumName reads an
// enum's constant, AsException turns a Throwable into an Exception (which
// Encode also accepts), Plain turns java.sql dates into time.Time. Shared
// and circular references decode to the same pointer, so a graph with
// cycles decodes without looping and without duplication; the Encoder
// writes a reference when it meets the same *List, *Map, *Object or
// *Exception again.
//
// For callers who do not care about Java types, Plain turns a value into
// map[string]any / []any / numbers / strings, and Encode also accepts plain
// Go values: int, int8, int16, uint8, uint16 (written as int when they fit
// in 32 bits, else long), uint32, uint, uint64 (long), float32, []any,
// []string, []int, []int32, []int64, []float64, []bool, map[string]any and
// map[string]string (keys sorted), map[any]any (Go's iteration order), and
// pointers to the model types. A nil slice or map is written as null, as
// encoding/json does.
//
// # Wire format
//
// The encoder picks the forms hessian-lite picks, so for the same value the
// bytes match: compact ints and longs, doubles as a byte, a short or an int
// of thousandths when exact (the 0x5f form, which hessian-lite and Caucho
// both read and write that way whatever the specification's "float" says),
// dates in minutes when on a minute, strings counted in UTF-16 units with
// characters outside the BMP as surrogate pairs, strings and binaries over
// 32 KiB in 32 KiB chunks. Like hessian-lite, the encoder writes -0.0 as
// the zero form, so the sign is lost. Unlike it, binary chunks are always
// 32 KiB, where hessian-lite's sizes follow its 8 KiB output buffer
// (readers accept any chunking).
//
// # Hostile input
//
// A Decoder never panics on bad input and never allocates more than the
// input justifies: every length, count and depth read from the wire is
// checked against its Limits and against the bytes that actually remain
// before anything is allocated, and every error is a *DecodeError naming
// the offset and tag where decoding stopped.
package hessian
