package dubboroute

import (
	"strings"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
)

// javaTypeProblem says what is wrong with a parameter's Java type name
// (int, int[], java.lang.String, java.util.List<com.example.Item>, ...),
// or "" when nothing is: every class in it must be a full name (a package,
// then the class), since providers declare their methods' types so.
func javaTypeProblem(t string) string {
	// The simple names configurations most often write for a JDK class,
	// with the full name a provider's method declares: String for
	// java.lang.String passes as a (default-package) class name, and the
	// provider then answers NoSuchMethodException at every call.
	jdk := map[string]string{
		"String": "java.lang.String", "Integer": "java.lang.Integer", "Long": "java.lang.Long",
		"Short": "java.lang.Short", "Byte": "java.lang.Byte", "Double": "java.lang.Double",
		"Float": "java.lang.Float", "Boolean": "java.lang.Boolean", "Character": "java.lang.Character",
		"Object": "java.lang.Object", "Number": "java.lang.Number",
		"BigDecimal": "java.math.BigDecimal", "BigInteger": "java.math.BigInteger",
		"List": "java.util.List", "ArrayList": "java.util.ArrayList", "Map": "java.util.Map",
		"HashMap": "java.util.HashMap", "Set": "java.util.Set", "HashSet": "java.util.HashSet",
		"Collection": "java.util.Collection", "Date": "java.util.Date", "UUID": "java.util.UUID",
		"LocalDate": "java.time.LocalDate", "LocalDateTime": "java.time.LocalDateTime",
		"LocalTime": "java.time.LocalTime", "Instant": "java.time.Instant",
	}
	if strings.HasPrefix(t, "[") { // a JVM array class name: [I, [Ljava.lang.String;
		if _, err := protocol.AppendDescriptor(nil, t); err != nil {
			return "is not a Java type name"
		}
		return ""
	}
	// The names are what lies between the type syntax: < > , [ ] and spaces.
	names := strings.FieldsFunc(t, func(r rune) bool { return strings.ContainsRune("<>,[] ", r) })
	if len(names) == 0 {
		return "is not a Java type name"
	}
	for _, n := range names {
		switch {
		case primitives[n], n == "?":
		case !protocol.JavaName(n):
			return "is not a Java type name: " + n + " is not a class name"
		case !strings.Contains(n, "."):
			if full, ok := jdk[n]; ok {
				return "names " + n + " without its package: did you mean " + full + "?"
			}
			return "names " + n + " without its package: Java types are written in full (com.example." + n + "), as the provider declares them"
		}
	}
	return ""
}
