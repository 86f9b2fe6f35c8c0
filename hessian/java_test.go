package hessian

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Streams written by Caucho Hessian 4.0.38 on JDK 17 (the jar Debian ships
// as libhessian-java), used as fixtures.
const (
	// new BigDecimal("-123456789012345678901234567890.12"): Caucho writes
	// the fields intVal (a BigInteger) and scale.
	cauchoBigDecimal = "43146a6176612e6d6174682e426967446563696d616c92057363616c6506696e7456616c609243146a6176612e6d6174682e426967496e746567657296067369676e756d0f626974436f756e74506c75734f6e65106269744c656e677468506c75734f6e65136c6f77657374536574426974506c757354776f1966697273744e6f6e7a65726f496e744e756d506c757354776f036d6167618f9090909074045b696e74c89b49d30a3c64495943dd164990a03a14"
	// new BigDecimal(new BigInteger("123456789012345678901234567890"), -5)
	cauchoBigDecimalSci = "43146a6176612e6d6174682e426967446563696d616c92057363616c6506696e7456616c608b43146a6176612e6d6174682e426967496e746567657296067369676e756d0f626974436f756e74506c75734f6e65106269744c656e677468506c75734f6e65136c6f77657374536574426974506c757354776f1966697273744e6f6e7a65726f496e744e756d506c757354776f036d616761919090909074045b696e7491498ee90ff649c373e0ee494e3f0ad2"
	// new BigDecimal("-12.3400"): the value lives in the transient
	// intCompact field, so Caucho writes intVal null.
	cauchoBigDecimalLost = "43146a6176612e6d6174682e426967446563696d616c92057363616c6506696e7456616c6094" + "4e"
	// new BigInteger("-12345678901234567890")
	cauchoBigInteger = "43146a6176612e6d6174682e426967496e746567657296067369676e756d0f626974436f756e74506c75734f6e65106269744c656e677468506c75734f6e65136c6f77657374536574426974506c757354776f1966697273744e6f6e7a65726f496e744e756d506c757354776f036d6167608f9090909072045b696e7449ab54a98c49eb1f0ad2"
	// new java.sql.Timestamp(1234)
	cauchoTimestamp = "43126a6176612e73716c2e54696d657374616d7091057661" + "6c7565604a00000000000004d2"
	// new RuntimeException("boom", new IllegalStateException("inner")) with
	// stack traces set: [Svc.call(Svc.java:7), Main.main(no file, -2)] and
	// [Repo.load(Repo.java:42)]. The inner cause points to itself (Java's
	// "no cause"); StackTraceElement has JDK 17's eight fields.
	cauchoException = "431a6a6176612e6c616e672e52756e74696d65457863657074696f6e940d64657461696c4d6573736167650563617573650a737461636b54726163651473757070726573736564457863657074696f6e736004626f6f6d431f6a6176612e6c616e672e496c6c6567616c5374617465457863657074696f6e940d64657461696c4d6573736167650563617573650a737461636b54726163651473757070726573736564457863657074696f6e736105696e6e65725191711c5b6a6176612e6c616e672e537461636b5472616365456c656d656e74431b6a6176612e6c616e672e537461636b5472616365456c656d656e74980f636c6173734c6f616465724e616d650a6d6f64756c654e616d650d6d6f64756c6556657273696f6e0e6465636c6172696e67436c6173730a6d6574686f644e616d650866696c654e616d650a6c696e654e756d62657206666f726d6174624e4e4e10636f6d2e6578616d706c652e5265706f046c6f6164095265706f2e6a617661ba90701f6a6176612e7574696c2e436f6c6c656374696f6e7324456d7074794c6973747290624e4e4e0f636f6d2e6578616d706c652e5376630463616c6c085376632e6a6176619790624e4e4e10636f6d2e6578616d706c652e4d61696e046d61696e4e8e905194"
)

// str is a Hessian string as the grammar writes it.
func str(s string) []byte { return cat(strHeader(len(s)), []byte(s)) }

func TestBigDecimal(t *testing.T) {
	// hessian-lite's form: class java.math.BigDecimal, one field "value".
	wire := cat(hx(t, "43"), str("java.math.BigDecimal"), hx(t, "91"), str("value"), hx(t, "60"), str("-12.3400"))
	runWireCases(t, []wireCase{
		both("hessian-lite form", BigDecimal{"-12.3400"}, wire),
		oneWay("pointer", &BigDecimal{"-12.3400"}, wire, BigDecimal{"-12.3400"}),
		both("exponent", BigDecimal{"1.5E+10"}, cat(hx(t, "43"), str("java.math.BigDecimal"), hx(t, "91"), str("value"), hx(t, "60"), str("1.5E+10"))),
	})
	for name, c := range map[string]struct {
		wire string
		want any
	}{
		"caucho intVal":         {cauchoBigDecimal, BigDecimal{"-123456789012345678901234567890.12"}},
		"caucho negative scale": {cauchoBigDecimalSci, BigDecimal{"1.23456789012345678901234567890E+34"}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := decodeOne(t, hx(t, c.wire)); got != c.want {
				t.Fatalf("got %s, want %s", show(got), show(c.want))
			}
		})
	}
	t.Run("caucho lost value stays an object", func(t *testing.T) {
		o, ok := decodeOne(t, hx(t, cauchoBigDecimalLost)).(*Object)
		if !ok || o.Class != "java.math.BigDecimal" {
			t.Fatalf("got %s", show(o))
		}
	})
	t.Run("invalid value stays an object", func(t *testing.T) {
		wire := cat(hx(t, "43"), str("java.math.BigDecimal"), hx(t, "91"), str("value"), hx(t, "60"), str("1.2.3"))
		if _, ok := decodeOne(t, wire).(*Object); !ok {
			t.Fatal("1.2.3 decoded as a BigDecimal")
		}
	})
	t.Run("encode rejects invalid", func(t *testing.T) {
		err := NewEncoder(nil).Encode(BigDecimal{"12,5"})
		if err == nil || !strings.Contains(err.Error(), `BigDecimal "12,5"`) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestJavaDecimalString(t *testing.T) {
	// Expected strings printed by Java's BigDecimal(BigInteger, int).toString().
	for _, c := range []struct {
		unscaled string
		scale    int32
		want     string
	}{
		{"0", 0, "0"}, {"0", 2, "0.00"}, {"0", -2, "0E+2"}, {"123", 0, "123"}, {"123", 2, "1.23"},
		{"123", 5, "0.00123"}, {"123", 9, "1.23E-7"}, {"-123", 9, "-1.23E-7"}, {"123", -2, "1.23E+4"},
		{"1", 7, "1E-7"}, {"1", 6, "0.000001"}, {"12345", 10, "0.0000012345"}, {"-5", 1, "-0.5"},
	} {
		if got := javaDecimalString(c.unscaled, c.scale); got != c.want {
			t.Errorf("%s scale %d: got %q, want %q", c.unscaled, c.scale, got, c.want)
		}
	}
	for s, want := range map[string]bool{
		"1": true, "-1.5": true, "+.5": true, "5.": true, "1e10": true, "1E-2147483648": true,
		"": false, ".": false, "-": false, "1e": false, "1e+": false, "abc": false, "1 ": false,
		"1E2147483649": false, "0x10": false,
	} {
		if got := validDecimal(s); got != want {
			t.Errorf("validDecimal(%q) = %v", s, got)
		}
	}
}

func TestBigInteger(t *testing.T) {
	header := cat(hx(t, "43"), str("java.math.BigInteger"), hx(t, "92"), str("signum"), str("mag"), hx(t, "60"))
	runWireCases(t, []wireCase{
		both("negative two words", BigInteger{"-12345678901234567890"},
			cat(header, hx(t, "8f 72 04 5b 69 6e 74 49 ab 54 a9 8c 49 eb 1f 0a d2"))),
		both("zero", BigInteger{"0"}, cat(header, hx(t, "90 70 04 5b 69 6e 74"))),
		both("one", BigInteger{"1"}, cat(header, hx(t, "91 71 04 5b 69 6e 74 91"))),
		both("2^32", BigInteger{"4294967296"}, cat(header, hx(t, "91 72 04 5b 69 6e 74 91 90"))),
		oneWay("pointer", &BigInteger{"1"}, cat(header, hx(t, "91 71 04 5b 69 6e 74 91")), BigInteger{"1"}),
	})
	t.Run("caucho", func(t *testing.T) {
		if got := decodeOne(t, hx(t, cauchoBigInteger)); got != (BigInteger{"-12345678901234567890"}) {
			t.Fatalf("got %s", show(got))
		}
	})
	t.Run("large round trip", func(t *testing.T) {
		v := BigInteger{"-" + strings.Repeat("9876543210", 30)}
		if got := decodeOne(t, encodeOne(t, v)); got != v {
			t.Fatalf("got %s", show(got))
		}
	})
	t.Run("signum disagrees with magnitude", func(t *testing.T) {
		if _, ok := decodeOne(t, cat(header, hx(t, "90 71 04 5b 69 6e 74 91"))).(*Object); !ok {
			t.Fatal("signum 0 with a magnitude decoded as a BigInteger")
		}
	})
	t.Run("magnitude too large to convert stays an object", func(t *testing.T) {
		e := NewEncoder(nil)
		e.WriteObjectStart("java.math.BigInteger", []string{"signum", "mag"})
		e.WriteInt(1)
		e.WriteListStart("[int", maxBigIntegerWords+1)
		for range maxBigIntegerWords + 1 {
			e.WriteInt(1)
		}
		if _, ok := decodeOne(t, e.Bytes()).(*Object); !ok {
			t.Fatal("oversized magnitude converted")
		}
	})
	t.Run("encode rejects invalid", func(t *testing.T) {
		if err := NewEncoder(nil).Encode(BigInteger{"1.5"}); err == nil {
			t.Fatal("1.5 encoded as a BigInteger")
		}
	})
}

func TestLocale(t *testing.T) {
	runWireCases(t, []wireCase{
		both("zh_CN", Locale{"zh_CN"},
			cat(hx(t, "43"), str("com.alibaba.com.caucho.hessian.io.LocaleHandle"), hx(t, "91"), str("value"), hx(t, "60"), str("zh_CN"))),
	})
}

func TestJavaTime(t *testing.T) {
	h := func(name string) []byte { return str("com.alibaba.com.caucho.hessian.io.java8." + name) }
	// LocalDate 2024-02-29: hessian-lite's LocalDateHandle {year, month, day}.
	runWireCases(t, []wireCase{
		both("LocalDate", LocalDate{2024, 2, 29},
			cat(hx(t, "43"), h("LocalDateHandle"), hx(t, "93"), str("year"), str("month"), str("day"), hx(t, "60 cf e8 92 ad"))),
		both("Instant", Instant{Seconds: 1700000000, Nanos: 5},
			cat(hx(t, "43"), h("InstantHandle"), hx(t, "92"), str("seconds"), str("nanos"), hx(t, "60 59 65 53 f1 00 95"))),
		both("ZoneOffset", ZoneOffset{19800},
			cat(hx(t, "43"), h("ZoneOffsetHandle"), hx(t, "91"), str("seconds"), hx(t, "60 d4 4d 58"))),
	})

	ldt := LocalDateTime{LocalDate{2024, 2, 29}, LocalTime{23, 59, 58, 123000000}}
	values := []any{
		LocalDate{-5, 1, 1}, LocalTime{0, 0, 0, 0}, ldt,
		Instant{-1, 999999999}, Duration{-90, 0}, Duration{3723, 500000000},
		ZoneOffset{-28800}, ZoneID{"Europe/Paris"},
		OffsetDateTime{ldt, ZoneOffset{3600}}, OffsetTime{LocalTime{1, 2, 3, 4}, ZoneOffset{0}},
		ZonedDateTime{ldt, ZoneOffset{3600}, "Europe/Paris"},
		Year{2024}, YearMonth{2024, 12}, MonthDay{2, 29}, Period{1, -2, 3},
	}
	for _, v := range values {
		t.Run(show(v), func(t *testing.T) {
			if got := decodeOne(t, encodeOne(t, v)); got != v {
				t.Fatalf("got %s", show(got))
			}
		})
	}
	t.Run("nested handles", func(t *testing.T) {
		// An OffsetDateTime is a handle holding a LocalDateTime handle
		// (holding a date and a time handle) and a ZoneOffset handle: five
		// objects, refs #1-#5 after the list's #0. A second value refers
		// back to the offset, #5, which decodes to the converted value.
		v := []any{OffsetDateTime{ldt, ZoneOffset{3600}}}
		e := NewEncoder(nil)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		e.writeRef(5)
		d := NewDecoder(e.Bytes())
		first, err := d.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if got := first.(*List).Items[0]; got != v[0] {
			t.Fatalf("got %s", show(got))
		}
		if ref, err := d.Decode(); err != nil || ref != (ZoneOffset{3600}) {
			t.Fatalf("ref #5 = %s, %v", show(ref), err)
		}
	})
	t.Run("zoned without zone writes the offset id", func(t *testing.T) {
		got := decodeOne(t, encodeOne(t, ZonedDateTime{ldt, ZoneOffset{7200}, ""}))
		if got != (ZonedDateTime{ldt, ZoneOffset{7200}, "+02:00"}) {
			t.Fatalf("got %s", show(got))
		}
	})
	t.Run("bit encoding", func(t *testing.T) {
		// hessian-lite's opt-in compact java.time form.
		e := NewEncoder(nil)
		e.WriteObjectStart("java.time.LocalDateTime", []string{"date", "time"})
		e.WriteObjectStart("java.time.LocalDate", []string{"value"})
		e.WriteInt(2024<<9 | 2<<5 | 29)
		e.WriteObjectStart("java.time.LocalTime", []string{"value"})
		e.WriteLong(23<<47 | 59<<41 | 58<<35 | 123000000)
		if got := decodeOne(t, e.Bytes()); got != ldt {
			t.Fatalf("got %s", show(got))
		}
	})
	t.Run("mis-shaped handle stays an object", func(t *testing.T) {
		e := NewEncoder(nil)
		e.WriteObjectStart("com.alibaba.com.caucho.hessian.io.java8.LocalDateHandle", []string{"year", "month"})
		e.WriteInt(2024)
		e.WriteInt(2)
		if _, ok := decodeOne(t, e.Bytes()).(*Object); !ok {
			t.Fatal("handle without day converted")
		}
	})
	t.Run("long written for an int field", func(t *testing.T) {
		e := NewEncoder(nil)
		e.WriteObjectStart("com.alibaba.com.caucho.hessian.io.java8.YearHandle", []string{"year"})
		e.WriteLong(2024)
		if got := decodeOne(t, e.Bytes()); got != (Year{2024}) {
			t.Fatalf("got %s", show(got))
		}
	})
}

func TestJavaTimeStrings(t *testing.T) {
	// Expected strings printed by the JDK's toString of the same values.
	for _, c := range []struct {
		v    interface{ String() string }
		want string
	}{
		{LocalDate{-1, 1, 2}, "-0001-01-02"},
		{LocalDate{10000, 12, 31}, "+10000-12-31"},
		{LocalDate{999, 5, 6}, "0999-05-06"},
		{LocalTime{1, 2, 0, 0}, "01:02"},
		{LocalTime{1, 2, 3, 0}, "01:02:03"},
		{LocalTime{1, 2, 0, 1000}, "01:02:00.000001"},
		{LocalTime{1, 2, 3, 120000000}, "01:02:03.120"},
		{LocalTime{1, 2, 3, 1}, "01:02:03.000000001"},
		{Instant{0, 0}, "1970-01-01T00:00:00Z"},
		{Instant{-1, 500}, "1969-12-31T23:59:59.000000500Z"},
		{Instant{253402300800, 0}, "+10000-01-01T00:00:00Z"},
		{Instant{1700000000, 123000000}, "2023-11-14T22:13:20.123Z"},
		{Duration{0, 0}, "PT0S"},
		{Duration{-90, 0}, "PT-1M-30S"},
		{Duration{3723, 500000000}, "PT1H2M3.5S"},
		{Duration{-1, 500000000}, "PT-0.5S"},
		{Duration{-2, 1}, "PT-1.999999999S"},
		{Duration{7200, 0}, "PT2H"},
		{ZoneOffset{0}, "Z"},
		{ZoneOffset{19800}, "+05:30"},
		{ZoneOffset{-28800}, "-08:00"},
		{ZoneOffset{3723}, "+01:02:03"},
		{ZonedDateTime{LocalDateTime{LocalDate{2024, 1, 2}, LocalTime{3, 4, 5, 0}}, ZoneOffset{3600}, "Europe/Paris"}, "2024-01-02T03:04:05+01:00[Europe/Paris]"},
		{ZonedDateTime{LocalDateTime{LocalDate{2024, 1, 2}, LocalTime{3, 4, 5, 0}}, ZoneOffset{7200}, "+02:00"}, "2024-01-02T03:04:05+02:00"},
		{OffsetDateTime{LocalDateTime{LocalDate{2024, 1, 2}, LocalTime{3, 4, 0, 0}}, ZoneOffset{0}}, "2024-01-02T03:04Z"},
		{OffsetTime{LocalTime{3, 4, 0, 0}, ZoneOffset{-3600}}, "03:04-01:00"},
		{YearMonth{999, 3}, "0999-03"},
		{YearMonth{12345, 3}, "12345-03"},
		{MonthDay{12, 3}, "--12-03"},
		{Period{1, -2, 3}, "P1Y-2M3D"},
		{Period{}, "P0D"},
		{Year{-5}, "-5"},
		{ZoneID{"UTC"}, "UTC"},
		{LocalDateTime{LocalDate{2024, 2, 29}, LocalTime{23, 59, 0, 0}}, "2024-02-29T23:59"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%#v: got %q, want %q", c.v, got, c.want)
		}
	}
	if got := (Instant{1, 5}).Time(); !got.Equal(time.Unix(1, 5)) {
		t.Errorf("Instant.Time = %v", got)
	}
	odt := OffsetDateTime{LocalDateTime{LocalDate{2024, 1, 2}, LocalTime{3, 4, 5, 6}}, ZoneOffset{3600}}
	if got := odt.Time(); !got.Equal(time.Date(2024, 1, 2, 2, 4, 5, 6, time.UTC)) {
		t.Errorf("OffsetDateTime.Time = %v", got)
	}
	zdt := ZonedDateTime{odt.DateTime, ZoneOffset{3600}, "Europe/Paris"}
	if got := zdt.Time(); !got.Equal(odt.Time()) || got.Location().String() != "Europe/Paris" {
		t.Errorf("ZonedDateTime.Time = %v", got)
	}
	if got := InstantOf(time.Unix(7, 8)); got != (Instant{7, 8}) {
		t.Errorf("InstantOf = %v", got)
	}
}

func TestEnumsAndSQLDates(t *testing.T) {
	// An enum as hessian-lite writes it: class def with the field "name".
	wire := cat(hx(t, "7a 43"), str("example.Color"), hx(t, "91"), str("name"), hx(t, "60"), str("RED"), hx(t, "60"), str("GREEN"))
	l := decodeOne(t, wire).(*List)
	if name, ok := EnumName(l.Items[0]); !ok || name != "RED" {
		t.Fatalf("EnumName = %q, %v", name, ok)
	}
	if name, _ := EnumName(l.Items[1]); name != "GREEN" {
		t.Fatalf("EnumName = %q", name)
	}
	if _, ok := EnumName(&Object{Class: "P", Fields: []Field{{"name", "x"}, {"age", int32(1)}}}); ok {
		t.Fatal("a two-field object is not an enum")
	}
	if _, ok := EnumName("RED"); ok {
		t.Fatal("a string is not an enum")
	}
	if got := encodeOne(t, l); !bytes.Equal(got, wire) {
		t.Fatalf("re-encoded % x", got)
	}

	ts := decodeOne(t, hx(t, cauchoTimestamp))
	o, ok := ts.(*Object)
	if !ok || o.Class != "java.sql.Timestamp" {
		t.Fatalf("timestamp decoded as %s", show(ts))
	}
	if got := Plain(ts); got != time.UnixMilli(1234).UTC() {
		t.Fatalf("Plain(timestamp) = %v", got)
	}
}
