package jsonbridge

import (
	"errors"
	"strings"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

type encodeCase struct {
	javaType string
	json     string
	want     string // show() of the decoded value, when err is ""
	err      string // the exact error message
}

func runEncodeCases(t *testing.T, enc *Encoder, cases []encodeCase) {
	t.Helper()
	for _, c := range cases {
		got, err := encodeOne(t, enc, c.json, c.javaType)
		if c.err != "" {
			if err == nil {
				t.Errorf("%s %s: encoded as %s, want error %q", c.javaType, c.json, show(got), c.err)
				continue
			}
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Errorf("%s %s: error %T %v is not a *PathError", c.javaType, c.json, err, err)
			}
			if err.Error() != c.err {
				t.Errorf("%s %s:\n got error %q\nwant error %q", c.javaType, c.json, err.Error(), c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %s: %v", c.javaType, c.json, err)
			continue
		}
		if s := show(got); s != c.want {
			t.Errorf("%s %s:\n got %s\nwant %s", c.javaType, c.json, s, c.want)
		}
	}
}

func TestEncodeScalars(t *testing.T) {
	runEncodeCases(t, mustEncoder(t, testOptions(false)), []encodeCase{
		// int and its relatives
		{"int", `5`, `int(5)`, ""},
		{"java.lang.Integer", `-2147483648`, `int(-2147483648)`, ""},
		{"Integer", `2147483647`, `int(2147483647)`, ""},
		{"int", `1e3`, `int(1000)`, ""},
		{"int", `10.0`, `int(10)`, ""},
		{"int", `-0`, `int(0)`, ""},
		{"int", `"42"`, `int(42)`, ""},
		{"int", `1.5`, ``, `$: cannot use number 1.5 as int: not an integer`},
		{"int", `1e-1`, ``, `$: cannot use number 1e-1 as int: not an integer`},
		{"int", `2147483648`, ``, `$: cannot use number 2147483648 as int: out of range [-2147483648, 2147483647]`},
		{"java.lang.Integer", `-2147483649`, ``, `$: cannot use number -2147483649 as java.lang.Integer: out of range [-2147483648, 2147483647]`},
		{"int", `1e400`, ``, `$: cannot use number 1e400 as int: out of range [-2147483648, 2147483647]`},
		{"int", `"4x"`, ``, `$: cannot use string "4x" as int: not a number`},
		{"int", `" 4"`, ``, `$: cannot use string " 4" as int: not a number`},
		{"int", `null`, ``, `$: cannot use null as int: a primitive cannot be null`},
		{"java.lang.Integer", `null`, `null`, ""},
		{"int", `true`, ``, `$: cannot use true as int`},
		{"int", `[1]`, ``, `$: cannot use array of 1 as int`},
		{"int", `{"a":1}`, ``, `$: cannot use object as int`},
		{"short", `-32768`, `int(-32768)`, ""},
		{"java.lang.Short", `32768`, ``, `$: cannot use number 32768 as java.lang.Short: out of range [-32768, 32767]`},
		{"byte", `-128`, `int(-128)`, ""},
		{"byte", `"127"`, `int(127)`, ""},
		{"java.lang.Byte", `128`, ``, `$: cannot use number 128 as java.lang.Byte: out of range [-128, 127]`},

		// long: exact, never through float64
		{"long", `9007199254740993`, `long(9007199254740993)`, ""},
		{"long", `9223372036854775807`, `long(9223372036854775807)`, ""},
		{"java.lang.Long", `-9223372036854775808`, `long(-9223372036854775808)`, ""},
		{"java.lang.Long", `"9007199254740993"`, `long(9007199254740993)`, ""},
		{"long", `7`, `long(7)`, ""},
		{"long", `1e18`, `long(1000000000000000000)`, ""},
		{"long", `12345678901234567.0e1`, `long(123456789012345670)`, ""},
		{"long", `9223372036854775808`, ``, `$: cannot use number 9223372036854775808 as long: out of range [-9223372036854775808, 9223372036854775807]`},
		{"long", `1e19`, ``, `$: cannot use number 1e19 as long: out of range [-9223372036854775808, 9223372036854775807]`},
		{"long", `0.5`, ``, `$: cannot use number 0.5 as long: not an integer`},
		{"long", `null`, ``, `$: cannot use null as long: a primitive cannot be null`},

		// float and double
		{"double", `1.5`, `double(1.5)`, ""},
		{"double", `5`, `double(5)`, ""},
		{"java.lang.Double", `"2.5e3"`, `double(2500)`, ""},
		{"double", `"NaN"`, `double(NaN)`, ""},
		{"double", `"-Infinity"`, `double(-Inf)`, ""},
		{"double", `1e400`, ``, `$: cannot use number 1e400 as double: beyond the range of a double`},
		{"double", `"1,5"`, ``, `$: cannot use string "1,5" as double: not a number`},
		{"float", `0.1`, `double(0.1)`, ""},
		{"java.lang.Float", `16777217`, `double(1.6777216e+07)`, ""},
		{"float", `1e39`, ``, `$: cannot use number 1e39 as float: beyond the range of a float`},

		// boolean
		{"boolean", `true`, `true`, ""},
		{"java.lang.Boolean", `"false"`, `false`, ""},
		{"boolean", `"yes"`, ``, `$: cannot use string "yes" as boolean: want "true" or "false"`},
		{"boolean", `1`, ``, `$: cannot use number 1 as boolean`},
		{"boolean", `null`, ``, `$: cannot use null as boolean: a primitive cannot be null`},

		// char
		{"char", `"a"`, `"a"`, ""},
		{"java.lang.Character", `"é"`, `"é"`, ""},
		{"java.lang.Character", `null`, `null`, ""},
		{"char", `"ab"`, ``, `$: cannot use string "ab" as char: want exactly one character`},
		{"char", `""`, ``, `$: cannot use string "" as char: want exactly one character`},
		{"char", `"😀"`, ``, `$: cannot use string "😀" as char: a character beyond U+FFFF needs two Java chars`},
		{"char", `65`, ``, `$: cannot use number 65 as char`},

		// String: numbers and booleans become their literal text
		{"java.lang.String", `"x\n\u00e9\ud83d\ude00"`, `"x\né😀"`, ""},
		{"java.lang.String", `12.50`, `"12.50"`, ""},
		{"String", `true`, `"true"`, ""},
		{"java.lang.String", `null`, `null`, ""},
		{"java.lang.String", `"\ud800"`, "\"\uFFFD\"", ""},
		{"java.lang.String", `{}`, ``, `$: cannot use object as java.lang.String`},
		{"java.lang.String", `[1,2]`, ``, `$: cannot use array of 2 as java.lang.String`},

		// BigDecimal and BigInteger: hessian-lite's objects, exact digits
		{"java.math.BigDecimal", `12.50`, `BigDecimal(12.50)`, ""},
		{"java.math.BigDecimal", `"-1E-3"`, `BigDecimal(-1E-3)`, ""},
		{"java.math.BigDecimal", `123456789012345678901234567890.123456789`, `BigDecimal(123456789012345678901234567890.123456789)`, ""},
		{"java.math.BigDecimal", `"abc"`, ``, `$: cannot use string "abc" as java.math.BigDecimal: not a number`},
		{"java.math.BigDecimal", `true`, ``, `$: cannot use true as java.math.BigDecimal`},
		{"java.math.BigInteger", `123456789012345678901234567890`, `BigInteger(123456789012345678901234567890)`, ""},
		{"java.math.BigInteger", `-12e3`, `BigInteger(-12000)`, ""},
		{"java.math.BigInteger", `"7"`, `BigInteger(7)`, ""},
		{"java.math.BigInteger", `1.5`, ``, `$: cannot use number 1.5 as java.math.BigInteger: not an integer`},
		{"java.math.BigInteger", `1e5000`, ``, `$: cannot use number 1e5000 as java.math.BigInteger: more than 4096 digits`},

		// java.lang.Number: inferred like Object
		{"java.lang.Number", `3`, `int(3)`, ""},
		{"java.lang.Number", `"3000000000"`, `long(3000000000)`, ""},
		{"java.lang.Number", `2.5`, `double(2.5)`, ""},

		// Date: RFC 3339, a calendar date, or epoch milliseconds
		{"java.util.Date", `"2024-05-01T08:30:00.123Z"`, `date(2024-05-01T08:30:00.123Z)`, ""},
		{"java.util.Date", `"2024-05-01T10:30:00+02:00"`, `date(2024-05-01T08:30:00.000Z)`, ""},
		{"java.util.Date", `"2024-05-01"`, `date(2024-05-01T00:00:00.000Z)`, ""},
		{"java.util.Date", `1714552200123`, `date(2024-05-01T08:30:00.123Z)`, ""},
		{"java.util.Date", `"1714552200123"`, `date(2024-05-01T08:30:00.123Z)`, ""},
		{"java.util.Date", `"2024-05-01 08:30"`, ``, `$: cannot use string "2024-05-01 08:30" as java.util.Date: want RFC 3339 (2006-01-02T15:04:05.000Z), a date (2006-01-02) or epoch milliseconds`},
		{"java.util.Date", `1.5`, ``, `$: cannot use number 1.5 as java.util.Date: not an integer`},
		{"java.util.Date", `false`, ``, `$: cannot use false as java.util.Date`},

		// java.time: hessian-lite's handle objects
		{"java.time.LocalDate", `"2024-02-29"`, `LocalDate(2024-02-29)`, ""},
		{"java.time.LocalDate", `"2023-02-29"`, ``, `$: cannot use string "2023-02-29" as java.time.LocalDate: want an ISO date (2006-01-02)`},
		{"java.time.LocalTime", `"08:30"`, `LocalTime(08:30)`, ""},
		{"java.time.LocalTime", `"24:00"`, ``, `$: cannot use string "24:00" as java.time.LocalTime: want an ISO time (15:04, 15:04:05 or 15:04:05.123456789)`},
		{"java.time.LocalDateTime", `"2024-05-01T08:30:15.5"`, `LocalDateTime(2024-05-01T08:30:15.500)`, ""},
		{"java.time.LocalDateTime", `"2024-05-01 08:30:15"`, `LocalDateTime(2024-05-01T08:30:15)`, ""},
		{"java.time.LocalDateTime", `"2024-05-01T08:30:15Z"`, ``, `$: cannot use string "2024-05-01T08:30:15Z" as java.time.LocalDateTime: want an ISO date-time without offset (2006-01-02T15:04:05)`},
		{"java.time.LocalDateTime", `1714552200123`, ``, `$: cannot use number 1714552200123 as java.time.LocalDateTime`},

		// enums: typed invocation writes hessian-lite's enum object
		{"com.example.Color", `"RED"`, `obj com.example.Color{name: "RED"}`, ""},
		{"com.example.Color", `"BLUE"`, ``, `$: cannot use string "BLUE" as com.example.Color: not a constant of the enum`},
		{"com.example.Mood", `"ANY_NAME"`, `obj com.example.Mood{name: "ANY_NAME"}`, ""},
		{"com.example.Color", `1`, ``, `$: cannot use number 1 as com.example.Color`},
		{"com.example.Color", `null`, `null`, ""},

		// a string for an undeclared class is an error in typed invocation
		{"com.example.Unknown", `"X"`, ``, `$: cannot use string "X" as com.example.Unknown: want a JSON object (declare enums in EncodeOptions.Enums)`},
	})
}

func TestEncodeContainers(t *testing.T) {
	runEncodeCases(t, mustEncoder(t, testOptions(false)), []encodeCase{
		// arrays, in descriptor and source forms, with hessian-lite's list types
		{"[I", `[1,2]`, `list[[int](int(1), int(2))`, ""},
		{"int[]", `[]`, `list[[int]()`, ""},
		{"[J", `[1]`, `list[[long](long(1))`, ""},
		{"long[]", `["9007199254740993"]`, `list[[long](long(9007199254740993))`, ""},
		{"[Z", `[true]`, `list[[boolean](true)`, ""},
		{"[S", `[1]`, `list[[short](int(1))`, ""},
		{"[D", `[1]`, `list[[double](double(1))`, ""},
		{"[F", `[0.5]`, `list[[float](double(0.5))`, ""},
		{"[Ljava.lang.String;", `["a",1]`, `list[[string]("a", "1")`, ""},
		{"java.lang.String[]", `["a"]`, `list[[string]("a")`, ""},
		{"[Ljava.lang.Object;", `[1,"a"]`, `list[[object](int(1), "a")`, ""},
		{"java.lang.Integer[]", `[1,null]`, `list[[java.lang.Integer](int(1), null)`, ""},
		{"java.util.Date[]", `[0]`, `list[[date](date(1970-01-01T00:00:00.000Z))`, ""},
		{"[[I", `[[1],[]]`, `list[[[int](list[[int](int(1)), list[[int]())`, ""},
		{"int[][]", `[[1]]`, `list[[[int](list[[int](int(1)))`, ""},
		{"[Lcom.example.Item;", `[{"sku":"a"}]`, `list[[com.example.Item](obj com.example.Item{sku: "a"})`, ""},
		{"com.example.Color[]", `["RED"]`, `list[[com.example.Color](obj com.example.Color{name: "RED"})`, ""},
		{"[I", `[1,null]`, ``, `$[1]: cannot use null as int: a primitive cannot be null`},
		{"[I", `[1,2.5]`, ``, `$[1]: cannot use number 2.5 as int: not an integer`},
		{"[I", `{"a":1}`, ``, `$: cannot use object as [I`},
		{"int[]", `"1,2"`, ``, `$: cannot use string "1,2" as int[]`},

		// byte[] is hessian binary, char[] a hessian string
		{"byte[]", `"AQID"`, `bin(010203)`, ""},
		{"[B", `"AQI"`, `bin(0102)`, ""},
		{"[B", `"-_8"`, `bin(fbff)`, ""},
		{"byte[]", `[1,-1,255]`, `bin(01ffff)`, ""},
		{"byte[]", `[1,256]`, ``, `$[1]: cannot use number 256 as byte[]: want numbers from -128 to 255`},
		{"byte[]", `[1,"a"]`, ``, `$[1]: cannot use string "a" as byte[]: want numbers from -128 to 255`},
		{"byte[]", `"not base64!"`, ``, `$: cannot use string "not base64!" as byte[]: want base64`},
		{"byte[][]", `["AQ=="]`, `list[[[byte](bin(01))`, ""},
		{"char[]", `"abc"`, `"abc"`, ""},
		{"[C", `["a","é"]`, `"aé"`, ""},
		{"[C", `["ab"]`, ``, `$[0]: cannot use string "ab" as [C: want one-character strings`},

		// collections
		{"java.util.List", `[1,"a",3000000000,1.5,true,null,1e2]`, `list[](int(1), "a", long(3000000000), double(1.5), true, null, double(100))`, ""},
		{"java.util.List<java.lang.Integer>", `[1,"2"]`, `list[](int(1), int(2))`, ""},
		{"java.util.ArrayList<Long>", `[1]`, `list[](long(1))`, ""},
		{"java.util.Collection<? extends java.lang.Number>", `[1]`, `list[](int(1))`, ""},
		{"java.util.List<?>", `[1]`, `list[](int(1))`, ""},
		{"java.util.List<? super java.lang.Integer>", `[1]`, `list[](int(1))`, ""},
		{"java.util.Set<java.lang.String>", `["a"]`, `list[java.util.HashSet]("a")`, ""},
		{"java.util.HashSet", `[]`, `list[java.util.HashSet]()`, ""},
		{"java.util.LinkedHashSet<String>", `["a"]`, `list[java.util.LinkedHashSet]("a")`, ""},
		{"java.util.SortedSet<String>", `["a"]`, `list[java.util.TreeSet]("a")`, ""},
		{"java.util.LinkedList<String>", `["a"]`, `list[java.util.LinkedList]("a")`, ""},
		{"java.util.List<java.util.List<java.lang.Integer>>", `[[1],[2,3]]`, `list[](list[](int(1)), list[](int(2), int(3)))`, ""},
		{"java.util.List<int[]>", `[[1]]`, `list[](list[[int](int(1)))`, ""},
		{"java.util.List<java.lang.Integer>", `[1,1.5]`, ``, `$[1]: cannot use number 1.5 as java.lang.Integer: not an integer`},
		{"java.util.List", `{}`, ``, `$: cannot use object as java.util.List`},
		{"java.util.List", `null`, `null`, ""},

		// maps
		{"java.util.Map<java.lang.String,java.lang.Integer>", `{"a":1,"b":"2"}`, `map[]{"a": int(1), "b": int(2)}`, ""},
		{"java.util.Map<java.lang.Integer, java.lang.String>", `{"1":"x","-2":"y"}`, `map[]{int(1): "x", int(-2): "y"}`, ""},
		{"java.util.Map<Long,Boolean>", `{"9007199254740993":true}`, `map[]{long(9007199254740993): true}`, ""},
		{"java.util.Map<com.example.Color,Integer>", `{"RED":1}`, `map[]{obj com.example.Color{name: "RED"}: int(1)}`, ""},
		{"java.util.Map<java.lang.Integer,java.lang.String>", `{"x":"y"}`, ``, `$.x: cannot use key "x" as java.lang.Integer: not a number`},
		{"java.util.Map", `{"a":1,"class":"x","n":{"b":[]}}`, `map[]{"a": int(1), "class": "x", "n": map[]{"b": list[]()}}`, ""},
		{"java.util.HashMap", `{}`, `map[]{}`, ""},
		{"java.util.LinkedHashMap<String,String>", `{"a":"b"}`, `map[java.util.LinkedHashMap]{"a": "b"}`, ""},
		{"java.util.TreeMap<String,String>", `{}`, `map[java.util.TreeMap]{}`, ""},
		{"java.util.Map<String,com.example.Item>", `{"x":{"sku":"s","qty":"2"}}`, `map[]{"x": obj com.example.Item{sku: "s", qty: int(2)}}`, ""},
		{"java.util.Map<String,java.util.List<Integer>>", `{"x":[1,"a"]}`, ``, `$.x[1]: cannot use string "a" as Integer: not a number`},
		{"java.util.Map<String,Integer>", `{"a b":"z"}`, ``, `$["a b"]: cannot use string "z" as Integer: not a number`},
		{"java.util.Map", `[]`, ``, `$: cannot use array of 0 as java.util.Map`},
	})
}

func TestEncodeObjectInference(t *testing.T) {
	const doc = `{"a":1,"b":[true,null,"s"],"c":{"class":"com.example.Item","sku":"x","qty":2,"extra":1.5},"d":{"k":9007199254740993},"e":-2.5e-3}`
	typed := `map[]{"a": int(1), "b": list[](true, null, "s"), "c": obj com.example.Item{sku: "x", qty: int(2), extra: double(1.5)}, "d": map[]{"k": long(9007199254740993)}, "e": double(-0.0025)}`
	generic := `map[]{"a": int(1), "b": list[](true, null, "s"), "c": map[]{"class": "com.example.Item", "sku": "x", "qty": int(2), "extra": double(1.5)}, "d": map[]{"k": long(9007199254740993)}, "e": double(-0.0025)}`
	runEncodeCases(t, mustEncoder(t, testOptions(false)), []encodeCase{
		{"java.lang.Object", doc, typed, ""},
		{"Object", `"s"`, `"s"`, ""},
		{"java.io.Serializable", `12345678901234567890`, `double(1.2345678901234567e+19)`, ""},
		{"java.lang.Object", `1e400`, ``, `$: cannot use number 1e400 as java.lang.Object: beyond the range of a double`},
		{"java.lang.Object", `{"class":""}`, ``, `$.class: cannot use string "" as java.lang.Object: the "class" key must name a Java class`},
		{"java.lang.Object", `{"class":1}`, ``, `$.class: cannot use number 1 as java.lang.Object: the "class" key must name a class`},
		{"java.lang.Object", `{"class":"java.util.LinkedHashMap","a":1}`, `map[java.util.LinkedHashMap]{"a": int(1)}`, ""},
		{"java.lang.Object", `{"class":"java.lang.String"}`, ``, `$.class: cannot use string "java.lang.String" as java.lang.Object: the "class" key names a type a JSON object cannot hold`},
		{"java.lang.Object", `{"class":"com.example.Color"}`, ``, `$.class: cannot use string "com.example.Color" as java.lang.Object: the "class" key names an enum`},
		{"java.lang.Object", `{"class":"not a class"}`, ``, `$.class: cannot use string "not a class" as java.lang.Object: the "class" key must name a Java class`},
	})
	runEncodeCases(t, mustEncoder(t, testOptions(true)), []encodeCase{
		{"java.lang.Object", doc, generic, ""},
	})
}

// The DTO request the tests and benchmarks share: nested DTO, list of DTOs,
// a long beyond 2^53, a date, a BigDecimal, an enum, a map.
const userJSON = `{
	"id": 9007199254740993,
	"name": "Ann \"A\" Lee",
	"age": "42",
	"active": true,
	"address": {"street": "1 Main St", "zip": 12345},
	"tags": ["a", 7],
	"birthday": "1990-01-02T03:04:05.678Z",
	"salary": "12345.67",
	"items": [{"sku": "A-1", "qty": 2, "price": 9.99}, {"class": "com.example.Item", "sku": "B-2", "qty": 1, "price": "0.5"}],
	"color": "GREEN",
	"scores": {"math": 90},
	"nickname": "annie",
	"friend": null
}`

func TestEncodeDTOTyped(t *testing.T) {
	want := `obj com.example.User{id: long(9007199254740993), name: "Ann \"A\" Lee", age: int(42), active: true, ` +
		`address: obj com.example.Address{street: "1 Main St", zip: int(12345)}, tags: list[]("a", "7"), ` +
		`birthday: date(1990-01-02T03:04:05.678Z), salary: BigDecimal(12345.67), ` +
		`items: list[](obj com.example.Item{sku: "A-1", qty: int(2), price: BigDecimal(9.99)}, obj com.example.Item{sku: "B-2", qty: int(1), price: BigDecimal(0.5)}), ` +
		`color: obj com.example.Color{name: "GREEN"}, scores: map[]{"math": int(90)}, nickname: "annie", friend: null}`
	runEncodeCases(t, mustEncoder(t, testOptions(false)), []encodeCase{
		{"com.example.User", userJSON, want, ""},
		{"com.example.User", `null`, `null`, ""},
		{"com.example.User", `{}`, `obj com.example.User{}`, ""},
		// unknown classes: fields inferred
		{"com.example.Unknown", `{"x":1,"y":{"z":"w"}}`, `obj com.example.Unknown{x: int(1), y: map[]{"z": "w"}}`, ""},
		// a "class" key overrides the declared class and selects its schema
		{"java.lang.Object", `{"class":"com.example.Dog","weight":3,"name":"rex"}`, `obj com.example.Dog{weight: double(3), name: "rex"}`, ""},
		{"com.example.Animal", `{"name":"rex","class":"com.example.Dog","weight":"3"}`, `obj com.example.Dog{name: "rex", weight: double(3)}`, ""},
		{"com.example.Item", `{"class":"com.example.Item","sku":"s"}`, `obj com.example.Item{sku: "s"}`, ""},
		// DTOs in an untyped list, named by their "class" keys
		{"java.util.List", `[{"class":"com.example.Item","qty":"1"},{"class":"com.other.Thing","x":1},{"y":2}]`, `list[](obj com.example.Item{qty: int(1)}, obj com.other.Thing{x: int(1)}, map[]{"y": int(2)})`, ""},
		// List<DTO> with the elements typed by the schema
		{"java.util.List<com.example.Item>", `[{"qty":"3"},{"qty":4}]`, `list[](obj com.example.Item{qty: int(3)}, obj com.example.Item{qty: int(4)})`, ""},
		// recursive classes
		{"com.example.User", `{"friend":{"friend":{"age":1}}}`, `obj com.example.User{friend: obj com.example.User{friend: obj com.example.User{age: int(1)}}}`, ""},
		// errors name the path, the declared type and what was found
		{"com.example.User", `{"age":null}`, ``, `$.age: cannot use null as int: a primitive cannot be null`},
		{"com.example.User", `{"items":[{},{},{"price":"abc"}]}`, ``, `$.items[2].price: cannot use string "abc" as java.math.BigDecimal: not a number`},
		{"com.example.User", `{"address":{"zip":1.5}}`, ``, `$.address.zip: cannot use number 1.5 as java.lang.Integer: not an integer`},
		{"com.example.User", `{"friend":{"tags":{}}}`, ``, `$.friend.tags: cannot use object as java.util.List<java.lang.String>`},
		{"com.example.User", `{"color":"BLUE"}`, ``, `$.color: cannot use string "BLUE" as com.example.Color: not a constant of the enum`},
		{"com.example.User", `{"scores":{"x y":"z"}}`, ``, `$.scores["x y"]: cannot use string "z" as java.lang.Integer: not a number`},
		{"com.example.User", `[]`, ``, `$: cannot use array of 0 as com.example.User`},
		{"com.example.User", `"x"`, ``, `$: cannot use string "x" as com.example.User: want a JSON object (declare enums in EncodeOptions.Enums)`},
	})
}

func TestEncodeDTOGeneric(t *testing.T) {
	want := `map[]{"class": "com.example.User", "id": long(9007199254740993), "name": "Ann \"A\" Lee", "age": int(42), "active": true, ` +
		`"address": map[]{"class": "com.example.Address", "street": "1 Main St", "zip": int(12345)}, "tags": list[]("a", "7"), ` +
		`"birthday": date(1990-01-02T03:04:05.678Z), "salary": BigDecimal(12345.67), ` +
		`"items": list[](map[]{"class": "com.example.Item", "sku": "A-1", "qty": int(2), "price": BigDecimal(9.99)}, map[]{"class": "com.example.Item", "sku": "B-2", "qty": int(1), "price": BigDecimal(0.5)}), ` +
		`"color": "GREEN", "scores": map[]{"math": int(90)}, "nickname": "annie", "friend": null}`
	runEncodeCases(t, mustEncoder(t, testOptions(true)), []encodeCase{
		{"com.example.User", userJSON, want, ""},
		{"com.example.Animal", `{"class":"com.example.Dog","weight":"3"}`, `map[]{"class": "com.example.Dog", "weight": double(3)}`, ""},
		// enums travel as their names; arrays of DTOs and enums untyped
		{"com.example.Color", `"RED"`, `"RED"`, ""},
		{"java.util.List", `[{"class":"com.example.Item","qty":"1"},{"y":2}]`, `list[](map[]{"class": "com.example.Item", "qty": int(1)}, map[]{"y": int(2)})`, ""},
		{"com.example.Color[]", `["RED"]`, `list[]("RED")`, ""},
		{"[Lcom.example.Item;", `[{"qty":1}]`, `list[](map[]{"class": "com.example.Item", "qty": int(1)})`, ""},
		{"com.example.Item[][]", `[[{"qty":1}]]`, `list[](list[](map[]{"class": "com.example.Item", "qty": int(1)}))`, ""},
		{"[I", `[1]`, `list[[int](int(1))`, ""},
		// an undeclared enum: the provider's PojoUtils converts the name
		{"com.example.Unknown", `"X"`, `"X"`, ""},
		{"java.math.BigDecimal", `1.10`, `BigDecimal(1.10)`, ""},
		{"com.example.User", `{"items":[{"qty":1.5}]}`, ``, `$.items[0].qty: cannot use number 1.5 as int: not an integer`},
	})
}

func TestRestrictClasses(t *testing.T) {
	for _, generic := range []bool{false, true} {
		opts := testOptions(generic)
		opts.RestrictClasses = true
		opts.AllowClasses = []string{"com.allowed.*"}
		runEncodeCases(t, mustEncoder(t, opts), []encodeCase{
			{"java.lang.Object", `{"class":"com.evil.Gadget","cmd":"x"}`, ``, `$.class: cannot use string "com.evil.Gadget" as java.lang.Object: the "class" key names com.evil.Gadget: only the declared class, a class of the schema or an allowed class may be named`},
			{"com.example.User", `{"friend":{"class":"com.sun.rowset.JdbcRowSetImpl"}}`, ``, `$.friend.class: cannot use string "com.sun.rowset.JdbcRowSetImpl" as com.example.User: the "class" key names com.sun.rowset.JdbcRowSetImpl, a known deserialization gadget: never allowed`},
			// built-in types and allowed classes are fine
			{"com.example.User", `{"friend":{"class":"java.util.HashMap"}}`, map[bool]string{false: `obj com.example.User{friend: map[]{}}`, true: `map[]{"class": "com.example.User", "friend": map[]{}}`}[generic], ""},
			{"java.lang.Object", `{"class":"com.allowed.Thing"}`, map[bool]string{false: `obj com.allowed.Thing{}`, true: `map[]{"class": "com.allowed.Thing"}`}[generic], ""},
			// the declared class itself and schema classes are fine
			{"com.example.Unknown", `{"class":"com.example.Unknown"}`, map[bool]string{false: `obj com.example.Unknown{}`, true: `map[]{"class": "com.example.Unknown"}`}[generic], ""},
			{"java.lang.Object", `{"class":"com.example.Dog"}`, map[bool]string{false: `obj com.example.Dog{}`, true: `map[]{"class": "com.example.Dog"}`}[generic], ""},
		})
	}
}

func TestEncodeSyntaxErrors(t *testing.T) {
	deep := strings.Repeat("[", 129) + strings.Repeat("]", 129)
	runEncodeCases(t, mustEncoder(t, testOptions(false)), []encodeCase{
		{"java.lang.Object", ``, ``, `$: invalid JSON at offset 0: unexpected end of input, expected a value`},
		{"java.lang.Object", `  `, ``, `$: invalid JSON at offset 2: unexpected end of input, expected a value`},
		{"java.lang.Object", `{"a":1,}`, ``, `$: invalid JSON at offset 7: unexpected character '}', expected a string key`},
		{"java.lang.Object", `{"a":{"b":[1,2,x]}}`, ``, `$.a.b[2]: invalid JSON at offset 15: unexpected character 'x', expected a value`},
		{"java.lang.Object", `{"a":[1 2]}`, ``, `$.a: invalid JSON at offset 8: unexpected character '2', expected ',' or ']'`},
		{"java.lang.Object", `{"a" 1}`, ``, `$.a: invalid JSON at offset 5: unexpected character '1', expected ':' after object key`},
		{"java.lang.Object", `[1,2`, ``, `$: invalid JSON at offset 4: unexpected end of input, expected ',' or ']'`},
		{"java.lang.Object", `{"a":tru}`, ``, `$.a: invalid JSON at offset 5: invalid literal, expected true`},
		{"java.lang.Object", `[01]`, ``, `$: invalid JSON at offset 2: unexpected character '1', expected ',' or ']'`},
		{"java.lang.Object", `[1.]`, ``, `$[0]: invalid JSON at offset 3: invalid number`},
		{"java.lang.Object", `-`, ``, `$: invalid JSON at offset 1: invalid number`},
		{"java.lang.Object", `1 2`, ``, `$: invalid JSON at offset 2: unexpected character '2' after the JSON value`},
		{"java.lang.Object", `"a` + "\x01" + `"`, ``, `$: invalid JSON at offset 2: control character 0x01 in string (must be escaped)`},
		{"java.lang.Object", `"\x"`, ``, `$: invalid JSON at offset 1: invalid escape in string`},
		{"java.lang.Object", `"\u12"`, ``, `$: invalid JSON at offset 1: invalid \u escape in string`},
		{"java.lang.Object", `"abc`, ``, `$: invalid JSON at offset 4: unexpected end of input in string`},
		{"java.lang.Object", `{"a\nb":[}`, ``, `$["a\nb"][0]: invalid JSON at offset 9: unexpected character '}', expected a value`},
		{"java.lang.Object", deep, ``, "$" + strings.Repeat("[0]", 128) + ": invalid JSON at offset 128: nesting deeper than 128"},
		{"int", "\xff", ``, `$: invalid JSON at offset 0: unexpected byte 0xff, expected a value`},
	})
	// Invalid UTF-8 inside strings is tolerated and replaced, like encoding/json does.
	runEncodeCases(t, mustEncoder(t, testOptions(false)), []encodeCase{
		{"java.lang.String", "\"a\xffb\"", "\"a\uFFFDb\"", ""},
	})
}

func TestEncodeArgs(t *testing.T) {
	enc := mustEncoder(t, testOptions(false))
	types := make([]*Type, 3)
	for i, name := range []string{"long", "java.lang.String", "java.util.List<com.example.Item>"} {
		var err error
		if types[i], err = enc.Type(name); err != nil {
			t.Fatal(err)
		}
	}
	e := hessian.NewEncoder(nil)
	if err := enc.EncodeArgs(e, []byte(`[7, "x", [{"qty": 1}]]`), types); err != nil {
		t.Fatal(err)
	}
	got := decodeAll(t, e.Bytes(), 3)
	for i, want := range []string{`long(7)`, `"x"`, `list[](obj com.example.Item{qty: int(1)})`} {
		if s := show(got[i]); s != want {
			t.Errorf("argument %d: got %s, want %s", i, s, want)
		}
	}

	for _, c := range []struct{ json, err string }{
		{`[7, "x"]`, `$: want a JSON array of 3 arguments, found array of 2`},
		{`{"a":1}`, `$: want a JSON array of 3 arguments, found object`},
		{`[7, "x", [{"qty": true}]]`, `$[2][0].qty: cannot use true as int`},
		{`[7.5, "x", []]`, `$[0]: cannot use number 7.5 as long: not an integer`},
	} {
		e.Reset(nil)
		err := enc.EncodeArgs(e, []byte(c.json), types)
		if err == nil || err.Error() != c.err {
			t.Errorf("EncodeArgs(%s): got error %v, want %q", c.json, err, c.err)
		}
	}
}

func TestEncodeString(t *testing.T) {
	for _, generic := range []bool{false, true} {
		enc := mustEncoder(t, testOptions(generic))
		for _, c := range []struct {
			javaType, s, want, err string
		}{
			{"int", "42", `int(42)`, ""},
			{"long", "9007199254740993", `long(9007199254740993)`, ""},
			{"java.lang.Double", "1.25", `double(1.25)`, ""},
			{"boolean", "true", `true`, ""},
			{"java.lang.String", "a b", `"a b"`, ""},
			{"java.lang.String", "", `""`, ""},
			{"java.lang.Object", "12", `"12"`, ""},
			{"char", "x", `"x"`, ""},
			{"java.util.Date", "2024-05-01T08:30:00Z", `date(2024-05-01T08:30:00.000Z)`, ""},
			{"java.math.BigDecimal", "0.10", `BigDecimal(0.10)`, ""},
			{"byte[]", "AQ==", `bin(01)`, ""},
			{"java.util.List<java.lang.Integer>", "[1,2]", `list[](int(1), int(2))`, ""},
			{"java.util.Map<String,Integer>", `{"a":1}`, `map[]{"a": int(1)}`, ""},
			{"int", "x", ``, `$: cannot use string "x" as int: not a number`},
			{"int", "1.5", ``, `$: cannot use string "1.5" as int: not an integer`},
			{"java.util.List<java.lang.Integer>", "1,2", ``, `$: invalid JSON at offset 1: unexpected character ',' after the JSON value`},
			{"com.example.Item", ` {"qty":"1"}`, map[bool]string{false: `obj com.example.Item{qty: int(1)}`, true: `map[]{"class": "com.example.Item", "qty": int(1)}`}[generic], ""},
			{"com.example.Item", `null`, `null`, ""},
			{"com.example.Item", `{"qty":1.5}`, ``, `$.qty: cannot use number 1.5 as int: not an integer`},
		} {
			typ, err := enc.Type(c.javaType)
			if err != nil {
				t.Fatal(err)
			}
			e := hessian.NewEncoder(nil)
			err = enc.EncodeString(e, c.s, typ)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Errorf("EncodeString(%q as %s): got error %v, want %q", c.s, c.javaType, err, c.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("EncodeString(%q as %s): %v", c.s, c.javaType, err)
				continue
			}
			if s := show(decodeAll(t, e.Bytes(), 1)[0]); s != c.want {
				t.Errorf("EncodeString(%q as %s): got %s, want %s", c.s, c.javaType, s, c.want)
			}
		}
		// An undeclared enum: a string the provider converts in generic
		// invocation, an error in typed invocation.
		typ, _ := enc.Type("com.example.Unknown")
		err := enc.EncodeString(hessian.NewEncoder(nil), "RED", typ)
		if generic && err != nil {
			t.Errorf("generic: undeclared enum from a string: %v", err)
		}
		if !generic && (err == nil || err.Error() != `$: cannot use string "RED" as com.example.Unknown: want a JSON object (declare enums in EncodeOptions.Enums)`) {
			t.Errorf("typed: undeclared enum from a string: got error %v", err)
		}
		// Enums differ between the modes.
		typ, _ = enc.Type("com.example.Color")
		e := hessian.NewEncoder(nil)
		if err := enc.EncodeString(e, "RED", typ); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: `obj com.example.Color{name: "RED"}`, true: `"RED"`}[generic]
		if s := show(decodeAll(t, e.Bytes(), 1)[0]); s != want {
			t.Errorf("generic=%v: enum from a string: got %s, want %s", generic, s, want)
		}
	}
}

// The one-shot functions compile their options and type on each call.
func TestOneShot(t *testing.T) {
	e := hessian.NewEncoder(nil)
	opts := &EncodeOptions{Generic: true, Schema: testSchema}
	if err := Encode(e, []byte(`{"qty":"2"}`), "com.example.Item", opts); err != nil {
		t.Fatal(err)
	}
	if err := EncodeString(e, "7", "java.lang.Long", nil); err != nil {
		t.Fatal(err)
	}
	got := decodeAll(t, e.Bytes(), 2)
	if s := show(got[0]); s != `map[]{"class": "com.example.Item", "qty": int(2)}` {
		t.Errorf("Encode: got %s", s)
	}
	if s := show(got[1]); s != `long(7)` {
		t.Errorf("EncodeString: got %s", s)
	}
	if err := Encode(e, []byte(`1`), "java.util.List<", nil); err == nil {
		t.Error("Encode with a malformed type: no error")
	}
	if err := EncodeString(e, "1", "int", &EncodeOptions{Schema: Schema{"bad name": nil}}); err == nil {
		t.Error("EncodeString with a bad schema: no error")
	}
}

// The Encoder's recycled scratch must not leak between calls, including
// after an error halfway through.
func TestEncoderReuse(t *testing.T) {
	enc := mustEncoder(t, testOptions(false))
	for i := 0; i < 3; i++ {
		if _, err := encodeOne(t, enc, `{"items":[{"qty":"x"}]}`, "com.example.User"); err == nil || err.Error() != `$.items[0].qty: cannot use string "x" as int: not a number` {
			t.Fatalf("round %d: error %v", i, err)
		}
		got, err := encodeOne(t, enc, `{"a":[1]}`, "java.lang.Object")
		if err != nil || show(got) != `map[]{"a": list[](int(1))}` {
			t.Fatalf("round %d: got %s, %v", i, show(got), err)
		}
	}
}

// One Encoder serves many goroutines at once (run with -race).
func TestEncoderConcurrent(t *testing.T) {
	enc := mustEncoder(t, testOptions(false))
	typ, err := enc.Type("com.example.User")
	if err != nil {
		t.Fatal(err)
	}
	want, err := encodeOne(t, enc, userJSON, "com.example.User")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			e := hessian.NewEncoder(nil)
			for range 50 {
				e.Reset(nil)
				if err := enc.Encode(e, []byte(userJSON), typ); err != nil {
					errs <- err
					return
				}
				v, err := hessian.NewDecoder(e.Bytes()).Decode()
				if err != nil {
					errs <- err
					return
				}
				if show(v) != show(want) {
					errs <- errors.New("concurrent encoding differs: " + show(v))
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
