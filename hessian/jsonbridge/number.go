package jsonbridge

import (
	"math"
	"strconv"
	"strings"
)

// Numbers are converted from their literal text, exactly: a long never
// passes through float64, and "1e3" is the integer 1000 while "1.5" is
// reported as a fraction.

type numProblem uint8

const (
	numOK numProblem = iota
	numFraction
	numRange
)

// decimal is a JSON number literal taken apart: its value is
// ±(hi‖lo) × 10^exp, where hi‖lo are the significant digits (the literal's
// integer and fraction digits) with no leading or trailing zeros. Zero has
// no digits.
type decimal struct {
	neg    bool
	hi, lo string
	exp    int
}

// maxExponent bounds the exponents kept, far beyond any representable
// value, so that arithmetic on them cannot overflow.
const maxExponent = 1 << 30

// parseDecimal takes apart a well-formed JSON number literal.
func parseDecimal(lit string) decimal {
	var d decimal
	if lit[0] == '-' {
		d.neg = true
		lit = lit[1:]
	}
	end := len(lit)
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		end = i
		e := 0
		neg := false
		j := i + 1
		if lit[j] == '+' || lit[j] == '-' {
			neg = lit[j] == '-'
			j++
		}
		for ; j < len(lit); j++ {
			if e < maxExponent {
				e = e*10 + int(lit[j]-'0')
			}
		}
		if e > maxExponent {
			e = maxExponent
		}
		if neg {
			e = -e
		}
		d.exp = e
	}
	intPart, frac := lit[:end], ""
	if i := strings.IndexByte(intPart, '.'); i >= 0 {
		intPart, frac = intPart[:i], intPart[i+1:]
	}
	d.exp -= len(frac)
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		frac = strings.TrimLeft(frac, "0")
	}
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
		d.exp++
	}
	if frac == "" {
		for len(intPart) > 0 && intPart[len(intPart)-1] == '0' {
			intPart = intPart[:len(intPart)-1]
			d.exp++
		}
	}
	d.hi, d.lo = intPart, frac
	if d.hi == "" && d.lo == "" {
		d.exp = 0
	}
	return d
}

func (d *decimal) digits() int { return len(d.hi) + len(d.lo) }

func (d *decimal) digit(i int) byte {
	if i < len(d.hi) {
		return d.hi[i]
	}
	return d.lo[i-len(d.hi)]
}

// int64 returns the exact integer value, or why there is none.
func (d *decimal) int64() (int64, numProblem) {
	n := d.digits()
	if n == 0 {
		return 0, numOK
	}
	if d.exp < 0 {
		return 0, numFraction
	}
	if n+d.exp > 19 {
		return 0, numRange
	}
	var u uint64
	for i := 0; i < n+d.exp; i++ {
		c := uint64(0)
		if i < n {
			c = uint64(d.digit(i) - '0')
		}
		if u > (math.MaxUint64-c)/10 {
			return 0, numRange
		}
		u = u*10 + c
	}
	if d.neg {
		if u > 1<<63 {
			return 0, numRange
		}
		return int64(-u), numOK // -(1<<63) wraps to itself, as intended
	}
	if u > math.MaxInt64 {
		return 0, numRange
	}
	return int64(u), numOK
}

// integerText returns the exact integer in plain decimal digits (what
// java.math.BigInteger's constructor takes), refusing more than maxDigits.
func (d *decimal) integerText(maxDigits int) (string, numProblem) {
	n := d.digits()
	if n == 0 {
		return "0", numOK
	}
	if d.exp < 0 {
		return "", numFraction
	}
	if n+d.exp > maxDigits {
		return "", numRange
	}
	var b strings.Builder
	b.Grow(n + d.exp + 1)
	if d.neg {
		b.WriteByte('-')
	}
	b.WriteString(d.hi)
	b.WriteString(d.lo)
	for i := 0; i < d.exp; i++ {
		b.WriteByte('0')
	}
	return b.String(), numOK
}

// maxBigIntegerDigits bounds the digits a BigInteger argument may expand to
// ("1e100000000" is a short literal but a huge number).
const maxBigIntegerDigits = 4096

// isIntegerLiteral reports whether a JSON number literal is written without
// fraction or exponent.
func isIntegerLiteral(lit string) bool {
	return !strings.ContainsAny(lit, ".eE")
}

// parseFloat64 converts a JSON number literal; ok is false when it is beyond
// the range of a double.
func parseFloat64(lit string) (float64, bool) {
	f, err := strconv.ParseFloat(lit, 64)
	return f, err == nil
}

// parseFloat32 converts a JSON number literal to a Java float and returns it
// as the double hessian-lite writes for a float: the shortest decimal form
// of the float, read back as a double (0.1 stays 0.1).
func parseFloat32(lit string) (float64, bool) {
	f, err := strconv.ParseFloat(lit, 32)
	if err != nil {
		return 0, false
	}
	var buf [32]byte
	short := strconv.AppendFloat(buf[:0], f, 'g', -1, 32)
	f64, err := strconv.ParseFloat(string(short), 64)
	return f64, err == nil
}

// javaSpecialFloat recognises the strings Java prints for the non-finite
// doubles, which JSON numbers cannot express.
func javaSpecialFloat(s string) (float64, bool) {
	switch s {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}
