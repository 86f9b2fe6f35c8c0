package interop

import (
	hessian "github.com/apache/dubbo-go-hessian2"
	"github.com/apache/dubbo-go-hessian2/java_exception"
)

// The Go side of the Java classes in test/peers/java, registered with
// dubbo-go-hessian2 by JavaClassName.

// Pojo is interop.Pojo, the five-field object of the table and the
// benchmarks.
type Pojo struct {
	ID     int64   `hessian:"id"`
	Name   string  `hessian:"name"`
	Age    int32   `hessian:"age"`
	Active bool    `hessian:"active"`
	Score  float64 `hessian:"score"`
}

// JavaClassName implements hessian.POJO.
func (*Pojo) JavaClassName() string { return "interop.Pojo" }

// Node is interop.Node, for shared references and cycles.
type Node struct {
	Name    string `hessian:"name"`
	Next    *Node  `hessian:"next"`
	Payload any    `hessian:"payload"`
}

// JavaClassName implements hessian.POJO.
func (*Node) JavaClassName() string { return "interop.Node" }

// TestException is interop.TestException, a checked exception.
type TestException struct {
	java_exception.Exception
}

// JavaClassName implements java_exception.Throwabler.
func (TestException) JavaClassName() string { return "interop.TestException" }

// Color is the Java enum interop.Color.
type Color hessian.JavaEnum

// The constants of interop.Color.
const (
	Red Color = iota
	Green
	Blue
)

var colorNames = [...]string{Red: "RED", Green: "GREEN", Blue: "BLUE"}

// JavaClassName implements hessian.POJOEnum.
func (Color) JavaClassName() string { return "interop.Color" }

// String implements hessian.POJOEnum.
func (c Color) String() string { return colorNames[c] }

// EnumValue implements hessian.POJOEnum.
func (Color) EnumValue(name string) hessian.JavaEnum {
	for c, n := range colorNames {
		if n == name {
			return hessian.JavaEnum(c)
		}
	}
	return hessian.InvalidJavaEnum
}

func init() {
	// dubbo-go-hessian2 keeps its registry in package state; registering
	// once for the test binary is its intended use.
	hessian.RegisterPOJO(&Pojo{})
	hessian.RegisterPOJO(&Node{})
	hessian.RegisterPOJO(&TestException{})
	hessian.RegisterJavaEnum(Red)
}
