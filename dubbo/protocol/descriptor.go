package protocol

import (
	"errors"
	"strconv"
	"strings"
)

// Descriptor returns the JVM descriptor of a parameter list, the form a
// request carries: each type is a Java source name ("int",
// "java.lang.String", "com.x.User[]", "long[][]") or a JVM array name
// ("[I", "[Ljava.lang.String;"). For example ["java.lang.String", "int",
// "com.x.User[]"] → "Ljava/lang/String;I[Lcom/x/User;".
func Descriptor(javaTypes []string) (string, error) {
	n := 0
	for _, t := range javaTypes {
		n += len(t) + 2
	}
	b := make([]byte, 0, n)
	for i, t := range javaTypes {
		var err error
		if b, err = AppendDescriptor(b, t); err != nil {
			return "", errors.New("parameter " + strconv.Itoa(i) + ": " + err.Error())
		}
	}
	return string(b), nil
}

// AppendDescriptor appends the JVM descriptor of one Java type name (see
// Descriptor) to dst.
func AppendDescriptor(dst []byte, javaType string) ([]byte, error) {
	t := javaType
	if strings.HasPrefix(t, "[") { // JVM name of an array class
		dims := 0
		for dims < len(t) && t[dims] == '[' {
			dims++
		}
		elem := t[dims:]
		switch {
		case len(elem) == 1 && primitiveName(elem[0]) != "" && elem[0] != 'V':
		case len(elem) > 2 && elem[0] == 'L' && elem[len(elem)-1] == ';' && validClassName(elem[1:len(elem)-1], '.'):
		default:
			return dst, errors.New("invalid JVM array type name " + strconv.Quote(javaType))
		}
		for i := range len(t) {
			if t[i] == '.' {
				dst = append(dst, '/')
			} else {
				dst = append(dst, t[i])
			}
		}
		return dst, nil
	}
	dims := 0
	for strings.HasSuffix(t, "[]") {
		t = t[:len(t)-2]
		dims++
	}
	for range dims {
		dst = append(dst, '[')
	}
	if c := primitiveCode(t); c != 0 {
		if c == 'V' && dims > 0 {
			return dst, errors.New("invalid Java type name " + strconv.Quote(javaType) + ": array of void")
		}
		return append(dst, c), nil
	}
	if !validClassName(t, '.') {
		return dst, errors.New("invalid Java type name " + strconv.Quote(javaType))
	}
	dst = append(dst, 'L')
	for i := range len(t) {
		if t[i] == '.' {
			dst = append(dst, '/')
		} else {
			dst = append(dst, t[i])
		}
	}
	return append(dst, ';'), nil
}

// ParseDescriptor splits a JVM parameter descriptor into Java source names:
// "Ljava/lang/String;I[[J" → ["java.lang.String", "int", "long[][]"], the
// names Java's generic invocation matches parameter types by.
func ParseDescriptor(desc string) ([]string, error) {
	n, err := countDescriptor(desc)
	if err != nil {
		return nil, err
	}
	types := make([]string, 0, n)
	for len(desc) > 0 {
		size, _ := nextType(desc) // countDescriptor checked every type
		types = append(types, javaName(desc[:size]))
		desc = desc[size:]
	}
	return types, nil
}

// countDescriptor returns the number of types in a descriptor, checking
// each one, without allocating.
func countDescriptor(desc string) (int, error) {
	n := 0
	for off := 0; off < len(desc); n++ {
		size, err := nextType(desc[off:])
		if err != nil {
			return 0, errors.New("invalid parameter descriptor " + strconv.Quote(desc) + " at offset " + strconv.Itoa(off) + ": " + err.Error())
		}
		off += size
	}
	return n, nil
}

// nextType returns the length of the type descriptor at the start of desc.
func nextType(desc string) (int, error) {
	dims := 0
	for dims < len(desc) && desc[dims] == '[' {
		dims++
	}
	if dims == len(desc) {
		return 0, errors.New("array without an element type")
	}
	if dims > 255 {
		return 0, errors.New("more than 255 array dimensions")
	}
	c := desc[dims]
	if c == 'L' {
		end := strings.IndexByte(desc[dims:], ';')
		if end < 0 {
			return 0, errors.New("class name without ';'")
		}
		if name := desc[dims+1 : dims+end]; !validClassName(name, '/') {
			return 0, errors.New("invalid class name " + strconv.Quote(name))
		}
		return dims + end + 1, nil
	}
	if primitiveName(c) == "" {
		return 0, errors.New("unknown type code " + strconv.QuoteRune(rune(c)))
	}
	if c == 'V' && dims > 0 {
		return 0, errors.New("array of void")
	}
	return dims + 1, nil
}

// javaName turns one checked type descriptor into a Java source name.
func javaName(desc string) string {
	dims := 0
	for desc[dims] == '[' {
		dims++
	}
	elem := desc[dims:]
	var name string
	if elem[0] == 'L' {
		name = strings.ReplaceAll(elem[1:len(elem)-1], "/", ".")
	} else {
		name = primitiveName(elem[0])
	}
	if dims == 0 {
		return name
	}
	return name + strings.Repeat("[]", dims)
}

func primitiveName(code byte) string {
	switch code {
	case 'Z':
		return "boolean"
	case 'B':
		return "byte"
	case 'C':
		return "char"
	case 'S':
		return "short"
	case 'I':
		return "int"
	case 'J':
		return "long"
	case 'F':
		return "float"
	case 'D':
		return "double"
	case 'V':
		return "void"
	}
	return ""
}

func primitiveCode(name string) byte {
	switch name {
	case "boolean":
		return 'Z'
	case "byte":
		return 'B'
	case "char":
		return 'C'
	case "short":
		return 'S'
	case "int":
		return 'I'
	case "long":
		return 'J'
	case "float":
		return 'F'
	case "double":
		return 'D'
	case "void":
		return 'V'
	}
	return 0
}

// validClassName reports whether name is a Java class name whose packages
// are separated by sep ('.' in source names, '/' in descriptors): non-empty
// parts, none of the characters descriptors and source names reserve.
func validClassName(name string, sep byte) bool {
	if name == "" || name[0] == sep || name[len(name)-1] == sep {
		return false
	}
	for i := range len(name) {
		c := name[i]
		switch {
		case c == sep:
			if name[i-1] == sep {
				return false
			}
		case c == '.', c == '/', c == ';', c == '[', c == ']', c <= ' ', c == 0x7f:
			return false
		}
	}
	return true
}
